# isthmus/transfer.py: a many-file `isthmus-copy put` or `get` (directories, file lists,
# globs; docs/copy.md) run and watched. The tool reports progress as JSON lines on stdout
# (--progress-json); here they become a rich progress bar (bytes and files, rate, ETA)
# when stderr is a terminal, or a plain line every `plain_every` seconds otherwise (a
# log or CI gets a steady record instead of redraws). The tool's summary line goes to
# stdout, its FAILED lines to stderr; the manifest, when asked for, is read back.
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                           TransferSpeedColumn)
from rich.text import Text

from .ui import err_console

PLAIN_EVERY = 10.0  # seconds between plain progress lines


@dataclass
class ManyResult:
    returncode: int
    summary: str = ""  # the tool's summary line
    stderr: list[str] = field(default_factory=list)
    manifest: dict | None = None

    @property
    def failed(self) -> list[dict]:
        return [f for f in (self.manifest or {}).get("files", []) if f["status"] == "failed"]


def plain_line(label: str, p: dict) -> str:
    done, total = p["bytes"], p["total_bytes"]
    rate = done / p["seconds"] if p["seconds"] > 0 else 0.0
    eta = f"{(total - done) / rate:.0f} s" if rate > 0 and total > done else "-"
    pct = 100.0 * done / total if total else 100.0
    failed = f", {p['failed']} failed" if p["failed"] else ""
    return (f"{label}: {done} of {total} bytes ({pct:.0f}%), {p['files']} of {p['total_files']} "
            f"files{failed}, {rate * 8 / 1e6:.1f} Mbit/s, ETA {eta}")


def _pump(stream, sink: list[str], echo: Callable[[str], None] | None) -> None:
    for line in stream:
        sink.append(line.rstrip("\n"))
        if echo:
            echo(line.rstrip("\n"))


def run_many(argv: Sequence[str], label: str, manifest: Path | None = None, *,
             bar: bool | None = None, plain_every: float = PLAIN_EVERY,
             say: Callable[[str], None] | None = None) -> ManyResult:
    """Run argv (an `isthmus-copy put` or `get` of many files) with --progress-json. bar: a
    rich bar (default: when stderr is a terminal); else plain lines through say (default:
    the stderr console, which prints above a bar), at most one every plain_every seconds.
    The summary line is returned (and printed by the caller as it likes)."""
    if bar is None:
        bar = sys.stderr.isatty()
    console = err_console()
    say = say or (lambda m: console.print(Text(m)))
    cmd = [*argv, "--progress-json"] + (["--manifest", str(manifest)] if manifest else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    res = ManyResult(returncode=-1)
    errs = threading.Thread(target=_pump, args=(proc.stderr, res.stderr, say), daemon=True)
    errs.start()
    assert proc.stdout is not None
    last_plain = time.monotonic()
    progress = None
    task = None
    try:
        if bar:
            progress = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                TextColumn("{task.fields[files]}"), TransferSpeedColumn(),
                                TimeRemainingColumn(), console=console, transient=False)
            progress.start()
            task = progress.add_task(label, total=None, files="")
        for line in proc.stdout:
            line = line.rstrip("\n")
            if not line.startswith("{"):
                res.summary = line
                continue
            p = json.loads(line).get("progress")
            if p is None:
                continue
            if progress is not None:
                progress.update(task, completed=p["bytes"], total=p["total_bytes"] or None,
                                files=f"{p['files']}/{p['total_files']} files"
                                      + (f", {p['failed']} failed" if p["failed"] else ""))
            elif not p["final"] and time.monotonic() - last_plain >= plain_every:
                last_plain = time.monotonic()
                say(plain_line(label, p))
    finally:
        if progress is not None:
            progress.stop()
        res.returncode = proc.wait()
        errs.join(5)
    if manifest and manifest.is_file():
        res.manifest = json.loads(manifest.read_text())
    return res
