# tests/jobprocs.py: a running job, from a test: its gateways (the processes whose
# environment carries the ISTHMUS_TEST_TAG the test started the job with), its output
# as it comes (to wait for what the gateways say), and an outage of an emulated site's
# link.
from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from pathlib import Path

# what each gateway prints under --stats the first time its link to a peer is up
# (native/src/gateway/links.c, gw_link_started)
LINK_UP = re.compile(r"isthmus stats: site \w+ gateway \d+ -> site \w+ gateway \d+: link up: ")


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


class Job:
    """`isthmus run ...` started in the background, its stdout and stderr read as they come
    (by threads), so that a test can wait for a line while the job runs and still gets all
    of both at the end, as from Popen.communicate."""

    def __init__(self, cmd, env=None):
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self.pid = self.proc.pid
        self._out, self._err = [], []
        self._cond = threading.Condition()
        self._readers = [threading.Thread(target=self._read, args=(f, acc), daemon=True)
                         for f, acc in ((self.proc.stdout, self._out),
                                        (self.proc.stderr, self._err))]
        for t in self._readers:
            t.start()

    def _read(self, f, acc):
        for line in f:
            with self._cond:
                acc.append(line)
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    @property
    def returncode(self):
        return self.proc.returncode

    def wait_for(self, pattern, count=1, timeout=120.0) -> bool:
        """True once stderr has `count` lines matching pattern; False if the job ended
        (or timeout s passed) first."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if sum(1 for ln in self._err if pattern.search(ln)) >= count:
                    return True
                left = deadline - time.monotonic()
                if left <= 0 or not any(t.is_alive() for t in self._readers):
                    return False
                self._cond.wait(min(left, 0.5))

    def communicate(self, timeout=None):
        """Wait for the job; (stdout, stderr). After timeout s the job is killed (as by
        subprocess.run) and subprocess.TimeoutExpired raised."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        for t in self._readers:
            t.join()
        with self._cond:
            return "".join(self._out), "".join(self._err)


def links_up(job, nlinks, timeout=120.0):
    """A `ready` for cut_link: waits until nlinks links of the job (a Job run with --stats)
    are up, each as its own gateway says it."""
    return lambda: job.wait_for(LINK_UP, nlinks, timeout)


def cut_link(job_pid, site, after, seconds, log, stop=None, ready=None):
    """Take site's emulated device down `after` s after `ready()` returned True (by
    default: after its namespace exists) for `seconds` s: the site is cut off (its
    routes vanish; nothing gets in or out), as when a WAN link fails. Counting from the
    links being up (links_up) keeps a slow start of the job from moving the outage
    before the link it is meant to break. If `ready()` returns False (the job ended
    first) nothing is cut and `log` stays empty. Setting `stop` (a threading.Event) ends
    the outage early, once the job is over."""
    stop = stop or threading.Event()
    ns = f"ism-{job_pid}-{site}"

    def namespace_exists():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if subprocess.run(["ip", "-n", ns, "link", "show", "ism0"],
                              capture_output=True).returncode == 0:
                return True
            time.sleep(0.2)
        return False

    def run():
        if not (ready or namespace_exists)():
            return
        time.sleep(after)
        subprocess.run(["ip", "-n", ns, "link", "set", "ism0", "down"], check=True)
        log.append(("down", time.monotonic()))
        stop.wait(seconds)
        subprocess.run(["ip", "-n", ns, "link", "set", "ism0", "up"], capture_output=True)
        log.append(("up", time.monotonic()))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t
