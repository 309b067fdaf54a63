#!/bin/bash
# bench/gateway_ab.sh: two isthmus-gateway binaries compared on one emulated link, runs
# interleaved (A, B, A, B, ...): per run, wan_stream's result (bw: MB/s of 64 MiB messages;
# lat: one-way µs of 8-byte ping-pongs) and the machine's busy CPU seconds over the whole
# job (user+sys+irq+softirq from /proc/stat, so it counts the emulator, ranks and gateways
# alike) and the steal seconds (time other tenants of the host took).
#
#   bench/gateway_ab.sh OLD_GATEWAY NEW_GATEWAY [bw|lat] [REPS] [LINK]
# Run from a built tree (cmake --install build); the installed gateway is restored after.
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 mode=${3:-bw} reps=${4:-4} link=${5:-delay=10ms,rate=1gbit,loss=0.01%,mtu=9000}
export ISTHMUS_PREFIX=$PWD/_install ISTHMUS_REQUIRE_NATIVE=1 PATH=$PWD/_install/bin:$PWD/.venv/bin:$PATH
work=$(mktemp -d)
trap 'cp "$work/installed" _install/bin/isthmus-gateway; rm -rf "$work"' EXIT
cp _install/bin/isthmus-gateway "$work/installed"
cp "$old" "$work/A"; cp "$new" "$work/B"
isthmus-cc -O2 -o "$work/wan_stream" bench/wan_stream.c
if [ "$mode" = bw ]; then args="bw 67108864 8 1"; else args="lat 200 20"; fi
echo "gateway value busy_s steal_s  ($mode, link $link)"
for r in $(seq 1 "$reps"); do
    for v in A B; do
        echo "run $r/$reps, gateway $v" >&2
        cp "$work/$v" _install/bin/isthmus-gateway
        a=$(head -1 /proc/stat)
        out=$(isthmus run --mpi openmpi -n 2 --sites 2 --wan "$link" --timeout 120 \
              "$work/wan_stream" $args 2>&1 | grep "^wan_stream" || true)
        b=$(head -1 /proc/stat)
        [ -n "$out" ] || { echo "gateway $v: the job printed no result" >&2; exit 1; }
        python3 - "$v" "$out" "$a" "$b" <<'PY'
import sys
v, out, a, b = sys.argv[1:]
a = list(map(int, a.split()[1:])); b = list(map(int, b.split()[1:]))
d = [y - x for x, y in zip(a, b)]
value = out.split("value=")[1].split()[0]
print(v, value, (d[0] + d[1] + d[2] + d[5] + d[6]) / 100, d[7] / 100)
PY
    done
done
