# isthmus/trace/launch.py: what `isthmus run --trace DIR` changes in a job: the folder is
# emptied of an earlier trace and described (job.json), every process learns it
# (ISTHMUS_TRACE_DIR: the gateways trace themselves), and the program starts with the
# tracer preloaded (libisthmus-trace.so, a PMPI tool; docs/trace.md).
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Sequence

from ..errors import IsthmusError
from ..launch.layout import Layout
from ..paths import Prefix
from . import records as R

TRACER = "libisthmus-trace.so"
# what a run and the commands that read it write into the folder: removed first, so no
# file of an earlier run mixes in or stays behind stale
PATTERNS = ("rank-*.ismt", "gw-*.ismt", "clocks.json", "job.json", "summary.html",
            "summary.json", "matrix.png", "trace.prv", "trace.pcf", "trace.row", "trace.json")


def tracer_path(prefix: Prefix) -> Path:
    lib = prefix.root / "lib" / TRACER
    if not lib.is_file():
        raise IsthmusError(f"--trace needs {lib}, which is missing; rebuild the native part "
                           "(scripts/bootstrap.sh)")
    return lib


def prepare_dir(path: Path, layout: Layout, program: str, args: Sequence[str]) -> Path:
    """Make the folder, remove an earlier run's files from it and write job.json."""
    path = path.resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
        for pattern in PATTERNS:
            for old in path.glob(pattern):
                old.unlink()
        if (path / "otf2" / "traces.otf2").is_file():  # an export of the earlier run
            shutil.rmtree(path / "otf2")
        job = {
            "program": program, "args": list(args), "started": time.time(),
            "transport": layout.transport,
            "sites": [{"name": s.name, "ranks": s.ranks, "gateways": s.gateways}
                      for s in layout.sites],
        }  # fmt: skip
        (path / "job.json").write_text(json.dumps(job, indent=1) + "\n")
    except OSError as e:
        raise IsthmusError(f"--trace {path}: {e.strerror or e}") from None
    return path


def traced_command(prefix: Prefix, program: str, args: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """The app ranks' command with the tracer preloaded: `env LD_PRELOAD=... PROGRAM ARGS`,
    so only the app ranks load it (not the launcher, not the gateways), under any
    launcher. A preload the user already has stays, after the tracer."""
    preload = str(tracer_path(prefix))
    if os.environ.get("LD_PRELOAD"):
        preload += ":" + os.environ["LD_PRELOAD"]
    return "env", (f"LD_PRELOAD={preload}", program, *args)


def file_end(path: Path) -> tuple[int, int] | None:
    """(records, bytes) a trace file's END record says were lost, or None when the file
    has no END record (its process never closed it). END is the last record."""
    END_LEN = R.HDR.size + R.BODY[R.END].size
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() < R.FILE_HDR.size + END_LEN:
                return None
            f.seek(-END_LEN, os.SEEK_END)
            tail = f.read(END_LEN)
    except OSError:
        return None
    length, kind, _, _ = R.HDR.unpack_from(tail, 0)
    if length != END_LEN or kind != R.END:
        return None
    _, _, _, lost, lost_bytes = R.BODY[R.END].unpack_from(tail, R.HDR.size)
    return lost, lost_bytes


def report_files(path: Path) -> str:
    """What the run left in the folder, in a few lines: counts, size, clocks, and every
    process whose trace misses records (never silently)."""
    ranks = sorted(path.glob("rank-*.ismt"))
    gws = sorted(path.glob("gw-*.ismt"))
    size = sum(p.stat().st_size for p in ranks + gws)
    clocks = "clocks aligned" if (path / "clocks.json").is_file() else \
        "no clocks.json (the job did not reach MPI_Finalize): clocks not aligned"
    lines = [f"isthmus: trace in {path}: {len(ranks)} rank{'s' if len(ranks) != 1 else ''} and "
             f"{len(gws)} gateway{'s' if len(gws) != 1 else ''}, {size / 1e6:.1f} MB, {clocks}; "
             f"see `isthmus trace summary {path}` and `isthmus trace export {path}`"]
    for p in ranks + gws:
        end = file_end(p)
        if end is None:
            lines.append(f"isthmus: trace {p.name}: no END record: the process ended without "
                         "closing its trace; the records it still held in memory are missing")
        elif end[0]:
            lines.append(f"isthmus: trace {p.name}: {end[0]} records ({end[1]} bytes) were "
                         "dropped because its trace buffer was full (LOSS records mark where); "
                         "raise ISTHMUS_TRACE_BUFFER")
    return "\n".join(lines)
