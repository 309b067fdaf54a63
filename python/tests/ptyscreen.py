# tests/ptyscreen.py: what a user sees on a terminal, for tests of terminal output (the
# progress bars of transfer.py). A pseudo-terminal of a set size whose output is read
# to the end, and a small screen model that replays it: printable text overwrites in
# place and wraps at the width, \r, \n and the CSI cursor moves and line erasures a rich
# Live display uses (A B C D G H K J) act as on an xterm, colours are dropped. A redraw
# in place thus leaves one line, and text written over a bar stays on the bar's line.
from __future__ import annotations

import fcntl
import os
import re
import signal
import struct
import subprocess
import termios
import threading
import time
from typing import Sequence

COLUMNS, ROWS = 120, 30
_CSI = re.compile(r"\x1b\[([0-?]*)[ -/]*([@-~])")
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(\x07|\x1b\\)")


def strip_ansi(text: str) -> str:
    return _CSI.sub("", _OSC.sub("", text))


def has_cursor_control(text: str) -> bool:
    """Any CSI sequence other than colours (SGR): a cursor move, an erasure, a mode."""
    return any(m.group(2) != "m" for m in _CSI.finditer(text))


def screen(text: str, width: int = COLUMNS) -> list[str]:
    """The lines a terminal of this width shows after text (scrollback included),
    trailing blanks cut."""
    lines: list[list[str]] = [[]]
    row = col = 0
    i = 0
    while i < len(text):
        m = _CSI.match(text, i) if text[i] == "\x1b" else None
        if m:
            i = m.end()
            args, op = m.group(1), m.group(2)
            n = int(args) if args.isdigit() else (0 if op in "JK" else 1)
            if op == "A":
                row = max(0, row - n)
            elif op == "B":
                row += n
            elif op == "C":
                col = min(width - 1, col + n)
            elif op == "D":
                col = max(0, col - n)
            elif op == "G":
                col = max(0, n - 1)
            elif op == "H":
                parts = [int(x) if x.isdigit() else 1 for x in (args.split(";") + ["1", "1"])[:2]]
                row, col = parts[0] - 1, parts[1] - 1
            elif op == "K":
                while len(lines) <= row:
                    lines.append([])
                cur = lines[row]
                if n == 0:
                    del cur[col:]
                elif n == 1:
                    cur[:col] = [" "] * min(col, len(cur))
                else:
                    cur.clear()
            elif op == "J" and n == 2:
                lines, row, col = [[]], 0, 0
            continue
        m = _OSC.match(text, i) if text[i] == "\x1b" else None
        if m:
            i = m.end()
            continue
        ch = text[i]
        i += 1
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row += 1
        elif ch == "\b":
            col = max(0, col - 1)
        elif ch >= " " or ch == "\t":
            if col >= width:  # the deferred wrap of an xterm
                row, col = row + 1, 0
            while len(lines) <= row:
                lines.append([])
            cur = lines[row]
            cur.extend(" " * (col + 1 - len(cur)))
            cur[col] = ch
            col += 1
        while len(lines) <= row:
            lines.append([])
    out = ["".join(x).rstrip() for x in lines]
    while out and not out[-1]:
        out.pop()
    return out


def open_pty(columns: int = COLUMNS, rows: int = ROWS) -> tuple[int, int]:
    """(master, slave) of a new pseudo-terminal of this size."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    return master, slave


class Drain:
    """Everything written to a pty's slave side, read from its master in a thread (so
    the writer never blocks on a full pty), until every slave descriptor is closed."""

    def __init__(self, master: int):
        self.master = master
        self.data = bytearray()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: no slave side left open
                return
            if not chunk:
                return
            with self.lock:
                self.data += chunk

    def text(self) -> str:
        with self.lock:
            return self.data.decode(errors="replace")

    def wait_for(self, needle: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in strip_ansi(self.text()):
                return True
            time.sleep(0.02)
        return False

    def finish(self, timeout: float = 30) -> str:
        """All that was shown, once the slave side is closed (or timeout passed)."""
        self.thread.join(timeout)
        if self.master >= 0:
            os.close(self.master)
            self.master = -1
        return self.text()


def terminal_env(**extra: str) -> dict[str, str]:
    """The environment of a program on our pty: an xterm whose size is the pty's (no
    COLUMNS or LINES to override it, no colour switches)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TERM")}
    return {**env, "TERM": "xterm", **extra}


def run_on_pty(argv: Sequence[str], timeout: float = 120, env: dict[str, str] | None = None,
               cwd: str | None = None) -> tuple[int, str]:
    """Run argv with stdin, stdout and stderr on a new pty, as from a user's shell (in
    a session of its own, so a kill reaches nothing of ours): its exit status and all
    it wrote."""
    master, slave = open_pty()
    try:
        proc = subprocess.Popen(list(argv), stdin=slave, stdout=slave, stderr=slave,
                                env=env or terminal_env(), cwd=cwd, start_new_session=True)
    finally:
        os.close(slave)
    drain = Drain(master)
    try:
        rc = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # its children too: they hold the pty
        proc.wait()
        raise AssertionError(f"{argv[:4]} still running after {timeout} s: "
                             f"{strip_ansi(drain.finish(10))[-2000:]}")
    return rc, drain.finish()

