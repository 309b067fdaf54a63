# tests/trace_helpers.py: running a program under `isthmus run --trace` and reading the
# OTF2 export back through otf2-print (the OTF2 library's own reader), for the trace tests.
from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

EVENT = re.compile(r"^(\w+)\s+(\d+)\s+(\d+)\s*(.*)$")


def traced_run(exe: Path, trace: Path, n: int, layout: str, args=(), env=None,
               extra=(), timeout=150) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "isthmus", "run", "-n", str(n), "--sites",
           str(len(layout.split(","))), "--ranks-per-site", layout, "--mpi", "openmpi",
           "--timeout", str(timeout - 20), "--trace", str(trace), *extra, "--", str(exe),
           *[str(a) for a in args]]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def build_and_trace(cc: Path, source: Path, tmp: Path, n: int, layout: str, args=(),
                    libs=()) -> tuple[Path, str]:
    """Build source with isthmus-cc, run it traced across the sites of layout, check that
    it printed "NAME: ok"; the trace folder and the program's output."""
    exe = tmp / source.stem
    c = subprocess.run([str(cc), "-O2", "-o", str(exe), str(source), *libs],
                       capture_output=True, text=True)
    assert c.returncode == 0, c.stderr
    trace = tmp / "trace"
    r = traced_run(exe, trace, n, layout, args=args)
    assert r.returncode == 0 and f"{source.stem}: ok" in r.stdout, (r.stdout + r.stderr)[-3000:]
    return trace, r.stdout


@dataclass
class Otf2Events:
    """What otf2-print shows of an archive: per event kind and location, the events'
    attributes; and the regions entered per location."""
    by_kind: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)
    enters: Counter = field(default_factory=Counter)  # (location, region name)

    def of(self, kind: str, location: int | None = None) -> list[tuple[int, int, str]]:
        return [e for e in self.by_kind.get(kind, []) if location is None or e[0] == location]


def read_otf2(archive: Path) -> Otf2Events:
    r = subprocess.run(["otf2-print", str(archive)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    ev = Otf2Events()
    for line in r.stdout.splitlines():
        m = EVENT.match(line)
        if not m:
            continue
        kind, loc, t, rest = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        ev.by_kind.setdefault(kind, []).append((loc, t, rest))
        if kind == "ENTER":
            name = re.search(r'Region: "([^"]*)"', rest)
            ev.enters[(loc, name.group(1) if name else "?")] += 1
    return ev


def attr(text: str, name: str) -> str:
    m = re.search(rf"{name}: ([^,(]+)", text)
    assert m, f"no {name} in {text!r}"
    return m.group(1).strip().strip('"')
