#!/usr/bin/env bash
# bench/fuzz_long.sh: long libFuzzer runs of the fuzz targets (issue 23 §5 asks for at
# least an hour each), for BENCHMARKS.md. Builds build-fuzz/ with clang if needed, runs
# each named target (default: all) for SECONDS (default 3600) from its seeds plus the
# corpus kept in bench-results/fuzz-corpus/<target>, and prints one line per target:
# runs, execs/s, coverage (edges), corpus size, crashes (any input libFuzzer saved).
#   bench/fuzz_long.sh [-s SECONDS] [-j PARALLEL] [target ...]
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
secs=3600 par=1
while getopts "s:j:" o; do
    case $o in s) secs=$OPTARG ;; j) par=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
cd "$here"
if [ ! -d build-fuzz ]; then
    CC=clang cmake -S . -B build-fuzz -DISM_FUZZ_LIBFUZZER=ON >/dev/null || exit 1
fi
cmake --build build-fuzz -j2 --target fuzz_all >/dev/null || exit 1
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for f in build-fuzz/fuzz/*; do [ -x "$f" ] && targets+=("$(basename "$f")"); done
fi
out=bench-results/fuzz-long/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
run_one() {
    local t=$1 corpus=bench-results/fuzz-corpus/$1 smoke
    mkdir -p "$corpus" "$out/artifacts"
    smoke=$(find build-fuzz -name "${t}_smoke" -type f | head -1)
    if [ -n "$smoke" ] && "$smoke" --write-seeds "$corpus" >/dev/null 2>&1; then :; fi
    echo "[fuzz_long] $t: fuzzing for $secs s" >&2
    build-fuzz/fuzz/"$t" "$corpus" -max_total_time="$secs" -print_final_stats=1 \
        -artifact_prefix="$out/artifacts/$t-" >"$out/$t.log" 2>&1
    local rc=$?
    local runs speed cov crashes
    runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$out/$t.log" | awk '{print $2}')
    speed=$(awk '/^stat::average_exec_per_sec:/ {print $2}' "$out/$t.log")
    cov=$(grep -o 'cov: [0-9]*' "$out/$t.log" | tail -1 | awk '{print $2}')
    # crash-, leak-, timeout- and oom- inputs are findings; slow-unit- ones only took longer
    # than -report_slow_units (10 s), which a starved process does on any input
    crashes=$(ls "$out/artifacts" 2>/dev/null | grep -cE "^$t-(crash|leak|timeout|oom)-" || true)
    slow=$(ls "$out/artifacts" 2>/dev/null | grep -c "^$t-slow-unit-" || true)
    printf '%s\t%s s\truns %s\t%s/s\tedges %s\tcorpus %s\tcrashes %s\tslow units %s\texit %s\n' \
        "$t" "$secs" "${runs:-?}" "${speed:-?}" "${cov:-?}" "$(ls "$corpus" | wc -l)" "$crashes" \
        "$slow" "$rc" |
        tee -a "$out/summary.tsv"
}
running=0
for t in "${targets[@]}"; do
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$par" ]; then wait -n; running=$((running - 1)); fi
done
wait
echo "[fuzz_long] results in $out/summary.tsv" >&2
