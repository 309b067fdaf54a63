# isthmus/launch/supervisor.py: starts each site's launcher as its own process group and
# watches them. The first site that fails (non-zero exit or killed by a signal), a signal
# to isthmus itself, or the --timeout stops every other site: SIGTERM to its process group,
# SIGKILL after a grace period. No child outlives isthmus on any exit path.
from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence, TextIO

from ..errors import IsthmusError
from .output import Tagger, pump

TIMEOUT_EXIT = 124  # like timeout(1)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1

# Launchers currently running anywhere in this process, for the atexit safety net.
_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()


@dataclass
class SiteProcess:
    """What to start for one site."""

    name: str
    argv: Sequence[str]
    env: Mapping[str, str]
    stdin: str | bytes = "null"  # "inherit", "null", or bytes to write then close
    cwd: str | None = None
    # bytes stdin stays open after the write until the site is stopped (an ssh site's
    # remote side stops its launcher when its stdin ends)
    keep_stdin: bool = False
    tagger: Tagger | None = None  # prefix every output line (stdout and stderr piped)
    popen: subprocess.Popen | None = field(default=None, repr=False)
    pumps: list = field(default_factory=list, repr=False)


def _signame(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _killpg(pgid: int, sig: int) -> bool:
    """Signal a process group; False if it no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _group_alive(pgid: int) -> bool:
    """True while the process group has a member that is not a zombie (zombies of orphans
    are reaped by init at its own pace and must not hold up the stop)."""
    if not _killpg(pgid, 0):
        return False
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...; comm may contain spaces and parentheses
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) >= 3 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def sweep_job(job_id: str) -> list[int]:
    """SIGKILL every process on this machine started for job `job_id` (its environment has
    ISTHMUS_JOB=<job_id>), except ourselves. Linux only; returns the pids signalled."""
    marker = f"ISTHMUS_JOB={job_id}".encode()
    killed = []
    proc = Path("/proc")
    if not proc.is_dir():
        return killed
    me = os.getpid()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            try:
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
            except OSError:
                pass
    return killed


def _kill_live_at_exit() -> None:
    with _live_lock:
        procs = [p for p in _live if p.poll() is None]
    for p in procs:
        _killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and any(_group_alive(p.pid) for p in procs):
        time.sleep(0.05)
    for p in procs:
        _killpg(p.pid, signal.SIGKILL)
        try:
            p.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass


atexit.register(_kill_live_at_exit)


def _pdeathsig_setup():
    """A preexec_fn making the launcher get SIGTERM if isthmus dies (even by SIGKILL)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def setup() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # parent already gone
            os._exit(1)

    return setup


class Supervisor:
    def __init__(
        self,
        sites: Sequence[SiteProcess],
        *,
        timeout: float | None = None,
        grace: float = 5.0,
        job_id: str | None = None,
        err: TextIO | None = None,
        poll_interval: float = 0.05,
    ):
        self.sites = list(sites)
        self.timeout = timeout
        self.grace = grace
        self.job_id = job_id
        self._err = err
        self.poll_interval = poll_interval
        self._signals: list[int] = []

    # -- output -------------------------------------------------------------------------
    def say(self, msg: str) -> None:
        err = self._err if self._err is not None else sys.stderr
        try:
            err.write(f"isthmus: {msg}\n")
            err.flush()
        except (OSError, ValueError):
            pass

    # -- signals ------------------------------------------------------------------------
    def _on_signal(self, signum: int, frame: object) -> None:
        self._signals.append(signum)

    def _install_handlers(self) -> dict[int, object]:
        old: dict[int, object] = {}
        if threading.current_thread() is not threading.main_thread():
            return old
        for sig in STOP_SIGNALS:
            try:
                old[sig] = signal.signal(sig, self._on_signal)
            except (ValueError, OSError):
                pass
        return old

    @staticmethod
    def _restore_handlers(old: dict[int, object]) -> None:
        for sig, handler in old.items():
            try:
                signal.signal(sig, handler)  # type: ignore[arg-type]
            except (ValueError, OSError, TypeError):
                pass

    # -- processes ----------------------------------------------------------------------
    def _start(self, site: SiteProcess, preexec) -> subprocess.Popen:
        if site.stdin == "inherit":
            stdin = None
        elif site.stdin == "null":
            stdin = subprocess.DEVNULL
        else:
            stdin = subprocess.PIPE
        try:
            out = subprocess.PIPE if site.tagger else None
            p = subprocess.Popen(
                list(site.argv),
                env=dict(site.env),
                stdin=stdin,
                stdout=out,
                stderr=out,
                cwd=site.cwd,
                start_new_session=True,
                preexec_fn=preexec,
            )
        except OSError as e:
            raise IsthmusError(
                f"site {site.name}: cannot start {site.argv[0]}: {e.strerror or e}"
            ) from None
        with _live_lock:
            _live.add(p)
        if site.tagger is not None:
            assert p.stdout is not None and p.stderr is not None
            site.pumps = [pump(p.stdout, site.tagger, None, err=False),
                          pump(p.stderr, site.tagger, None, err=True)]
        if isinstance(site.stdin, bytes):
            try:
                assert p.stdin is not None
                p.stdin.write(site.stdin)
                p.stdin.flush()
                if not site.keep_stdin:
                    p.stdin.close()
            except OSError:
                pass
        site.popen = p
        return p

    @staticmethod
    def _release(site: SiteProcess) -> None:
        """Close a kept stdin (the remote side of an ssh site then stops its launcher) and
        wait briefly for the last output lines."""
        p = site.popen
        if p is not None and p.stdin is not None and not p.stdin.closed:
            try:
                p.stdin.close()
            except OSError:
                pass
        for t in site.pumps:
            t.join(timeout=2.0)

    def _forget(self, p: subprocess.Popen) -> None:
        with _live_lock:
            _live.discard(p)

    def stop_all(self) -> None:
        """SIGTERM every site's process group, SIGKILL what is left after the grace period
        (at once if another stop signal arrives meanwhile), then reap."""
        procs = [s.popen for s in self.sites if s.popen is not None]
        for s in self.sites:
            if s.popen is not None and s.popen.stdin is not None and not s.popen.stdin.closed:
                try:
                    s.popen.stdin.close()
                except OSError:
                    pass
        for p in procs:
            _killpg(p.pid, signal.SIGTERM)
        signals_before = len(self._signals)
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            alive = [p for p in procs if p.poll() is None or _group_alive(p.pid)]
            if not alive or len(self._signals) > signals_before:
                break
            time.sleep(self.poll_interval)
        for p in procs:
            if p.poll() is None or _group_alive(p.pid):
                _killpg(p.pid, signal.SIGKILL)
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            self._forget(p)
        if self.job_id:
            sweep_job(self.job_id)

    def run(self) -> int:
        """Start all sites and supervise them; returns the job's exit code."""
        old = self._install_handlers()
        preexec = (
            _pdeathsig_setup() if threading.current_thread() is threading.main_thread() else None
        )
        started = time.monotonic()
        try:
            for site in self.sites:
                self._start(site, preexec)
            return self._watch(started)
        except BaseException:
            self.stop_all()
            raise
        finally:
            # Normal paths have stopped/reaped everything already; this is the safety net.
            if any(s.popen is not None and s.popen.poll() is None for s in self.sites):
                self.stop_all()
            for s in self.sites:
                self._release(s)
                if s.popen is not None:
                    self._forget(s.popen)
            self._restore_handlers(old)

    def _watch(self, started: float) -> int:
        running = {id(s): s for s in self.sites}
        while True:
            if self._signals:
                sig = self._signals[0]
                self.say(f"received {_signame(sig)}; stopping all sites")
                self.stop_all()
                return 128 + sig
            if self.timeout is not None and time.monotonic() - started > self.timeout:
                self.say(f"the job exceeded --timeout {self.timeout:g}s; stopping all sites")
                self.stop_all()
                return TIMEOUT_EXIT
            for key, site in list(running.items()):
                assert site.popen is not None
                rc = site.popen.poll()
                if rc is None:
                    continue
                del running[key]
                if rc == 0:
                    continue
                code = rc if rc > 0 else 128 - rc
                what = (
                    f"exited with code {rc}"
                    if rc > 0
                    else f"was killed by {_signame(-rc)} (exit code {code})"
                )
                tail = "; stopping the other sites" if running else ""
                self.say(f"site {site.name} {what}{tail}")
                self.stop_all()
                return code
            if not running:
                # Everything exited 0: clean up stragglers of the process groups, if any.
                for s in self.sites:
                    assert s.popen is not None
                    _killpg(s.popen.pid, signal.SIGKILL)
                if self.job_id:
                    sweep_job(self.job_id)
                return 0
            time.sleep(self.poll_interval)
