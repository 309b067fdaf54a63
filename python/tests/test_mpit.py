# tests/test_mpit.py: isthmus's tools interface (MPI_T) used by a tool program across 2
# sites (tests/mpi/mpit_tool.c): every variable, category and event enumerated and found
# again by name, the vendor's variables beside isthmus's (prefixed), the two writable
# settings, the gateway's link counters moving with a known amount of traffic, and the
# events of a cross-site message that arrives before its receive; under Open MPI and
# MPICH, and with every link broken once (ISTHMUS_GW_FAULT_AFTER) for the link events.
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.native

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tool(prefix, tmp_path_factory):
    out = tmp_path_factory.mktemp("mpit") / "mpit_tool"
    r = subprocess.run([str(prefix.cc), "-O2", "-o", str(out),
                        str(REPO / "tests" / "mpi" / "mpit_tool.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def run(tool, layout, mpi, args=(), env=None):
    n = sum(int(x) for x in layout.split(","))
    cmd = [sys.executable, "-m", "isthmus", "run", "-n", str(n), "--sites",
           str(len(layout.split(","))), "--ranks-per-site", layout, "--mpi", mpi,
           "--timeout", "100", "--", str(tool), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=130,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("mpi,layout", [("openmpi", "1,1"), ("mpich", "1,2")])
def test_tool_sees_variables_counters_and_events(tool, mpi, layout):
    r = run(tool, layout, mpi)
    assert r.returncode == 0 and "mpit_tool: OK" in r.stdout, (r.stdout + r.stderr)[-4000:]
    assert f"{mpi}:" in r.stdout  # the vendor's variables were counted, prefixed


def test_link_down_and_up_events(tool):
    r = run(tool, "1,1", "openmpi", ["links"], env={"ISTHMUS_GW_FAULT_AFTER": "30"})
    assert r.returncode == 0 and "mpit_tool: OK" in r.stdout, (r.stdout + r.stderr)[-4000:]
    assert "fault injected by ISTHMUS_GW_FAULT_AFTER" in r.stderr
