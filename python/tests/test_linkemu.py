# tests/test_linkemu.py: the link emulator end to end, in real network namespaces: RTT
# against the set delay (per direction, 3 sites), TCP throughput against the set rate,
# random and bursty loss, jitter with and without reordering, duplication, corruption, MTU,
# settings changed while running, cleanup
# after normal exit, Ctrl-C, SIGTERM and an emulator crash, and `isthmus run --wan`. Needs root and /dev/net/tun; skipped (with the reason) without them,
# failed instead when ISTHMUS_REQUIRE_NETADMIN=1 (as under scripts/test.sh).
from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from isthmus.netemu import Emulation
from isthmus.netemu.emulation import list_namespaces
from isthmus.netemu.matrix import load_matrix

pytestmark = [pytest.mark.native, pytest.mark.netadmin]
PY = sys.executable
PROBE = [PY, "-m", "isthmus.netemu.probe"]




def _server(emu, site, argv):
    p = emu.popen(site, PROBE + argv, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "listening"
    return p


def _probe(emu, site, argv, timeout=60):
    r = emu.exec(site, PROBE + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                 timeout=timeout)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _rtts(emu, src, targets, count=60):
    """Median and min RTT to each (site, port), pinged in turn from src."""
    argv = ["rtt", "--count", str(count), "--interval", "0.002"]
    for dst, port in targets:
        argv += ["--target", f"{emu.address(dst)}:{port}"]
    out = []
    for r in _probe(emu, src, argv)["results"]:
        assert r["lost"] == 0, r
        out.append((statistics.median(r["rtts"]), min(r["rtts"])))
    return out


def test_rtt_follows_per_direction_delays_on_3_sites(netadmin, tmp_path):
    """A-B has no delay: its RTT is the probe's own cost (pinged in turn with the others,
    so it sees the same load), subtracted from the others. Accuracy asked for: 2% of the
    RTT + 100 us, checked on the fastest round trip (the emulator's own precision; the
    median also carries the scheduling noise of a loaded 2-core machine, so it gets a
    looser bound here and is reported in BENCHMARKS.md by bench/linkemu_accuracy.py).
    No packet may come back early and the median bound must hold in every attempt; the
    precision needs one attempt of up to three (in CI the fastest of 60 pings was once
    0.302 ms off where 0.300 ms is allowed: the probe's own scheduling, not the delay)."""
    f = tmp_path / "m.toml"
    f.write_text('sites = 3\n[links]\n"A-B" = "delay=0ms"\n"A-C" = "delay=5ms"\n'
                 '"B>C" = "delay=3ms"\n"C>B" = "delay=1ms"\n')
    misses = []
    for attempt in range(3):
        with Emulation(matrix=load_matrix(f), job=f"tRtt{attempt}") as emu:
            for site, port in (("A", 9102), ("B", 9100), ("C", 9101)):
                _server(emu, site, ["echo-server", "--port", str(port), "--seconds", "30"])
            (base, base_min), (ac, ac_min) = _rtts(emu, "A", [("B", 9100), ("C", 9101)])
            (base_b, base_b_min), (bc, bc_min) = _rtts(emu, "B", [("A", 9102), ("C", 9101)])
        assert base < 0.002 and base_b < 0.002, f"probe RTT without delay: {base * 1e3:.3f} ms"
        off = []
        for got, got_min, probe, probe_min, want in ((ac, ac_min, base, base_min, 0.010),
                                                     (bc, bc_min, base_b, base_b_min, 0.004)):
            assert got_min >= want, f"a packet came back in {got_min * 1e3:.3f} ms, before {want * 1e3} ms"
            assert abs((got - probe) - want) <= 0.10 * want + 1e-3, (
                f"median RTT {got * 1e3:.3f} ms - probe {probe * 1e3:.3f} ms vs set {want * 1e3} ms")
            if abs((got_min - probe_min) - want) > 0.02 * want + 100e-6:
                off.append(f"fastest RTT {got_min * 1e3:.3f} ms - probe {probe_min * 1e3:.3f} ms "
                           f"vs set {want * 1e3} ms")
        if not off:
            return
        misses.append(off)
    pytest.fail(f"the fastest round trip missed the set delay by more than 2% + 100 us in every "
                f"attempt: {misses}")


def test_tcp_reaches_set_rate(netadmin):
    """One cubic flow through a 40 Mbit/s, 10 ms RTT link with the default queue (about one
    RTT of data) fills the link, and never exceeds it. The ceiling is checked on every run.
    The floor needs one run in up to three to reach it: a multi-second stall of the
    shared host (in CI, one run in a few dozen measured 30.8 Mbit/s, 0.80 of the rate)
    costs TCP a retransmission timeout and slow start. That is the host, not the emulator."""
    rate_mbit = 40
    floor = 0.90 * rate_mbit * 1448 / 1500  # payload is at most 1448 of every 1500 bytes
    runs = []
    for attempt in range(3):
        with Emulation(sites=2, link=f"delay=5ms,rate={rate_mbit}mbit", job=f"tRate{attempt}") as emu:
            # the first second (slow start, its first loss and recovery) is left out, as iperf3 -O
            sink = _server(emu, "B", ["tcp-sink", "--port", "9200", "--omit", "1"])
            _probe(emu, "A", ["tcp-source", "--host", emu.address("B"), "--port", "9200",
                              "--seconds", "4"])
            got = json.loads(sink.stdout.readline())
            st = emu.link_stats("A", "B")
        goodput = got["rate_Bps"] * 8 / 1e6
        runs.append(f"{goodput:.1f} Mbit/s (queue drops {st['drop_queue']})")
        assert goodput <= 1.01 * rate_mbit, f"faster than the set rate: {runs}"
        assert st["drop_pool"] == 0 and st["delivered"] > 0, st
        # the polling lead adapts to measured timer wakeups (lead.h), within its 50 us cap
        fin = emu.final_stats
        assert fin and fin["wake_late_mean_ns"] > 0 and 0 < fin["lead_ns"] <= 50_000, fin
        if goodput >= floor:
            return
    pytest.fail(f"no run reached {floor:.1f} Mbit/s: {runs}")


def test_random_loss_rate_is_plausible(netadmin):
    n, p = 5000, 0.05
    with Emulation(sites=2, link="loss=5%", job="tLoss", seed=7) as emu:
        counter = _server(emu, "B", ["udp-count", "--port", "9300", "--idle", "1.5"])
        _probe(emu, "A", ["udp-blast", "--host", emu.address("B"), "--port", "9300",
                          "--count", str(n), "--pps", "10000"])
        got = json.loads(counter.stdout.readline())
        st = emu.link_stats("A", "B")
    lost = n - got["received"]
    sigma = (n * p * (1 - p)) ** 0.5
    assert abs(lost - n * p) <= 5 * sigma, f"{lost} of {n} lost, expected {n * p:.0f} +- {5 * sigma:.0f}"
    assert st["drop_loss"] == lost and st["in"] == n


def test_counters_add_up_while_packets_are_in_the_delay_line(netadmin):
    """The counters read while packets wait out the link's delay (as `isthmus run --wan
    --stats` reads them the moment the job ends) count those packets as queued: every
    copy that went in was delivered, dropped for a counted reason, or is queued. They
    used to be missing from every counter until released, so a job whose last packets
    were still on the link failed the sum."""
    n = 300
    with Emulation(sites=2, link="delay=3000ms,dup=10%", job="tQueued", seed=3) as emu:
        counter = _server(emu, "B", ["udp-count", "--port", "9310", "--idle", "1.5"])
        _probe(emu, "A", ["udp-blast", "--host", emu.address("B"), "--port", "9310",
                          "--count", str(n), "--pps", "5000"])
        during = emu.link_stats("A", "B")  # well inside the 3 s every packet waits
        got = json.loads(counter.stdout.readline())
        after = emu.link_stats("A", "B")
    for st in (during, after):
        drops = st["drop_loss"] + st["drop_queue"] + st["drop_mtu"] + st["drop_pool"]
        assert st["in"] == n and st["in"] + st["dup"] == st["delivered"] + drops + st["queued"], st
    assert during["queued"] > 0 and during["delivered"] < n, during
    assert after["queued"] == 0 and after["dup"] > 0, after
    assert got["received"] == n and got["received"] + got["dups"] == after["delivered"], (got, after)


def test_bursty_loss_has_bursts(netadmin):
    n = 20000
    with Emulation(sites=2, link="loss=5%,lossburst=4", job="tBurst", seed=3) as emu:
        counter = _server(emu, "B", ["udp-count", "--port", "9301", "--idle", "1.5"])
        _probe(emu, "A", ["udp-blast", "--host", emu.address("B"), "--port", "9301",
                          "--count", str(n), "--pps", "20000", "--size", "100"])
        got = json.loads(counter.stdout.readline())
        st = emu.link_stats("A", "B")
    assert st["drop_loss"] == got["missing"] + (n - 1 - got["highest"])
    mean_loss = st["drop_loss"] / n
    burst = got["missing"] / got["loss_runs"]
    assert 0.035 <= mean_loss <= 0.065, f"mean loss {mean_loss:.3%}"
    assert 2.8 <= burst <= 5.2, f"mean loss burst {burst:.2f} packets, set 4"


def _blast(link, job, n=3000, pps=5000, seed=1):
    with Emulation(sites=2, link=link, job=job, seed=seed) as emu:
        counter = _server(emu, "B", ["udp-count", "--port", "9302", "--idle", "1.5"])
        _probe(emu, "A", ["udp-blast", "--host", emu.address("B"), "--port", "9302",
                          "--count", str(n), "--pps", str(pps), "--size", "100"])
        return json.loads(counter.stdout.readline()), emu.link_stats("A", "B")


def test_jitter_keeps_order_unless_reorder_is_on(netadmin):
    """Packets 200 us apart with +-2 ms of jitter: kept in order by default, overtaking
    each other with reorder=on."""
    kept, _ = _blast("delay=5ms,jitter=2ms", "tJit")
    mixed, _ = _blast("delay=5ms,jitter=2ms,reorder=on", "tReo")
    assert kept["received"] >= 2970 and kept["reordered"] == 0, kept
    assert mixed["received"] >= 2970 and mixed["reordered"] > 300, mixed


def test_duplication_rate(netadmin):
    n, p = 3000, 0.05
    got, st = _blast("dup=5%", "tDup", n=n)
    sigma = (n * p * (1 - p)) ** 0.5
    assert got["dups"] == st["dup"], (got, st)
    assert abs(got["dups"] - n * p) <= 5 * sigma, f"{got['dups']} of {n} duplicated"


def test_corruption_rate_and_it_reaches_the_application(netadmin):
    """corrupt=5% flips one payload bit and fixes the UDP checksum, so the kernel delivers
    every datagram and only a check of the contents sees the change: udp-count's padding
    check must find about as many altered datagrams as the emulator reports (fewer only by
    the flips that landed in the 4-byte sequence number)."""
    n, p = 3000, 0.05
    got, st = _blast("corrupt=5%", "tCor", n=n)
    sigma = (n * p * (1 - p)) ** 0.5
    assert abs(st["corrupted"] - n * p) <= 5 * sigma, f"{st['corrupted']} of {n} corrupted"
    assert got["received"] >= n - 5, got
    assert 0.85 * st["corrupted"] <= got["altered"] <= st["corrupted"], (got, st)
    clean, st0 = _blast("delay=0ms", "tCor0", n=500)
    assert clean["altered"] == 0 and st0["corrupted"] == 0, (clean, st0)


def test_link_changes_while_running(netadmin):
    """Emulation.set_link replaces one direction's settings in the running emulator (the
    `link I:J:SPEC` command on its stdin): the RTT follows, the other direction is kept,
    and bad settings are refused with the emulation left as it was."""
    from isthmus.errors import IsthmusError
    with Emulation(sites=2, link="delay=1ms", job="tSet") as emu:
        _server(emu, "B", ["echo-server", "--port", "9110", "--seconds", "30"])
        (_, before), = _rtts(emu, "A", [("B", 9110)], count=30)
        emu.set_link("A", "B", "delay=10ms")
        (_, one), = _rtts(emu, "A", [("B", 9110)], count=30)
        emu.set_link("B", "A", "delay=4ms,loss=0%")
        (_, both), = _rtts(emu, "A", [("B", 9110)], count=30)
        with pytest.raises(IsthmusError, match="delay"):
            emu.set_link("A", "B", "delay=banana")
        with pytest.raises(IsthmusError, match="itself"):
            emu.set_link("A", "A", "delay=1ms")
        (_, after), = _rtts(emu, "A", [("B", 9110)], count=30)
        assert emu.matrix.links[(0, 1)].delay == 0.010 and emu.matrix.links[(1, 0)].delay == 0.004
    # the fastest of 30 round trips: a loaded host only adds to a ping, so the median
    # carries its scheduling noise and the minimum the emulator's delay
    assert 0.002 <= before < 0.004, before
    assert 0.011 <= one < 0.014, one
    assert 0.014 <= both < 0.017 and 0.014 <= after < 0.017, (both, after)


def test_mtu_is_set_and_large_datagrams_pass(netadmin):
    with Emulation(sites=2, link="delay=1ms,mtu=9000", job="tMtu") as emu:
        show = emu.exec("A", ["ip", "link", "show", "ism0"], stdout=subprocess.PIPE, text=True)
        assert "mtu 9000" in show.stdout
        _server(emu, "B", ["echo-server", "--port", "9400", "--seconds", "20"])
        d = _probe(emu, "A", ["rtt", "--target", f"{emu.address('B')}:9400", "--count", "5",
                              "--size", "8900"])["results"][0]
        st = emu.link_stats("A", "B")
    assert d["lost"] == 0 and st["drop_mtu"] == 0 and st["bytes_delivered"] >= 5 * 8900


def _leftovers(job: str) -> list[str]:
    found = [f"namespace {n}" for n in list_namespaces(job)]
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if f"ism-{job}-" in cmd or f"isthmus-probe-{job}" in cmd:
                found.append(f"process {proc.name}: {cmd}")
    return found


def _default_sigint() -> None:
    # A shell without job control starts background commands with SIGINT ignored, and
    # the ignore is inherited (a suite started with `... &` from a script); Python then
    # installs no KeyboardInterrupt handler. Ctrl-C from a terminal is what is tested.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cli(args, **kw):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([PY, "-m", "isthmus", "link", "emulate", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint, **kw)


def test_command_exit_code_and_cleanup(netadmin):
    p = _cli(["--sites", "3", "--link", "delay=1ms", "--job", "tExit", "--stats", "--",
              "sh", "-c", 'ip netns exec "$ISTHMUS_LINK_NETNS_B" ip -o addr show ism0; exit 3'])
    out, err = p.communicate(timeout=60)
    assert p.returncode == 3, err
    assert "10.77.0.2/24" in out and "per-link packets" in err
    assert _leftovers("tExit") == []


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_cleans_up_everything(netadmin, sig, code):
    job = f"tSig{int(sig)}"
    # a fixed job name: namespaces an earlier, killed run of this test left behind go first
    subprocess.run([PY, "-m", "isthmus", "link", "cleanup", "--job", job], capture_output=True)
    p = _cli(["--sites", "2", "--link", "delay=2ms", "--job", job])
    try:
        deadline = time.monotonic() + 30
        while len(list_namespaces(job)) < 2 or not _leftovers(job)[2:]:
            assert p.poll() is None and time.monotonic() < deadline, p.stderr.read()
            time.sleep(0.05)
        # A process left running inside a site must go too.
        sleeper = subprocess.Popen(["ip", "netns", "exec", f"ism-{job}-B", "sleep", "300"])
        time.sleep(0.2)
        p.send_signal(sig)
        _, err = p.communicate(timeout=30)
        sleeper.wait(timeout=10)
    finally:
        if p.poll() is None:  # a failed wait must not leave the emulation to later tests
            p.terminate()
            p.wait(timeout=30)
    assert p.returncode == code, err
    assert "namespaces removed" in err
    assert _leftovers(job) == []


def test_emulator_crash_is_reported_and_cleaned(netadmin):
    job = "tCrash"
    p = _cli(["--sites", "2", "--job", job, "--", "sleep", "60"])
    deadline = time.monotonic() + 30
    emu_pid = None
    while emu_pid is None:
        assert p.poll() is None and time.monotonic() < deadline
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                try:
                    cmd = (proc / "cmdline").read_bytes()
                except OSError:
                    continue
                if b"isthmus-linkemu" in cmd and f"ism-{job}-A".encode() in cmd:
                    emu_pid = int(proc.name)
        time.sleep(0.05)
    os.kill(emu_pid, signal.SIGKILL)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 2
    assert "isthmus: isthmus-linkemu stopped" in err
    assert _leftovers(job) == []


def test_run_over_wan_crosses_the_emulated_link(netadmin, tmp_path):
    """`isthmus run --wan`: the demo's cross-site latency includes the 1 ms link, the
    in-site one does not, and the namespaces are gone afterwards. (Latency upper bounds
    are left out: on the shared 2-core machine they measure the other jobs.)"""
    from isthmus.launch import vendor

    mpi = "openmpi" if "openmpi" in vendor.detect(netadmin) else "mpich"
    subprocess.run([str(netadmin.cc), "-O2", "-o", "demo", str(Path(__file__).resolve().parents[2]
                                                                  / "examples" / "demo.c")],
                   cwd=tmp_path, check=True)
    p = subprocess.Popen([PY, "-m", "isthmus", "run", "-n", "4", "--mpi", mpi, "--timeout", "240",
                          "--wan", "delay=1ms,rate=1gbit", "--", "./demo"], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=300)
    r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "all results correct" in r.stdout
    lat = {}
    for line in r.stdout.splitlines():
        if "rank 0 <-> rank" in line:
            lat["inside" if "inside a site" in line else "across"] = float(line.split()[-2])
    assert lat["across"] >= 1000, lat  # one-way, microseconds: through the 1 ms link
    assert lat["inside"] < lat["across"] / 2, lat  # ranks of one site never cross it
    # the job's namespaces (ism-<pid of isthmus run>-*) are gone; others may be running
    assert list_namespaces(str(p.pid)) == []



def test_existing_namespace_is_reported_and_left_alone(netadmin):
    """A namespace of the same name (an earlier run's, or someone else's) stops the run
    with the cleanup command, and is not deleted by it; the ones it made are."""
    subprocess.run(["ip", "netns", "add", "ism-tTaken-B"], check=True)
    try:
        p = _cli(["--sites", "2", "--job", "tTaken", "--", "true"])
        _, err = p.communicate(timeout=60)
        assert p.returncode == 2
        assert "namespace ism-tTaken-B already exists" in err
        assert "isthmus link cleanup --job tTaken" in err
        assert list_namespaces("tTaken") == ["ism-tTaken-B"]
    finally:
        subprocess.run(["ip", "netns", "del", "ism-tTaken-B"])


def test_cleanup_removes_stale_namespaces_and_their_processes(netadmin):
    subprocess.run(["ip", "netns", "add", "ism-tStale-A"], check=True)
    sleeper = subprocess.Popen(["ip", "netns", "exec", "ism-tStale-A", "sleep", "300"])
    try:
        time.sleep(0.2)
        r = subprocess.run([PY, "-m", "isthmus", "link", "cleanup", "--job", "tStale"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        assert r.returncode == 0 and "removed 1 namespace" in r.stderr, r.stderr
        assert sleeper.wait(timeout=10) != 0
        assert list_namespaces("tStale") == []
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
        subprocess.run(["ip", "netns", "del", "ism-tStale-A"], stderr=subprocess.DEVNULL)
