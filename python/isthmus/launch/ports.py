# isthmus/launch/ports.py: picks free TCP ports on this machine for gateways when the user
# gave none: one block of consecutive ports per site (gateway i listens on base + i).
from __future__ import annotations

import random
import socket
from pathlib import Path
from typing import Iterable, Sequence

from ..errors import IsthmusError

_ATTEMPTS = 200


def _family(host: str) -> int:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _bind(host: str, port: int) -> int:
    """Bind a TCP socket to (host, port) and return the bound port; raises OSError."""
    with socket.socket(_family(host), socket.SOCK_STREAM) as s:
        # Like a listening server would: a port still in TIME_WAIT counts as free.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        return s.getsockname()[1]


def port_is_free(host: str, port: int) -> bool:
    try:
        _bind(host, port)
    except OSError:
        return False
    return True


def _ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 32768, 60999


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on `host` right now, chosen *below* the kernel's ephemeral range: a port
    the OS hands out for port 0 can be taken again, before the gateway binds it, as the local
    port of any outgoing connection (the job's own gateways connect to each other)."""
    lo, _ = _ephemeral_range()
    if lo > 11000:
        rng = random.Random()
        for _ in range(_ATTEMPTS):
            port = rng.randrange(10000, lo - 1000)
            try:
                return _bind(host, port)
            except OSError:
                continue
    try:
        return _bind(host, 0)
    except OSError as e:
        raise IsthmusError(
            f"cannot pick a free port on {host} ({e.strerror or e}); is it an address of this "
            "machine? Give the ports explicitly (--port, or gateway = \"host:port\" in a site file)"
        ) from None


def free_port_block(host: str, count: int, exclude: Iterable[int] = ()) -> int:
    """First port of `count` consecutive free ports on `host`, none of them in `exclude`."""
    if count < 1:
        raise ValueError("count must be >= 1")
    taken = set(exclude)
    for _ in range(_ATTEMPTS):
        base = free_port(host)
        block = range(base, base + count)
        if block[-1] > 65535 or any(p in taken for p in block):
            continue
        if all(port_is_free(host, p) for p in block[1:]):
            return base
    raise IsthmusError(f"could not find {count} consecutive free ports on {host}")


def pick_site_ports(requests: Sequence[tuple[str, int]], exclude: Iterable[int] = ()) -> list[int]:
    """For each (host, gateways) return a base port with `gateways` free consecutive ports;
    blocks never overlap each other or `exclude`."""
    used = set(exclude)
    out = []
    for host, count in requests:
        base = free_port_block(host, count, used)
        used.update(range(base, base + count))
        out.append(base)
    return out


def check_ports_free(host: str, base: int, count: int) -> int | None:
    """The first port of base..base+count-1 that is in use on `host`, or None. Hosts that are
    not addresses of this machine are not checked (None)."""
    try:
        _bind(host, 0)
    except OSError:
        return None  # not local: nothing we can check from here
    for p in range(base, base + count):
        if not port_is_free(host, p):
            return p
    return None
