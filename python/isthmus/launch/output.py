# isthmus/launch/output.py: the output of sites started over ssh, line by line with a
# site/rank prefix: "[B:5] text" for global rank 5 of site B, "[B:gw0]" for its first
# gateway, "[B]" for the launcher itself (ssh, mpirun). The vendor marks each line with
# its local rank (Open MPI --tag-output, MPICH -prepend-rank); the tag is replaced here.
from __future__ import annotations

import re
import sys
import threading
from typing import IO, Callable

Tagger = Callable[[str], str]

_OPENMPI = re.compile(r"^\[\d+,(\d+)\]<(?:stdout|stderr)>:(.*)$", re.S)
_MPICH = re.compile(r"^\[(\d+)\] ?(.*)$", re.S)
_write_lock = threading.Lock()


def site_tagger(site: str, vendor: str, first_rank: int, ranks: int) -> Tagger:
    """A function from one output line of the site's launcher to the prefixed line."""
    pattern = _OPENMPI if vendor == "openmpi" else _MPICH

    def tag(line: str) -> str:
        m = pattern.match(line)
        if not m:
            return f"[{site}] {line}"
        local = int(m.group(1))
        who = str(first_rank + local) if local < ranks else f"gw{local - ranks}"
        return f"[{site}:{who}] {m.group(2)}"

    return tag


def pump(stream: IO[bytes], tagger: Tagger, out: IO[str] | None, err: bool) -> threading.Thread:
    """Copy `stream` to our stdout (stderr when `err`) line by line through `tagger`, in a
    thread that ends at end of file. Whole lines only, so sites never interleave inside one."""

    def run() -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            target = out if out is not None else (sys.stderr if err else sys.stdout)
            with _write_lock:
                try:
                    target.write(tagger(line) + "\n")
                    target.flush()
                except (OSError, ValueError):
                    pass
        stream.close()

    t = threading.Thread(target=run, daemon=True, name="isthmus-output")
    t.start()
    return t
