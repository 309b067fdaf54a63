#!/usr/bin/env bash
# test.sh: the whole test suite: set up (scripts/bootstrap.sh), then the C tests (CTest,
# also built with AddressSanitizer and UndefinedBehaviorSanitizer), a ThreadSanitizer
# build for the thread programs (run by pytest), the fuzz targets
# under libFuzzer for a bounded time (ISM_FUZZ_SECONDS each), and the Python tests
# (pytest), which include end-to-end runs of real MPI programs on
# 2 and 3 sites with Open MPI and with MPICH. Exit status is non-zero if anything fails.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
"$here/scripts/bootstrap.sh" || exit 1
export ISTHMUS_PREFIX="$here/_install"
export ISTHMUS_REQUIRE_NATIVE=1
# The link emulator tests need root and /dev/net/tun: here a missing one fails, not skips.
export ISTHMUS_REQUIRE_NETADMIN=1
status=0
echo "== C tests (ctest)"
ctest --test-dir build --output-on-failure -j2 || status=1
echo "== C tests under AddressSanitizer and UndefinedBehaviorSanitizer (build-asan/)"
if cmake -S . -B build-asan -DISM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null &&
    cmake --build build-asan -j"$(nproc)" >/dev/null; then
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        ctest --test-dir build-asan --output-on-failure -j2 || status=1
else
    echo "the sanitizer build failed"
    status=1
fi
echo "== ThreadSanitizer build (build-tsan/ -> _install-tsan/): the thread programs run on it in pytest"
# python/tests/test_threads.py runs tests/mpi/thread_multiple.c across sites on this
# install (ISTHMUS_TSAN_PREFIX); only those tests use it, so the suite's time grows by the
# build and a few short jobs
if cmake -S . -B build-tsan -DISM_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_INSTALL_PREFIX="$here/_install-tsan" >/dev/null &&
    cmake --build build-tsan -j"$(nproc)" >/dev/null && cmake --install build-tsan >/dev/null; then
    export ISTHMUS_TSAN_PREFIX="$here/_install-tsan"
else
    echo "the ThreadSanitizer build failed"
    status=1
fi
echo "== fuzz targets, coverage-guided with libFuzzer (build-fuzz/, clang; ${ISM_FUZZ_SECONDS:-20} s each)"
if CC=clang cmake -S . -B build-fuzz -DISM_FUZZ_LIBFUZZER=ON -DISM_FUZZ_SECONDS="${ISM_FUZZ_SECONDS:-20}" \
        -DCMAKE_BUILD_TYPE=Debug >/dev/null &&
    cmake --build build-fuzz -j"$(nproc)" --target fuzz_all >/dev/null; then
    ctest --test-dir build-fuzz -L libfuzzer --output-on-failure -j2 || status=1
else
    echo "the libFuzzer build failed"
    status=1
fi
echo "== Python and end-to-end tests (pytest)"
# --durations: the slowest tests, listed in the log, keep the suite's time in view
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=30 python/tests "$@" || status=1
exit $status
