# tests/test_link_crypto_workers.py: the gateways' crypto workers (ISTHMUS_WAN_SEAL_WORKERS,
# wan/sealpool.c) seal and open the TCP links' records beside the event loop, and change
# nothing the job sees (issue 25).
#
# - Two workers per gateway even on a small machine: wan_stress (messages up to 3 MiB,
#   every byte checked) crosses two sites with each vendor, and --stats shows that
#   batches of records went to the workers on both gateways (one seals, the other opens).
#   With 0 workers the same job runs with none (the control that shows the count is real).
# - An on-path attacker (test_link_crypto's proxy) who flips, replays or truncates a
#   record is still refused with the workers on: the job ends right and the rejected
#   record is counted.
# - Under ThreadSanitizer (the build-tsan install, as test_threads runs it): the same job
#   with two workers per gateway, every process instrumented, and no report.
# - The reliable-UDP transport (wan/udp/sealbatch.c): the datagrams of a flush and of a
#   receive batch are sealed and opened on the workers. The same stress job over UDP with
#   each vendor, --stats counting batches on both gateways (0 with no workers); through
#   the link emulator flipping bits, duplicating (replays) and reordering datagrams under
#   a key update every 16 datagrams, the job ends right, the failures are counted and
#   batches still went to the workers; and the TSan run over UDP.
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from test_link_crypto import REJECTED, earlier_record, progs, proxied_job  # noqa: F401
from test_mpi_programs import MPI_TESTS, run_job
from test_threads import tsan_env, tsan_prefix  # noqa: F401

pytestmark = pytest.mark.native

BATCHES = re.compile(r"stream \d+: tcp .*; (aes-256-gcm|chacha20-poly1305): .* (\d+) batches on "
                     r"(\d+) crypto workers")
UDP_BATCHES = re.compile(r"site (\S+) gateway \d+ -> .*stream \d+: udp .*, (\d+) of them failing "
                         r"authentication; (aes-256-gcm|chacha20-poly1305), (\d+) key updates, "
                         r"(\d+) batches on (\d+) crypto workers")
GATEWAY = re.compile(r"isthmus stats: site \S+ gateway \d+: peak buffered .*; crypto workers (\d+)")


def stress(progs, mpi, workers, timeout=300, transport="tcp", wan=(), env=None):
    return subprocess.run(
        [sys.executable, "-m", "isthmus", "run", "-n", "2", "--sites", "2", "--mpi", mpi,
         "--transport", transport, *wan, "--stats", "--timeout", "240", "--",
         str(progs["stress"]), "0", "4"],
        capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "ISTHMUS_WAN_SEAL_WORKERS": str(workers), **(env or {})})


def udp_batches(stderr):
    """{site: (batches, workers, rejected, key updates)} from the UDP links' --stats."""
    return {m[1]: (int(m[5]), int(m[6]), int(m[2]), int(m[4])) for m in UDP_BATCHES.finditer(stderr)}


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_two_workers_move_every_byte_right(progs, mpi):
    r = stress(progs, mpi, 2)
    assert r.returncode == 0 and "wan_stress: OK" in r.stdout, (r.stdout + r.stderr)[-4000:]
    assert [int(m) for m in GATEWAY.findall(r.stderr)] == [2, 2], r.stderr[-3000:]
    per_gateway = [int(m[1]) for m in BATCHES.findall(r.stderr)]
    assert per_gateway and all(int(m[2]) == 2 for m in BATCHES.findall(r.stderr)), r.stderr[-3000:]
    # both directions carry megabytes: every gateway sealed and opened in batches
    lines = [ln for ln in r.stderr.splitlines() if BATCHES.search(ln)]
    sites = {re.search(r"site (\S+) gateway", ln)[1]: 0 for ln in lines}
    for ln in lines:
        sites[re.search(r"site (\S+) gateway", ln)[1]] += int(BATCHES.search(ln)[2])
    assert len(sites) == 2 and min(sites.values()) > 0, sites


def test_no_workers_is_the_loop_alone(progs):
    r = stress(progs, "openmpi", 0)
    assert r.returncode == 0 and "wan_stress: OK" in r.stdout, (r.stdout + r.stderr)[-4000:]
    assert [int(m) for m in GATEWAY.findall(r.stderr)] == [0, 0], r.stderr[-3000:]
    found = BATCHES.findall(r.stderr)
    assert found and all(m[1] == "0" and m[2] == "0" for m in found), r.stderr[-3000:]


@pytest.mark.parametrize("attack", ["flip", "replay", "truncate"])
def test_an_on_path_attacker_is_refused_with_workers_on(progs, attack):
    r, proxy = proxied_job(progs, attack, env={"ISTHMUS_WAN_SEAL_WORKERS": "2"})
    assert proxy.done, "the attack did not happen"
    assert r.returncode == 0 and "wan_stress: OK" in r.stdout, (r.stdout + r.stderr)[-4000:]
    assert sum(int(m[3]) for m in REJECTED.findall(r.stderr)) >= 1, r.stderr[-3000:]
    assert sum(int(m[1]) for m in BATCHES.findall(r.stderr)) > 0, r.stderr[-3000:]
    assert proxy.conns >= 2, "the link did not reconnect"


def stress_under_tsan(tsan_prefix, tmp_path, mpi, transport):  # noqa: F811
    """wan_stress with 2 workers per gateway, every process instrumented: no report."""
    exe = tmp_path / "wan_stress-tsan"
    r = subprocess.run([str(tsan_prefix / "bin" / "isthmus-cc"), "-O2", "-g", "-fsanitize=thread",
                        "-o", str(exe), str(MPI_TESTS / "wan_stress.c")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    r = run_job(exe, ["0", "2"], "1,1", mpi, extra_env={
        **tsan_env(tsan_prefix), "ISTHMUS_WAN_SEAL_WORKERS": "2",
        "ISTHMUS_WAN_TRANSPORT": transport, "ISTHMUS_STATS": "1"})
    out = r.stdout + r.stderr
    assert "ThreadSanitizer" not in out, out[-8000:]
    assert r.returncode == 0 and "wan_stress: OK" in r.stdout, out[-6000:]
    return r


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_workers_are_clean_under_thread_sanitizer(tsan_prefix, tmp_path, mpi):  # noqa: F811
    r = stress_under_tsan(tsan_prefix, tmp_path, mpi, "tcp")
    assert sum(int(m[1]) for m in BATCHES.findall(r.stderr)) > 0, r.stderr[-3000:]


# ---- the reliable-UDP transport ----

@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_udp_with_two_workers_moves_every_byte_right(progs, mpi):
    r = stress(progs, mpi, 2, transport="udp")
    assert r.returncode == 0 and "wan_stress: OK" in r.stdout, (r.stdout + r.stderr)[-4000:]
    assert [int(m) for m in GATEWAY.findall(r.stderr)] == [2, 2], r.stderr[-3000:]
    links = udp_batches(r.stderr)
    # both directions carry megabytes: each gateway sealed and opened batches on workers;
    # with no attacker on loopback, not one datagram failed to open
    assert sorted(links) == ["A", "B"], r.stderr[-3000:]
    assert all(b > 0 and w == 2 and bad == 0 for b, w, bad, _ in links.values()), links


def test_udp_with_no_workers_is_the_loop_alone(progs):
    r = stress(progs, "openmpi", 0, transport="udp")
    assert r.returncode == 0 and "wan_stress: OK" in r.stdout, (r.stdout + r.stderr)[-4000:]
    assert [int(m) for m in GATEWAY.findall(r.stderr)] == [0, 0], r.stderr[-3000:]
    links = udp_batches(r.stderr)
    assert sorted(links) == ["A", "B"] and all(b == 0 and w == 0 for b, w, _, _ in links.values()), links


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_udp_attacks_on_the_link_are_refused_on_the_workers(netadmin, progs, mpi):
    """The emulator flips bits in datagrams (corrupt=, the UDP checksum fixed so the kernel
    delivers them), sends copies of earlier ones (dup=: replays) and reorders them, on a
    fast link so flushes and receive batches are large; keys update every 16 datagrams,
    so inside batches and across reorderings."""
    r = stress(progs, mpi, 2, transport="udp", env={"ISTHMUS_WAN_REKEY": "16"},
               wan=("--wan", "delay=1ms,rate=2gbit,loss=0.5%,dup=2%,corrupt=0.5%,reorder=2%"))
    assert r.returncode == 0 and "wan_stress: OK" in r.stdout, (r.stdout + r.stderr)[-4000:]
    links = udp_batches(r.stderr)
    assert sorted(links) == ["A", "B"], r.stderr[-3000:]
    assert sum(x[2] for x in links.values()) > 0, links  # failed authentication or replays
    assert all(x[3] > 100 for x in links.values()), links  # key updates
    assert sum(x[0] for x in links.values()) > 0, links  # batches on the workers


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_udp_workers_are_clean_under_thread_sanitizer(tsan_prefix, tmp_path, mpi):  # noqa: F811
    r = stress_under_tsan(tsan_prefix, tmp_path, mpi, "udp")
    assert sum(x[0] for x in udp_batches(r.stderr).values()) > 0, r.stderr[-3000:]
