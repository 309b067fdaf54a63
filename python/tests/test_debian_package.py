# tests/test_debian_package.py: the Debian package built from the tree
# (packaging/debian, dpkg-buildpackage -b), installed with dpkg -i, and used from the
# installed paths alone: `isthmus demo` with a bare environment (no clone, no venv, no
# ISTHMUS_PREFIX), and a program built through /usr's pkg-config file and CMake package.
# The package is removed (purged) afterwards on every exit path, leaving the machine as it
# was. Needs root and debhelper (scripts/bootstrap.sh installs it); mandatory under
# scripts/test.sh.
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.native

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("CMakeLists.txt", "native", "examples", "packaging")
BARE_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}

PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int r, s, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (r == 0) printf("sum of ranks %d\n", sum);
    MPI_Finalize();
    return 0;
}
"""
CMAKE_PROJECT = """
cmake_minimum_required(VERSION 3.20)
project(uses_isthmus C)
find_package(isthmus REQUIRED)
add_executable(prog prog.c)
target_link_libraries(prog PRIVATE isthmus::mpi)
"""


def _need(condition: bool, why: str) -> None:
    if not condition:
        if os.environ.get("ISTHMUS_REQUIRE_NATIVE"):
            pytest.fail(why)
        pytest.skip(why)


def _installed(name: str) -> bool:
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True)
    return "install ok installed" in r.stdout


def _dpkg(*args: str) -> subprocess.CompletedProcess:
    """dpkg, waiting up to 2 minutes for its lock (apt or another test may hold it)."""
    deadline = time.monotonic() + 120
    while True:
        r = subprocess.run(["dpkg", *args], capture_output=True, text=True)
        if r.returncode == 0 or "lock" not in r.stderr or time.monotonic() > deadline:
            return r
        time.sleep(2)


def _bare(argv, cwd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env={**BARE_ENV, "HOME": str(cwd)}, capture_output=True,
                          text=True, **kw)


@pytest.fixture
def package(tmp_path):
    _need(os.geteuid() == 0, "installing a Debian package needs root")
    _need(shutil.which("dpkg-buildpackage") is not None and Path("/usr/bin/dh").exists(),
          "dpkg-buildpackage and debhelper are missing (scripts/bootstrap.sh installs them)")
    assert not _installed("isthmus"), "a Debian package 'isthmus' is installed already; " \
        "this test would replace and then remove it: remove it first (dpkg --purge isthmus)"
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy2)(REPO / name, src / name)
    (src / "python").mkdir()
    shutil.copytree(REPO / "python" / "isthmus", src / "python" / "isthmus")
    shutil.copytree(REPO / "packaging" / "debian", src / "debian")
    r = subprocess.run(["dpkg-buildpackage", "-b", "-us", "-uc"], cwd=src, capture_output=True,
                       text=True, env={**os.environ, "DEB_BUILD_OPTIONS": "parallel=2 nocheck"})
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    debs = sorted(tmp_path.glob("isthmus_*.deb"))
    assert len(debs) == 1, list(tmp_path.iterdir())
    try:
        r = _dpkg("-i", str(debs[0]))
        assert r.returncode == 0, r.stdout + r.stderr
        yield debs[0]
    finally:
        r = _dpkg("--purge", "isthmus")
        assert r.returncode == 0 or not _installed("isthmus"), r.stdout + r.stderr
    assert not Path("/usr/lib/isthmus").exists() and not Path("/usr/bin/isthmus").exists()


def test_debian_package_runs_the_demo_from_installed_paths(package, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    for mpi in ("openmpi", "mpich"):
        r = _bare(["isthmus", "demo", "--mpi", mpi], work, timeout=300)
        assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
        assert "all results correct" in r.stdout, r.stdout[-2000:]

    (work / "prog.c").write_text(PROGRAM)
    flags = _bare(["pkg-config", "--cflags", "--libs", "isthmus"], work, check=True).stdout.split()
    assert "-I/usr/lib/isthmus/include" in flags, flags
    r = _bare(["cc", "-o", "prog-pc", "prog.c", *flags], work)
    assert r.returncode == 0, r.stderr
    proj = work / "proj"
    proj.mkdir()
    (proj / "CMakeLists.txt").write_text(CMAKE_PROJECT)
    shutil.copy(work / "prog.c", proj)
    for step in (["cmake", "-S", str(proj), "-B", str(proj / "b")], ["cmake", "--build", str(proj / "b")]):
        r = _bare(step, work)
        assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    for exe in (work / "prog-pc", proj / "b" / "prog"):
        r = _bare(["isthmus", "run", "-n", "4", "--timeout", "100", "--", str(exe)], work, timeout=150)
        assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
        assert "sum of ranks 6" in r.stdout
