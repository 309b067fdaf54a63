# tests/test_trace.py: `isthmus run --trace DIR` across 2 sites and the OTF2 export, checked
# with otf2-print (the OTF2 library's reader) against what the programs did: every call,
# every message and its bytes; and the generated wrappers are current.
from __future__ import annotations

import json
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

from trace_helpers import attr, build_and_trace, read_otf2, traced_run

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
    # every message arrives after it left, on the aligned clocks (ranks 1 -> 2 cross sites),
    # give or take what the alignment claims for the two clocks (clocks.json, ns): each
    # rank's map onto rank 0 is off by up to its error_ns, and an error that large is
    # about a one-way crossing of the gateways (the fastest exchange's half round trip),
    # which is all this message's lead is; the OTF2 times are whole nanoseconds
    first_send = min(e[1] for e in ev.of("MPI_SEND", 1))
    first_recv = min(e[1] for e in ev.of("MPI_RECV", 2))
    err = {p["id"]: p["error_ns"] for p in json.loads((trace / "clocks.json").read_text())["processes"]
           if p["kind"] == "rank"}
    assert first_recv - first_send > -(err[1] + err[2] + 2), (first_send, first_recv, err)
    # the ranks read the time-stamp counter exactly where this machine allows it
    from isthmus.trace.reader import load

    infos = [rt.info for rt in load(trace).ranks.values()]
    assert {i["clock"] for i in infos} == {"TSC" if tsc_usable() else "CLOCK_MONOTONIC"}
    for i in infos:
        if i["clock"] == "TSC":
            assert 0.01 < i["tsc_ns_per_tick"] < 100 and i["tsc_rate_error_ppm"] <= 50


def tsc_usable() -> bool:
    """What the tracer's clock.c decides, from the same facts, asked here independently."""
    if platform.machine() not in ("x86_64", "i386", "i686"):
        return False
    flags = next((ln.split(":", 1)[1].split() for ln in open("/proc/cpuinfo")
                  if ln.startswith("flags")), [])
    cs = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")
    return {"constant_tsc", "nonstop_tsc"} <= set(flags) and \
        cs.is_file() and cs.read_text().strip() == "tsc"


@pytest.mark.native
def test_trace_clock_monotonic_when_asked(ring, tmp_path):
    trace = tmp_path / "trace"
    r = traced_run(ring, trace, 2, "1,1", args=(2, 64), env={"ISTHMUS_TRACE_CLOCK": "monotonic"})
    assert r.returncode == 0 and "ring: ok" in r.stdout, (r.stdout + r.stderr)[-3000:]
    from isthmus.trace.reader import load

    t = load(trace)
    assert t.aligned and all(rt.info["clock"] == "CLOCK_MONOTONIC" and
                             rt.info["clock_why"] == "ISTHMUS_TRACE_CLOCK=monotonic"
                             for rt in t.ranks.values())
    ev = read_otf2(_export(trace) and trace / "otf2" / "traces.otf2")
    assert min(e[1] for e in ev.of("MPI_RECV", 1)) > min(e[1] for e in ev.of("MPI_SEND", 0))


def test_python_reader_layouts_match_the_c_records(prefix):
    from isthmus.trace import records as R

    out = subprocess.run([str(prefix.root / "bin" / "isthmus-trace-otf2"), "--layout"],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    head = out[0].split()
    assert int(head[1]) == R.HDR.size and int(head[3]) == R.FILE_HDR.size
    sizes = {int(k): int(v) for k, v in (ln.split() for ln in out[1:] if ln)}
    assert sizes == {k: R.HDR.size + b.size for k, b in R.BODY.items()}


HALO = re.compile(r"halo: rank (\d+): isend (\d+) bytes (\d+), irecv (\d+) bytes (\d+), "
                  r"allreduce (\d+)")


@pytest.fixture(scope="module")
def halo_trace(prefix, tmp_path_factory):
    d = tmp_path_factory.mktemp("trace-halo")
    exe = d / "halo"
    r = subprocess.run([str(prefix.cc), "-O2", "-o", str(exe), str(REPO / "examples" / "halo.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    trace = d / "trace"
    r = traced_run(exe, trace, 4, "2,2", args=(10, 256))
    assert r.returncode == 0 and "halo: ok" in r.stdout, (r.stdout + r.stderr)[-3000:]
    did = {int(m.group(1)): [int(x) for x in m.groups()[1:]] for m in HALO.finditer(r.stdout)}
    assert sorted(did) == [0, 1, 2, 3]
    x = subprocess.run([sys.executable, "-m", "isthmus", "trace", "export", "--format", "all",
                        str(trace)], capture_output=True, text=True)
    assert x.returncode == 0, x.stderr
    return trace, did


@pytest.mark.native
def test_halo_counts_in_otf2_match_what_the_program_did(halo_trace):
    trace, did = halo_trace
    ev = read_otf2(trace / "otf2" / "traces.otf2")
    for rank, (isends, sbytes, irecvs, rbytes, reduces) in did.items():
        assert ev.enters[(rank, "MPI_Isend")] == isends
        assert ev.enters[(rank, "MPI_Irecv")] == irecvs
        assert ev.enters[(rank, "MPI_Allreduce")] == reduces + 1
        assert ev.enters[(rank, "MPI_Waitall")] == isends // 4
        sends = ev.of("MPI_ISEND", rank)
        assert len(sends) == isends and sum(int(attr(e[2], "Length")) for e in sends) == sbytes
        # every Isend completes, every Irecv completes with what arrived
        assert len(ev.of("MPI_ISEND_COMPLETE", rank)) == isends
        recvs = ev.of("MPI_IRECV", rank)
        assert len(recvs) == irecvs and sum(int(attr(e[2], "Length")) for e in recvs) == rbytes
        # the grid communicator, not MPI_COMM_WORLD
        assert {attr(e[2], "Communicator") for e in sends} == {"comm 2"}
        # phases 1, 2 and the end
        pc = [int(attr(e[2], "Value")) for e in ev.of("PARAMETER_INT64", rank)]
        assert pc == [1, 2, 0]


@pytest.mark.native
def test_halo_summary_paraver_and_perfetto_agree_with_the_program(halo_trace):
    trace, did = halo_trace
    r = subprocess.run([sys.executable, "-m", "isthmus", "trace", "summary", str(trace)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "across sites" in r.stdout and "slowest cross-site message" in r.stdout
    s = json.loads((trace / "summary.json").read_text())
    total_msgs = sum(v[0] for v in did.values())
    total_bytes = sum(v[1] for v in did.values())
    t = s["totals"]
    assert t["local_msgs"] + t["remote_msgs"] == total_msgs
    assert t["local_bytes"] + t["remote_bytes"] == total_bytes
    assert t["remote_msgs"] > 0 and t["local_msgs"] > 0
    for rank, v in did.items():
        assert sum(s["messages"][rank]) == v[0] and sum(s["bytes"][rank]) == v[1]
    assert s["unmatched_sends"] == 0
    assert {m["phase"] for m in s["slowest_cross_site"]} <= {1, 2}
    assert all(m["transfer_s"] > 0 for m in s["slowest_cross_site"])
    assert len(s["links"]) == 2 and all(ln["tx_bytes"] > 0 for ln in s["links"])
    assert (trace / "matrix.png").stat().st_size > 0
    html = (trace / "summary.html").read_text()
    assert html.count("data:image/png;base64,") >= 3
    # Paraver: one communication record per message between ranks (application 1)
    prv = (trace / "trace.prv").read_text().splitlines()
    assert prv[0].startswith("#Paraver (")
    comms = [ln.split(":") for ln in prv[1:] if ln.startswith("3:")]
    rank_comms = [c for c in comms if c[2] == "1" and c[8] == "1"]
    assert len(rank_comms) == total_msgs
    assert sum(int(c[13]) for c in rank_comms) == total_bytes
    assert any(c[2] == "2" for c in comms)  # WAN frames between gateways
    assert "MPI_Isend" in (trace / "trace.pcf").read_text()
    assert "gateway A.0" in (trace / "trace.row").read_text()
    # Perfetto: one flow per message, slices for every call
    doc = json.loads((trace / "trace.json").read_text())
    flows = [e for e in doc["traceEvents"] if e.get("ph") == "s" and e.get("cat") == "p2p"]
    assert len(flows) == total_msgs
    isends = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e["name"] == "MPI_Isend"]
    assert len(isends) == total_msgs


CONFORMANCE_TESTS = ("send,isend,send_init,sendrecv,mprobe,any_source,waitany,testall,bcast,"
                     "ibcast,allreduce,alltoallv,ialltoall,scan")


@pytest.mark.native
def test_conformance_traced_every_message_is_received(prefix, tmp_path):
    exe = tmp_path / "conformance"
    r = subprocess.run([str(prefix.cc), "-O2", "-o", str(exe)] +
                       sorted(str(p) for p in (REPO / "tests" / "conformance").glob("*.c")),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    trace = tmp_path / "trace"
    r = traced_run(exe, trace, 4, "2,2", args=("--tests", CONFORMANCE_TESTS, "--counts", "1,7"))
    assert r.returncode == 0 and "conformance: OK" in r.stdout, (r.stdout + r.stderr)[-3000:]
    x = subprocess.run([sys.executable, "-m", "isthmus", "trace", "export", str(trace)],
                       capture_output=True, text=True)
    assert x.returncode == 0, x.stderr
    ev = read_otf2(trace / "otf2" / "traces.otf2")
    ranks = [e for e in ev.of("MPI_SEND") + ev.of("MPI_ISEND") if e[0] < 1 << 40]
    got = [e for e in ev.of("MPI_RECV") + ev.of("MPI_IRECV") if e[0] < 1 << 40]
    assert ranks and len(ranks) == len(got)
    assert sum(int(attr(e[2], "Length")) for e in ranks) == \
        sum(int(attr(e[2], "Length")) for e in got)
    # every collective call ends with its collective event
    colls = sum(n for (loc, name), n in ev.enters.items()
                if name in ("MPI_Bcast", "MPI_Allreduce", "MPI_Alltoallv", "MPI_Scan"))
    assert len(ev.of("MPI_COLLECTIVE_END")) >= colls > 0
    from isthmus.trace.messages import messages
    from isthmus.trace.reader import load

    msgs, sends, recvs = messages(load(trace))
    assert len(sends) == len(recvs) and all(m.recv is not None for m in msgs)


def _copy_trace(src: Path, dst: Path) -> Path:
    """The run's own files (no exports), to change without touching the fixture's."""
    dst.mkdir()
    for p in src.iterdir():
        if p.suffix in (".ismt", ".json") and p.name.startswith(("rank-", "gw-", "clocks", "job")):
            (dst / p.name).write_bytes(p.read_bytes())
    return dst


def _export(trace: Path, *extra: str) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "isthmus", "trace", "export", *extra, str(trace)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r


@pytest.mark.native
def test_gateways_can_be_hidden_in_every_export(halo_trace, tmp_path):
    trace, did = halo_trace
    out = tmp_path / "hidden"
    _export(trace, "--format", "all", "--no-gateways", "--out", str(out))
    total_msgs = sum(v[0] for v in did.values())
    ev = read_otf2(out / "otf2" / "traces.otf2")
    locs = {e[0] for kind in ev.by_kind.values() for e in kind}
    assert locs == {0, 1, 2, 3}  # no gateway location (1 << 40 and up)
    defs = subprocess.run(["otf2-print", "-G", str(out / "otf2" / "traces.otf2")],
                          capture_output=True, text=True, check=True).stdout
    assert "gateway" not in defs and "WAN" not in defs
    assert len(ev.of("MPI_ISEND")) == total_msgs  # the ranks' records are all there
    prv = (out / "trace.prv").read_text().splitlines()
    assert re.match(r"\d+\([\d,]+\):1:4\(", prv[0].split("_ns:")[1])  # one application
    assert not [ln for ln in prv[1:] if ln.split(":")[2] == "2"]  # no application 2
    assert "gateway" not in (out / "trace.row").read_text()
    doc = json.loads((out / "trace.json").read_text())
    names = [e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"]
    assert len(names) == 4 and not any("gateway" in n for n in names)
    assert not [e for e in doc["traceEvents"] if e.get("cat") == "wan"]
    assert len([e for e in doc["traceEvents"] if e.get("ph") == "s"]) == total_msgs
    # and with them, the gateways are there in each format (the option is what hides them)
    assert "gateway A.0" in (trace / "trace.row").read_text()
    full = json.loads((trace / "trace.json").read_text())
    assert any("gateway" in e["args"]["name"] for e in full["traceEvents"]
               if e.get("name") == "thread_name")


@pytest.mark.native
def test_the_clock_alignment_error_is_in_every_export(halo_trace):
    trace, _ = halo_trace
    clocks = json.loads((trace / "clocks.json").read_text())["processes"]
    err = {(p["kind"], p["id"]): p["error_ns"] for p in clocks}
    assert all(p["aligned"] for p in clocks) and err[("rank", 0)] == 0
    assert any(v > 0 for (k, _), v in err.items() if k == "rank")
    defs = subprocess.run(["otf2-print", "-G", str(trace / "otf2" / "traces.otf2")],
                          capture_output=True, text=True, check=True).stdout
    props = re.findall(r'LOCATION_PROPERTY\s+Location: "rank (\d+)".*'
                       r'"isthmus::clock_error_ns".*Value: ([\d.e+-]+)', defs)
    # otf2-print shows 6 significant digits
    assert {int(r): float(v) for r, v in props} == \
        {i: pytest.approx(err[("rank", i)], rel=1e-5, abs=0.1) for i in range(4)}
    doc = json.loads((trace / "trace.json").read_text())
    other = doc["otherData"]
    assert other["clocks_aligned"] is True
    for i in range(4):
        assert other["clocks"][f"rank {i}"]["error_ns"] == pytest.approx(err[("rank", i)])
    gw = [(k, v) for k, v in err.items() if k[0] == "gateway"]
    assert gw and all(other["clocks"][name]["error_ns"] == pytest.approx(v)
                      for name, v in [(f"gateway {'AB'[k[1] // 65536]}.{k[1] % 65536}", v)
                                      for k, v in gw])
    names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e.get("name") == "thread_name" and e["tid"] < 4}
    row = (trace / "trace.row").read_text()
    for i in range(4):
        note = f"(clock +-{err[('rank', i)] / 1e3:.1f} us)"
        assert names[i] == f"rank {i} {note}" and f"rank {i} {note}" in row


def _records(data: bytes):
    from isthmus.trace import records as R

    off = R.FILE_HDR.size
    while off < len(data):
        length, kind, _, _ = R.HDR.unpack_from(data, off)
        yield off, length, kind
        off += length


def _insert_loss(path: Path, records: int, nbytes: int) -> float:
    """A LOSS record before the 10th CALL of the file, and the END's totals to match, as the
    buffer writes them when records were dropped; the CALL's t0."""
    from isthmus.trace import records as R

    data = bytearray(path.read_bytes())
    calls = [(off, ln) for off, ln, kind in _records(bytes(data)) if kind == R.CALL]
    at = calls[9][0]
    t0 = R.BODY[R.CALL].unpack_from(data, at + R.HDR.size)[0]
    loss = R.HDR.pack(32, R.LOSS, 0, 0) + R.BODY[R.LOSS].pack(t0, records, nbytes)
    data[at:at] = loss
    end = [off for off, _, kind in _records(bytes(data)) if kind == R.END][-1]
    t, nrec, b, lost, lost_b = R.BODY[R.END].unpack_from(data, end + R.HDR.size)
    R.BODY[R.END].pack_into(data, end + R.HDR.size, t, nrec + 1, b + 32, lost + records,
                            lost_b + nbytes)
    path.write_bytes(bytes(data))
    return t0


@pytest.mark.native
def test_losses_and_unclosed_traces_are_reported_everywhere(halo_trace, tmp_path):
    """Rank 1 dropped 7 records (a LOSS record, as the buffer writes it); rank 2 died
    without closing its trace (no END record, the file ends on a whole record, as the
    writer leaves it). Every reader says both."""
    from isthmus.trace.launch import report_files
    from isthmus.trace import records as R

    trace = _copy_trace(halo_trace[0], tmp_path / "t")
    _insert_loss(trace / "rank-000001.ismt", 7, 448)
    p2 = trace / "rank-000002.ismt"
    data = p2.read_bytes()
    end = [off for off, _, kind in _records(data) if kind == R.END][-1]
    p2.write_bytes(data[:end])
    rep = report_files(trace)
    assert "rank-000001.ismt: 7 records (448 bytes) were dropped" in rep
    assert "rank-000002.ismt: no END record" in rep
    assert rep.count("\n") == 2  # the others are whole

    s = subprocess.run([sys.executable, "-m", "isthmus", "trace", "summary", str(trace)],
                       capture_output=True, text=True)
    assert s.returncode == 0, s.stderr
    assert "warning: rank 1: 7 records dropped (trace buffer full) in 1 gap" in s.stdout
    assert "warning: rank 2: no END record" in s.stdout
    assert "no END record" in (trace / "summary.html").read_text()

    x = _export(trace, "--format", "all")
    assert "rank 1: 7 records were dropped" in x.stderr
    assert "rank 2: its file has no END record" in x.stderr
    assert "rank 0" not in x.stderr and "rank 3" not in x.stderr
    ev = read_otf2(trace / "otf2" / "traces.otf2")
    onoff = [e for e in ev.by_kind.get("MEASUREMENT_ON_OFF", [])]
    assert [e[0] for e in onoff] == [1, 1] and "OFF" in onoff[0][2] and "ON" in onoff[1][2]
    prv = (trace / "trace.prv").read_text().splitlines()
    lost = [ln for ln in prv if ln.startswith("2:") and ":50000003:" in ln]
    assert len(lost) == 1 and lost[0].endswith(":50000003:7")
    assert "Trace records lost" in (trace / "trace.pcf").read_text()
    doc = json.loads((trace / "trace.json").read_text())
    inst = [e for e in doc["traceEvents"] if e.get("name") == "7 trace records lost"]
    assert len(inst) == 1 and inst[0]["tid"] == 1
    assert len(doc["otherData"]["losses"]) == 2
    # the Python exporters alone say it too
    y = _export(trace, "--format", "perfetto")
    assert "warning: rank 1: 7 records dropped" in y.stderr and "rank 2: no END" in y.stderr


SAID_RMA = re.compile(r"^trace_rma: rank (\d+): (\w+) target (-?\d+) bytes (\d+) (\d+)$", re.M)


@pytest.mark.native
def test_one_sided_calls_carry_global_targets_and_bytes(prefix, tmp_path):
    """tests/mpi/trace_rma.c across 2 sites (ranks 1,2) makes one call of each kind on a
    window over a communicator in reverse order: every RMA record names the target the
    program says by its global rank (window rank w is global size-1-w), with the bytes it
    moved to and from the target; the window's WIN record names that communicator, whose
    members are the reverse of the world."""
    from isthmus.trace import records as R
    from isthmus.trace.reader import load
    trace, said_out = build_and_trace(prefix.cc, REPO / "tests" / "mpi" / "trace_rma.c",
                                      tmp_path, 3, "1,2")
    said: dict[int, list] = {}
    for m in SAID_RMA.finditer(said_out):
        said.setdefault(int(m.group(1)), []).append(
            (m.group(2), int(m.group(3)), int(m.group(4)), int(m.group(5))))
    t = load(trace)
    for rank in range(3):
        got, wins = [], []
        for call in t.ranks[rank].calls:
            for d in call.details:
                if d[0] == R.RMA:
                    _, flags, win, target, op, _, _, out, back, req = d
                    got.append((R.RMA_OPS[op], target, out, back))
                    assert bool(flags & R.RMA_REQ) == (call.fn == "MPI_Rget") and \
                        (req != 0) == (call.fn == "MPI_Rget"), (call.fn, d)
                    if call.fn == "MPI_Win_lock":
                        assert flags & R.RMA_EXCL and not flags & R.RMA_NOCHECK
                elif d[0] == R.WIN:
                    wins.append((call.fn, d[1], d[3]))
        # the program says what it did call by call; the trace has it in the same order
        assert got == [(op, tg, o, b) for op, tg, o, b in said[rank]], (rank, got)
        assert [w[:2] for w in wins] == [("MPI_Win_allocate", 0), ("MPI_Win_free", R.WIN_FREED)]
        assert t.ranks[rank].comms[wins[0][2]].members == [2, 1, 0]
    # the OTF2 export: the same operations as OTF2's RMA events, each completed once, the
    # targets named (through the window's communicator) as the ranks the program said
    _export(trace, "--format", "otf2")
    ev = read_otf2(trace / "otf2" / "traces.otf2")
    for rank in range(3):
        ops = {"RMA_GET": "get", "RMA_PUT": "put", "RMA_ATOMIC": None}
        started, remotes = set(), []
        for kind, op in ops.items():
            for _, _, text in ev.of(kind, rank):
                started.add(int(attr(text, "Matching")))
                remotes.append((op, int(re.search(r'"rank (\d+)"', text).group(1))))
        assert len(started) == sum(1 for x in said[rank] if x[0] in ("get", "put", "fop", "acc"))
        done = [int(attr(e[2], "Matching")) for e in ev.of("RMA_OP_COMPLETE_NON_BLOCKING", rank)]
        assert sorted(done) == sorted(started), (rank, done, started)
        assert sorted(x for x in remotes if x[0]) == sorted(
            (op, tg) for op, tg, _, _ in said[rank] if op in ("get", "put")), rank
        assert len(ev.of("RMA_ACQUIRE_LOCK", rank)) == len(ev.of("RMA_RELEASE_LOCK", rank)) == 1
        assert len(ev.of("RMA_COLLECTIVE_END", rank)) == 2
        assert len(ev.of("RMA_WIN_CREATE", rank)) == len(ev.of("RMA_WIN_DESTROY", rank)) == 1
