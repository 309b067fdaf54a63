# tests/test_whatif_writes.py: the replay writes each cross-site eager message to its
# connection when the trace's gateway took it from the rank (whatif/gwwrites.py), not when
# the rank sent it. The frames a trace's gateways took are matched to the ranks' sends; the
# replay's connection then forms its segments from those times, so a burst that fits the
# initial window when written at once may not when written over milliseconds
# (bench/notebook/whatif.md, run 8).
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from test_whatif import N, needs_simgrid, pingpong, pingpong_exe, platform  # noqa: F401

from isthmus.trace import records as R
from isthmus.trace.reader import Call, Clock, Comm, GatewayTrace, RankTrace, Trace, _keys
from isthmus.whatif.events import convert
from isthmus.whatif.gwwrites import GatewayWrites


def _gateway(site: int, app: list[tuple]) -> GatewayTrace:
    g = GatewayTrace(site=site, gw=0, info={}, clock=Clock())
    g.app = [(t, R.GW_FROM_APP, 1, src, dst, tag, ln, 0) for t, src, dst, tag, ln in app]
    return g


def test_frames_match_sends_in_order_and_skip_what_is_not_theirs():
    """Per (source, destination, tag, bytes), the k-th frame after a send is its own: a
    frame taken before the send (the start-up's, a collective's) is skipped, one more than
    MAX_LAG after it is not this send's, and a key no frame had is no lag (a rendezvous)."""
    w = GatewayWrites([_gateway(0, [(0.5e9, 0, 1, 7, 16),        # before the sends: skipped
                                    (2.0003e9, 0, 1, 7, 16), (2.0011e9, 0, 1, 7, 16),
                                    (2.0002e9, 0, 1, 8, 16),     # another tag
                                    (9e9, 0, 1, 7, 16)]),        # 5 s after: not a match
                       _gateway(1, [(2.0005e9, 1, 0, 7, 16)])])
    assert w.count == 6
    assert w.lag(0, 1, 7, 16, 2.0) == pytest.approx(300e-6)
    assert w.lag(0, 1, 7, 16, 2.0001) == pytest.approx(1000e-6)
    assert w.lag(0, 1, 8, 16, 2.0) == pytest.approx(200e-6)
    assert w.lag(1, 0, 7, 16, 2.0006) == 0.0          # clocks a little off: not negative
    assert w.lag(0, 1, 7, 16, 3.0) is None and w.unmatched == 1
    assert w.lag(0, 1, 7, 100_000, 2.0) is None and w.unmatched == 1
    assert "4 cross-site eager sends" in w.summary() and "1 without" in w.summary()


def test_cross_site_sends_carry_their_gateways_lag():
    """convert() gives each cross-site send its lag as the op's 8th field, from the call's
    start; a send inside the site, a receive, and a trace without gateways have none."""
    def trace(gateways: dict) -> Trace:
        ranks = {}
        for r in range(3):
            rt = RankTrace(rank=r, info={"site": 0 if r < 2 else 1}, clock=Clock())
            rt.comms = {0: Comm(0, False, [0, 1, 2], [], r)}
            calls = [Call("MPI_Init", 0.0, 1e6, 0, 0, 0)]
            if r == 0:
                calls += [Call("MPI_Isend", 2e6, 2.001e6, 0, 0, 0,
                               details=[(R.SEND, R.P2P_NB, 0, 2, 5, 0, 16, 11)]),
                          Call("MPI_Send", 3e6, 3.01e6, 0, 0, 0,
                               details=[(R.SEND, 0, 0, 1, 5, 0, 16, 0)]),
                          Call("MPI_Wait", 4e6, 5e6, 0, 0, 0,
                               details=[(R.DONE, 0, 11, -1, -1, 0)])]
            else:
                calls += [Call("MPI_Recv", 2e6, 5e6, 0, 0, 0,
                               details=[(R.RECV, 0, 0, 0, 5, 0, 16, 0)])]
            rt.calls = calls + [Call("MPI_Finalize", 6e6, 7e6, 0, 0, 0)]
            _keys(rt)
            ranks[r] = rt
        return Trace(Path("."), ranks, gateways, ["A", "B"], True, 7e6, {})

    conv = convert(trace({(0, 0): _gateway(0, [(2.25e6, 0, 2, 5, 16)])}))
    sends = [op for op in conv.templates[0] if op[0] == "s"]
    assert sends[0][:7] == ["s", "MPI_Isend", 1, 2, 5, 0, 16]
    assert sends[0][7] == pytest.approx(250e-6)
    assert len(sends[1]) == 7                     # to rank 1, at its own site
    assert all(len(op) == 7 for op in conv.templates[2] if op[0] == "r")
    assert conv.writes is not None and len(conv.writes.lags) == 1
    plain = convert(trace({}))
    assert plain.writes is None and all(len(op) == 7 for op in plain.templates[0] if op[0] == "s")


def _burst_job(tmp_path: Path, n: int, lags: list[float] | None, gap: float = 0.0) -> dict:
    """Rank 0 (site A) sends n messages of 16 B to rank 1 (site B), 50 ms one way, at
    100 Mbit/s: with lags (each send's gateway write lag), or sent `gap` apart."""
    from isthmus.netemu.matrix import load_matrix
    from isthmus.netemu.spec import parse_link_spec
    from isthmus.whatif.platform import tcp_ramps, write_platform
    matrix = load_matrix(platform(tmp_path, "delay=50ms,rate=100mbit"))
    write_platform(tmp_path / "p.xml", matrix, [1, 1], parse_link_spec("delay=1us"), tcp=True)
    sends = []
    for i in range(n):
        if gap and i:
            sends.append(["c", gap])
        sends.append(["s", "MPI_Isend", i + 1, 1, 0, 0, 16]
                     + ([lags[i]] if lags is not None else []))
    recvs = [["r", "MPI_Irecv", i + 1, 0, 0, 0, 16] for i in range(n)]
    ids = list(range(1, n + 1))
    return {"site_names": ["A", "B"], "counts": [1, 1], "trace_site": [0, 1],
            "trace_local": [0, 0], "trace_counts": [1, 1],
            "templates": {"0": sends + [["w", "MPI_Waitall", ids]],
                          "1": recvs + [["w", "MPI_Waitall", ids]]},
            "comms": {"0": {"members": [0, 1], "world": True}}, "eager": 65536,
            "early": 524288, "framing": True, "tcp": tcp_ramps(matrix),
            "platform": str(tmp_path / "p.xml"), "gw_writes": True}


@needs_simgrid
def test_a_burst_written_over_milliseconds_overflows_the_initial_window(tmp_path):
    """100 messages of 16 B (96 B framed: 9.6 kB). Written at once, the first leaves alone
    and the rest coalesce behind the pacing (2 x 10 x 1448 B / 100 ms) into full segments:
    8 more, within the initial window of 10, the last leaving 30 ms later and arriving at
    80 ms. Written by the gateway 0.3 ms apart (over 30 ms), each paced TSO frame carries
    only what was written meanwhile, the window's 10 segments are spent early, and the rest
    wait a round trip (100 ms) for the first acknowledgements. The same writes made by the
    rank itself, 0.3 ms apart, end at the same time to the nanosecond: a lag is when the
    message is written, not a cost of its own."""
    from isthmus.whatif.predict import _run_engine, simgrid_python
    exe, n = simgrid_python(), 100
    at_once = _run_engine(exe, _burst_job(tmp_path, n, [0.0] * n), tmp_path, "once")["end"]
    spread = _run_engine(exe, _burst_job(tmp_path, n, [i * 3e-4 for i in range(n)]),
                         tmp_path, "spread")["end"]
    assert 0.050 + 0.025 < at_once < 0.050 + 0.035, at_once
    assert spread > at_once + 0.060, (at_once, spread)
    by_rank = _run_engine(exe, _burst_job(tmp_path, n, None, gap=3e-4), tmp_path,
                          "rank")["end"]
    assert by_rank == pytest.approx(spread, abs=1e-9), (by_rank, spread)
    # without the gateways' writes (no TCP model, or the switch off) the lags count nothing
    off = _burst_job(tmp_path, n, [i * 3e-4 for i in range(n)])
    off["gw_writes"] = False
    assert _run_engine(exe, off, tmp_path, "off")["end"] == pytest.approx(at_once, abs=1e-9)


@needs_simgrid
def test_the_gateway_takes_a_ranks_messages_in_order(tmp_path):
    """A rank's messages reach its gateway in the order it sent them: a message with no lag
    after one with a long lag is written behind it, not before (the replay would otherwise
    reorder a pair's messages). The first message's 40 ms lag holds all 20."""
    from isthmus.whatif.predict import _run_engine, simgrid_python
    exe, n = simgrid_python(), 20
    first_late = _run_engine(exe, _burst_job(tmp_path, n, [0.040] + [0.0] * (n - 1)),
                             tmp_path, "late")["end"]
    all_late = _run_engine(exe, _burst_job(tmp_path, n, [0.040] * n), tmp_path, "all")["end"]
    assert first_late == pytest.approx(all_late, abs=1e-9), (first_late, all_late)
    assert first_late > 0.040 + 0.050


def test_the_notes_say_when_messages_are_written():
    from isthmus.whatif.predict import _gateway_writes
    w = GatewayWrites([_gateway(0, [(1e6, 0, 1, 0, 16)])])
    use, note = _gateway_writes(w, True, True)                  # nothing matched yet
    assert not use and "no cross-site eager point-to-point send" in note, note
    assert w.lag(0, 1, 0, 16, 0.0009) == pytest.approx(100e-6)
    use, note = _gateway_writes(w, True, True)
    assert use and note.startswith("1 cross-site eager sends written")
    for wanted, traced, why in ((False, True, "left out"), (True, False, "another layout")):
        use, note = _gateway_writes(w, wanted, traced)
        assert not use and why in note, note
    use, note = _gateway_writes(None, True, True)
    assert not use and "no gateway records" in note


@needs_simgrid
@pytest.mark.native
def test_a_traced_pingpongs_sends_each_find_their_gateways_frame(pingpong, tmp_path):
    """A real trace: every send of the ping-pong crosses the sites and its gateway's EAGER
    frame is in the trace, taken after the send began and within a second; the CLI says so
    in a note, and --no-gateway-writes says the other."""
    from isthmus.trace.reader import load
    conv = convert(load(pingpong))
    lags = [op[7] for ops in conv.templates.values() for op in ops if op[0] == "s"]
    assert len(lags) >= 2 * N and all(0 <= x < 1 for x in lags), lags
    assert conv.writes.unmatched == 0
    links = platform(tmp_path, "delay=5ms,rate=100mbit")
    notes = {}
    for opt in ([], ["--no-gateway-writes"]):
        r = subprocess.run([sys.executable, "-m", "isthmus", "whatif", str(pingpong),
                            "--platform", str(links), "--json", "--no-baseline", *opt],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        notes[bool(opt)] = " ".join(json.loads(r.stdout)["notes"])
    assert "as the gateways took them" in notes[False], notes
    assert "write times left out" in notes[True], notes
