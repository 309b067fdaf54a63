# tests/test_e2e.py: end-to-end tests against the native build (libisthmus.so,
# isthmus-gateway, isthmus-cc, backends). Marked `native`; skipped with the reason when no
# native prefix is found ($ISTHMUS_PREFIX, <repo>/_install, isthmus-gateway on PATH).
import os
import shutil
import subprocess
import sys

import pytest

from isthmus.launch import vendor

pytestmark = pytest.mark.native

JOB_TIMEOUT = 300


def isthmus(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "isthmus", *args],
        capture_output=True, text=True, timeout=JOB_TIMEOUT, cwd=cwd,
    )


def require_vendor(prefix, mpi):
    if mpi not in vendor.detect(prefix):
        if os.environ.get("ISTHMUS_REQUIRE_NATIVE"):
            pytest.fail(f"{mpi} is required here but not installed")
        pytest.skip(f"{vendor.LAUNCHER[mpi]} or {prefix.backend(mpi)} missing")


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_demo(prefix, mpi):
    require_vendor(prefix, mpi)
    r = isthmus("demo", "--mpi", mpi)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "all results correct" in r.stdout
    assert "demo failed" not in r.stderr


@pytest.mark.skipif(shutil.which("mpicc.openmpi") is None, reason="mpicc.openmpi not installed")
def test_run_rejects_vendor_built_program(prefix, tmp_path):
    src = tmp_path / "ring.c"
    src.write_text("#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n")
    subprocess.run(["mpicc.openmpi", "-o", "ring", "ring.c"], cwd=tmp_path, check=True)
    r = isthmus("run", "-n", "4", "./ring", cwd=tmp_path)
    assert r.returncode != 0
    assert "isthmus: ./ring was built with the vendor's mpicc (it links libmpi.so.40), not with isthmus-cc. " \
           "Rebuild it: isthmus-cc -o ring ring.c" in r.stderr
