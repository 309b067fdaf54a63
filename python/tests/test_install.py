# tests/test_install.py: the installed tree is relocatable, and PMPI tools work on top:
# install into one folder, move it, build with the moved isthmus-cc, run across sites; and
# a program that intercepts MPI_Send through the profiling interface sees every call.
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.native

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build"

PMPI_TOOL = r"""
#include <mpi.h>
#include <stdio.h>
static int sends;
int MPI_Send(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c) {
    sends++;
    return PMPI_Send(b, n, t, d, tag, c);
}
int main(int argc, char **argv) {
    int r, s, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    for (int i = 0; i < 5; i++) {
        if (r == 0) MPI_Send(&x, 1, MPI_INT, s - 1, i, MPI_COMM_WORLD);
        if (r == s - 1) MPI_Recv(&x, 1, MPI_INT, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (r == 0) printf("intercepted %d sends\n", sends);
    MPI_Finalize();
    return 0;
}
"""


def test_installed_tree_is_relocatable_and_pmpi_works(tmp_path):
    if not (BUILD / "CMakeCache.txt").exists():
        if os.environ.get("ISTHMUS_REQUIRE_NATIVE"):
            pytest.fail(f"no build tree at {BUILD}")
        pytest.skip("needs the native build tree")
    first = tmp_path / "first"
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(first)], check=True,
                   capture_output=True)
    moved = tmp_path / "moved"
    shutil.move(str(first), str(moved))
    src = tmp_path / "tool.c"
    src.write_text(PMPI_TOOL)
    show = subprocess.run([str(moved / "bin" / "isthmus-cc"), "-show", "-o", "tool", str(src)],
                          capture_output=True, text=True, check=True).stdout
    assert str(moved / "include") in show and "-listhmus" in show
    subprocess.run([str(moved / "bin" / "isthmus-cc"), "-o", str(tmp_path / "tool"), str(src)],
                   check=True, capture_output=True)
    env = dict(os.environ, ISTHMUS_PREFIX=str(moved))
    r = subprocess.run([sys.executable, "-m", "isthmus", "run", "-n", "2", "--timeout", "100",
                        "--", str(tmp_path / "tool")], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "intercepted 5 sends" in r.stdout


CMAKE_PROJECT = """
cmake_minimum_required(VERSION 3.20)
project(uses_isthmus C)
find_package(isthmus 0.1 REQUIRED)
add_executable(tool tool.c)
target_link_libraries(tool PRIVATE isthmus::mpi)
"""


def _moved_install(tmp_path) -> Path:
    if not (BUILD / "CMakeCache.txt").exists():
        if os.environ.get("ISTHMUS_REQUIRE_NATIVE"):
            pytest.fail(f"no build tree at {BUILD}")
        pytest.skip("needs the native build tree")
    first = tmp_path / "first"
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(first)], check=True,
                   capture_output=True)
    moved = tmp_path / "moved"
    shutil.move(str(first), str(moved))
    return moved


def _run_two_sites(moved: Path, exe: Path) -> str:
    r = subprocess.run([sys.executable, "-m", "isthmus", "run", "-n", "2", "--timeout", "100",
                        "--", str(exe)], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, ISTHMUS_PREFIX=str(moved)))
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_pkg_config_and_cmake_package_build_a_program(tmp_path):
    """isthmus.pc and find_package(isthmus), from an install tree that was moved after
    `cmake --install` (both find their prefix from where they lie; the CMake package also
    through a symlinked directory, as distributions link it into a standard path)."""
    moved = _moved_install(tmp_path)
    src = tmp_path / "tool.c"
    src.write_text(PMPI_TOOL)
    pc = dict(os.environ, PKG_CONFIG_PATH=str(moved / "lib" / "pkgconfig"))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "isthmus"], env=pc, check=True,
                           capture_output=True, text=True).stdout.split()
    assert f"-I{moved}/lib/pkgconfig/../../include" in flags and "-listhmus" in flags
    exe_pc = tmp_path / "tool-pc"
    subprocess.run(["cc", "-o", str(exe_pc), str(src), *flags], check=True, capture_output=True)
    assert "intercepted 5 sends" in _run_two_sites(moved, exe_pc)

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "CMakeLists.txt").write_text(CMAKE_PROJECT)
    shutil.copy(src, proj / "tool.c")
    linked = tmp_path / "cmake-dirs" / "isthmus"
    linked.parent.mkdir()
    linked.symlink_to(moved / "lib" / "cmake" / "isthmus")
    r = subprocess.run(["cmake", "-S", str(proj), "-B", str(proj / "b"), f"-Disthmus_DIR={linked}"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(["cmake", "--build", str(proj / "b")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "intercepted 5 sends" in _run_two_sites(moved, proj / "b" / "tool")
