# tests/test_ports.py: free port picking: returned ports (and blocks) are bindable and
# blocks never overlap.
import socket

import pytest

from isthmus.errors import IsthmusError
from isthmus.launch import ports
from isthmus.launch.ports import check_ports_free, free_port, free_port_block, pick_site_ports, port_is_free


def bindable(port, host="127.0.0.1"):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        s.listen()
        return True


def test_free_port_is_bindable():
    p = free_port("127.0.0.1")
    assert 1 <= p <= 65535 and bindable(p)


def test_block_is_bindable_and_avoids_excluded():
    base = free_port_block("127.0.0.1", 3)
    assert all(bindable(p) for p in range(base, base + 3))
    base2 = free_port_block("127.0.0.1", 3, exclude=range(base, base + 3))
    assert not set(range(base, base + 3)) & set(range(base2, base2 + 3))


def test_site_blocks_do_not_overlap():
    bases = pick_site_ports([("127.0.0.1", 2), ("127.0.0.1", 1), ("127.0.0.1", 3)])
    spans = [set(range(b, b + n)) for b, n in zip(bases, (2, 1, 3))]
    assert not (spans[0] & spans[1]) and not (spans[0] & spans[2]) and not (spans[1] & spans[2])
    for span in spans:
        assert all(bindable(p) for p in span)


def test_port_in_use_detected():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        assert not port_is_free("127.0.0.1", busy)
        assert check_ports_free("127.0.0.1", busy, 1) == busy
    assert port_is_free("127.0.0.1", busy)


def _not_local() -> str:
    """A documentation address (RFC 5737) that is none of this host's: asked of the host,
    since a machine of this kind sits on 192.0.2.0/24 itself."""
    for addr in ("192.0.2.1", "198.51.100.1", "203.0.113.1"):
        with socket.socket() as s:
            try:
                s.bind((addr, 0))
            except OSError:
                return addr
    pytest.skip("every RFC 5737 address tried is one of this host's")


def test_non_local_host_gives_clear_error():
    addr = _not_local()
    with pytest.raises(IsthmusError, match=f"cannot pick a free port on {addr}"):
        free_port(addr)
    assert check_ports_free(addr, 4000, 1) is None  # not checkable, not an error


def test_free_port_avoids_the_ephemeral_range():
    """Ports from bind(0) can be reused by outgoing connections before the gateway binds."""
    lo, _ = ports._ephemeral_range()
    for _ in range(20):
        p = ports.free_port("127.0.0.1")
        assert p < lo
        assert ports.port_is_free("127.0.0.1", p)
