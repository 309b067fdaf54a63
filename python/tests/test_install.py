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
