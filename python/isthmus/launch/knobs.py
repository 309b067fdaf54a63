# isthmus/launch/knobs.py: checks the ISTHMUS_* settings of the environment before a job
# starts, with the native parser itself (isthmus-knobs --check runs the code MPI_Init and
# isthmus-gateway run: native/src/common/knobs.def, and coll/select.c for the collective
# choices), so a bad value stops `isthmus run` with the line the library would print,
# before any site starts, and the CLI and the native side can never disagree on a value.
from __future__ import annotations

import subprocess
from typing import Mapping

from ..errors import IsthmusError
from ..paths import Prefix

TOOL = "isthmus-knobs"


def check_settings(env: Mapping[str, str], prefix: Prefix, *, skip_files: bool = False) -> None:
    """Raise IsthmusError with one line per bad setting in `env` (the message of each
    "ISTHMUS_X=value: expected ..."). skip_files: do not read ISTHMUS_COLL_TABLE here (a
    site on another host reads its own)."""
    exe = prefix.root / "bin" / TOOL
    if not exe.is_file():
        raise IsthmusError(f"the native build at {prefix} has no bin/{TOOL}; rebuild it "
                           "(scripts/bootstrap.sh)")
    argv = [str(exe), "--check"] + (["--skip-files"] if skip_files else [])
    settings = {k: v for k, v in env.items() if k.startswith("ISTHMUS_")}
    try:
        r = subprocess.run(argv, env=settings, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise IsthmusError(f"cannot check the ISTHMUS_* settings with {exe}: {e}") from None
    if r.returncode == 0:
        return
    lines = [ln.removeprefix("isthmus: ") for ln in r.stderr.splitlines() if ln.strip()]
    raise IsthmusError("\nisthmus: ".join(lines) or f"{exe} --check failed (exit {r.returncode})")
