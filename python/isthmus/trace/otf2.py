# isthmus/trace/otf2.py: the OTF2 export, done by the native isthmus-trace-otf2 (the OTF2
# library's own writer; Debian's libotf2-trace-dev), run on a trace folder.
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..errors import IsthmusError
from ..paths import Prefix

TOOL = "isthmus-trace-otf2"


def export_otf2(prefix: Prefix, trace: Path, out: Path | None, gateways: bool = True) -> str:
    """Write trace as OUT/traces.otf2 (OUT: trace/otf2); the tool's one-line summary."""
    tool = prefix.root / "bin" / TOOL
    if not tool.is_file():
        raise IsthmusError(f"{tool} is missing: it is built only when the OTF2 library is there "
                           "(apt install libotf2-trace-dev, then scripts/bootstrap.sh)")
    argv = [str(tool)] + ([] if gateways else ["--no-gateways"]) + [str(trace)]
    if out is not None:
        argv.append(str(out))
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode:
        raise IsthmusError((r.stderr.strip() or f"{TOOL} failed (exit {r.returncode})")
                           .removeprefix(f"{TOOL}: "))
    for line in r.stderr.splitlines():  # its warnings, as ours, where warnings go
        if line.strip():
            print(line.replace(f"{TOOL}: ", "isthmus: "), file=sys.stderr, flush=True)
    return r.stdout.strip()
