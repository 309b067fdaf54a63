# tests/jobprocs.py: finding a running job's gateways from a test: the processes whose
# environment carries the ISTHMUS_TEST_TAG the test started the job with.
from __future__ import annotations

import os
import time
from pathlib import Path


def procs_with_env(tag, **want):
    """[(pid, environment)] of isthmus-gateway processes whose environment has
    ISTHMUS_TEST_TAG=tag and the given variables."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        kv = dict(x.decode(errors="replace").split("=", 1) for x in env if b"=" in x)
        if kv.get("ISTHMUS_TEST_TAG") != tag:
            continue
        if all(kv.get(k) == v for k, v in want.items()) and b"isthmus-gateway" in cmd:
            found.append((int(pid), kv))
    return found


def gateway_env(tag, timeout=30, **want):
    """The environment of one gateway of the tagged job, waiting up to timeout s for it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = procs_with_env(tag, **want)
        if found:
            return found[0][1]
        time.sleep(0.2)
    raise AssertionError(f"no gateway of the job ({want or 'any'}) started within {timeout} s")
