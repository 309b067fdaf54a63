# tests/test_failures.py: what happens when things go wrong, across real sites: MPI_Abort
# on one rank, a crashed rank, a killed gateway, an intruder without the job secret, bad
# launch input; and the WAN message counts of collectives (they grow with sites, not
# ranks). Every job here must end, with the right status, well within its time limit.
from __future__ import annotations

import os
import secrets
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from jobprocs import procs_with_env


pytestmark = pytest.mark.native

PROGRAMS = {
    # rank argv[1] aborts after a barrier; everyone else blocks in a receive from it
    "abort": r"""
#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int r, n, x;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int who = atoi(argv[1]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (r == who) MPI_Abort(MPI_COMM_WORLD, 7);
    MPI_Recv(&x, 1, MPI_INT, who, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}""",
    # rank argv[1] dies abruptly after a barrier (a crash)
    "crash": r"""
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int r, x;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    int who = atoi(argv[1]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (r == who) _exit(3);
    MPI_Recv(&x, 1, MPI_INT, who, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}""",
    # keeps all ranks busy in barriers for argv[1] seconds, then a ring and an allreduce
    "slowring": r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int r, n, tok = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    double until = MPI_Wtime() + atof(argv[1]);
    int go = 1; /* rank 0's clock decides for all: ranks must agree on the last barrier */
    while (go) {
        MPI_Barrier(MPI_COMM_WORLD);
        usleep(100000);
        go = MPI_Wtime() < until;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    if (r == 0) { MPI_Send(&tok, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
                  MPI_Recv(&tok, 1, MPI_INT, n - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
    else { MPI_Recv(&tok, 1, MPI_INT, r - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); tok += r;
           MPI_Send(&tok, 1, MPI_INT, (r + 1) % n, 0, MPI_COMM_WORLD); }
    int sum = 0; MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (r == 0) printf(tok == n * (n - 1) / 2 && sum == tok ? "ring ok\n" : "ring WRONG\n");
    MPI_Finalize();
    return 0;
}""",
    # argv[1] rounds of barrier + bcast + reduce + allreduce
    "colls": r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int r, n, ok = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    for (int i = 0; i < atoi(argv[1]); i++) {
        int v = r, s = 0, b = r == 0 ? 42 : 0;
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Bcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Reduce(&v, &s, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        if (r == 0) ok &= s == n * (n - 1) / 2;
        MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        ok &= s == n * (n - 1) / 2 && b == 42;
    }
    if (r == 0) printf(ok ? "colls ok\n" : "colls WRONG\n");
    MPI_Finalize();
    return 0;
}""",
}


@pytest.fixture(scope="module")
def progs(prefix, tmp_path_factory):
    d = tmp_path_factory.mktemp("failprogs")
    out = {}
    for name, src in PROGRAMS.items():
        (d / f"{name}.c").write_text(src)
        subprocess.run([str(prefix.cc), "-O1", "-o", str(d / name), str(d / f"{name}.c")],
                       check=True, capture_output=True)
        out[name] = d / name
    return out


def start(args, env=None):
    e = dict(os.environ, **(env or {}))
    return subprocess.Popen([sys.executable, "-m", "isthmus", "run", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)


def finish(p, limit):
    t0 = time.monotonic()
    try:
        out, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail(f"job still running after {limit} s (a hang)\n{err[-4000:]}")
    return p.returncode, out, err, time.monotonic() - t0


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_abort_on_one_rank_stops_every_site(progs, mpi):
    p = start(["-n", "4", "--mpi", mpi, "--", str(progs["abort"]), "3"])
    rc, out, err, took = finish(p, 60)
    assert rc != 0, err
    assert "rank 3 called MPI_Abort (error code 7)" in err, err[-3000:]
    assert took < 30


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_crashed_rank_stops_every_site(progs, mpi):
    p = start(["-n", "4", "--mpi", mpi, "--", str(progs["crash"]), "2"])
    rc, out, err, took = finish(p, 60)
    assert rc != 0, err
    # the site that reports first varies (the crashed one, or its peer losing the link)
    assert "site A" in err or "site B" in err, err[-3000:]
    assert took < 30


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_killed_gateway_stops_every_site(progs, mpi):
    tag = uuid.uuid4().hex
    p = start(["-n", "4", "--mpi", mpi, "--", str(progs["slowring"]), "60"],
              env={"ISTHMUS_TEST_TAG": tag})
    deadline = time.monotonic() + 30
    gws = []
    while not gws and time.monotonic() < deadline:
        time.sleep(0.5)
        gws = procs_with_env(tag, ISTHMUS_SITE="1")
    assert gws, "site B's gateway never started"
    time.sleep(2)
    os.kill(gws[0][0], signal.SIGKILL)
    t_kill = time.monotonic()
    rc, out, err, _ = finish(p, 60)
    assert rc != 0, err
    assert time.monotonic() - t_kill < 30
    assert "site B" in err or "link to site" in err, err[-3000:]


def intrude(host, port, job_hex, wrong_job=False):
    """Act as a gateway of this job that does not know the secret (client side of the
    handshake in native/src/wan/auth.h), and return how the server answered."""
    deadline = time.monotonic() + 30
    while True:  # on a loaded machine the gateway may not be listening yet
        try:
            s = socket.create_connection((host, port), timeout=10)
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    job = bytes.fromhex(job_hex)
    if wrong_job:
        job = bytes(b ^ 0xFF for b in job)
    hello = (b"ISAU" + bytes([3, 1, 6, 0]) + struct.pack("<II", 1, 0) + secrets.token_bytes(32) + job
             + secrets.token_bytes(32) + bytes([22]) + bytes(7))
    s.sendall(hello)
    reply = s.recv(200)
    if len(reply) >= 120 and reply[5] == 2:  # CHALLENGE: answer with a MAC we cannot compute
        s.sendall(b"ISAU" + bytes([3, 3, 0, 0]) + secrets.token_bytes(32))
        reply = s.recv(10)
    s.close()
    return reply


@pytest.mark.parametrize("transport,wrong_job", [("tcp", False), ("tcp", True), ("udp", False)],
                         ids=["wrong-secret", "wrong-job", "udp-wrong-secret"])
def test_intruder_without_secret_is_refused_and_job_unaffected(progs, transport, wrong_job):
    """Over udp the same handshake runs on the listener before any UDP socket exists."""
    tag = uuid.uuid4().hex
    p = start(["-n", "4", "--mpi", "openmpi", "--transport", transport, "--",
               str(progs["slowring"]), "6"], env={"ISTHMUS_TEST_TAG": tag})
    deadline = time.monotonic() + 30
    gws = []
    while not gws and time.monotonic() < deadline:
        time.sleep(0.3)
        gws = procs_with_env(tag, ISTHMUS_SITE="0")
    assert gws, "site A's gateway never started"
    kv = gws[0][1]
    host, port = kv["ISTHMUS_GATEWAY_ADDRS"].split(",")[0].rsplit(":", 1)
    secret = Path(kv["ISTHMUS_SECRET_FILE"]).read_text().strip()
    time.sleep(2)  # the sites are linked up: this connection is a stranger
    reply = intrude(host, int(port), kv["ISTHMUS_JOB"], wrong_job)
    rc, out, err, _ = finish(p, 90)
    assert rc == 0, err[-3000:]
    assert "ring ok" in out
    assert "refused connection from 127.0.0.1" in err, err[-3000:]
    assert secret not in err and secret not in out
    assert not reply.endswith(b"\x01"), "the intruder was accepted"


def test_bad_site_file_is_explained(progs, tmp_path):
    bad = tmp_path / "job.toml"
    bad.write_text('[[site]]\nname = "A"\nranks = -2\n')
    p = start(["--site-file", str(bad), "--", str(progs["slowring"]), "0"])
    rc, out, err, _ = finish(p, 30)
    assert rc == 2
    assert "job.toml" in err and "ranks" in err


def test_port_in_use_is_explained(progs):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    p = start(["-n", "2", "--port", str(port), "--", str(progs["slowring"]), "0"])
    rc, out, err, _ = finish(p, 30)
    s.close()
    assert rc != 0
    assert str(port) in err and "in use" in err, err[-2000:]


def wan_messages(err):
    total = 0
    for line in err.splitlines():
        if line.startswith("isthmus stats:") and ": sent " in line:
            total += int(line.split(": sent ")[1].split(" msgs")[0])
    return total


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_collective_wan_messages_grow_with_sites_not_ranks(progs, mpi):
    counts = {}
    for ranks in ("1,1", "3,3"):
        p = start(["-n", str(sum(map(int, ranks.split(",")))), "--ranks-per-site", ranks,
                   "--mpi", mpi, "--stats", "--", str(progs["colls"]), "20"])
        rc, out, err, _ = finish(p, 120)
        assert rc == 0 and "colls ok" in out, err[-3000:]
        counts[ranks] = wan_messages(err)
    assert counts["1,1"] > 0
    assert counts["1,1"] == counts["3,3"], counts
