#!/usr/bin/env bash
# bootstrap.sh: set up everything isthmus needs on a fresh Debian 12 machine, as root:
# Debian packages (both vendor MPIs, gfortran for the Fortran bindings, CMake, OpenSSL, Python venv, valgrind for the memory
# checks of MPI programs, clang and its runtime for the libFuzzer targets, openssh-server for
# the emulated clusters' nodes, debhelper and the Debian package's Python dependencies for
# the package test, lmod for the modulefile test, FFTW for the mpi4py-fft application test,
# the OTF2 library and its otf2-print for trace export, SimGrid (python3-simgrid, libsimgrid-dev)
# for `isthmus whatif`, Chromium for the tests that open the
# HTML reports in a browser, Slurm 22.05 and munge for the batch-system tests, whose fixtures
# start their own daemons), the native build (build/ -> installed into _install/), and a
# Python virtual environment (.venv/) with the isthmus CLI. Idempotent: a second run only rebuilds what changed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
say() { printf '\033[1m[bootstrap]\033[0m %s\n' "$*" >&2; }

pkgs=(build-essential gfortran cmake pkg-config libssl-dev openmpi-bin libopenmpi-dev mpich libmpich-dev
      python3 python3-venv python3-pip iproute2 procps valgrind clang libclang-rt-14-dev
      openssh-server openssh-client debhelper dpkg-dev lmod iptables libfftw3-dev
      libotf2-trace-dev otf2-tools chromium python3-simgrid libsimgrid-dev
      slurmctld slurmd slurm-client munge
      python3-click python3-rich python3-pyelftools python3-numpy)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        say "missing Debian packages: ${missing[*]}; run this script as root (or install them)"
        exit 1
    fi
    say "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # No service may start here: openssh-server's postinst would start sshd on port 22 of
    # this machine, munge's and slurm's their daemons (the emulated clusters start their
    # own sshds, munged, slurmctld and slurmd inside namespaces). A
    # policy-rc.d that answers 101 forbids it; without systemd running, deb-systemd-invoke
    # defers to invoke-rc.d, which reads it. Ours is removed again; an existing one is kept.
    policy=/usr/sbin/policy-rc.d
    own_policy=
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && own_policy=1
    fi
    status=0
    apt-get install -y -qq "${missing[@]}" >/dev/null || status=$?
    [ -n "$own_policy" ] && rm -f "$policy"
    [ $status -eq 0 ] || exit $status
fi

say "building the native tree (build/ -> _install/)"
cmake -S . -B build -DCMAKE_INSTALL_PREFIX="$here/_install" ${ISM_CMAKE_ARGS:-} >/dev/null
cmake --build build -j"$(nproc)" 2>&1 | grep -E 'warning|error' >&2 || true
cmake --build build -j"$(nproc)" >/dev/null
cmake --install build >/dev/null

py=/usr/bin/python3
if [ ! -x .venv/bin/python ]; then
    say "creating the Python environment (.venv/)"
    "$py" -m venv .venv
fi
stamp=.venv/.isthmus-installed
if [ ! -f "$stamp" ] || [ python/pyproject.toml -nt "$stamp" ]; then
    say "installing the isthmus CLI and test tools into .venv/"
    .venv/bin/pip install -q --upgrade pip >/dev/null
    .venv/bin/pip install -q -e "python[test]"
    touch "$stamp"
fi
say "ready: $here/.venv/bin/isthmus (native prefix $here/_install)"
