# tests/test_whatif.py: `isthmus whatif`, the SimGrid replay of a trace. A real trace of a
# ping-pong (2 sites, no link emulation needed: the replay sets the links) must be
# predicted as a hand computation says, grow with the WAN's latency, extrapolate to more
# sites and ranks without a send missing its receive; bad input gets a one-line error.
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trace_helpers import build_and_trace, traced_run

REPO = Path(__file__).resolve().parents[2]
N, BYTES = 10, 50_000  # below the eager limit (64 KiB): one message each way


def _simgrid() -> bool:
    return subprocess.run(["/usr/bin/python3", "-c", "import simgrid"],
                          capture_output=True).returncode == 0


needs_simgrid = pytest.mark.skipif(not _simgrid(), reason="python3-simgrid is not installed "
                                   "(scripts/bootstrap.sh installs it)")


def whatif(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "isthmus", "whatif", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def platform(tmp: Path, spec: str, sites: int | None = 2, name: str = "links.toml") -> Path:
    p = tmp / name
    p.write_text((f"sites = {sites}\n" if sites else "") + f'default = "{spec}"\n')
    return p


@pytest.fixture(scope="module")
def pingpong_exe(prefix, tmp_path_factory):
    exe = tmp_path_factory.mktemp("whatif") / "pingpong"
    r = subprocess.run([str(prefix.cc), "-O2", "-o", str(exe),
                        str(REPO / "tests" / "mpi" / "whatif_pingpong.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return exe


def traced_pingpong(exe: Path, trace: Path, stall_us: int = 0) -> Path:
    r = traced_run(exe, trace, 2, "1,1", args=(N, BYTES, stall_us))
    assert r.returncode == 0 and "whatif_pingpong: ok" in r.stdout, (r.stdout + r.stderr)[-3000:]
    return trace


@pytest.fixture(scope="module")
def pingpong(pingpong_exe):
    return traced_pingpong(pingpong_exe, pingpong_exe.parent / "trace")


def within_the_replays_bounds(out: dict, hand: float, rel: float) -> None:
    """The replay with the WAN takes at least the chain of crossings (hand: each message
    waits for the one before it) and at most that on top of the replay without it (each
    crossing lengthened by at most its WAN time). What the ranks did besides
    communicating, start skew included, is in the no-WAN replay (out["no_wan_s"], < 1 ms
    in a quiet run); a crossing may pass while a rank is still at it, so the WAN cost
    (predicted - no_wan) is hand less up to that much: a rank the scheduler ran late
    hides a crossing, and the cost is then not hand within a few per cent."""
    pred, base = out["predicted_s"], out["no_wan_s"]
    assert hand * (1 - rel) <= pred <= (hand + base) * (1 + rel), (hand, out)
    assert hand * (1 - rel) - base <= out["wan_cost_s"] <= hand * (1 + rel), (hand, out)


@needs_simgrid
@pytest.mark.native
def test_pingpong_prediction_matches_the_hand_computation(pingpong, tmp_path):
    rate = 100e6 / 8
    got = {}
    for delay in (0.005, 0.020):
        r = whatif(pingpong, "--platform",
                   platform(tmp_path, f"delay={delay * 1e3:g}ms,rate=100mbit"), "--json",
                   "--no-tcp")
        assert r.returncode == 0, r.stderr[-2000:]
        out = json.loads(r.stdout)
        # N round trips of BYTES each way, then the barrier: one delay between 2 sites
        hand = N * 2 * (delay + BYTES / rate) + delay
        within_the_replays_bounds(out, hand, 0.02)
        top = out["patterns"][0]
        assert top["pattern"] in ("MPI_Recv (cross-site)", "MPI_Send (cross-site)"), out
        got[delay] = out
    # 15 ms more each way, 2N + 1 times; either replay may hide up to its no-WAN time
    more, base = got[0.020]["predicted_s"] - got[0.005]["predicted_s"], got[0.005]["no_wan_s"]
    assert (2 * N + 1) * 0.015 * 0.98 - base <= more <= (2 * N + 1) * 0.015 * 1.02 + base, got


@needs_simgrid
@pytest.mark.native
def test_a_rank_run_late_hides_wan_time_within_the_bounds(pingpong_exe, tmp_path):
    """Rank 1 kept 100 ms from its first receive (as a loaded host's scheduler may keep
    it, for less): the first crossing (9 ms) passes while it waits, so the WAN cost falls
    short of the hand computation by that much, which the bounds allow for; the plain
    'hand within 2-3 %' the prediction test used to assert fails here on a correct replay
    (measured: WAN cost 175.2 ms, hand 185 ms, no-WAN replay 35 ms with a 30 ms stall)."""
    trace = traced_pingpong(pingpong_exe, tmp_path / "trace", stall_us=100_000)
    delay, rate = 0.005, 100e6 / 8
    r = whatif(trace, "--platform", platform(tmp_path, "delay=5ms,rate=100mbit"), "--json",
               "--no-tcp")
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout)
    hand = N * 2 * (delay + BYTES / rate) + delay
    within_the_replays_bounds(out, hand, 0.02)
    assert out["no_wan_s"] >= 0.100, out
    assert out["wan_cost_s"] < hand * 0.97, (hand, out)


@needs_simgrid
@pytest.mark.native
def test_extrapolation_replicates_the_pairs(pingpong, tmp_path):
    links = platform(tmp_path, "delay=5ms,rate=100mbit", sites=None)
    r = whatif(pingpong, "--platform", links, "--sites", 4, "--ranks-per-site", 3, "--json",
               "--no-tcp")
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout)
    assert out["ranks"] == 12 and out["sites"] == ["A", "B", "C", "D"]
    # each traced pair becomes 3 pairs of sites A>B and C>D: 3 flows share each link
    rate = 100e6 / 8
    hand = N * 2 * (0.005 + 3 * BYTES / rate)
    assert out["predicted_s"] > hand * 0.98, out
    r = whatif(pingpong, "--platform", links, "--sites", 3, "--json")
    assert r.returncode == 2
    assert "3 sites is not a multiple of the trace's 2 sites" in r.stderr, r.stderr
    r = whatif(pingpong, "--platform", links, "--sites", 4, "--ranks-per-site", 0)
    assert r.returncode == 2 and "must be a positive integer" in r.stderr, r.stderr


@needs_simgrid
@pytest.mark.native
def test_table_names_the_dominant_pattern(pingpong, tmp_path):
    r = whatif(pingpong, "--platform", platform(tmp_path, "delay=10ms,rate=1gbit"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "predicted run time:" in r.stdout and "WAN costs" in r.stdout
    assert "dominant: MPI_" in r.stdout and "cross-site" in r.stdout


def test_missing_trace_is_a_clear_error(tmp_path):
    links = platform(tmp_path, "delay=10ms")
    r = whatif(tmp_path / "nope", "--platform", links)
    assert r.returncode == 2 and "no such folder" in r.stderr
    (tmp_path / "empty").mkdir()
    r = whatif(tmp_path / "empty", "--platform", links)
    assert r.returncode == 2 and "holds no trace (rank-*.ismt)" in r.stderr


@pytest.mark.native
def test_bad_platform_is_a_clear_error(pingpong, tmp_path):
    r = whatif(pingpong, "--platform", tmp_path / "missing.toml")
    assert r.returncode == 2 and "missing.toml: no such file" in r.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('sites = 2\ndefault = "delay=10"\n')
    r = whatif(pingpong, "--platform", bad)
    assert r.returncode == 2 and "'10' is not a time" in r.stderr, r.stderr
    bad.write_text('sites = 2\nlinkz = 3\n')
    r = whatif(pingpong, "--platform", bad)
    assert r.returncode == 2 and "unknown key(s) linkz" in r.stderr, r.stderr
    bad.write_text('sites = 2\n[links]\n"A-Q" = "delay=1ms"\n')
    r = whatif(pingpong, "--platform", bad)
    assert r.returncode == 2 and "names site 'Q'" in r.stderr, r.stderr
    r = whatif(pingpong, "--platform", platform(tmp_path, "delay=1ms"), "--lan", "rate=fast")
    assert r.returncode == 2 and "--lan: bad link spec" in r.stderr, r.stderr


def test_layout_offsets_meet_every_receive():
    """Every simulated send finds the replica that receives it, whatever the traced pairs
    (a unit test of the extrapolation rule, no simulation)."""
    from isthmus.whatif.scale import Layout

    t_site, t_local = [0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2]
    lay = Layout(["A", "B", "C", "D"], [6, 6, 6, 6], t_site, t_local, [3, 3])
    for r in range(lay.size):
        t = lay.template(r)
        assert (t_site[t], t_local[t]) == (lay.site(r) % 2, lay.local(r) % 3)
        for p in range(6):
            dst = lay.send_peer(r, t, p)
            assert lay.template(dst) == p
            assert lay.recv_peer(dst, p, t) == r


@needs_simgrid
@pytest.mark.native
def test_rendezvous_without_early_data_costs_a_round_trip_more(pingpong, tmp_path):
    """Above --eager with --early 0, a message is RTS, CTS, then the data: 3 delays."""
    delay, rate = 0.010, 100e6 / 8
    r = whatif(pingpong, "--platform", platform(tmp_path, "delay=10ms,rate=100mbit"),
               "--eager", "16k", "--early", "0", "--json", "--no-tcp")
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout)
    hand = N * 2 * (3 * delay + BYTES / rate) + delay
    within_the_replays_bounds(out, hand, 0.03)


@pytest.mark.parametrize("kind", ["barrier", "bcast", "reduce", "allreduce", "gather",
                                  "scatter", "allgather", "reduce_scatter", "scan", "alltoall"])
def test_collective_schedules_pair_every_send_with_a_receive(kind):
    """For every member and root, the two-level schedule's sends and receives match one
    for one (else the replay would hang), and only the leaders' phase crosses sites."""
    from collections import Counter

    from isthmus.whatif.collectives import schedule

    site = {m: s for s, ms in enumerate([[0, 1, 2], [3, 4, 5, 6, 7], [8]]) for m in ms}
    members = [5, 0, 8, 3, 1, 7, 2, 6, 4]          # comm rank order need not be site order
    for root in ([-1] if kind in ("barrier", "allreduce", "allgather", "reduce_scatter",
                                  "scan", "alltoall") else members):
        sends, recvs = Counter(), Counter()
        for me in members:
            for step in schedule(kind, f"t-{kind}-{root}", members, root, me, site.get, 8):
                sends.update((me, to) for to, _ in step.sends)
                recvs.update((frm, me) for frm in step.recvs)
        assert sends == recvs, (kind, root, sends - recvs, recvs - sends)
        cross = {(a, b) for a, b in sends if site[a] != site[b]}
        if kind == "alltoall":
            assert len(cross) == 3 * 2      # one per ordered pair of sites, between leaders
        elif kind in ("barrier", "allreduce", "allgather", "reduce_scatter"):
            assert len(cross) == 3 * 2
        elif kind == "scan":
            assert len(cross) == 2
        else:
            assert len(cross) == 2          # to or from the root's site


@pytest.mark.native
def test_a_simulator_that_dies_is_named_with_its_signal(pingpong, tmp_path, monkeypatch):
    """A replay killed from outside (or by the OOM killer) says so in one line, instead of
    showing SimGrid's start-up chatter as the reason."""
    fake = tmp_path / "python3"
    fake.write_text('#!/bin/sh\n[ "$1" = "-c" ] && exit 0\n'
                    'echo "[0.000000] [xbt_cfg/INFO] Configuration change" >&2\nkill -TERM $$\n')
    fake.chmod(0o755)
    monkeypatch.setenv("ISTHMUS_SIMGRID_PYTHON", str(fake))
    r = whatif(pingpong, "--platform", platform(tmp_path, "delay=1ms"))
    assert r.returncode == 2, r.stderr
    assert "the SimGrid replay failed (given links): the simulator was killed by signal 15 " \
           "SIGTERM" in r.stderr, r.stderr
    assert "xbt_cfg" not in r.stderr


# --- what TCP adds on the gateways' WAN connections (whatif/tcp.py) -------------------

def test_slow_start_after_idle_holds_a_message_for_its_round_trips():
    """A connection idle for longer than its RTO sends 10 segments, then twice as many a
    round trip later, and so on: 100 000 B go in 14 480 + 28 960 + 56 560. A round starts
    when the previous round's first TSO frame (2 segments) is acknowledged, a round trip
    and that frame's time on the link after it left, so the last byte leaves 2 x (RTT +
    2 segments at the rate) and 56 560 B after the message was handed over."""
    from isthmus.whatif.tcp import Ramp, mss
    rtt, rate = 0.020, 100e6 / 8
    ramp = Ramp(rtt, rate, mtu=1500)
    iw = 10 * mss(1500)
    assert iw == 14_480
    size = 100_000
    hold = ramp.delay(1.0, size)
    left = size - iw - 2 * iw
    frame = 2 * mss(1500) / rate
    assert hold == pytest.approx(2 * (rtt + frame) + left / rate - size / rate, rel=1e-9)
    # the window has grown (the burst was window-limited): once it is acknowledged, the
    # next message goes at once
    t = 1.0 + 4 * rtt
    assert ramp.delay(t, 50_000) == 0.0
    # within one RTO (RTT + 200 ms) of idle the window stays open
    assert ramp.delay(t + 0.2, 50_000) == 0.0
    # after longer, it restarts and the first round trips come back
    assert ramp.delay(3.0, size) > rtt
    assert ramp.restarts == 2


def test_slow_start_ends_at_the_bandwidth_delay_product():
    """Once the window covers rate x RTT, the link's bandwidth is what limits: a burst of
    1 MB after idle waits for the rounds below the BDP (250 kB at 100 Mbit/s, 20 ms) and
    no more, and bytes queued behind each other are not held for their queueing."""
    from isthmus.whatif.tcp import Ramp
    rtt, rate = 0.020, 100e6 / 8
    ramp = Ramp(rtt, rate)
    sent, t, w = 0.0, 0.0, 14_480.0
    while w < rate * rtt:                 # rounds that are window-limited
        sent, t, w = sent + w, t + rtt, 2 * w
    ramp_end = t + (1_000_000 - sent) / rate
    hold = ramp.delay(0.0, 1_000_000)
    # each round also waits for its first TSO frame's time on the link (a few %)
    assert hold == pytest.approx(ramp_end - 1_000_000 / rate, rel=0.05)
    assert 3 * rtt < hold < 4 * rtt      # 5 rounds, less what their bytes take at the rate
    # open window: four messages at once are not held (the link serialises them)
    for _ in range(4):
        assert ramp.delay(0.2, 100_000) == 0.0


def test_a_paced_window_leaves_over_half_a_round_trip():
    """SO_MAX_PACING_RATE turns on TCP's own pacing, at 2 x cwnd x MSS / RTT in slow start
    (tcp_pacing_ss_ratio): 10 000 B after idle, on a fast link paced at its own rate,
    leave in TSO frames of 2 segments spaced by their length at 2 x 14 480 B / 60 ms
    (482 667 B/s), not at once; the first frame after idle waits only half its length
    (the kernel's credit for a sender behind schedule). Measured in the site
    namespaces: pacing_rate 3.8 Mbit/s with cwnd 10 on a 60 ms round trip
    (bench/notebook/whatif.md, run 7). Without the
    pacing option the same bytes leave at the link's rate."""
    from isthmus.whatif.tcp import Ramp, mss
    rtt, rate = 0.060, 25e6
    seg = mss(1500)
    paced = Ramp(rtt, rate, pace=rate)
    assert paced.pacing_rate(paced.c) == pytest.approx(2 * 10 * seg / rtt)
    hold = paced.delay(1.0, 10_000)
    frames = 10_000 // (2 * seg)          # full frames before the last one
    last = 10_000 - frames * 2 * seg
    ss = 2 * 10 * seg / rtt
    assert hold == pytest.approx((frames * 2 * seg - seg) / ss + last / rate - 10_000 / rate,
                                 rel=1e-9)
    assert hold > 0.3 * rtt / 2
    assert Ramp(rtt, rate).delay(1.0, 10_000) == 0.0


def test_the_window_counts_segments_and_grows_only_while_it_is_full():
    """The window is 10 segments, however small: 12 messages of 100 B handed over 5 ms
    apart each leave alone (the pacing has let the previous one go), so the 11th waits
    for the first one's acknowledgement, a round trip after it left. And a connection
    that never had more than a few segments in flight does not grow its window (Linux's
    tcp_is_cwnd_limited): 30 such messages spread over round trips leave it at 10
    segments, so 20 000 B after them still go in two rounds."""
    from isthmus.whatif.tcp import Ramp, mss
    rtt, rate = 0.060, 25e6
    ramp = Ramp(rtt, rate, pace=rate)
    holds = [ramp.delay(1.0 + 0.005 * k, 100) for k in range(12)]
    assert max(holds[:10]) == 0.0
    assert holds[10] == pytest.approx(1.0 + rtt + 100 / rate - (1.0 + 0.050), abs=1e-6)
    trickle = Ramp(rtt, rate, pace=rate)
    for k in range(30):
        trickle.delay(1.0 + 0.03 * k, 100)          # at most 2 in flight
    assert trickle.c.cwnd == 10
    hold = trickle.delay(1.0 + 0.03 * 29 + 0.001, 20_000)
    assert hold > rtt                                 # 14 480 B, then the rest a round trip later
    assert 20_000 > 10 * mss(1500)


def test_a_gateway_acknowledges_what_it_receives_with_frames_that_take_segments():
    """Paired directions write each other's ACK frames (session.c): after 8 frames
    received, or when the last acknowledgement is 2 ms old. 16 frames of 100 B from A to
    B in one TSO frame arrive together: one ACK frame from B at once. Frames from A that
    arrive 5 ms apart are each acknowledged at once. B's own data frames carry the
    acknowledgement, so while B sends, no ACK frame is needed. The ACK frames take
    segments of B's window: B's 11th message, 5 ms apart as in the test above, waits for
    the window a round trip sooner when A has sent B frames to acknowledge."""
    from isthmus.whatif.tcp import ACK_FRAME, Ramp, pair
    rtt, rate = 0.060, 25e6
    ab, ba = Ramp(rtt, rate, pace=rate), Ramp(rtt, rate, pace=rate)
    pair({(0, 1): ab, (1, 0): ba})
    for _ in range(16):
        ab.delay(1.0, 100)
    ba.settle(1.5)
    # the first 100 B left alone, the other 15 in one frame: two arrivals, 2 ACKs
    assert ba.acks_sent == 2 and ba.c.written == 2 * ACK_FRAME
    for k in range(5):
        ab.delay(2.0 + 0.005 * k, 100)
    ba.settle(2.5)
    assert ba.acks_sent == 7
    quiet = [ba.delay(3.0 + 0.005 * k, 100) for k in range(11)]
    assert ba.acks_sent == 7                  # B's frames carry the acknowledgements
    assert max(quiet) == 0.0 or quiet.index(next(h for h in quiet if h > 0)) == 10
    ab2, ba2 = Ramp(rtt, rate, pace=rate), Ramp(rtt, rate, pace=rate)
    pair({(0, 1): ab2, (1, 0): ba2})
    for k in range(5):                        # 5 frames to acknowledge, 5 ms apart
        ab2.delay(5.0 + 0.005 * k, 100)
    held = [ba2.delay(5.0 + rtt / 2 + 0.0025 + 0.005 * k, 100) for k in range(8)]
    assert ba2.acks_sent >= 4
    assert max(held) > 0.0                    # ACK frames took the window's segments
    alone = Ramp(rtt, rate, pace=rate)
    assert max(alone.delay(5.0 + rtt / 2 + 0.0025 + 0.005 * k, 100) for k in range(8)) == 0.0


def test_a_message_goes_on_from_the_last_ones_simulation():
    """A Ramp keeps the last message's forward simulation while bytes wait (Ramp.proj),
    so that a burst of n messages does not cost n^2 / 2 frames. The holds must be those
    of simulating the whole backlog again for every message: 3 000 messages of mixed
    sizes at mixed intervals on two paired directions, with and without the shortcut."""
    import random
    from isthmus.whatif.tcp import Ramp, pair

    class Again(Ramp):
        def _write(self, *a):
            super()._write(*a)
            self.proj = None

    def holds(cls, seed):
        rnd = random.Random(seed)
        ab, ba = cls(0.06, 25e6, 1500, 6e6, 0.03), cls(0.06, 25e6, 1500, 6e6, 0.03)
        pair({(0, 1): ab, (1, 0): ba})
        t, out = 1.0, []
        for _ in range(3000):
            t += rnd.choice([0.0, 0.0, 1e-6, 1e-4, 0.002, 0.03, 0.4])
            r = ab if rnd.random() < 0.6 else ba
            out.append(r.delay(t, rnd.choice([96, 96, 500, 3000, 20_000, 200_000])))
        return out

    for seed in range(2):
        got = holds(Ramp, seed)
        assert got == holds(Again, seed)
        assert sum(h > 0 for h in got) > 1000          # the window and pacing did hold


def test_payload_rate_pays_the_headers_of_each_segment():
    from isthmus.netemu.matrix import load_matrix
    from isthmus.whatif.platform import payload_rate, tcp_ramps
    from isthmus.whatif.tcp import goodput_share
    assert goodput_share(1500) == pytest.approx(1448 / 1514)
    assert goodput_share(9000) == pytest.approx(8948 / 9014)
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "l.toml"
        p.write_text('sites = 2\ndefault = "delay=10ms,rate=100mbit"\n[links]\n'
                     '"A>B" = "delay=30ms,rate=100mbit,mtu=9000"\n')
        m = load_matrix(p)
    ramps = tcp_ramps(m)
    # the gateways pace at the slowest rate, 100 Mbit/s here, which turns on TCP's pacing
    assert ramps["0>1"] == pytest.approx([0.040, 12.5e6 * 8948 / 9014, 9000,
                                          12.5e6 * 8948 / 9014, 0.030])
    assert ramps["1>0"][0] == pytest.approx(0.040)
    assert payload_rate(m.links[(1, 0)], False) == 12.5e6


@needs_simgrid
@pytest.mark.native
def test_tcp_adds_the_first_round_trips_and_the_headers(pingpong, tmp_path):
    """The ping-pong's first message each way finds its connection cold (never used:
    slow start), 50 000 B in 14 480 + 28 960 + 6 560: 2 round trips less what the first
    two rounds' bytes would have taken at the rate. Every byte also pays its TCP/IP
    headers, and every message its gateway frame (48 + 32 B). The later messages find the
    window open (a round trip apart, well within the RTO)."""
    delay, rate = 0.005, 100e6 / 8
    rtt = 2 * delay
    links = platform(tmp_path, "delay=5ms,rate=100mbit")
    got = {}
    for mode in ("--no-tcp", None):
        r = whatif(pingpong, "--platform", links, "--json", "--no-baseline",
                   *([mode] if mode else []))
        assert r.returncode == 0, r.stderr[-2000:]
        got[mode] = json.loads(r.stdout)["predicted_s"]
    share = 1448 / 1514
    hand = (2 * (2 * rtt - 3 * 14_480 / rate) + 2 * N * BYTES / rate * (1 / share - 1)
            + 2 * N * 80 / (rate * share))
    assert hand * 0.9 <= got[None] - got["--no-tcp"] <= hand * 1.1, (hand, got)


def test_a_constructor_is_replayed_as_its_agreement(tmp_path):
    """MPI_Cart_create agrees on a context id: an allreduce of one int among the
    members (native/src/core/comm.c), which crosses the sites; the trace names the
    communicator the call created through its COMM record, read just before the call."""
    from isthmus.trace.reader import Call, Clock, Comm, RankTrace, Trace, _keys
    from isthmus.whatif.events import convert
    ranks = {}
    for r in range(2):
        rt = RankTrace(rank=r, info={"site": r}, clock=Clock())
        rt.comms = {0: Comm(0, False, [0, 1], [], r), 5: Comm(5, False, [0, 1], [], r)}
        rt.calls = [Call("MPI_Init", 0.0, 1e6, 0, 0, 0),
                    Call("MPI_Cart_create", 2e6, 3e6, 0, 0, 0, created=5),
                    Call("MPI_Comm_dup", 4e6, 5e6, 0, 0, 0),       # no COMM record
                    Call("MPI_Finalize", 6e6, 7e6, 0, 0, 0)]
        ranks[r] = rt
        _keys(rt)
    trace = Trace(tmp_path, ranks, {}, ["A", "B"], True, 7e6, {})
    conv = convert(trace)
    for r in range(2):
        ks = [op for op in conv.templates[r] if op[0] == "k"]
        assert [op[:3] for op in ks] == [["k", "MPI_Cart_create", "allreduce"]], conv.templates
        assert ks[0][5] == 4 and conv.comms[ks[0][3]]["members"] == [0, 1]
    assert conv.agreements == 2 and conv.constructors == {"MPI_Comm_dup": 2}


@needs_simgrid
def test_gateway_frames_add_their_headers_to_each_crossing(tmp_path):
    """Rank 0 sends 10 empty messages across, one after the other's reply: each crossing
    carries a 48-byte frame header and a 32-byte link header, which at 8 000 B/s is 10 ms
    a crossing more than CM02 alone (20 crossings)."""
    from isthmus.netemu.matrix import load_matrix
    from isthmus.netemu.spec import parse_link_spec
    from isthmus.whatif.predict import _run_engine, simgrid_python
    from isthmus.whatif.platform import write_platform
    links = platform(tmp_path, "delay=1ms,rate=64kbit")   # 8 000 B/s
    matrix = load_matrix(links)
    write_platform(tmp_path / "p.xml", matrix, [1, 1], parse_link_spec("delay=1us"))
    ping = [["s", "MPI_Send", 1, 1, 0, 0, 0], ["w", "MPI_Send", [1]],
            ["r", "MPI_Recv", 2, 1, 0, 0, 0], ["w", "MPI_Recv", [2]]]
    pong = [["r", "MPI_Recv", 1, 0, 0, 0, 0], ["w", "MPI_Recv", [1]],
            ["s", "MPI_Send", 2, 0, 0, 0, 0], ["w", "MPI_Send", [2]]]
    job = {"site_names": ["A", "B"], "counts": [1, 1], "trace_site": [0, 1],
           "trace_local": [0, 0], "trace_counts": [1, 1],
           "templates": {"0": ping * 10, "1": pong * 10},
           "comms": {"0": {"members": [0, 1], "world": True}}, "eager": 65536,
           "early": 524288, "platform": str(tmp_path / "p.xml")}
    exe = simgrid_python()
    plain = _run_engine(exe, dict(job, framing=False), tmp_path, "plain")["end"]
    framed = _run_engine(exe, dict(job, framing=True), tmp_path, "framed")["end"]
    assert plain == pytest.approx(20 * 0.001, rel=0.05)
    assert framed - plain == pytest.approx(20 * 80 / 8000, rel=0.02), (plain, framed)


def test_a_split_of_the_world_agrees_on_the_world(tmp_path):
    """Each rank's MPI_Comm_split made a communicator of its own site ({0}, {1}): together
    they cover every rank, so the agreement is replayed on the world (it crosses the
    sites, as the parent's allreduce does). A constructor only some ranks made agrees
    among its own members."""
    from isthmus.trace.reader import Call, Clock, Comm, RankTrace, Trace, _keys
    from isthmus.whatif.events import convert
    ranks = {}
    for r in range(3):
        rt = RankTrace(rank=r, info={"site": r}, clock=Clock())
        rt.comms = {0: Comm(0, False, [0, 1, 2], [], r), 5: Comm(5, False, [r], [], 0)}
        rt.calls = [Call("MPI_Init", 0.0, 1e6, 0, 0, 0),
                    Call("MPI_Comm_split", 2e6, 3e6, 0, 0, 0, created=5)]
        if r < 2:
            rt.comms[6] = Comm(6, False, [0, 1], [], r)
            rt.calls.append(Call("MPI_Comm_create", 4e6, 5e6, 0, 0, 0, created=6))
        rt.calls.append(Call("MPI_Finalize", 6e6, 7e6, 0, 0, 0))
        _keys(rt)
        ranks[r] = rt
    conv = convert(Trace(tmp_path, ranks, {}, ["A", "B", "C"], True, 7e6, {}))
    for r in range(3):
        ks = [op for op in conv.templates[r] if op[0] == "k"]
        assert ks[0][1] == "MPI_Comm_split" and conv.comms[ks[0][3]]["world"], ks
        if r < 2:
            assert ks[1][1] == "MPI_Comm_create" and conv.comms[ks[1][3]]["members"] == [0, 1]
            assert not conv.comms[ks[1][3]]["world"]


@needs_simgrid
@pytest.mark.native
def test_timeline_lists_each_ranks_blocking_calls(pingpong, tmp_path):
    """predict(timeline=True) (bench/whatif_calls.py) gives every rank its blocking calls
    in order, each within the replayed run: the ping-pong's sends and receives, then the
    closing barrier."""
    from isthmus.netemu.matrix import load_matrix
    from isthmus.netemu.spec import parse_link_spec
    from isthmus.trace.reader import load
    from isthmus.whatif.events import convert
    from isthmus.whatif.predict import predict
    trace = load(pingpong, gateways=False)
    p = predict(trace, convert(trace), load_matrix(platform(tmp_path, "delay=5ms")),
                parse_link_spec("delay=1us"), None, 64 << 10, 512 << 10, baseline=False,
                timeline=True)
    for rank in (0, 1):
        tl = p.timelines[rank]
        assert len(tl) >= 2 * N, tl
        assert all(0 <= a <= b <= p.time + 1e-9 for _, a, b in tl)
        assert [a for _, a, _ in tl] == sorted(a for _, a, _ in tl)
    assert predict(trace, convert(trace), load_matrix(platform(tmp_path, "delay=5ms")),
                   parse_link_spec("delay=1us"), None, 64 << 10, 512 << 10,
                   baseline=False).timelines is None


def _rma_job(tmp_path: Path, spec: str, rank0: list, rank1: list) -> float:
    """The replay's end (s) of two hand-made ranks on 2 sites linked by spec, CM02 only."""
    from isthmus.netemu.matrix import load_matrix
    from isthmus.netemu.spec import parse_link_spec
    from isthmus.whatif.platform import write_platform
    from isthmus.whatif.predict import _run_engine, simgrid_python
    matrix = load_matrix(platform(tmp_path, spec))
    write_platform(tmp_path / "p.xml", matrix, [1, 1], parse_link_spec("delay=1us"))
    job = {"site_names": ["A", "B"], "counts": [1, 1], "trace_site": [0, 1],
           "trace_local": [0, 0], "trace_counts": [1, 1],
           "templates": {"0": rank0, "1": rank1},
           "comms": {"0": {"members": [0, 1], "world": True}}, "eager": 65536,
           "early": 524288, "platform": str(tmp_path / "p.xml"), "framing": False}
    return _run_engine(simgrid_python(), job, tmp_path, "rma")["end"]


D, RATE = 0.010, 100_000.0  # 10 ms one way, 800 kbit/s: 100 000 B/s
LINK = "delay=10ms,rate=800kbit"


@needs_simgrid
def test_a_get_under_a_lock_costs_its_round_trips_and_its_bytes(tmp_path):
    """MPI_Win_lock of a target at another site waits for the GRANT (a round trip); the
    get's request and its reply with the bytes overlap the UNLOCK and its ACK, so
    lock + get + unlock is 2 round trips and the bytes once (docs/design.md). The target
    takes no part: its own 300 ms of work does not add to the origin's time."""
    nbytes = 5000
    read = [["y", "MPI_Win_lock", "lock", "0.0", [1], 0],
            ["a", "MPI_Get", "get", "0.0", 1, 0, nbytes, 0],
            ["y", "MPI_Win_unlock", "unlock", "0.0", [1], 0]]
    hand = 4 * D + nbytes / RATE
    assert _rma_job(tmp_path, LINK, read, []) == pytest.approx(hand, rel=0.02)
    three = _rma_job(tmp_path, LINK, read * 3, [["c", 0.3]])
    assert three == pytest.approx(0.3, rel=0.02)        # the slower: the target's work
    assert _rma_job(tmp_path, LINK, read * 3 + [["c", 0.3]], [["c", 0.3]]) == \
        pytest.approx(3 * hand + 0.3, rel=0.02)


@needs_simgrid
def test_a_flush_answers_after_the_puts_before_it(tmp_path):
    """A put leaves at once; MPI_Win_flush's ACK leaves the target once the FLUSH and the
    put's bytes are there: one way with the bytes, one way back. A small put (batched)
    travels in the flush's own frame stream, with its segment."""
    big, small = 20_000, 1000
    lock = ["y", "MPI_Win_lock_all", "lock_all", "0.0", [], 0x04]    # nocheck: no trip
    flush = ["y", "MPI_Win_flush", "flush", "0.0", [1], 0]
    got = _rma_job(tmp_path, LINK, [lock, ["a", "MPI_Put", "put", "0.0", 1, big, 0, 0],
                                    flush], [])
    assert got == pytest.approx(2 * D + big / RATE, rel=0.02)
    got = _rma_job(tmp_path, LINK, [lock, ["a", "MPI_Put", "put", "0.0", 1, small, 0, 0],
                                    flush], [])
    assert got == pytest.approx(2 * D + (small + 16) / RATE, rel=0.02)


@needs_simgrid
def test_a_fence_epoch_ends_when_the_puts_have_arrived(tmp_path):
    """Both ranks put to each other between two fences: each fence is one exchange (a
    one-way delay), and the second ends at the target once the other's bytes are there."""
    nbytes = 10_000
    fence = ["y", "MPI_Win_fence", "fence", "0.0", [], 0]

    def rank(peer):
        return [fence, ["a", "MPI_Put", "put", "0.0", peer, nbytes, 0, 0], fence]

    got = _rma_job(tmp_path, LINK, rank(1), rank(0))
    assert got == pytest.approx(2 * D + nbytes / RATE, rel=0.02)


def test_one_sided_records_become_replay_operations(tmp_path):
    """The RMA and WIN records of a trace become the replay's operations: the window's
    creation its agreement and the gather of sizes, each call with its global target and
    bytes, a request form completed where its request is."""
    from isthmus.trace import records as R
    from isthmus.trace.reader import Call, Clock, Comm, RankTrace, Trace, _keys
    from isthmus.whatif.events import convert

    def rma(op, target, out=0, back=0, flags=0, req=0):
        return (R.RMA, flags, 7, target, op, 0, 0, out, back, req)

    ranks = {}
    for r in range(2):
        rt = RankTrace(rank=r, info={"site": r}, clock=Clock())
        rt.comms = {0: Comm(0, False, [0, 1], [], r)}
        calls = [Call("MPI_Init", 0.0, 1e6, 0, 0, 0),
                 Call("MPI_Win_create", 2e6, 3e6, 0, 0, 0, details=[(R.WIN, 0, 7, 0)])]
        if r == 0:
            calls += [Call("MPI_Win_lock", 4e6, 5e6, 0, 0, 0, details=[rma(16, 1, flags=2)]),
                      Call("MPI_Rget", 5e6, 6e6, 0, 0, 0,
                           details=[rma(2, 1, back=800, flags=R.RMA_REQ, req=99)]),
                      Call("MPI_Put", 6e6, 7e6, 0, 0, 0, details=[rma(1, 1, out=24)]),
                      Call("MPI_Wait", 7e6, 8e6, 0, 0, 0,
                           details=[(R.DONE, 0, 99, -1, -1, 0)]),
                      Call("MPI_Win_unlock", 8e6, 9e6, 0, 0, 0, details=[rma(17, 1)])]
        calls += [Call("MPI_Win_free", 10e6, 11e6, 0, 0, 0,
                       details=[(R.WIN, R.WIN_FREED, 7, 0xFFFFFFFF)]),
                  Call("MPI_Finalize", 12e6, 13e6, 0, 0, 0)]
        rt.calls = calls
        _keys(rt)
        ranks[r] = rt
    conv = convert(Trace(tmp_path, ranks, {}, ["A", "B"], True, 13e6, {}))
    ops = [op for op in conv.templates[0] if op[0] != "c"]
    assert ops == [["k", "MPI_Win_create", "allreduce", 0, -1, 4],
                   ["k", "MPI_Win_create", "allgather", 0, -1, 16],
                   ["y", "MPI_Win_lock", "lock", "0.0", [1], 2],
                   ["a", "MPI_Rget", "get", "0.0", 1, 0, 800, 1],
                   ["a", "MPI_Put", "put", "0.0", 1, 24, 0, 0],
                   ["w", "MPI_Wait", [1]],
                   ["y", "MPI_Win_unlock", "unlock", "0.0", [1], 0],
                   ["k", "MPI_Win_free", "barrier", 0, -1, 0]], ops
    assert [op[0] for op in conv.templates[1] if op[0] != "c"] == ["k", "k", "k"]
    assert conv.rma == {} and conv.rma_ops == 4


@needs_simgrid
@pytest.mark.native
def test_remote_reads_are_predicted_from_the_traces_rma_records(prefix, tmp_path):
    """examples/remote_read naive, traced across 2 sites (no link emulation: the replay
    sets the links): rank 1 reads READS blocks of 512 bytes from rank 0, each a lock, a
    get and an unlock, 2 round trips and the bytes. The replay's WAN cost in the timed
    phase is that, whatever the links; before the trace had RMA records it was 0 (the
    calls replayed as measured)."""
    walks, walk, block = 3, 4, 512
    trace, _ = build_and_trace(prefix.cc, REPO / "examples" / "remote_read.c", tmp_path, 2,
                               "1,1", args=("naive", walks, walk, 64, block),
                               libs=("-listhmus-patterns",))
    for delay in (0.005, 0.020):
        w = whatif(trace, "--platform", platform(tmp_path, f"delay={delay * 1e3:g}ms,"
                                                 "rate=100mbit"), "--json", "--no-tcp")
        assert w.returncode == 0, w.stderr[-2000:]
        out = json.loads(w.stdout)
        ph = next(p for p in out["phases"] if p["phase"] == 1)
        hand = walks * walk * (4 * delay + block / (100e6 / 8))
        assert hand * 0.97 <= ph["wan_cost_s"] <= hand * 1.03, (hand, ph)
        assert not any("one-sided" in n for n in out["notes"]), out["notes"]


@needs_simgrid
@pytest.mark.native
def test_every_kind_of_one_sided_call_replays_to_the_end(prefix, tmp_path):
    """tests/mpi/trace_rma.c (locks, lock_all, fetch-and-op, accumulate, flush, fences
    around an MPI_Rget, post/start/complete/wait) traced on 2 sites: its replay ends with
    no rank left waiting and no one-sided call replayed as measured. Rank 0 alone waits
    for at least 5 round trips (lock, unlock, flush, unlock_all to another site, and a
    PSCW start after the other site's post)."""
    trace, _ = build_and_trace(prefix.cc, REPO / "tests" / "mpi" / "trace_rma.c", tmp_path, 3,
                               "1,2")
    delay = 0.010
    w = whatif(trace, "--platform", platform(tmp_path, "delay=10ms,rate=100mbit"), "--json",
               "--no-tcp")
    assert w.returncode == 0, w.stderr[-2000:]
    out = json.loads(w.stdout)
    assert not any("one-sided" in n for n in out["notes"]), out["notes"]
    assert out["predicted_s"] >= 5 * 2 * delay, out
    kinds = {p["pattern"].split(" ")[0] for p in out["patterns"]}
    assert {"MPI_Win_lock", "MPI_Win_unlock", "MPI_Win_fence", "MPI_Win_start",
            "MPI_Win_wait", "MPI_Win_flush", "MPI_Wait"} <= kinds, kinds


@needs_simgrid
def test_an_exclusive_lock_waits_for_the_unlock_of_its_holder(tmp_path):
    """Two ranks at site B each lock rank 0 (site A) exclusively and hold the lock for
    100 ms of work. The request that arrives second waits at the target for the first
    holder's UNLOCK (3 delays and the work after the start), then its GRANT comes back:
    6 delays and both works in all. Shared locks do not wait: 4 delays and one work."""
    from isthmus.netemu.matrix import load_matrix
    from isthmus.netemu.spec import parse_link_spec
    from isthmus.whatif.platform import write_platform
    from isthmus.whatif.predict import _run_engine, simgrid_python
    write_platform(tmp_path / "p.xml", load_matrix(platform(tmp_path, LINK)), [1, 2],
                   parse_link_spec("delay=1us"))

    def hold(flags):
        return [["y", "MPI_Win_lock", "lock", "0.0", [0], flags], ["c", 0.1],
                ["y", "MPI_Win_unlock", "unlock", "0.0", [0], 0]]

    def run(flags):
        job = {"site_names": ["A", "B"], "counts": [1, 2], "trace_site": [0, 1, 1],
               "trace_local": [0, 0, 1], "trace_counts": [1, 2],
               "templates": {"0": [], "1": hold(flags), "2": hold(flags)},
               "comms": {"0": {"members": [0, 1, 2], "world": True}}, "eager": 65536,
               "early": 524288, "platform": str(tmp_path / "p.xml"), "framing": False}
        return _run_engine(simgrid_python(), job, tmp_path, f"lock{flags}")["end"]

    assert run(0x02) == pytest.approx(6 * D + 0.2, rel=0.02)
    assert run(0) == pytest.approx(4 * D + 0.1, rel=0.02)



def test_pacing_lets_a_lone_message_go_and_drains_a_backlog_at_the_pace():
    """Linux paces per TSO frame (tune.c's SO_MAX_PACING_RATE): a message alone leaves at
    once; 100 small ones handed over together leave, the first alone, then the others in
    frames of 2 segments (net.ipv4.tcp_min_tso_segs) each one frame's length at the pace
    after the previous, however fast the link; the window (10 segments) covers them, so
    only the pacing holds them. A message of 5 segments after idle sends 2, 2 and 1, the
    last frame one and a half frames' length at the pace after the first."""
    from isthmus.whatif.tcp import Ramp
    rate, pace = 680_000.0, 100_000.0
    alone = Ramp(0.056, rate, pace=pace)
    alone.delay(0.0, 96)              # the connection's first bytes: the window restarts
    assert alone.delay(10.0, 96) == 0.0
    backlog = Ramp(0.056, rate, pace=pace)
    holds = [backlog.delay(0.0, 96) for _ in range(100)]
    assert holds[0] == 0.0
    # 96 B alone (then half its length at the pace: the first frame after idle), 3 frames
    # of 2 896 B, then the last 816 B, which take their time at the rate
    ahead = 96 + 3 * 2 * 1448
    assert holds[-1] == pytest.approx((ahead - 48) / pace + (9600 - ahead) / rate - 96 / rate)
    five = Ramp(0.056, rate, pace=pace)
    five.delay(0.0, 96)
    assert five.delay(10.0, 5 * 1448) == pytest.approx(3 * 1448 / pace + 1448 / rate
                                                        - 5 * 1448 / rate)
    unpaced = Ramp(0.056, rate)       # at most the link's own queue (rounding may hold)
    assert max(unpaced.delay(0.0, 96) for _ in range(100)) <= 100 * 96 / rate * 1.001


@needs_simgrid
def test_every_wan_connection_is_paced_at_the_slowest_links_rate(tmp_path):
    """`isthmus run --wan-matrix` gives the gateways one rate, the matrix's slowest, and
    they pace every connection at it (tune.c): 20 messages of 10 000 B handed over at once
    from A to B drain at C's 100 000 B/s (less the TCP/IP headers), not at A-B's 1 MB/s.
    A matrix of equal links is paced at its own rate (only TCP's own pacing then holds)."""
    from isthmus.netemu.matrix import load_matrix
    from isthmus.netemu.spec import parse_link_spec
    from isthmus.whatif.platform import gateway_pace, tcp_ramps, write_platform
    from isthmus.whatif.predict import _run_engine, simgrid_python
    from isthmus.whatif.tcp import goodput_share
    links = tmp_path / "three.toml"
    links.write_text('sites = 3\ndefault = "delay=10ms,rate=8mbit"\n[links]\n'
                     '"A-C" = "delay=10ms,rate=800kbit"\n"B-C" = "delay=10ms,rate=800kbit"\n')
    matrix = load_matrix(links)
    pace = RATE * goodput_share(1500)
    assert gateway_pace(matrix) == pytest.approx(RATE)
    ramps = tcp_ramps(matrix)
    assert all(v[3] == pytest.approx(pace) for v in ramps.values())
    n, size = 20, 10_000
    sends = [["s", "MPI_Isend", i + 1, 1, 0, 0, size] for i in range(n)]
    recvs = [["r", "MPI_Recv", i + 1, 0, 0, 0, size] for i in range(n)]
    job = {"site_names": ["A", "B", "C"], "counts": [1, 1, 1], "trace_site": [0, 1, 2],
           "trace_local": [0, 0, 0], "trace_counts": [1, 1, 1],
           "templates": {"0": sends + [["w", "MPI_Waitall", list(range(1, n + 1))]],
                         "1": recvs + [["w", "MPI_Waitall", list(range(1, n + 1))]],
                         "2": []},
           "comms": {"0": {"members": [0, 1, 2], "world": True}}, "eager": 65536,
           "early": 524288, "framing": False, "platform": str(tmp_path / "p.xml")}
    write_platform(tmp_path / "p.xml", matrix, [1, 1, 1], parse_link_spec("delay=1us"),
                   tcp=True)
    exe = simgrid_python()
    paced = _run_engine(exe, dict(job, tcp=ramps), tmp_path, "paced")["end"]
    # Linux paces TSO frames of at least 2 segments (tcp_min_tso_segs), each the previous
    # one's length at the pace after it: all but the last frame's 176 B at the pace
    last = (n * size) % (2 * 1448)
    assert paced == pytest.approx(0.010 + (n * size - last) / pace
                                  + last / (1e6 * goodput_share(1500)), rel=0.01), paced
    unpaced = {k: v[:3] for k, v in ramps.items()}
    fast = _run_engine(exe, dict(job, tcp=unpaced), tmp_path, "unpaced")["end"]
    assert fast < 0.010 + 3 * 0.020 + n * size / (1e6 * goodput_share(1500)), fast
    # equal links: paced at their own rate, which only turns TCP's own pacing on
    even = load_matrix(platform(tmp_path, "delay=10ms,rate=8mbit", sites=3))
    assert all(v[3] == pytest.approx(v[1]) for v in tcp_ramps(even).values())


@needs_simgrid
def test_held_messages_leave_when_they_did_with_an_actor_each(tmp_path):
    """Eager messages that the window or the pacing holds back are put by their rank's
    outbox actor (engine._Outbox, which ends when it has none left and comes back at the
    next hold), not by one actor per message as before (commit 15d6be1), for
    speed: the prediction must not move. Rank 0 sends 10 x 10 000 B to B (paced at C's
    rate) and 10 x 500 B to C in turn, computes 0.5 s (the windows restart), then sends 5
    x 3 000 B to B. The actor-per-message engine replayed 1.197713 s with the TCP model of
    its day; the end pinned is the same engine's with TCP's own pacing, the window in
    segments and the ACK frames (tcp.py, bench/notebook/whatif.md run 7). Without the
    holds (no TCP model) it is another."""
    from isthmus.netemu.matrix import load_matrix
    from isthmus.netemu.spec import parse_link_spec
    from isthmus.whatif.platform import tcp_ramps, write_platform
    from isthmus.whatif.predict import _run_engine, simgrid_python
    links = tmp_path / "three.toml"
    links.write_text('sites = 3\ndefault = "delay=10ms,rate=8mbit"\n[links]\n'
                     '"A-C" = "delay=30ms,rate=800kbit"\n"B-C" = "delay=5ms,rate=800kbit"\n')
    matrix = load_matrix(links)
    write_platform(tmp_path / "p.xml", matrix, [1, 1, 1], parse_link_spec("delay=1us"), tcp=True)
    ops = {0: [], 1: [], 2: []}
    oid = 0
    for _ in range(10):
        for dst, size in ((1, 10_000), (2, 500)):
            oid += 1
            ops[0].append(["s", "MPI_Isend", oid, dst, 0, 0, size])
            ops[dst] += [["r", "MPI_Recv", oid, 0, 0, 0, size], ["w", "MPI_Recv", [oid]]]
    ops[0] += [["w", "MPI_Waitall", list(range(1, oid + 1))], ["c", 0.5]]
    late = [100 + i for i in range(5)]
    ops[0] += [["s", "MPI_Isend", i, 1, 1, 0, 3000] for i in late]
    ops[0].append(["w", "MPI_Waitall", late])
    ops[1] += [["r", "MPI_Recv", i, 0, 1, 0, 3000] for i in late]
    ops[1].append(["w", "MPI_Waitall", late])
    job = {"site_names": ["A", "B", "C"], "counts": [1, 1, 1], "trace_site": [0, 1, 2],
           "trace_local": [0, 0, 0], "trace_counts": [1, 1, 1],
           "templates": {str(r): v for r, v in ops.items()},
           "comms": {"0": {"members": [0, 1, 2], "world": True}}, "eager": 65536,
           "early": 524288, "framing": True, "platform": str(tmp_path / "p.xml")}
    exe = simgrid_python()
    held = _run_engine(exe, dict(job, tcp=tcp_ramps(matrix)), tmp_path, "held")
    assert held["restarts"] == 3
    assert held["end"] == pytest.approx(1.2064374083994223, abs=1e-6), held["end"]
    free = _run_engine(exe, dict(job, tcp={}), tmp_path, "free")["end"]
    assert abs(free - held["end"]) > 1e-3, (free, held["end"])
