# tests/test_copy_progress.py: the progress of many-file copies as a user sees it
# (issue 29): `isthmus copy` on a pseudo-terminal draws one bar that fills in place
# (label, MB done of the total, files done of all) and ends full, with the summary
# under it; with stderr not a terminal there is no bar, only plain lines. run_many's
# bar, fed by a fake tool, ends on the tool's last numbers, failures included. Lines
# said on the shared stderr console while a bar is up (batch/stage.py's progress and
# submit's queue wait, from another thread) print above the bar as lines of their own:
# they used to get a console of their own and were written onto the bar's line. Real
# copies run through a throttling relay on loopback to a real isthmus-copy server, so
# that they last a few seconds.
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rich.text import Text

from isthmus.transfer import run_many
from isthmus.ui import err_console
from ptyscreen import Drain, has_cursor_control, open_pty, run_on_pty, screen, strip_ansi, terminal_env
from test_copy_many import Relay, Server, _tree

MIB = 1 << 20
ISTHMUS = [sys.executable, "-m", "isthmus"]


@pytest.fixture
def server(prefix, tmp_path):
    s = Server(prefix, tmp_path)
    yield s
    s.close()


def _files(root: Path, n: int, size: int) -> Path:
    root.mkdir(parents=True)
    for i in range(n):
        (root / f"f{i}").write_bytes(os.urandom(size))
    return root


def _bar_lines(lines: list[str], label: str) -> list[str]:
    return [x for x in lines if x.startswith(label)]


class PtyStderr:
    """sys.stderr on a new xterm-sized pty for the code under test (rich's console on it
    sees a terminal), as a context in the test itself (pytest sets its own sys.stderr
    again between a fixture and the test); shown() gives what the pty showed."""

    def __init__(self, monkeypatch):
        for k, v in terminal_env(COLUMNS="120", LINES="30").items():
            monkeypatch.setenv(k, v)
        master, slave = open_pty()
        self.tty = open(slave, "w", buffering=1, encoding="utf-8")
        self.drain = Drain(master)
        self.old = None

    def __enter__(self) -> PtyStderr:
        self.old, sys.stderr = sys.stderr, self.tty
        return self

    def __exit__(self, *exc) -> None:
        sys.stderr = self.old
        self.tty.close()  # the only slave descriptor: the drain reads to the end

    def shown(self) -> list[str]:
        return screen(self.drain.finish())


# --- `isthmus copy`, the real command ---

@pytest.mark.native
def test_a_terminal_sees_one_bar_fill_and_the_summary_under_it(server, tmp_path):
    src = _files(tmp_path / "data", 6, MIB)
    relay = Relay(server.port, rate=1.5e6)  # over 4 s: several progress updates
    dst = f"127.0.0.1:{relay.addr.split(':')[1]}:dest"
    try:
        rc, out = run_on_pty([*ISTHMUS, "copy", str(src), dst, *server.creds.args(),
                              "--transport", "tcp"])
    finally:
        relay.close()
    shown = screen(out)
    assert rc == 0, "\n".join(shown)
    assert _tree(server.served / "dest" / "data") == _tree(src)
    label = f"put -> {dst}"
    assert has_cursor_control(out), "no bar drawn: " + repr(out[-500:])
    # every redraw starts at the line's beginning: the states the bar went through
    states = [strip_ansi(f) for f in out.split("\r") if strip_ansi(f).startswith(label)]
    counted = [re.search(r"([\d.]+)/([\d.]+) MB .*?\d/6 files", s) for s in states]
    counted = [(float(m[1]), float(m[2])) for m in counted if m]
    assert counted, states
    assert any(done < total for done, total in counted), counted  # seen while it moved
    assert {total for _, total in counted} == {6.3}, counted  # 6291456 bytes
    # what stays on the screen: the one bar, full, and the summary under it
    bars = _bar_lines(shown, label)
    assert len(bars) == 1, shown
    assert "6.3/6.3 MB" in bars[0] and "6/6 files" in bars[0] and "failed" not in bars[0], bars
    after = "".join(shown[shown.index(bars[0]) + 1:])  # the summary, wrapped at the width
    assert after.startswith("put 6 files (6291456 bytes) -> "), shown
    assert after.endswith("0 failed, sha256 verified"), shown


@pytest.mark.native
def test_without_a_terminal_there_are_plain_lines_and_no_bar(server, tmp_path):
    """The plain line comes every 10 s (docs/copy.md): the copy is throttled to last
    longer than that."""
    src = _files(tmp_path / "data", 3, MIB)
    relay = Relay(server.port, rate=0.25e6)  # over 12 s
    dst = f"127.0.0.1:{relay.addr.split(':')[1]}:dest"
    try:
        r = subprocess.run([*ISTHMUS, "copy", str(src), dst, *server.creds.args(), "--transport", "tcp"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                           env=terminal_env())
    finally:
        relay.close()
    assert r.returncode == 0, r.stdout + r.stderr
    assert "\x1b" not in r.stderr + r.stdout and "━" not in r.stderr, repr(r.stderr[-500:])
    plain = rf"^put -> {re.escape(dst)}: \d+ of 3145728 bytes \(\d+%\), \d of 3 files, [\d.]+ Mbit/s, ETA "
    assert re.search(plain + r"(\d+ s|-)$", r.stderr, re.M), r.stderr
    assert r.stdout.startswith("put 3 files (3145728 bytes) -> "), r.stdout
    assert _tree(server.served / "dest" / "data") == _tree(src)


# --- run_many's bar, fed by a fake isthmus-copy ---

FAKE_TOOL = r"""
import json, sys, time
failed, notes = int(sys.argv[1]), int(sys.argv[2])
total, files = 3_000_000, 3
def progress(done, n, bad, final):
    print(json.dumps({"progress": {"bytes": done, "total_bytes": total, "files": n, "failed": bad,
                                   "total_files": files, "seconds": 0.5, "final": final}}), flush=True)
    time.sleep(0.15)
progress(0, 0, 0, False)
for i in range(notes):
    print(f"isthmus-copy: note {i}: a connection is slow", file=sys.stderr, flush=True)
    time.sleep(0.15)
progress(1_000_000, 1, 0, False)
if failed:
    print("isthmus-copy: FAILED f2: refused by the server", file=sys.stderr, flush=True)
progress(2_000_000 if failed else 3_000_000, 3 - failed, failed, True)
print(f"put {3 - failed} files (3000000 bytes) -> here:1:there: ..., {failed} failed")
sys.exit(1 if failed else 0)
"""


@pytest.mark.parametrize("failed", [0, 1])
def test_run_manys_bar_ends_on_the_tools_last_numbers(monkeypatch, tmp_path, failed):
    with PtyStderr(monkeypatch) as tty:
        res = run_many(_fake_tool(tmp_path, failed, 0), "put -> here:1:there")
    assert res.returncode == failed and res.summary.startswith(f"put {3 - failed} files"), res
    shown = tty.shown()
    bars = _bar_lines(shown, "put -> here:1:there")
    assert len(bars) == 1, shown
    if failed:
        assert "2.0/3.0 MB" in bars[0] and "2/3 files, 1 failed" in bars[0], bars
        # the tool's stderr goes above the bar, a line of its own
        assert "isthmus-copy: FAILED f2: refused by the server" in shown[:shown.index(bars[0])], shown
    else:
        assert "3.0/3.0 MB" in bars[0] and "3/3 files" in bars[0] and "failed" not in bars[0], bars


def _fake_tool(tmp_path: Path, failed: int, notes: int) -> list[str]:
    fake = tmp_path / "fake_copy.py"
    fake.write_text(FAKE_TOOL)
    return [sys.executable, str(fake), str(failed), str(notes)]


# --- stage-in (batch/stage.py): messages said while its bar is up ---

def test_lines_said_on_the_shared_console_during_the_bar_print_above_it(monkeypatch, tmp_path):
    """stage.py passes run_many a say that prints on err_console() (submit's _say), called
    while the bar is up, when sys.stderr is rich's stand-in for the terminal: the lines
    must go above the bar, not onto its line."""
    label = "staging into site B"
    bar_was_up: list[bool] = []

    def say(m: str) -> None:
        bar_was_up.append(tty.drain.wait_for(label, 30))
        err_console().print(Text(m))

    with PtyStderr(monkeypatch) as tty:
        res = run_many(_fake_tool(tmp_path, 0, 3), label, say=say)
    assert res.returncode == 0 and bar_was_up == [True] * 3, (res, bar_was_up)
    shown = tty.shown()
    bars = _bar_lines(shown, label)
    assert len(bars) == 1 and "3.0/3.0 MB" in bars[0], shown
    notes = [f"isthmus-copy: note {i}: a connection is slow" for i in range(3)]
    assert [x for x in shown if "note" in x] == notes, shown
    assert shown.index(notes[-1]) < shown.index(bars[0]), shown


@pytest.mark.native
def test_messages_said_during_a_stage_in_print_above_its_bar(server, prefix, monkeypatch, tmp_path):
    """isthmus submit says the queue wait's progress (its _say, on the shared stderr
    console) from the main thread while the stage-in's bar is drawn from its thread:
    each message must land on a line of its own above the bar, not on the bar's line."""
    from types import SimpleNamespace

    from isthmus.batch.stage import SiteStager
    from isthmus.commands.submit import _say
    from isthmus.launch.secret import Secret

    _files(tmp_path / "work" / "in", 6, MIB)
    relay = Relay(server.port, rate=1.5e6)  # over 4 s
    site = SimpleNamespace(name="B", stage_listen=relay.addr, ssh_host="unused", stage_dir="stage")
    secret = Secret(Path(server.creds.secret_file).read_text().strip())
    st = SiteStager(site, prefix, server.creds.job, secret, _say)
    reports = []
    stager = threading.Thread(target=lambda: reports.append(st.stage_in(["in"], tmp_path / "work")))
    label = "staging into site B"
    said = [f"job j1: site B: waiting in the queue ({i} s)" for i in range(3)]
    with PtyStderr(monkeypatch) as tty:
        stager.start()
        try:
            assert tty.drain.wait_for(label, 60), strip_ansi(tty.drain.text())
            for m in said:
                _say(m)
                time.sleep(0.2)
            bar_was_up = stager.is_alive()
        finally:
            stager.join(120)
            relay.close()
    assert bar_was_up, "the stage-in ended before the messages were said; slow the relay"
    assert reports and not reports[0].failed and reports[0].files == 6, reports
    shown = tty.shown()
    bars = _bar_lines(shown, label)
    assert len(bars) == 1 and "6.3/6.3 MB" in bars[0] and "6/6 files" in bars[0], shown
    for m in said:
        assert shown.count(f"isthmus: {m}") == 1, (m, shown)
    assert shown.index(f"isthmus: {said[-1]}") < shown.index(bars[0]), shown
    assert not [x for x in shown if "isthmus:" in x and "MB" in x], shown  # nothing garbled
