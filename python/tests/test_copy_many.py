# tests/test_copy_many.py: `isthmus copy` of directories and file lists (issue 29 §4):
# a real isthmus-copy server on loopback and the real client. A tree of nested
# directories and files of many sizes (empty, inline-sized, just under and over the
# inline limit, several MiB) arrives identical over udp and tcp, with a manifest whose
# digests are the files'; a copy cut off midway (client killed while a throttling
# relay carries it) is resumed without sending the files already in place again (the
# relay counts the bytes); paths that would leave the target are refused, a file that
# cannot be stored is named in the summary with exit 1 while the rest arrive; and the
# progress shows as plain lines when stderr is not a terminal.
from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from isthmus.transfer import run_many
from strangers import shut_both
from test_copy import LoopServer

pytestmark = [pytest.mark.native]

ISTHMUS = [sys.executable, "-m", "isthmus"]
INLINE_MAX = 1 << 20  # batch.c: files below go inline


class Server(LoopServer):
    """test_copy.py's server on loopback, with a many-file put."""

    def __init__(self, prefix, root: Path):
        super().__init__(prefix, root, timeout=10)

    def put(self, *args: str, to: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        """isthmus-copy put ARGS... HOST:PORT REMOTE (the last of args is REMOTE)."""
        *srcs, remote = args
        argv = [self.exe, "put", *srcs, to or self.addr, remote, *self.creds.args(), "--timeout", "10"]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def server(prefix, tmp_path):
    s = Server(prefix, tmp_path)
    yield s
    s.close()


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): _sha(p) for p in sorted(root.rglob("*")) if p.is_file()}


def _make_tree(root: Path) -> None:
    sizes = {"empty": 0, "one": 1, "a/k4": 4096, "a/b/c/deep": 100_000, "a/b/under": INLINE_MAX - 1,
             "a/at": INLINE_MAX, "big": 5 << 20, "a/b/c/d/e/f/nested": 3000,
             "name with spaces": 17, "a/ümlaut": 333}
    for i in range(150):
        sizes[f"many/f{i:03d}"] = 1 + (i * 997) % 9000
    for rel, n in sizes.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(os.urandom(n))
    (root / "a" / "empty-dir").mkdir()


@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_a_tree_arrives_identical_with_its_manifest(server, tmp_path, transport):
    src = tmp_path / "src"
    _make_tree(src)
    man = tmp_path / "manifest.json"
    r = server.put("--transport", transport, "--manifest", str(man), "--parallel", "3",
                   f"{src}/", "runs/today")
    assert r.returncode == 0, r.stderr + server.log.read_text()[-2000:]
    want = _tree(src)
    assert _tree(server.served / "runs" / "today") == want
    assert "0 failed, sha256 verified" in r.stdout and "with 3 connections" in r.stdout
    m = json.loads(man.read_text())
    files = {f["path"]: f for f in m["files"]}
    assert {k: f["sha256"] for k, f in files.items()} == want
    assert all(f["status"] == "copied" for f in files.values())
    assert m["bytes_sent"] == sum((src / k).stat().st_size for k in want)
    # largest first: the manifest keeps the order the files were taken in
    sizes = [f["size"] for f in m["files"]]
    assert sizes == sorted(sizes, reverse=True)
    # the small files went as sessions, not one connection each
    log = server.log.read_text()
    assert log.count("session of") <= 3, log
    assert not list((server.served).rglob("*.icp-partial"))


def test_a_file_list_keeps_its_paths_and_refuses_escapes(server, tmp_path):
    os.chdir(tmp_path)
    Path("x/y").mkdir(parents=True)
    Path("x/y/one").write_bytes(b"1" * 10)
    Path("top").write_bytes(b"2" * 20)
    Path("list").write_text("x/y/one\ntop\n\n")
    r = server.put("--files-from", "list", "in")
    assert r.returncode == 0, r.stderr
    assert (server.served / "in/x/y/one").read_bytes() == b"1" * 10
    assert (server.served / "in/top").read_bytes() == b"2" * 20
    for bad in ("../top", "/etc/passwd", "x/../../top"):
        Path("list").write_text(bad + "\n")
        r = server.put("--files-from", "list", "in2")
        assert r.returncode == 1 and "nothing was copied" in r.stderr, (bad, r.stderr)
        assert "refused" in r.stderr and "list line 1" in r.stderr, r.stderr
    assert not (server.served / "in2").exists()


def test_a_symbolic_link_out_of_the_target_is_refused(server, tmp_path):
    """A directory on the server side that is a link leading out: the files that would go
    through it are refused by name, nothing is written outside, the others arrive; the
    manifest counts what was sent of each."""
    (server.served / "dest").mkdir()
    (server.served / "dest" / "evil").symlink_to(server.outside)
    src = tmp_path / "src"
    (src / "evil" / "deeper").mkdir(parents=True)
    (src / "evil" / "x").write_bytes(b"x" * 100)
    (src / "evil" / "deeper" / "y").write_bytes(b"y" * (2 << 20))  # a classic put, not inline
    (src / "fine").write_bytes(b"f" * 100)
    man = tmp_path / "m.json"
    r = server.put("--manifest", str(man), f"{src}/", "dest")
    assert r.returncode == 1, r.stdout + r.stderr
    m = {f["path"]: f for f in json.loads(man.read_text())["files"]}
    # a large file refused before its data went counts nothing sent; a small one went
    # inline with its request (and was dropped by the server)
    assert m["evil/deeper/y"]["bytes_sent"] == 0 and m["evil/x"]["bytes_sent"] == 100, m
    assert "FAILED evil/x:" in r.stderr and "FAILED evil/deeper/y:" in r.stderr, r.stderr
    assert "leaves the served directory" in r.stderr
    assert "2 failed" in r.stdout
    assert list(server.outside.iterdir()) == []
    assert (server.served / "dest" / "fine").read_bytes() == b"f" * 100


def test_a_failing_file_is_named_in_the_summary_and_the_rest_arrive(server, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for i in range(20):
        (src / f"ok{i}").write_bytes(os.urandom(1000 + i))
    (src / "clash").write_bytes(b"c" * 50)
    (src / "clash-big").write_bytes(os.urandom(2 << 20))
    for name in ("clash", "clash-big"):  # a directory where the file would go
        (server.served / "d" / name / "inside").mkdir(parents=True)
    man = tmp_path / "m.json"
    r = server.put("--manifest", str(man), f"{src}/", "d")
    assert r.returncode == 1
    assert "FAILED clash:" in r.stderr and "FAILED clash-big:" in r.stderr, r.stderr
    assert "20 files" in r.stdout and "2 failed" in r.stdout, r.stdout
    m = {f["path"]: f for f in json.loads(man.read_text())["files"]}
    assert m["clash"]["status"] == "failed" and m["clash"]["sha256"] is None and m["clash"]["error"]
    for i in range(20):
        assert (server.served / "d" / f"ok{i}").read_bytes() == (src / f"ok{i}").read_bytes()
        assert m[f"ok{i}"]["status"] == "copied"


class Relay:
    """A TCP relay on loopback between the client and the server that carries at most
    `rate` bytes/s towards the server (0: unlimited) and counts what it carried."""

    def __init__(self, target_port: int, rate: float, cut_after: int | None = None):
        self.rate, self.target = rate, target_port
        self.cut_after = cut_after  # once this much went up, the connection carrying it is cut
        self.carried = 0
        self.t0: float | None = None  # the first byte: the rate is over all connections
        self.lock = threading.Lock()
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(32)
        self.addr = f"127.0.0.1:{self.ls.getsockname()[1]}"
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            s = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self._pipe, args=(c, s, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(s, c, False), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket, upstream: bool) -> None:
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                if upstream:
                    with self.lock:
                        self.t0 = self.t0 or time.monotonic()
                        self.carried += len(d)
                        ahead = self.carried / self.rate - (time.monotonic() - self.t0) if self.rate else 0
                        cut = self.cut_after is not None and self.carried > self.cut_after
                        if cut:
                            self.cut_after = None
                    if cut:
                        break
                    if ahead > 0:
                        time.sleep(ahead)
                b.sendall(d)
        except OSError:
            pass
        finally:
            shut_both(a, b)

    def close(self) -> None:
        self.stop = True
        self.ls.close()


def test_an_interrupted_copy_resumes_without_sending_completed_files_again(server, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    big = 1536 << 10  # above the inline limit: classic puts, which keep a partial copy
    for i in range(12):
        (src / f"big{i:02d}").write_bytes(os.urandom(big))
    for i in range(200):
        (src / "small" / f"s{i:03d}").parent.mkdir(exist_ok=True)
        (src / "small" / f"s{i:03d}").write_bytes(os.urandom(4096))
    total = 12 * big + 200 * 4096
    relay = Relay(server.port, rate=6e6)
    argv = [server.exe, "put", f"{src}/", relay.addr, "dest", *server.creds.args(), "--timeout", "10",
            "--transport", "tcp", "--parallel", "1", "--resume"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dest = server.served / "dest"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and p.poll() is None:
        if dest.is_dir() and len([f for f in dest.iterdir() if f.name.startswith("big")]) >= 5:
            break
        time.sleep(0.01)
    assert p.poll() is None, "the copy ended before it could be interrupted: " + p.communicate()[1]
    p.send_signal(signal.SIGKILL)
    p.wait(10)
    relay.close()
    done_before = {f.name for f in dest.iterdir() if f.name.startswith("big")}
    assert 5 <= len(done_before) < 12
    # the server sees the connection end (keeping the partial file of one in flight)
    deadline = time.monotonic() + 20
    while "session of" not in server.log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)

    counter = Relay(server.port, rate=0)
    man = tmp_path / "m.json"
    argv[3] = counter.addr
    r = subprocess.run([*argv, "--manifest", str(man)], capture_output=True, text=True, timeout=120)
    counter.close()
    assert r.returncode == 0, r.stderr + server.log.read_text()[-3000:]
    assert _tree(src) == _tree(dest)
    m = {f["path"]: f for f in json.loads(man.read_text())["files"]}
    unchanged = {k for k, f in m.items() if f["status"] == "unchanged"}
    assert unchanged >= done_before, (sorted(unchanged), sorted(done_before))
    assert all(m[k]["bytes_sent"] == 0 for k in unchanged)
    resumed = sum(f.get("resumed_at", 0) for f in m.values())
    sent = sum(f["bytes_sent"] for f in m.values())
    assert sent == total - sum(m[k]["size"] for k in unchanged) - resumed
    # what actually crossed: the rest of the files, plus requests and framing (the checks
    # of 212 files and the AEAD records: far less than one of the files done before)
    assert counter.carried < sent + 200_000, (counter.carried, sent)
    assert counter.carried < total - len(done_before) * big + 200_000


def test_progress_lines_when_stderr_is_not_a_terminal(server, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for i in range(6):
        (src / f"f{i}").write_bytes(os.urandom(1 << 20))
    relay = Relay(server.port, rate=2e6)  # about 3 s
    lines: list[str] = []
    argv = [server.exe, "put", str(src), relay.addr, "p", *server.creds.args(), "--timeout", "10",
            "--transport", "tcp"]
    res = run_many(argv, "put -> p", tmp_path / "m.json", bar=False, plain_every=0.5,
                   say=lines.append)
    relay.close()
    assert res.returncode == 0, res.stderr
    progress = [x for x in lines if x.startswith("put -> p: ")]
    assert progress, lines
    assert " of 6291456 bytes (" in progress[-1] and "of 6 files" in progress[-1] and "Mbit/s" in progress[-1]
    assert res.summary.startswith("put 6 files (6291456 bytes)") and res.manifest is not None
    assert not res.failed


def test_the_cli_puts_a_directory_and_exits_1_naming_a_failure(server, tmp_path):
    src = tmp_path / "data"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "a").write_bytes(b"a" * 10)
    (src / "b").write_bytes(b"b" * 10)
    (server.served / "into" / "data" / "b" / "x").mkdir(parents=True)  # b cannot be stored
    env = {**os.environ}
    r = subprocess.run([*ISTHMUS, "copy", str(src), f"127.0.0.1:{server.port}:into",
                        *server.creds.args(), "--manifest", str(tmp_path / "m.json")],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAILED data/b:" in r.stderr and "1 failed" in r.stdout, r.stdout + r.stderr
    assert (server.served / "into" / "data" / "sub" / "a").read_bytes() == b"a" * 10


# --- getting many files back: `isthmus-copy get HOST:PORT DIR LOCALDIR` (a LIST, then the
# files over several connections) ---

def _get(server: Server, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """isthmus-copy get HOST:PORT ARGS... (REMOTE LOCAL and options)."""
    argv = [server.exe, "get", server.addr, *args, *server.creds.args(), "--timeout", "10"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_a_tree_comes_back_identical_with_its_manifest(server, tmp_path, transport):
    _make_tree(server.served / "runs" / "today")
    man = tmp_path / "m.json"
    local = server.local / "back"
    r = _get(server, "runs/today", str(local), "--transport", transport, "--parallel", "3",
             "--manifest", str(man))
    assert r.returncode == 0, r.stderr + server.log.read_text()[-2000:]
    want = _tree(server.served / "runs" / "today")
    assert _tree(local / "today") == want  # "today" lands under its own name
    assert "get 160 files" in r.stdout and "0 failed, sha256 verified" in r.stdout, r.stdout
    m = json.loads(man.read_text())
    files = {f["path"]: f for f in m["files"]}
    assert {k.removeprefix("today/"): f["sha256"] for k, f in files.items()} == want
    assert all(f["status"] == "copied" for f in files.values())
    sizes = [f["size"] for f in m["files"]]
    assert sizes == sorted(sizes, reverse=True)  # largest first
    log = server.log.read_text()
    assert "list runs/today: 160 files" in log and log.count("session of") <= 3, log
    assert not list(local.rglob("*.icp-partial"))
    # "dir/" gives its contents; the mode comes with the file (less our umask)
    r = _get(server, "runs/today/a/", str(server.local / "contents"), "--quiet")
    assert r.returncode == 0, r.stderr
    assert (server.local / "contents" / "b" / "c" / "deep").read_bytes() == \
        (server.served / "runs/today/a/b/c/deep").read_bytes()


def test_a_glob_fetches_the_matching_files_and_their_trees(server, tmp_path):
    out = server.served / "out"
    for rel in ("a.dat", "b.dat", "c.log", "run1/r.txt", "run2/r.txt", "run2/deep/x", "other/r.txt"):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(rel.encode())
    r = _get(server, "out/*.dat", str(tmp_path / "g1"), "--quiet")
    assert r.returncode == 0, r.stderr
    assert sorted(_tree(tmp_path / "g1")) == ["a.dat", "b.dat"]
    r = _get(server, "out/run*", str(tmp_path / "g2"), "--quiet")
    assert r.returncode == 0, r.stderr
    assert sorted(_tree(tmp_path / "g2")) == ["run1/r.txt", "run2/deep/x", "run2/r.txt"]
    r = _get(server, "out/*.none", str(tmp_path / "g3"), "--quiet")
    assert r.returncode == 1 and "no file matches *.none under out" in r.stderr, r.stderr


def test_a_get_refuses_links_out_and_writes_nothing_outside(server, tmp_path):
    """On the server: a link to a directory outside, and an absolute link to a file
    outside: listed as refused, named in the summary, exit 1, their targets never read.
    Here: a link already in the destination that leads out: the files that would go
    through it fail, nothing is written where it points."""
    (server.outside / "secret").write_bytes(b"s" * 50)
    d = server.served / "d"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "fine").write_bytes(b"f" * 10)
    (d / "evil").symlink_to(server.outside)
    (d / "abs").symlink_to(server.outside / "secret")
    (d / "inner").symlink_to("sub/fine")  # stays inside: followed
    (d / "x" / "big").parent.mkdir()
    (d / "x" / "big").write_bytes(os.urandom(2 << 20))
    (d / "x" / "small").write_bytes(b"small")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    local = server.local / "got"
    (local / "d").mkdir(parents=True)
    (local / "d" / "x").symlink_to(elsewhere)
    man = tmp_path / "m.json"
    r = _get(server, "d", str(local), "--manifest", str(man))
    assert r.returncode == 1, r.stdout + r.stderr
    m = {f["path"]: f for f in json.loads(man.read_text())["files"]}
    assert m["d/evil"]["status"] == "failed" and m["d/abs"]["status"] == "failed", m
    assert "FAILED d/evil: leaves the served directory through a symbolic link" in r.stderr
    assert "FAILED d/abs: leaves the served directory" in r.stderr
    assert "FAILED d/x/big:" in r.stderr and "FAILED d/x/small:" in r.stderr, r.stderr
    assert "4 failed" in r.stdout, r.stdout
    assert list(elsewhere.iterdir()) == []
    assert (local / "d" / "sub" / "fine").read_bytes() == b"f" * 10
    assert (local / "d" / "inner").read_bytes() == b"f" * 10
    assert not any("secret" in p.name for p in local.rglob("*"))
    assert sorted(p.name for p in server.outside.iterdir()) == ["secret"]


def test_a_get_with_resume_skips_the_files_already_here(server, tmp_path):
    src = server.served / "res"
    for i in range(30):
        (src / f"s{i:02d}").parent.mkdir(parents=True, exist_ok=True)
        (src / f"s{i:02d}").write_bytes(os.urandom(3000 + i))
    (src / "big").write_bytes(os.urandom(3 << 20))
    local = server.local / "r"
    r = _get(server, "res/", str(local), "--quiet", "--resume")
    assert r.returncode == 0, r.stderr
    (src / "s07").write_bytes(os.urandom(3007))  # changed there: fetched again
    (local / "s08").write_bytes(b"x" * 3008)     # same size, other bytes here: fetched again
    (local / "s09").unlink()
    man = tmp_path / "m.json"
    r = _get(server, "res/", str(local), "--quiet", "--resume", "--manifest", str(man))
    assert r.returncode == 0, r.stderr
    assert _tree(local) == _tree(src)
    m = {f["path"]: f for f in json.loads(man.read_text())["files"]}
    copied = {k for k, f in m.items() if f["status"] == "copied"}
    assert copied == {"s07", "s08", "s09"}, copied
    assert all(f["status"] == "unchanged" and f["bytes_sent"] == 0
               for k, f in m.items() if k not in copied)
    assert "28 unchanged" in r.stdout, r.stdout


def test_a_missing_remote_directory_fails_naming_host_and_path(server, tmp_path):
    r = _get(server, "no/such/dir/", str(tmp_path / "x"))
    assert r.returncode == 1
    assert f"{server.addr}" in r.stderr and "no/such/dir" in r.stderr, r.stderr
    assert "not found" in r.stderr and "nothing was copied" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()


def test_the_cli_gets_a_directory(server, tmp_path):
    (server.served / "results" / "sub").mkdir(parents=True)
    (server.served / "results" / "sub" / "a").write_bytes(b"a" * 10)
    (server.served / "results" / "b").write_bytes(b"b" * 20)
    r = subprocess.run([*ISTHMUS, "copy", f"127.0.0.1:{server.port}:results", str(tmp_path / "here"),
                        *server.creds.args(), "--quiet"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _tree(tmp_path / "here" / "results") == _tree(server.served / "results")
    assert "get 2 files (30 bytes)" in r.stdout, r.stdout
    man = tmp_path / "m.json"
    r = subprocess.run([*ISTHMUS, "copy", f"127.0.0.1:{server.port}:results/", str(tmp_path / "c"),
                        *server.creds.args(), "--manifest", str(man)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "c" / "sub" / "a").read_bytes() == b"a" * 10
    assert len(json.loads(man.read_text())["files"]) == 2


def test_a_name_with_glob_characters_is_itself_first(server, tmp_path):
    (server.served / "data[1].txt").write_bytes(b"literal")
    (server.served / "data1.txt").write_bytes(b"matched")
    r = _get(server, "data[1].txt", str(tmp_path / "a"), "--quiet", "--parallel", "2")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "a").read_bytes() == b"literal"  # one file: LOCAL names it, as a get's
    (tmp_path / "d").mkdir()
    r = _get(server, "data[1].txt", str(tmp_path / "d"), "--quiet", "--manifest", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    assert _tree(tmp_path / "d") == {"data[1].txt": _sha(server.served / "data[1].txt")}
    r = _get(server, "data[0-9].txt", str(tmp_path / "b"), "--quiet")
    assert r.returncode == 0, r.stderr
    assert _tree(tmp_path / "b") == {"data1.txt": _sha(server.served / "data1.txt")}


def test_staging_resumes_after_a_broken_connection_and_skips_what_is_there(server, prefix, tmp_path):
    """isthmus submit's staging (batch/stage.py) against a real server, without Slurm: a
    connection cut midway fails the files it carried, and the stage-in is run again with
    --resume, finishing them without sending the completed ones again; staging the same
    files once more moves nothing but the checks; the stage-out of the directory brings
    it back identical."""
    from types import SimpleNamespace

    from isthmus.batch.stage import SiteStager
    from isthmus.launch.secret import Secret

    src = tmp_path / "work" / "in"
    for i in range(6):
        (src / f"big{i}").parent.mkdir(parents=True, exist_ok=True)
        (src / f"big{i}").write_bytes(os.urandom(1536 << 10))
    for i in range(40):
        (src / "small" / f"s{i:02d}").parent.mkdir(parents=True, exist_ok=True)
        (src / "small" / f"s{i:02d}").write_bytes(os.urandom(5000))
    secret = Secret(Path(server.creds.secret_file).read_text().strip())
    said: list[str] = []
    cut = Relay(server.port, rate=0, cut_after=4 << 20)
    site = SimpleNamespace(name="B", stage_listen=cut.addr, ssh_host="unused", stage_dir="stage")
    st = SiteStager(site, prefix, server.creds.job, secret, said.append)
    rep = st.stage_in(["in"], tmp_path / "work")
    cut.close()
    assert not rep.failed, (rep.summary(), said)
    assert any("running again with --resume" in m for m in said), said
    assert _tree(server.served / "stage" / "in") == _tree(src)
    assert rep.files == 46 and rep.bytes == 6 * (1536 << 10) + 40 * 5000, rep.summary()

    counter = Relay(server.port, rate=0)
    site.stage_listen = counter.addr
    rep = st.stage_in(["in"], tmp_path / "work")
    counter.close()
    assert not rep.failed and rep.files == 46, rep.summary()
    assert counter.carried < 100_000, counter.carried  # checks only: no file went again

    (tmp_path / "work" / "B").mkdir()
    site.stage_listen = server.addr
    rep = st.stage_out(["in", "in/small/s0*", "nope.dat"], tmp_path / "work" / "B")
    assert _tree(tmp_path / "work" / "B" / "in") == _tree(src)
    assert sorted(_tree(tmp_path / "work" / "B")) == sorted(
        [f"in/{k}" for k in _tree(src)] + [f"s0{i}" for i in range(10)])
    assert len(rep.failed) == 1 and rep.failed[0].startswith("nope.dat (") and "not found" in rep.failed[0], rep.failed
    assert "FAILED: nope.dat (" in rep.summary()
