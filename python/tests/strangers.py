# tests/strangers.py: clients without the job secret, for the tests of the servers that
# authenticate with it (isthmus-copy serve, isthmus-linkprobe serve): idle connections
# from chosen loopback source addresses (127.0.0.2 and up stand for other hosts), a
# flood from one address, and whether the server has closed a connection yet; and one
# client with the secret that authenticates and then sends nothing (a slot held); and
# the ending of a relay's sockets, for the tests that put a relay in the path.
from __future__ import annotations

import hashlib
import hmac
import os
import socket
import struct
import threading
import time


def stranger(port: int, source: str) -> socket.socket:
    """A TCP connection to 127.0.0.1:port from source, sending nothing."""
    s = socket.socket()
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


def closed_by_server(s: socket.socket) -> bool:
    """True once the server has closed (or reset) its end of s."""
    s.setblocking(False)
    try:
        return s.recv(4096) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        s.setblocking(True)


def dribble_until_cut(port: int, data: bytes, give_up_s: float) -> float | None:
    """Send data one byte a second from 127.0.0.2; seconds until the server cut the
    connection, or None if it was still open after give_up_s."""
    s = stranger(port, "127.0.0.2")
    t0 = time.monotonic()
    try:
        for b in data:
            try:
                s.send(bytes([b]))
            except OSError:
                return time.monotonic() - t0
            time.sleep(1)
            if closed_by_server(s):
                return time.monotonic() - t0
            if time.monotonic() - t0 > give_up_s:
                return None
        return None
    finally:
        s.close()


class Flood:
    """Connections from one address, opened as fast as possible and kept open (at most
    `most`), in a thread, while the with-block runs."""

    def __init__(self, port: int, source: str = "127.0.0.2", most: int = 400, before: int = 100):
        self.port, self.source, self.most, self.before = port, source, most, before
        self.socks: list[socket.socket] = []
        self._stop = threading.Event()
        self._th = threading.Thread(target=self._run)

    def _run(self) -> None:
        while not self._stop.is_set() and len(self.socks) < self.most:
            try:
                self.socks.append(stranger(self.port, self.source))
            except OSError:
                time.sleep(0.01)

    def __enter__(self) -> "Flood":
        self._th.start()
        deadline = time.monotonic() + 30
        while len(self.socks) < self.before and time.monotonic() < deadline:
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._th.join()

    def still_open(self) -> int:
        """After the flood: how many of its connections the server has not closed."""
        time.sleep(0.5)
        n = sum(not closed_by_server(s) for s in self.socks)
        for s in self.socks:
            s.close()
        return n


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    b = b""
    while len(b) < n:
        chunk = s.recv(n - len(b))
        if not chunk:
            raise ConnectionError(f"the server closed after {len(b)} of {n} bytes")
        b += chunk
    return b


OFFER = 0x06  # the suites a client accepts: AES-256-GCM or ChaCha20-Poly1305 (auth.h)
REKEY = 22    # log2 of the records per key it asks for


def handshake(s: socket.socket, job_hex: str, secret_hex: str, site: int = 0, gw: int = 2,
              preamble: bytes = b"") -> bytes:
    """The client side of the job-secret handshake (native/src/wan/auth.h, version 3:
    HELLO, CHALLENGE, RESPONSE, VERDICT) on s, after preamble, claiming (site, gw);
    checks the server's MAC and returns the verdict byte. Its key share is 32 random bytes
    (a valid X25519 public key whose private half nobody knows: this side never needs the
    traffic keys)."""
    job, secret = bytes.fromhex(job_hex), bytes.fromhex(secret_hex)
    cid = struct.pack("<II", site, gw)
    nc, ec = os.urandom(32), os.urandom(32)
    s.sendall(preamble + b"ISAU" + bytes([3, 1, OFFER, 0]) + cid + nc + job + ec
              + bytes([REKEY]) + bytes(7))
    ch = _recv_exactly(s, 120)
    assert ch[:6] == b"ISAU\x03\x02", ch[:8]
    suite, sid, ns, es, rs, mac_s = ch[6], ch[8:16], ch[16:48], ch[48:80], ch[80], ch[88:120]

    def mac(label: bytes, n1: bytes, n2: bytes) -> bytes:
        return hmac.new(secret, label + job + cid + sid + n1 + n2 + bytes([OFFER, suite]) + ec + es
                        + bytes([REKEY, rs]), hashlib.sha256).digest()

    assert hmac.compare_digest(mac_s, mac(b"isthmus-auth-server", nc, ns))
    s.sendall(b"ISAU\x03\x03\x00\x00" + mac(b"isthmus-auth-client", ns, nc))
    return _recv_exactly(s, 1)


def authenticated(port: int, job_hex: str, secret_hex: str, preamble: bytes = b"") -> socket.socket:
    """A connection from 127.0.0.1 that sends preamble, passes the job-secret handshake as
    client (site 0, gw 2), and then sends nothing more."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    assert handshake(s, job_hex, secret_hex, preamble=preamble) == b"\x01", \
        "the server refused our handshake"
    return s


def shut_both(*socks: socket.socket) -> None:
    """End both directions of every socket (a relay's two sides), ignoring ones already
    gone: the other side then sees the end at once."""
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
