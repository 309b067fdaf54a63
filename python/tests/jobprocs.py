# tests/jobprocs.py: a running job, from a test: its gateways (the processes whose
# environment carries the ISTHMUS_TEST_TAG the test started the job with), and an outage
# of an emulated site's link.
from __future__ import annotations

import os
import subprocess
import threading
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


def cut_link(job_pid, site, after, seconds, log, stop=None):
    """Take site's emulated device down `after` s from now for `seconds` s: the site is
    cut off (its routes vanish; nothing gets in or out), as when a WAN link fails.
    Setting `stop` (a threading.Event) ends the outage early, once the job is over."""
    stop = stop or threading.Event()
    ns = f"ism-{job_pid}-{site}"

    def run():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # wait for the namespace to exist
            if subprocess.run(["ip", "-n", ns, "link", "show", "ism0"],
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
        time.sleep(after)
        subprocess.run(["ip", "-n", ns, "link", "set", "ism0", "down"], check=True)
        log.append(("down", time.monotonic()))
        stop.wait(seconds)
        subprocess.run(["ip", "-n", ns, "link", "set", "ism0", "up"], capture_output=True)
        log.append(("up", time.monotonic()))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t
