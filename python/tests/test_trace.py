# tests/test_trace.py: `isthmus run --trace DIR` across 2 sites and the OTF2 export, checked
# with otf2-print (the OTF2 library's reader) against what the programs did: every call,
# every message and its bytes; and the generated wrappers are current.
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trace_helpers import attr, read_otf2, traced_run

REPO = Path(__file__).resolve().parents[2]


def test_wrappers_are_generated_from_mpi_h():
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "trace_api.py"), "check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def ring(prefix, tmp_path_factory):
    out = tmp_path_factory.mktemp("trace-ring") / "ring"
    r = subprocess.run([str(prefix.cc), "-O2", "-o", str(out), str(REPO / "examples" / "ring.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.native
def test_ring_traced_across_two_sites_exports_to_otf2(ring, tmp_path):
    laps, size, n = 3, 4096, 4
    trace = tmp_path / "trace"
    r = traced_run(ring, trace, n, "2,2", args=(laps, size))
    assert r.returncode == 0 and "ring: ok" in r.stdout, (r.stdout + r.stderr)[-3000:]
    assert f"trace in {trace}" in r.stderr
    assert sorted(p.name for p in trace.glob("rank-*.ismt")) == [
        f"rank-{i:06d}.ismt" for i in range(n)]
    x = subprocess.run([sys.executable, "-m", "isthmus", "trace", "export", str(trace)],
                       capture_output=True, text=True)
    assert x.returncode == 0, x.stderr
    ev = read_otf2(trace / "otf2" / "traces.otf2")
    for rank in range(n):
        # each rank passes the token once per lap and the big message once
        assert ev.enters[(rank, "MPI_Send")] == laps + 1
        assert ev.enters[(rank, "MPI_Recv")] == laps + 1
        assert ev.enters[(rank, "MPI_Allreduce")] == 1
        assert ev.enters[(rank, "MPI_Init")] == 1
        sends = ev.of("MPI_SEND", rank)
        assert sorted(int(attr(e[2], "Length")) for e in sends) == [8] * laps + [size]
        assert {int(attr(e[2], "Receiver")) for e in sends} == {(rank + 1) % n}
        recvs = ev.of("MPI_RECV", rank)
        assert sorted(int(attr(e[2], "Length")) for e in recvs) == [8] * laps + [size]
        assert {int(attr(e[2], "Sender")) for e in recvs} == {(rank - 1) % n}
    # the gateways: every numbered frame one sends on the WAN, the other receives
    gw = 1 << 40
    gw_sends = {(e[0] - gw, int(attr(e[2], "Receiver")), int(attr(e[2], "Tag")))
                for e in ev.of("MPI_SEND") if e[0] >= gw}
    gw_recvs = {(int(attr(e[2], "Sender")), e[0] - gw, int(attr(e[2], "Tag")))
                for e in ev.of("MPI_RECV") if e[0] >= gw}
    assert gw_sends == gw_recvs
    # at least the token's crossings and the big message's (ranks 1 -> 2, 3 -> 0)
    assert len(gw_sends) >= 2 * (laps + 1)
    # every message arrives after it left, on the aligned clocks (ranks 1 -> 2 cross sites)
    first_send = min(e[1] for e in ev.of("MPI_SEND", 1))
    first_recv = min(e[1] for e in ev.of("MPI_RECV", 2))
    assert first_recv > first_send
