# tests/test_mpi_api.py: the list of implemented MPI functions cannot drift from the code:
# native/src/abi/unsupported.c (entry points that report MPI_ERR_UNSUPPORTED_OPERATION)
# and the table in docs/mpi-coverage.md are generated from mpi.h and the abi/ sources by
# scripts/mpi_api.py; this fails when either is stale. And every function mpi.h declares
# is exported by libisthmus, so a program never fails to link.
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_generated_files_are_current():
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "mpi_api.py"), "check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.native
def test_every_declared_function_is_exported(prefix):
    header = (REPO / "native" / "include" / "mpi.h").read_text()
    declared = set(re.findall(r"^[A-Za-z_][A-Za-z_0-9 ]*?[ *]+(P?MPI_[A-Za-z0-9_]+)\(", header,
                              re.M))
    lib = next((prefix.root / "lib").glob("libisthmus.so*"))
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                         text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.strip()}
    missing = sorted(declared - exported)
    assert not missing, f"{len(missing)} functions declared in mpi.h are not exported: {missing[:20]}"
