# tests/test_copy.py: `isthmus copy` between two emulated sites. An isthmus-copy server
# runs in site B; the client (the `isthmus copy` CLI) in site A. A 20 MB random file
# goes both ways over a link that loses, duplicates and corrupts packets (corrupt=
# flips payload bits behind valid checksums): over the reliable-UDP transport (its
# CRC32C catches them) every copy must be byte-identical; over TCP the kernel delivers
# the damage and the end-to-end SHA-256 must refuse the copy, and on the same link
# without corruption TCP copies must be identical. A wrong secret, paths leaving the
# served directory, and a server killed mid-transfer must all fail loudly, leave
# nothing under the target's name, and name the peer. With --resume a copy cut off by a
# killed server continues from the bytes kept, and kept bytes of another file are not
# used.
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from isthmus.linkprobe.endpoints import Credentials
from isthmus.netemu import Emulation
from strangers import Flood, authenticated, dribble_until_cut, stranger

pytestmark = [pytest.mark.native, pytest.mark.netadmin]

LINK = "delay=5ms,rate=200mbit,loss=1%,dup=1%,corrupt=0.1%"
CLEAN = "delay=5ms,rate=200mbit,loss=1%,dup=1%"
SLOW = "delay=5ms,rate=20mbit"
SIZE = 20 << 20
PORT = 41998
ISTHMUS = [sys.executable, "-m", "isthmus"]


class Sites:
    def __init__(self, emu: Emulation, exe: str, creds: Credentials, root: Path):
        self.emu, self.exe, self.creds = emu, exe, creds
        self.served = root / "served"
        self.local = root / "local"
        self.outside = root / "outside"
        for d in (self.served, self.local, self.outside):
            d.mkdir()
        self.server: subprocess.Popen | None = None
        self.remote = f"{emu.address('B')}:{PORT}"
        self.log = root / "server.log"  # a file, not a pipe nobody reads

    def start_server(self) -> None:
        with open(self.log, "a") as log:
            self.server = self.emu.popen("B", [self.exe, "serve", str(self.served), "--listen",
                                               self.remote, *self.creds.args(), "--timeout", "5"],
                                         stdout=subprocess.PIPE, stderr=log, text=True)
        line = self.server.stdout.readline()
        assert line.startswith("listening"), line + self.log.read_text()

    def kill_server(self) -> None:
        self.server.send_signal(signal.SIGKILL)
        self.server.wait(10)

    def copy(self, *args: str, creds: Credentials | None = None, timeout: float = 120,
             **kw) -> subprocess.CompletedProcess:
        argv = [*ISTHMUS, "copy", *args, *(creds or self.creds).args(), "--timeout", "5"]
        return self.emu.exec("A", argv, timeout=timeout, capture_output=True, text=True, **kw)

    def raw(self, op: str, *args: str, creds: Credentials | None = None) -> subprocess.CompletedProcess:
        """isthmus-copy itself (the CLI costs ~2 s of imports per call on this machine):
        for the many short refusals."""
        argv = [self.exe, op, *args, *(creds or self.creds).args(), "--timeout", "5"]
        return self.emu.exec("A", argv, timeout=60, capture_output=True, text=True)

    def copy_through_corruption(self, *args: str) -> subprocess.CompletedProcess:
        """A copy over LINK. A bit flipped in the few packets that set the connection up
        (TCP: the handshake; UDP: also its parameter exchange) fails the connection
        (correctly: that is the handshake's HMAC at work); only then try again, at most
        twice."""
        for _ in range(3):
            r = self.copy(*args)
            if "connecting to" not in r.stderr:
                return r
        return r

    def popen_copy(self, *args: str) -> subprocess.Popen:
        argv = [self.exe, *args, *self.creds.args(), "--timeout", "3"]
        return self.emu.popen("A", argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def sites(netadmin, tmp_path_factory):
    exe = str(netadmin.root / "bin" / "isthmus-copy")
    creds = Credentials()
    try:
        with Emulation(sites=2, link=CLEAN, job="tCopy", seed=7) as emu:
            s = Sites(emu, exe, creds, tmp_path_factory.mktemp("copy"))
            s.start_server()
            yield s
    finally:
        creds.close()


@pytest.fixture(scope="module")
def data(sites) -> bytes:
    blob = os.urandom(SIZE)
    (sites.local / "data.bin").write_bytes(blob)
    os.chmod(sites.local / "data.bin", 0o640)
    return blob


def _no_temp_files(*dirs: Path) -> None:
    for d in dirs:
        left = [p.name for p in d.rglob(".*.icp-*")]
        assert not left, f"temporary files left in {d}: {left}"


def _set_link(emu: Emulation, spec: str) -> None:
    emu.set_link("A", "B", spec)
    emu.set_link("B", "A", spec)


@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_put_and_get_are_byte_identical(sites, data, transport):
    """udp through LINK (corruption included); tcp through the same link without the
    corruption, which it cannot survive (next test)."""
    emu = sites.emu
    if transport == "udp":
        _set_link(emu, LINK)
    try:
        before = emu.stats()
        put = sites.copy_through_corruption("--transport", transport, str(sites.local / "data.bin"),
                                            f"{sites.remote}:in-{transport}.bin")
        assert put.returncode == 0, put.stderr
        assert (sites.served / f"in-{transport}.bin").read_bytes() == data
        assert (sites.served / f"in-{transport}.bin").stat().st_mode & 0o777 == 0o640
        assert f"over {transport}, sha256 verified" in put.stdout, put.stdout
        back = sites.local / f"back-{transport}.bin"
        get = sites.copy_through_corruption("--transport", transport, "--quiet",
                                            f"{sites.remote}:in-{transport}.bin", str(back))
        assert get.returncode == 0, get.stderr
        assert "ETA" not in get.stderr, get.stderr  # --quiet: the summary only
        assert back.read_bytes() == data
        after = emu.stats()
    finally:
        _set_link(emu, CLEAN)
    _no_temp_files(sites.served, sites.local)
    # the faults really happened, in both directions
    for a, b in (("A", "B"), ("B", "A")):
        x, y = emu.link_stats(a, b, before), emu.link_stats(a, b, after)
        assert y["drop_loss"] > x["drop_loss"] and y["dup"] > x["dup"], (a, b, x, y)
        if transport == "udp":
            assert y["corrupted"] > x["corrupted"], (a, b, x, y)


def test_tcp_through_corruption_is_refused_by_the_checksum(sites, data):
    """The kernel's checksum does not see corrupt= damage; the records' tags must (the
    stream is sealed by default; with --crypto none the end-to-end SHA-256 is what is
    left, and it refuses the file as before)."""
    emu = sites.emu
    _set_link(emu, LINK)
    try:
        before = emu.stats()
        r = sites.copy_through_corruption("--transport", "tcp", str(sites.local / "data.bin"),
                                          f"{sites.remote}:bad.bin")
        after = emu.stats()
    finally:
        _set_link(emu, CLEAN)
    assert emu.link_stats("A", "B", after)["corrupted"] > emu.link_stats("A", "B", before)["corrupted"]
    assert r.returncode == 1, r.stderr
    # the receiver (the server, for a put) finds the damaged record and drops the copy
    assert "a record failed authentication" in sites.log.read_text(), sites.log.read_text()[-2000:]
    assert sites.remote in r.stderr, r.stderr
    assert not (sites.served / "bad.bin").exists()
    _no_temp_files(sites.served)


@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_wrong_secret_is_refused_and_nothing_is_written(sites, transport):
    wrong = Credentials(sites.creds.job)
    try:
        small = sites.local / "small.txt"
        small.write_text("hello\n")
        listing = sorted(p.name for p in sites.served.iterdir())
        r = sites.raw("put", "--transport", transport, str(small), sites.remote, "", creds=wrong)
        g = sites.raw("get", "--transport", transport, sites.remote, "in-udp.bin",
                      str(sites.local / "stolen.bin"), creds=wrong)
    finally:
        wrong.close()
    for x in (r, g):
        assert x.returncode == 1, x.stderr
        assert "secret" in x.stderr and sites.remote.split(":")[0] in x.stderr, x.stderr
    assert "refused a connection" in sites.log.read_text()
    assert sorted(p.name for p in sites.served.iterdir()) == listing
    assert not (sites.local / "stolen.bin").exists()


def test_paths_outside_the_served_directory_are_refused(sites):
    (sites.outside / "secret").write_text("outside\n")
    (sites.served / "sub").mkdir(exist_ok=True)
    (sites.served / "out").symlink_to(sites.outside)          # leads out: refused
    (sites.served / "inner").symlink_to("sub")                 # stays inside: allowed
    (sites.served / "abs").symlink_to(sites.served / "sub")    # absolute: refused (docs/copy.md)
    small = sites.local / "small.txt"
    small.write_text("hello\n")
    for remote in ("../x.txt", "sub/../../x.txt", "/tmp/x.txt", "out/x.txt", "out/", "abs/"):
        r = sites.raw("put", "--transport", "tcp", str(small), sites.remote, remote)
        assert r.returncode == 1 and "refused" in r.stderr, (remote, r.stderr)
        assert "bad path" in r.stderr, (remote, r.stderr)
    for remote in ("../outside/secret", "/etc/passwd", "out/secret"):
        r = sites.raw("get", "--transport", "tcp", sites.remote, remote, str(sites.local / "got"))
        assert r.returncode == 1 and "bad path" in r.stderr, (remote, r.stderr)
        assert not (sites.local / "got").exists()
    assert [p.name for p in sites.outside.iterdir()] == ["secret"]
    ok = sites.raw("put", str(small), sites.remote, "inner/")
    assert ok.returncode == 0, ok.stderr
    assert (sites.served / "sub" / "small.txt").read_text() == "hello\n"
    _no_temp_files(sites.served, sites.local)


def _wait_for_progress(p: subprocess.Popen) -> str:
    seen = ""
    while True:
        line = p.stderr.readline()
        seen += line
        if not line or "bytes (" in line:
            return seen


@pytest.mark.parametrize("transport", ["udp", "tcp"])
@pytest.mark.parametrize("op", ["get", "put"])
def test_server_killed_mid_transfer(sites, data, op, transport):
    emu = sites.emu
    _set_link(emu, SLOW)
    try:
        if op == "get":
            target = sites.local / "killed.bin"
            (sites.served / "big.bin").write_bytes(data)
            p = sites.popen_copy("get", "--transport", transport, sites.remote, "big.bin", str(target))
        else:
            target = sites.served / "killed.bin"
            p = sites.popen_copy("put", "--transport", transport, str(sites.local / "data.bin"),
                                 sites.remote, "killed.bin")
        seen = _wait_for_progress(p)
        assert "bytes (" in seen, seen
        t0 = time.monotonic()
        sites.kill_server()
        out, err = p.communicate(timeout=60)
        waited = time.monotonic() - t0
    finally:
        _set_link(emu, CLEAN)
        sites.start_server()
    assert p.returncode == 1, err
    assert sites.remote in err, err
    assert waited < 20, waited
    assert not target.exists()
    _no_temp_files(sites.local)
    if op == "put":  # a killed server cannot remove its temporary file; it is not the target
        for left in sites.served.glob(".killed.bin.icp-*"):
            left.unlink()


@pytest.mark.parametrize("op", ["get", "put"])
def test_resume_after_a_killed_server(sites, data, op):
    """--resume keeps what a failed copy moved; run again, the copy continues from it
    (and the whole file is still checked). A partial copy whose bytes differ from the
    source is not used."""
    emu = sites.emu
    name = f"resumed-{op}.bin"
    if op == "get":
        (sites.served / name).write_bytes(data)
        target, partial = sites.local / name, sites.local / f".{name}.icp-partial"
        args = ("get", "--resume", sites.remote, name, str(sites.local) + "/")
    else:
        target, partial = sites.served / name, sites.served / f".{name}.icp-partial"
        args = ("put", "--resume", str(sites.local / "data.bin"), sites.remote, name)
    _set_link(emu, SLOW)
    try:
        p = sites.popen_copy(*args)
        assert "bytes (" in _wait_for_progress(p)
        time.sleep(0.5)
        sites.kill_server()
        _, err = p.communicate(timeout=60)
    finally:
        _set_link(emu, CLEAN)
        sites.start_server()
    assert p.returncode == 1 and not target.exists(), err
    kept = partial.stat().st_size
    assert 0 < kept < SIZE, kept
    if op == "put":  # through the CLI once
        r = sites.copy("--resume", str(sites.local / "data.bin"), f"{sites.remote}:{name}")
    else:
        r = sites.raw(*args)
    assert r.returncode == 0, r.stderr
    assert f"resumed at byte {kept} of {SIZE}" in r.stdout, r.stdout
    assert target.read_bytes() == data and not partial.exists()

    # a partial copy of something else: not used, the copy starts over
    target.unlink()
    partial.write_bytes(os.urandom(1 << 20))
    r = sites.raw(*args)
    assert r.returncode == 0, r.stderr
    assert "resumed at" not in r.stdout, r.stdout
    assert target.read_bytes() == data and not partial.exists()


def test_serve_command_prints_credentials_and_stops_with_its_server(prefix, tmp_path):
    """`isthmus copy serve` (on loopback, no emulation): a new job id and secret file are
    printed (the secret itself never), a client with them can copy, and SIGTERM stops
    the C server too."""
    port = 41985
    served = tmp_path / "served"
    served.mkdir()
    srv = subprocess.Popen(ISTHMUS + ["copy", "serve", str(served), "--listen", f"127.0.0.1:{port}"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert srv.stdout.readline().startswith("listening"), srv.stderr.read()
        head = srv.stderr.readline() + srv.stderr.readline()
        job = head.split("job id: ")[1].split()[0]
        secret_file = head.split("secret file: ")[1].split()[0]
        src = tmp_path / "x.bin"
        src.write_bytes(os.urandom(100000))
        r = subprocess.run([str(prefix.root / "bin" / "isthmus-copy"), "put", str(src),
                            f"127.0.0.1:{port}", "", "--job", job, "--secret-file", secret_file],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert (served / "x.bin").read_bytes() == src.read_bytes()
        secret = Path(secret_file).read_text().strip()
        srv.send_signal(signal.SIGTERM)
        out, err = srv.communicate(timeout=20)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    assert srv.returncode == 0, err
    assert secret not in head + out + err + r.stdout + r.stderr
    left = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True).stdout
    assert not left.strip(), f"copy server left running: {left}"


# --- A server on loopback (no emulation), against strangers without the secret and
# clients with it that send hostile names and modes (issue 23). Strangers connect from
# other loopback addresses (127.0.0.2 and up), so "per source address" can be told apart.

PREAUTH_S = 5  # the server's fixed pre-authentication limit (docs/copy.md)


class LoopServer:
    def __init__(self, prefix, tmp_path: Path, timeout: float = 30, umask: int = 0o027):
        self.exe = str(prefix.root / "bin" / "isthmus-copy")
        self.creds = Credentials()
        self.served, self.local, self.outside = (tmp_path / n for n in ("served", "local", "outside"))
        for d in (self.served, self.local, self.outside):
            d.mkdir()
        self.log = tmp_path / "server.log"
        # port 0: the server takes a free one and says which (a port found free first could
        # be taken by another process before the server bound it)
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [self.exe, "serve", str(self.served), "--listen", "127.0.0.1:0", *self.creds.args(),
                 "--timeout", f"{timeout:g}"],
                stdout=subprocess.PIPE, stderr=log, text=True, preexec_fn=lambda: os.umask(umask))
        line = self.proc.stdout.readline()
        m = re.match(r"listening on 127\.0\.0\.1:(\d+),", line)
        assert m, line + self.log.read_text()
        self.port = int(m.group(1))
        self.addr = f"127.0.0.1:{self.port}"

    def raw(self, op: str, *args: str, umask: int = 0o022) -> subprocess.CompletedProcess:
        return subprocess.run([self.exe, op, *args, *self.creds.args(), "--timeout", "20"],
                              capture_output=True, text=True, timeout=60,
                              preexec_fn=lambda: os.umask(umask))

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        self.creds.close()


@pytest.fixture
def loop(prefix, tmp_path):
    s = LoopServer(prefix, tmp_path)
    yield s
    s.close()


def _timed_copies(loop: LoopServer) -> list[float]:
    """A put over tcp and a get over udp; each must succeed. Their durations."""
    src = loop.local / "small.bin"
    src.write_bytes(os.urandom(50000))
    took = []
    for op, transport in (("put", "tcp"), ("get", "udp")):
        t0 = time.monotonic()
        if op == "put":
            r = loop.raw("put", "--transport", transport, str(src), loop.addr, "small.bin")
        else:
            r = loop.raw("get", "--transport", transport, loop.addr, "small.bin", str(loop.local / "back.bin"))
        took.append(time.monotonic() - t0)
        assert r.returncode == 0, r.stderr + loop.log.read_text()[-2000:]
    assert (loop.local / "back.bin").read_bytes() == src.read_bytes()
    return took


def test_idle_strangers_do_not_take_the_slots(loop):
    """16 idle connections from 16 addresses and 8 from the client's own address (more
    than the 16 transfer slots, which strangers used to fill): the copies go through at
    once, without waiting for the strangers' pre-authentication limit to pass."""
    idle = [stranger(loop.port, f"127.0.0.{2 + i}") for i in range(16)]
    idle += [stranger(loop.port, "127.0.0.1") for _ in range(8)]
    try:
        time.sleep(0.3)  # the server has accepted them all
        took = _timed_copies(loop)
    finally:
        for s in idle:
            s.close()
    assert max(took) < PREAUTH_S - 1, (took, loop.log.read_text()[-2000:])
    assert "already 16 connections" not in loop.log.read_text()


def test_authenticated_copies_keep_their_16_slots(loop):
    """15 clients that authenticated and then idle hold 15 of the 16 copy slots while 16
    strangers are still connecting: a put gets the 16th slot at once. With all 16 taken,
    the next client is told `busy`, and gets in once a slot is free."""
    secret = Path(loop.creds.secret_file).read_text().strip()
    hold = lambda: authenticated(loop.port, loop.creds.job, secret, b"ISCP\x01t\x00\x00")
    held = [hold() for _ in range(15)]
    idle = [stranger(loop.port, f"127.0.0.{2 + i}") for i in range(16)]
    src = loop.local / "s.bin"
    src.write_bytes(os.urandom(1000))
    try:
        time.sleep(0.3)
        r = loop.raw("put", "--transport", "tcp", str(src), loop.addr, "one.bin")
        assert r.returncode == 0, r.stderr + loop.log.read_text()[-2000:]
        held.append(hold())
        time.sleep(0.3)
        r = loop.raw("put", "--transport", "tcp", str(src), loop.addr, "two.bin")
        assert r.returncode == 1 and "busy" in r.stderr, r.stderr
        held.pop().close()
        deadline = time.monotonic() + 10
        while (r := loop.raw("put", "--transport", "tcp", str(src), loop.addr, "two.bin")).returncode:
            assert "busy" in r.stderr and time.monotonic() < deadline, r.stderr
            time.sleep(0.2)
    finally:
        for s in held + idle:
            s.close()
    assert (loop.served / "two.bin").read_bytes() == src.read_bytes()
    assert "already 16 copies running" in loop.log.read_text()


def test_a_byte_a_second_client_is_cut_off_at_the_preauth_limit(prefix, tmp_path):
    """--timeout 60, but a client that dribbles its preamble and handshake is dropped
    after the fixed pre-authentication limit."""
    loop = LoopServer(prefix, tmp_path, timeout=60)
    try:
        dribble = b"ISCP\x01t\x00\x00" + b"ISAU\x01\x01\x00\x00" + bytes(56)
        cut = dribble_until_cut(loop.port, dribble, 3 * PREAUTH_S)
        assert cut is not None and cut < 2 * PREAUTH_S, (cut, loop.log.read_text())
        assert f"did not authenticate within {PREAUTH_S} s" in loop.log.read_text(), loop.log.read_text()
    finally:
        loop.close()


def test_a_flood_from_one_address_displaces_only_its_own(loop):
    """One address opens connections as fast as it can and keeps them open; copies from
    another address go through, the flood holds at most the pre-authentication budget
    (8) open, and every connection the server dropped was the flood's."""
    with Flood(loop.port) as flood:
        _timed_copies(loop)
    still_open = flood.still_open()
    assert still_open <= 8, (still_open, len(flood.socks))
    dropped = [x for x in loop.log.read_text().splitlines() if "dropped before authenticating" in x]
    assert dropped and all("127.0.0.2:" in x for x in dropped), dropped[:5]


@pytest.mark.parametrize("resume", [False, True])
def test_a_planted_hard_link_is_not_written_through(loop, resume):
    """A hard link planted under the partial file's name, to a file outside the served
    directory: the put is refused and the outside file keeps its bytes and mode."""
    victim = loop.outside / "victim.txt"
    victim.write_text("precious\n")
    victim.chmod(0o644)
    os.link(victim, loop.served / ".x.bin.icp-partial")
    src = loop.local / "x.bin"
    src.write_bytes(b"overwritten\n" * 100)
    src.chmod(0o777)
    r = loop.raw("put", *(["--resume"] if resume else []), "--transport", "tcp", str(src),
                 loop.addr, "x.bin")
    assert victim.read_text() == "precious\n" and victim.stat().st_mode & 0o7777 == 0o644
    assert r.returncode == 1 and "link" in r.stderr, r.stderr
    assert not (loop.served / "x.bin").exists()


def test_control_characters_are_refused_in_names_and_escaped_in_the_log(loop):
    src = loop.local / "ok.txt"
    src.write_text("hello\n")
    forged = "x\nisthmus-copy serve: 10.9.9.9:1: put admin.txt: 1 bytes in 0.00 s"
    for remote in ("e\x1b[31mvil.txt", forged, "dir\x07/x.txt", "tab\there.txt", "del\x7f.txt"):
        r = loop.raw("put", "--transport", "tcp", str(src), loop.addr, remote)
        assert r.returncode == 1 and "bad path" in r.stderr and "control character" in r.stderr, (
            remote, r.stderr)
        # (the client refuses such a name for a local file itself: here it is a directory)
        r = loop.raw("get", "--transport", "tcp", loop.addr, remote + "/x.txt", str(loop.local / "got"))
        assert r.returncode == 1 and "bad path" in r.stderr and "control character" in r.stderr, (
            remote, r.stderr)
    bad_src = loop.local / "b\x1bc.txt"
    bad_src.write_text("x\n")
    r = loop.raw("put", "--transport", "tcp", str(bad_src), loop.addr, "")
    assert r.returncode == 1 and "control character" in r.stderr, r.stderr
    assert os.listdir(loop.served) == []
    log = loop.log.read_text()
    assert "\x1b" not in log and "\x07" not in log and "\x7f" not in log, log
    assert not any(x.startswith("isthmus-copy serve: 10.9.9.9") for x in log.splitlines()), log
    assert "\\x1b" in log and "\\n" in log, log


def test_the_stored_mode_follows_the_server_umask(loop):
    """The server runs with umask 027: 0777 from the client is stored as 0750, 0666 as
    0640; a get applies the client's own umask (here 077) the same way."""
    for mode, want in ((0o777, 0o750), (0o666, 0o640), (0o4755, 0o750), (0o600, 0o600)):
        src = loop.local / f"m{mode:o}.bin"
        src.write_bytes(b"x" * 10)
        src.chmod(mode)
        r = loop.raw("put", "--transport", "tcp", str(src), loop.addr, src.name)
        assert r.returncode == 0, r.stderr
        assert (loop.served / src.name).stat().st_mode & 0o7777 == want, (oct(mode), oct(want))
    (loop.served / "open.bin").write_bytes(b"y" * 10)
    (loop.served / "open.bin").chmod(0o777)
    r = loop.raw("get", "--transport", "tcp", loop.addr, "open.bin", str(loop.local / "open.bin"),
                 umask=0o077)
    assert r.returncode == 0, r.stderr
    assert (loop.local / "open.bin").stat().st_mode & 0o7777 == 0o700


def test_a_start_rate_told_too_high_still_copies_exactly(sites, data):
    """--rate ten times the link's (200 Mbit/s): the first round trips overshoot, then the
    transport follows the path; the copy is byte-identical (the controller's rules are
    test_udp_cc's). A tree of files shares the rate among its connections."""
    put = sites.copy("--rate", "2gbit", str(sites.local / "data.bin"), f"{sites.remote}:rated.bin")
    assert put.returncode == 0, put.stderr
    assert (sites.served / "rated.bin").read_bytes() == data
    tree = sites.local / "rated-tree"
    for i in range(6):
        (tree / f"d{i % 2}").mkdir(parents=True, exist_ok=True)
        (tree / f"d{i % 2}" / f"f{i}.bin").write_bytes(data[i * 100_000:(i + 1) * 100_000])
    put = sites.copy("--rate", "2gbit", "--quiet", f"{tree}/", f"{sites.remote}:rated-tree")
    assert put.returncode == 0, put.stderr
    for i in range(6):
        got = (sites.served / "rated-tree" / f"d{i % 2}" / f"f{i}.bin").read_bytes()
        assert got == data[i * 100_000:(i + 1) * 100_000]


@pytest.mark.parametrize("args, message", [
    (["--rate", "100m", "data.bin", "REMOTE:r1.bin"], "is not a rate"),
    (["--rate", "1kbit", "data.bin", "REMOTE:r1.bin"], "8 kbit/s to 4 Tbit/s"),
    (["--rate", "100mbit", "--transport", "tcp", "data.bin", "REMOTE:r1.bin"], "needs the udp transport"),
    (["--rate", "100mbit", "--cc", "reno", "data.bin", "REMOTE:r1.bin"], "needs the udp transport"),
    (["--rate", "100mbit", "REMOTE:rated.bin", "r1.bin"], "goes with a put"),
])
def test_a_start_rate_is_refused_where_it_cannot_apply(sites, args, message):
    args = [str(sites.local / a) if a.endswith(".bin") and not a.startswith("REMOTE") else
            a.replace("REMOTE", sites.remote) for a in args]
    r = sites.copy(*args)
    assert r.returncode != 0 and message in r.stderr, r.stderr
    assert not (sites.served / "r1.bin").exists() and not (sites.local / "r1.bin").exists()


@pytest.mark.parametrize("transport", ["tcp", "udp"])
def test_a_many_file_put_to_a_nearly_full_server_loses_no_file(loop, transport):
    """14 of the server's 16 copy slots held by authenticated clients that idle: a put of a
    tree with 4 connections gets 2 of them. The 2 workers that cannot connect give their
    files back to the others (they used to fail them: `FAILED ...: not copied`), so every
    file arrives and the put exits 0."""
    secret = Path(loop.creds.secret_file).read_text().strip()
    held = [authenticated(loop.port, loop.creds.job, secret, b"ISCP\x01t\x00\x00")
            for _ in range(14)]
    tree = loop.local / f"tree-{transport}"
    for i in range(40):
        (tree / f"d{i % 4}").mkdir(parents=True, exist_ok=True)
        (tree / f"d{i % 4}" / f"f{i}.bin").write_bytes(os.urandom(1000 + i))
    try:
        time.sleep(0.3)  # the server has taken them all as copies
        r = loop.raw("put", "--transport", transport, "--parallel", "4", f"{tree}/", loop.addr,
                     f"tree-{transport}")
    finally:
        for s in held:
            s.close()
    assert r.returncode == 0, r.stderr + loop.log.read_text()[-2000:]
    for i in range(40):
        rel = Path(f"d{i % 4}") / f"f{i}.bin"
        assert (loop.served / f"tree-{transport}" / rel).read_bytes() == (tree / rel).read_bytes()
