# tests/test_mpi_api.py: the list of implemented MPI functions cannot drift from the code:
# native/src/abi/unsupported.c (entry points that report MPI_ERR_UNSUPPORTED_OPERATION)
# and the table in docs/mpi-coverage.md are generated from mpi.h and the abi/ sources by
# scripts/mpi_api.py, as are the other files it writes (the nonblocking and persistent
# collectives' entry points abi/coll_nb_gen.c, large counts, locking, Fortran); this fails
# when any is stale. And every function mpi.h declares is exported by libisthmus, so a
# program never fails to link.
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_generated_files_are_current():
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "mpi_api.py"), "check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# What the check reads and writes, copied so that a test can make one file stale.
CHECKED = ["scripts", "native/include", "native/src/abi", "native/fortran",
           "docs/mpi-coverage.md"]


@pytest.mark.parametrize("edit", ["hand edit", "table row"])
def test_check_finds_stale_collective_entry_points(tmp_path, edit):
    """abi/coll_nb_gen.c is generated from the table NB_COLLECTIVES: a hand edit of the
    file, or a table that no longer matches it, fails the check."""
    for rel in CHECKED:
        src, dst = REPO / rel, tmp_path / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dst)
    script = tmp_path / "scripts" / "mpi_api.py"
    check = [sys.executable, str(script), "check"]
    assert subprocess.run(check, capture_output=True, text=True).returncode == 0
    if edit == "hand edit":
        gen = tmp_path / "native" / "src" / "abi" / "coll_nb_gen.c"
        gen.write_text(gen.read_text().replace("request, datatype, MPI_DATATYPE_NULL);",
                                               "request, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL);",
                                               1))
    else:
        text = script.read_text()
        script.write_text(text.replace("Alltoallw               sendtypes? recvtypes",
                                       "Alltoallw               sendtypes recvtypes", 1))
    r = subprocess.run(check, capture_output=True, text=True)
    assert r.returncode == 1
    assert "native/src/abi/coll_nb_gen.c is out of date: run scripts/mpi_api.py nbc" in r.stderr


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
