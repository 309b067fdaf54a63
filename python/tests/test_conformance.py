# tests/test_conformance.py: the combinatorial MPI conformance suite of tests/conformance/ (one
# MPI program: tests x communicator kinds x datatypes x counts), built with isthmus-cc from all
# its .c files and run with `isthmus run` on 1, 2 and 3 sites under Open MPI and MPICH.  The
# program prints "conformance: OK (N combinations, ...)" only when every rank passed; known
# vendor and isthmus defects are excluded inside it, each with a visible "excluded:" line
# (tests/conformance/README.md).
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from isthmus.launch import vendor

pytestmark = pytest.mark.native

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "tests" / "conformance"
JOB_TIMEOUT = 240
LAYOUTS = [("1site", "4"), ("2sites", "2,2"), ("3sites", "1,2,2")]
# MPICH 4.0.2 crashes in MPI_Reduce(MPI_IN_PLACE) at a non-zero root (pmodels/mpich#6540);
# isthmus hands reductions within a site to the vendor, as in test_mpi_programs.py
VENDOR_ENV = {"mpich": {"MPIR_CVAR_REDUCE_DEVICE_COLLECTIVE": "0"}, "openmpi": {}}


@pytest.fixture(scope="session")
def conformance_exe(prefix, tmp_path_factory):
    exe = tmp_path_factory.mktemp("conformance") / "conformance"
    sources = sorted(str(p) for p in SUITE.glob("*.c"))
    r = subprocess.run([str(prefix.cc), "-std=c11", "-O2", "-Wall", "-Wextra", "-o", str(exe),
                        *sources], capture_output=True, text=True)
    assert r.returncode == 0, f"isthmus-cc failed:\n{r.stderr}"
    assert "warning" not in r.stderr, r.stderr
    return exe


def run_job(exe, args, ranks, mpi, timeout=JOB_TIMEOUT):
    env = dict(os.environ, **VENDOR_ENV[mpi])
    n = sum(int(x) for x in ranks.split(","))
    cmd = [sys.executable, "-m", "isthmus", "run", "-n", str(n), "--sites",
           str(len(ranks.split(","))), "--ranks-per-site", ranks, "--mpi", mpi,
           "--timeout", str(timeout - 20), "--", str(exe), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
@pytest.mark.parametrize("label,ranks", LAYOUTS, ids=[l for l, _ in LAYOUTS])
def test_conformance_default_set(prefix, conformance_exe, mpi, label, ranks):
    if mpi not in vendor.detect(prefix):
        pytest.fail(f"{mpi} is not installed: scripts/bootstrap.sh installs both vendor MPIs")
    r = run_job(conformance_exe, [], ranks, mpi)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "conformance: OK (" in r.stdout, (
        f"conformance on {label} ({ranks}) with {mpi}: exit {r.returncode}\n{out[-8000:]}")
    # every group ran, nothing failed, and every communicator kind (the intercommunicators
    # too) was available
    for group in ("p2p:", "coll:", "topo:"):
        assert any(l.startswith(group) and " 0 failures" in l for l in r.stdout.splitlines()), (
            r.stdout[-4000:])
    assert ": skipped:" not in r.stdout, r.stdout[-4000:]
    assert "FAIL " not in out


def test_conformance_list_and_bad_option(prefix, conformance_exe):
    r = run_job(conformance_exe, ["--list"], "1", "openmpi", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    heads = {line.split()[0]: int(line.split("(")[1].split(")")[0])
             for line in out.splitlines() if line.split()[:1] in (["tests"], ["comms"], ["types"])}
    assert heads["tests"] >= 40 and heads["comms"] >= 13 and heads["types"] >= 25, out
    for name in ("send", "cancel_recv", "alltoallw", "ineighbor_alltoallw",  # tests
                 "world", "cart3d", "inter_merged", "site_leaders",  # comms
                 "long_double_int", "struct_resized", "resized_neg_lb"):  # types
        assert f"  {name} " in out, f"{name} missing from --list:\n{out}"

    r = run_job(conformance_exe, ["--tests", "no_such_test"], "2,2", "openmpi", timeout=120)
    assert r.returncode != 0
    assert 'unknown test "no_such_test"' in r.stderr, r.stdout + r.stderr
    r = run_job(conformance_exe, ["--bogus"], "4", "mpich", timeout=120)
    assert r.returncode != 0
    assert "unknown option or missing value: --bogus" in r.stderr, r.stdout + r.stderr

    # a selection runs exactly the requested product
    r = run_job(conformance_exe, ["--tests", "sendrecv,allgatherv", "--comms", "world,reversed",
                                  "--types", "struct_cdi,int", "--counts", "0,5", "--full"],
                "2,2", "openmpi", timeout=120)
    assert r.returncode == 0 and "conformance: OK (16 combinations" in r.stdout, (
        r.stdout + r.stderr)[-4000:]
