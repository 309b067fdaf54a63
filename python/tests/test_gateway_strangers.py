# tests/test_gateway_strangers.py: strangers at a running job's gateway ports cannot stall
# it (issue 23 §1). Each attack runs against every gateway listener of a 2-site job doing
# a cross-site ping-pong every 100 ms, and keeps itself going (a dropped connection is
# replaced) for the whole run: silent connections, a byte-a-second one, and 100
# connections that send half a HELLO and wait. The job must finish with exit 0, no link
# lost or silent, no ping-pong round near the old 5 s stall and their median close to an
# undisturbed run's (within 4x plus 50 ms: a loaded host's time slices, not a stall), the
# strangers counted in --stats and the log about them bounded.
from __future__ import annotations

import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from jobprocs import gateway_env
from strangers import handshake

pytestmark = pytest.mark.native

PINGPONG = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
/* argv[1] rounds: rank 0 and the last rank (another site) ping-pong 8 bytes, then nap
 * 100 ms; rank 0 prints every round's time in ms on one line */
int main(int argc, char **argv) {
    int r, n, rounds = atoi(argv[1]);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    double *t = calloc((size_t)rounds, sizeof *t), x[1] = {0};
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < rounds; i++) {
        if (r == 0) {
            double t0 = MPI_Wtime();
            MPI_Send(x, 1, MPI_DOUBLE, n - 1, i, MPI_COMM_WORLD);
            MPI_Recv(x, 1, MPI_DOUBLE, n - 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            t[i] = (MPI_Wtime() - t0) * 1e3;
        } else if (r == n - 1) {
            MPI_Recv(x, 1, MPI_DOUBLE, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            x[0] += 1;
            MPI_Send(x, 1, MPI_DOUBLE, 0, i, MPI_COMM_WORLD);
        }
        usleep(100000);
    }
    if (r == 0) {
        printf("rounds:");
        for (int i = 0; i < rounds; i++) printf(" %.3f", t[i]);
        printf("\npingpong %s\n", x[0] == rounds ? "ok" : "WRONG");
    }
    MPI_Finalize();
    return 0;
}
"""

ROUNDS = 40


@pytest.fixture(scope="module")
def pingpong(prefix, tmp_path_factory):
    d = tmp_path_factory.mktemp("strangers")
    (d / "pingpong.c").write_text(PINGPONG)
    subprocess.run([str(prefix.cc), "-O1", "-o", str(d / "pingpong"), str(d / "pingpong.c")],
                   check=True, capture_output=True)
    return d / "pingpong"


def gateway_addrs(tag):
    """(host, port) of every gateway listener of the job whose processes carry tag."""
    kv = gateway_env(tag)
    return [(hp.rsplit(":", 1)[0], int(hp.rsplit(":", 1)[1]))
            for hp in kv["ISTHMUS_GATEWAY_ADDRS"].split(",")]


class Attacker:
    """Keeps `count` connections per address open, each doing `behaviour`; a connection
    the gateway drops is replaced after a short pause, for as long as the attack runs."""

    def __init__(self, addrs, count, behaviour):
        self.addrs, self.count, self.behaviour = addrs, count, behaviour
        self.stop = threading.Event()
        self.opened = 0
        self.threads = [threading.Thread(target=self._keep, args=(a,), daemon=True)
                        for a in addrs for _ in range(count)]

    def _keep(self, addr):
        while not self.stop.is_set():
            try:
                s = socket.create_connection(addr, timeout=5)
            except OSError:
                self.stop.wait(0.2)  # not listening yet, or the backlog is full
                continue
            self.opened += 1
            try:
                self.behaviour(s, self.stop)
            except OSError:
                pass
            finally:
                s.close()
            self.stop.wait(0.05)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=10)


def silent(s, stop):
    s.settimeout(0.5)
    while not stop.is_set():
        try:
            if s.recv(64) == b"":
                return  # dropped by the gateway
        except socket.timeout:
            pass


def byte_a_second(s, stop):
    hello = b"ISAU" + bytes([1, 1, 0, 0]) + bytes(56)
    for b in hello:
        if stop.wait(1.0):
            return
        s.sendall(bytes([b]))


def half_hello(s, stop):
    s.sendall(b"ISAU" + bytes([1, 1, 0, 0]) + bytes(12))
    silent(s, stop)


def run_job(pingpong, transport, attack=None, count=1):
    tag = uuid.uuid4().hex
    env = dict(os.environ, ISTHMUS_TEST_TAG=tag)
    started = time.monotonic()
    p = subprocess.Popen([sys.executable, "-m", "isthmus", "run", "-n", "2", "--stats",
                          "--transport", transport, "--", str(pingpong), str(ROUNDS)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    attacker = None
    try:
        if attack:
            attacker = Attacker(gateway_addrs(tag), count, attack)
            attacker.__enter__()
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail(f"the job hung\n{err[-3000:]}")
    finally:
        if attacker:
            attacker.__exit__(None, None, None)
    assert p.returncode == 0, err[-3000:]
    assert "pingpong ok" in out, out
    rounds = [float(x) for x in re.search(r"rounds:(.*)", out).group(1).split()]
    return rounds, err, attacker, time.monotonic() - started


@pytest.fixture(scope="module")
def undisturbed(pingpong):
    return {t: run_job(pingpong, t)[0] for t in ("tcp", "udp")}


@pytest.mark.parametrize("transport,attack,count", [
    ("tcp", silent, 8),
    ("tcp", byte_a_second, 1),
    ("tcp", half_hello, 100),
    ("udp", silent, 8),
], ids=["silent-x8", "byte-a-second", "half-hello-x100", "udp-silent-x8"])
def test_strangers_do_not_stall_a_running_job(pingpong, undisturbed, transport, attack, count):
    rounds, err, attacker, seconds = run_job(pingpong, transport, attack, count)
    base = undisturbed[transport]
    assert attacker.opened >= count, "the attack never got going"
    for bad in (r"silent for", r"link to site \S+ gateway \d+ lost", r"aborting"):
        assert not re.search(bad, err), err[-3000:]
    # the old gateway froze for its 5 s handshake time-out per stranger; on a loaded
    # host single rounds of an undisturbed job took up to 0.5 s (measured at load 7)
    assert max(rounds) < 2500, (rounds, base)
    # the attack's own threads share the 2 cores with the job (a third of a core for 100
    # half HELLOs per gateway), and the undisturbed run was measured at another moment of
    # a shared host: at load 7-9 the p90 of 10 runs with and without attacks spread from
    # 2.4 to 248 ms (the old bound, 2 x p90 + 2 ms, failed 100 half HELLOs twice), their
    # medians 1.2-2.3 ms. The median needs most rounds slowed, which a load spike of a
    # second or two does not do to a 4 s run; a gateway that waits on strangers does
    assert statistics.median(rounds) <= 4 * statistics.median(base) + 50.0, (rounds, base)
    refused = [int(m) for m in re.findall(r"listener: (\d+) unauthenticated", err)]
    assert sum(refused) > 0, err[-3000:]
    # what strangers cause is logged at most 5 lines per 10 s per gateway (setup.c
    # GW_STRANGER_LOGS), in as many windows as the job's time spans: a job a loaded host
    # makes slow has more of them (the bound was 3 windows, which a job of over 20 s from
    # start to end may exceed on a correct gateway)
    windows = int(seconds // 10) + 1
    assert err.count("refused connection from") <= 2 * 5 * windows, (seconds, err[-3000:])


def authenticate_as(addr, job_hex, secret_hex, site, gw):
    """The client side of the handshake with the job's secret, claiming any identity;
    returns the verdict byte and the socket. A gateway not listening yet (its process
    exists, but a loaded host has not run it that far) is tried again for up to 30 s."""
    deadline = time.monotonic() + 30
    while True:
        try:
            s = socket.create_connection(addr, timeout=10)
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    return handshake(s, job_hex, secret_hex, site, gw), s


def test_authenticated_peer_with_out_of_range_identity_is_refused(pingpong):
    """A site or gateway number >= 2^31 from the wire was cast to int before its range
    check and indexed the gateway's tables negatively; it is refused and logged."""
    tag = uuid.uuid4().hex
    env = dict(os.environ, ISTHMUS_TEST_TAG=tag)
    # 100 rounds (10 s): the six connections below must all be made while the job runs,
    # after a start that a loaded host makes slower (30 rounds left it 3 s)
    p = subprocess.Popen([sys.executable, "-m", "isthmus", "run", "-n", "2", "--", str(pingpong),
                          "100"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    try:
        addrs = gateway_addrs(tag)
        kv = gateway_env(tag)
        secret = Path(kv["ISTHMUS_SECRET_FILE"]).read_text().strip()
        time.sleep(1)
        answers = []
        for site, gw in ((2**31 + 1, 0), (1, 2**31 + 5), (2**32 - 1, 2**32 - 1)):
            for addr in addrs:
                v, s = authenticate_as(addr, kv["ISTHMUS_JOB"], secret, site, gw)
                answers.append(v)
                s.settimeout(10)
                try:
                    assert s.recv(1) == b"", "the gateway kept the connection"
                except ConnectionResetError:
                    pass
                s.close()
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert answers and all(v == b"\x01" for v in answers), answers  # the secret was right
    assert p.returncode == 0, err[-3000:]
    assert "pingpong ok" in out
    assert "which is not expected to connect here" in err, err[-3000:]
    assert secret not in err
