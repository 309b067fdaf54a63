# tests/test_bench_baseline.py: `isthmus bench baseline`: the same program as one Open MPI
# job over emulated sites crosses the emulated link (its cross-site latency includes the
# link's delay); programs built with isthmus-cc, or not with Open MPI, are refused clearly.
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.native
REPO = Path(__file__).resolve().parents[2]
ISTHMUS = [sys.executable, "-m", "isthmus", "bench", "baseline"]


@pytest.fixture(scope="module")
def programs(prefix, tmp_path_factory):
    d = tmp_path_factory.mktemp("baseline")
    src = REPO / "bench" / "wan_stream.c"
    subprocess.run(["mpicc.openmpi", "-O2", "-o", str(d / "ws.openmpi"), str(src)], check=True)
    subprocess.run([str(prefix.cc), "-O2", "-o", str(d / "ws.isthmus"), str(src)], check=True)
    return d


def test_vendor_job_crosses_the_emulated_link(netadmin, programs):
    r = subprocess.run(ISTHMUS + ["-n", "2", "--wan", "delay=3ms", "--", str(programs / "ws.openmpi"),
                                  "lat", "30", "3"], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    lat = float(re.search(r"wan_stream mode=lat size=8 value=([\d.]+)", r.stdout).group(1))
    assert lat >= 3000, r.stdout  # one-way, microseconds: at least the link's delay


@pytest.mark.parametrize("which,msg", [("ws.isthmus", "built with isthmus-cc"),
                                       ("/bin/true", "not linked with Open MPI")])
def test_wrong_program_is_refused(prefix, programs, which, msg):
    exe = which if which.startswith("/") else str(programs / which)
    r = subprocess.run(ISTHMUS + ["-n", "2", "--wan", "delay=1ms", "--", exe],
                       capture_output=True, text=True, timeout=60)
    if "needs root" in r.stderr or "CAP_NET_ADMIN" in r.stderr:
        pytest.skip("needs root for the emulation checks that come first")
    assert r.returncode == 2 and msg in r.stderr, r.stderr
