# tests/test_link_crypto.py: what crosses the WAN is encrypted and authenticated by
# default (issue 25), seen from outside the gateways.
#
# - Bytes on the wire: every packet on the loopback device is captured while one rank
#   sends a known pattern to a rank at the other site; the pattern never appears with the
#   default, and does with --wan-crypto none (the control that shows the capture works).
# - An on-path attacker: a TCP proxy between the two gateways flips a bit in a record,
#   injects a record from an earlier job, replays one, or cuts one short. Every time the
#   job still ends with every byte right and exit 0 (the link reconnects through the proxy
#   and resends), and --stats counts the rejected record.
# - Settings: the sites must agree (a site file's crypto against --wan-crypto is refused
#   before anything starts), and none is said at start.
from __future__ import annotations

import os
import re
import select
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from isthmus.launch import ports
from strangers import shut_both

pytestmark = pytest.mark.native
REPO = Path(__file__).resolve().parents[2]

PATTERN_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <string.h>
/* rank 0 sends 4 MiB of a recognisable text to the last rank (another site), which checks it */
int main(int argc, char **argv) {
    static char buf[4 << 20], got[4 << 20];
    const char *p = "ISTHMUS-PLAINTEXT-PATTERN-0123456789-";
    size_t n = strlen(p);
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = p[i % n];
    int r, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (r == 0) MPI_Send(buf, sizeof buf, MPI_CHAR, size - 1, 0, MPI_COMM_WORLD);
    if (r == size - 1) {
        MPI_Recv(got, sizeof got, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf(memcmp(buf, got, sizeof buf) ? "pattern WRONG\n" : "pattern ok\n");
    }
    MPI_Finalize();
    return 0;
}
"""
NEEDLE = b"ISTHMUS-PLAINTEXT-PATTERN"


@pytest.fixture(scope="module")
def progs(prefix, tmp_path_factory):
    d = tmp_path_factory.mktemp("crypto")
    (d / "pattern.c").write_text(PATTERN_C)
    out = {"pattern": d / "pattern", "stress": d / "wan_stress"}
    subprocess.run([str(prefix.cc), "-O1", "-o", str(out["pattern"]), str(d / "pattern.c")],
                   check=True, capture_output=True)
    subprocess.run([str(prefix.cc), "-O2", "-o", str(out["stress"]),
                    str(REPO / "tests" / "mpi" / "wan_stress.c")], check=True, capture_output=True)
    return out


def run(args, env=None, timeout=180):
    return subprocess.run([sys.executable, "-m", "isthmus", "run", *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


# ---- bytes on the wire ----

class Capture:
    """Every frame on the loopback device (AF_PACKET, root), kept in memory."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
        self.sock.bind(("lo", 0))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
        self.data = bytearray()
        self.stop = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            r, _, _ = select.select([self.sock], [], [], 0.2)
            if r:
                self.data += self.sock.recv(70000)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.t.join()
        self.sock.close()


@pytest.mark.parametrize("transport", ["tcp", "udp"])
def test_the_pattern_never_crosses_in_the_clear(netadmin, progs, transport):
    for crypto, visible in (("aead", False), ("none", True)):
        with Capture() as cap:
            r = run(["-n", "2", "--transport", transport, "--wan-crypto", crypto, "--",
                     str(progs["pattern"])])
        assert r.returncode == 0 and "pattern ok" in r.stdout, r.stderr[-3000:]
        assert len(cap.data) > 4 << 20, f"captured only {len(cap.data)} bytes"
        assert (NEEDLE in cap.data) == visible, \
            f"{transport}, crypto {crypto}: pattern {'missing' if visible else 'seen'} on the wire"


# ---- an on-path attacker ----

HANDSHAKE_C2S = 104 + 40  # HELLO and RESPONSE (native/src/wan/auth.h, version 3)
HANDSHAKE_S2C = 120 + 1   # CHALLENGE and the verdict


# The stream's HELLO (gateway/setup.c): the link header (32 bytes) and the frame header
# (48, contract/frame.c), whose field b (offset 40) holds the attempt number from bit 16:
# byte 32 + 45 is its bits 24..31.
HELLO_SIZE = 32 + 48
HELLO_EPOCH_BYTE = 32 + 45


class Proxy:
    """Listens where site B's gateway is announced and forwards to where it listens. On
    the first connection it does `attack` to the dialing gateway's records (after the
    handshake: len u32 | ciphertext | tag[16], wan/sstream.h) once, at record `at`; later
    connections (the reconnect) pass untouched. With attack "record" it only keeps a copy
    of record `at`, for another job's attack."""

    def __init__(self, listen, upstream, attack, at=40, injected=b""):
        self.up, self.attack, self.at, self.injected = upstream, attack, at, injected
        self.kept = b""
        self.done = False
        self.conns = 0
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(listen)
        self.ls.listen(16)
        self.ls.settimeout(0.5)
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop.is_set():
            try:
                c, _ = self.ls.accept()
            except socket.timeout:
                continue
            try:
                u = socket.create_connection(self.up, timeout=5)
            except OSError:
                c.close()
                continue
            first = self.conns == 0
            self.conns += 1
            threading.Thread(target=self._pump, args=(c, u, first), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c, False), daemon=True).start()

    def _pump(self, src, dst, tamper):
        buf = b""
        skip = HANDSHAKE_C2S if tamper else 0
        rec = 0
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if not tamper or self.done:
                    dst.sendall(data)
                    continue
                buf += data
                out = b""
                while True:
                    if skip:
                        k = min(skip, len(buf))
                        out, buf, skip = out + buf[:k], buf[k:], skip - k
                        if skip:
                            break
                    if self.attack == "hello":  # crypto none: the plain HELLO follows
                        if len(buf) < HELLO_SIZE:
                            break
                        k = HELLO_EPOCH_BYTE
                        out, buf = out + buf[:k] + bytes([buf[k] ^ 0x01]) + buf[k + 1:], b""
                        self.done = True
                        break
                    if len(buf) < 4:
                        break
                    n = 4 + struct.unpack("<I", buf[:4])[0] + 16
                    if len(buf) < n:
                        break
                    r, buf = buf[:n], buf[n:]
                    if rec == self.at and not self.done and self.attack == "cut":
                        dst.sendall(out + r)  # up to a record boundary, then the end
                        self.done = True
                        return
                    if rec == self.at and not self.done:
                        out += self._tamper(r, out)
                        self.done = True
                    else:
                        out += r
                    rec += 1
                    if self.done:
                        out += buf
                        buf = b""
                        break
                dst.sendall(out)
        except OSError:
            pass
        finally:
            shut_both(src, dst)

    def _tamper(self, r, before):
        if self.attack == "record":
            self.kept = r
            return r
        if self.attack == "flip":
            return r[:20] + bytes([r[20] ^ 0x04]) + r[21:]
        if self.attack == "inject":
            return self.injected + r
        if self.attack == "replay":
            return r + r
        if self.attack == "truncate":
            return r[: len(r) // 2]
        raise ValueError(self.attack)

    def close(self):
        self.stop.set()
        self.ls.close()


def free_port() -> int:
    """port, port + 1 free on both 127.0.0.2 (the proxy) and 127.0.0.3 (the gateways), below
    the ephemeral range (a port from bind(0) can be taken by any outgoing connection)."""
    for _ in range(50):
        port = ports.free_port_block("127.0.0.2", 2)
        if all(ports.port_is_free("127.0.0.3", p) for p in (port, port + 1)):
            return port
    raise AssertionError("no two consecutive ports free on both 127.0.0.2 and 127.0.0.3")


def proxied_job(progs, attack, injected=b"", env=None, opts=()):
    """2 sites, 1 rank each, wan_stress: site B announced at 127.0.0.2 (the proxy),
    listening on 127.0.0.3; env: more settings for the job, opts: more options."""
    port = free_port()
    proxy = Proxy(("127.0.0.2", port + 1), ("127.0.0.3", port + 1), attack, injected=injected)
    try:
        r = run(["-n", "2", "--host", "127.0.0.2", "--port", str(port), "--stats", *opts, "--",
                 str(progs["stress"]), "0", "4"],
                env={"ISTHMUS_GATEWAY_BIND": "127.0.0.3", **(env or {})})
    finally:
        proxy.close()
    return r, proxy


REJECTED = re.compile(r"stream \d+: tcp .*; (aes-256-gcm|chacha20-poly1305): (\d+) records "
                      r"sealed, (\d+) opened, (\d+) rejected")


@pytest.fixture(scope="module")
def earlier_record(prefix, progs):
    """A record of another job's link, kept by a proxy that changed nothing."""
    r, proxy = proxied_job(progs, "record")
    assert r.returncode == 0 and "wan_stress: OK" in r.stdout, r.stderr[-3000:]
    assert proxy.kept, "the proxy saw no records"
    return proxy.kept


@pytest.mark.parametrize("attack", ["flip", "inject", "replay", "truncate", "cut"])
def test_an_on_path_attacker_changes_nothing_the_job_sees(progs, earlier_record, attack):
    """truncate: half a record, then the rest of the stream; cut: the stream ends at a
    record boundary (the end mark never comes, so the reader knows it was cut)."""
    r, proxy = proxied_job(progs, attack, injected=earlier_record)
    assert proxy.done, "the attack did not happen"
    assert r.returncode == 0 and "wan_stress: OK" in r.stdout, (r.stdout + r.stderr)[-4000:]
    if attack == "cut":
        assert "the connection ended without its end mark" in r.stderr, r.stderr[-3000:]
    else:
        rejected = [int(m[3]) for m in REJECTED.findall(r.stderr)]
        assert sum(rejected) >= 1, r.stderr[-3000:]
    assert proxy.conns >= 2, "the link did not reconnect"


def test_a_damaged_hello_is_refused_not_believed(progs):
    """With --wan-crypto none nothing but its own CRC protects a stream's HELLO. A bit
    flipped in its attempt number once made the accepting gateway take a far-future attempt
    as current: every later reconnection was refused as stale, and the job ended at the
    outage limit (CI of stop 37, corrupt=0.3%). Now the damaged HELLO is refused, the
    dialer tries again, and a later break (ISTHMUS_GW_FAULT_AFTER) reconnects."""
    r, proxy = proxied_job(progs, "hello", opts=["--wan-crypto", "none"],
                           env={"ISTHMUS_GW_FAULT_AFTER": "50", "ISTHMUS_LINK_OUTAGE": "15"})
    assert proxy.done, "the attack did not happen"
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "wan_stress: OK" in r.stdout, out[-4000:]
    assert "no valid HELLO (damaged on the way" in r.stderr, r.stderr[-3000:]
    assert "fault injected by ISTHMUS_GW_FAULT_AFTER" in r.stderr, r.stderr[-3000:]
    assert proxy.conns >= 3, f"{proxy.conns} connections: the refused one, its retry, the reconnect"


# ---- settings ----

def test_sites_that_disagree_are_refused_before_anything_starts(progs, tmp_path):
    sf = tmp_path / "job.toml"
    sf.write_text('[job]\ncrypto = "none"\n\n[[site]]\nname = "A"\nranks = 1\n\n'
                  '[[site]]\nname = "B"\nranks = 1\n')
    r = run(["--site-file", str(sf), "--wan-crypto", "aead", "--", str(progs["pattern"])])
    assert r.returncode == 2, r.stderr
    assert "contradicts the site file's [job] crypto" in r.stderr
    sf.write_text(sf.read_text().replace('"none"', '"rot13"'))
    r = run(["--site-file", str(sf), "--", str(progs["pattern"])])
    assert r.returncode == 2 and "'crypto' must be aead" in r.stderr, r.stderr


@pytest.mark.parametrize("transport", ["tcp", "udp"])
def test_a_forced_cipher_is_what_runs(progs, transport):
    """ISTHMUS_WAN_CIPHER forces the suite at both ends; --stats says which ran."""
    r = run(["-n", "2", "--stats", "--transport", transport, "--", str(progs["pattern"])],
            env={"ISTHMUS_WAN_CIPHER": "chacha20-poly1305"})
    assert r.returncode == 0 and "pattern ok" in r.stdout, r.stderr[-3000:]
    lines = [ln for ln in r.stderr.splitlines() if re.search(r"stream 0: (tcp|udp) ", ln)]
    assert len(lines) == 2 and all("chacha20-poly1305" in ln for ln in lines), lines


@pytest.mark.parametrize("transport", ["tcp", "udp"])
def test_keys_update_every_16_records_through_loss(netadmin, progs, transport):
    """ISTHMUS_WAN_REKEY=16: both ends step to a new key every 16 records (TCP) or
    datagrams (UDP), here thousands of times, over an emulated link that loses and
    reorders datagrams (so UDP opens records of the previous and later keys too): every
    byte arrives right, and --stats counts the key updates."""
    r = run(["-n", "2", "--stats", "--transport", transport, "--wan",
             "delay=2ms,rate=200mbit,loss=1%,reorder=5%", "--", str(progs["stress"]), "0", "3"],
            env={"ISTHMUS_WAN_REKEY": "16"}, timeout=300)
    assert r.returncode == 0 and "wan_stress: OK" in r.stdout, (r.stdout + r.stderr)[-4000:]
    updates = [int(x) for x in re.findall(r"(\d+) key updates", r.stderr)]
    assert len(updates) == 2 and min(updates) > 100, r.stderr[-3000:]
