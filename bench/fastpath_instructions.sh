#!/usr/bin/env bash
# fastpath_instructions.sh: instructions isthmus adds to a local MPI_Send and MPI_Recv,
# counted with callgrind (deterministic, unlike nanosecond timings on a shared 2-core VM).
# Runs bench/pingpong (8 bytes, N iterations) on one site under each vendor and prints the
# self cost of every isthmus function on the path (libisthmus + backend plugin) per call.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
prefix=${ISTHMUS_PREFIX:-$here/_install}
iters=${1:-20000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$prefix/bin/isthmus-cc" -O2 -o "$work/pp" "$here/bench/pingpong.c"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for vendor in openmpi mpich; do
    if [ "$vendor" = openmpi ]; then launch=(mpirun.openmpi --oversubscribe -np 2); else launch=(mpiexec.mpich -np 2); fi
    ISTHMUS_MPI=$vendor "${launch[@]}" valgrind --tool=callgrind \
        --callgrind-out-file="$work/cg.$vendor.%p" "$work/pp" -s 8 -i "$iters" -x 100 >/dev/null 2>&1
    f=$(ls "$work"/cg.$vendor.* | head -1)
    calls=$((iters + 100))
    echo "== $vendor: isthmus self cost per call (rank 0, $calls sends and $calls receives)"
    callgrind_annotate --inclusive=no "$f" 2>/dev/null |
        awk -v n="$calls" '/libisthmus|isthmus-backend/ { gsub(",", "", $1); split($0, a, ":");
            fn = a[2]; sub(/ .*/, "", fn); printf "  %-28s %6.1f instructions\n", fn, $1 / n }'
done
