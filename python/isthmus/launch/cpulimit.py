# isthmus/launch/cpulimit.py: a CPU limit per site (`isthmus run --site-cpu`, `cpu` in a
# site file), so that sites on this machine differ in speed as clusters do. A limited
# site's application ranks run in a cgroup of their own (isthmus-<job>/<site>) whose CPU
# controller lets them use, together, at most the given number of cores; the gateways and
# the vendor launchers stay outside it. The controller is looked up at run time, never
# assumed: cgroup v2 with "cpu" in cgroup.controllers, else a v1 hierarchy mounted with
# the cpu controller. The groups are made before the sites start and removed after the
# job, on every exit path.
#
# A rank joins its group itself, before the program starts: the command line of the ranks
# becomes `sh -c '<join>' ... PROGRAM ARGS`, which writes its pid into the group's
# cgroup.procs and execs the program. It reaches the group through
# /proc/<launcher pid>/root, because `ip netns exec` (how --wan starts a site) mounts a
# fresh /sys without the cgroup file systems.
from __future__ import annotations

import errno
import math
import os
import signal
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..errors import IsthmusError

# The enforcement period: the group may run quota = cores x period in every period. Short,
# so that a limited rank is slowed evenly (a burst of compute shorter than its quota runs
# at full speed); longer only when the quota would fall below the kernel's 1 ms minimum.
PERIOD_US = 10_000
MIN_QUOTA_US = 1_000
MAX_PERIOD_US = 1_000_000
MIN_CORES = MIN_QUOTA_US / MAX_PERIOD_US
NO_LIMIT = "none"
GROUP_PREFIX = "isthmus-"
REMOVE_WAIT_S = 5.0

# The ranks' wrapper: $0 the site, $1 its group's cgroup.procs, then the program and its
# arguments. A rank that cannot join stops before the program runs (exit 126, as a shell
# does for a command it cannot run), so no site ever runs unlimited by mistake.
JOIN_SCRIPT = (
    'p="$1"; shift; '
    'if ! echo $$ 2>/dev/null > "$p"; then '
    'echo "isthmus: site $0: cannot join the CPU limit group ($p)" >&2; exit 126; fi; '
    'exec "$@"'
)


@dataclass(frozen=True)
class Controller:
    """Where the CPU controller is: `version` 1 or 2, `base` the directory the job's
    groups are made in."""

    version: int
    base: Path

    def describe(self) -> str:
        return f"cgroup v{self.version} at {self.base}"


def check_cores(value: float, where: str) -> float:
    """A site's limit in cores (0.25: a quarter of one core), or an error naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise IsthmusError(f"{where}: the CPU limit must be a number of cores, e.g. 0.5, got {value!r}")
    if value <= 0:
        raise IsthmusError(f"{where}: the CPU limit must be more than 0 cores, got {value:g}")
    if value < MIN_CORES:
        raise IsthmusError(f"{where}: the CPU limit {value:g} is below the smallest the kernel "
                           f"enforces ({MIN_CORES:g} of a core: 1 ms per second)")
    cpus = os.cpu_count() or 1
    if value > cpus:
        raise IsthmusError(f"{where}: the CPU limit {value:g} is more cores than this machine "
                           f"has ({cpus})")
    return float(value)


def parse_site_cpu(text: str, names: Sequence[str]) -> tuple[float | None, ...]:
    """--site-cpu "0.25,1,none" -> one limit (cores) or None per site, in site order."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != len(names):
        raise IsthmusError(f"--site-cpu {text!r} has {len(parts)} value(s) but there are "
                           f"{len(names)} sites ({', '.join(names)}); give one per site "
                           f"(cores, e.g. 0.5, or {NO_LIMIT})")
    out: list[float | None] = []
    for name, part in zip(names, parts):
        if part == NO_LIMIT:
            out.append(None)
            continue
        try:
            value = float(part)
        except ValueError:
            raise IsthmusError(f"--site-cpu: site {name}: {part!r} is not a number of cores "
                               f"(e.g. 0.5) or {NO_LIMIT}") from None
        out.append(check_cores(value, f"--site-cpu: site {name}"))
    return tuple(out)


def period_quota(cores: float) -> tuple[int, int]:
    """(period, quota) in microseconds for a limit of `cores`."""
    period = max(PERIOD_US, math.ceil(MIN_QUOTA_US / cores))
    return period, max(MIN_QUOTA_US, round(cores * period))


# ---- finding the controller ----------------------------------------------------------

def _mounts(text: str) -> list[tuple[Path, str, set[str]]]:
    """(mount point, file system type, options) of each cgroup file system."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 4 and f[2] in ("cgroup", "cgroup2"):
            out.append((Path(f[1].replace("\\040", " ")), f[2], set(f[3].split(","))))
    return out


def _own_v1_path(self_cgroup: str, controller: str = "cpu") -> str:
    """This process's group in the v1 hierarchy of `controller` (/proc/self/cgroup)."""
    for line in self_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and controller in parts[1].split(","):
            return parts[2]
    return "/"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def find_controller(mounts: str | None = None, self_cgroup: str | None = None) -> Controller:
    """The CPU controller this machine offers, or an IsthmusError saying what is missing.
    `mounts` and `self_cgroup` stand for /proc/self/mounts and /proc/self/cgroup."""
    mounts = _read(Path("/proc/self/mounts")) if mounts is None else mounts
    self_cgroup = _read(Path("/proc/self/cgroup")) if self_cgroup is None else self_cgroup
    found = _mounts(mounts)
    seen = []
    for point, kind, _ in found:
        if kind != "cgroup2":
            continue
        controllers = _read(point / "cgroup.controllers").split()
        if "cpu" not in controllers:
            seen.append(f"cgroup v2 at {point} offers {' '.join(controllers) or 'no controller'}")
            continue
        if "cpu" not in _read(point / "cgroup.subtree_control").split():
            raise IsthmusError(
                f"--site-cpu: cgroup v2 at {point} has the cpu controller but does not give it "
                f"to child groups (cpu is missing from {point / 'cgroup.subtree_control'}; "
                f"`echo +cpu > {point / 'cgroup.subtree_control'}` as root turns it on)")
        return Controller(2, point)
    for point, kind, options in found:
        if kind == "cgroup" and "cpu" in options:
            own = point / _own_v1_path(self_cgroup).lstrip("/")
            return Controller(1, own if (own / "cpu.cfs_quota_us").is_file() else point)
    seen.append("no cgroup v1 hierarchy is mounted with the cpu controller")
    raise IsthmusError("--site-cpu needs the kernel's CPU controller (cgroups), and this machine "
                       f"has none usable: {'; '.join(seen)} (/proc/self/mounts)")


# ---- the job's groups ------------------------------------------------------------------

def job_dir(ctl: Controller, job_id: str) -> Path:
    return ctl.base / f"{GROUP_PREFIX}{job_id}"


def procs_path(ctl: Controller, job_id: str, site: str, pid: int | None = None) -> str:
    """The site group's cgroup.procs as a rank reaches it: through the launcher's root,
    which keeps the cgroup file systems in any mount namespace a site runs in."""
    group = job_dir(ctl, job_id) / site / "cgroup.procs"
    return f"/proc/{os.getpid() if pid is None else pid}/root{group}"


def _write(path: Path, text: str, what: str) -> None:
    try:
        path.write_text(text)
    except OSError as e:
        raise IsthmusError(f"--site-cpu: cannot set {what} ({path}): {e.strerror or e}") from None


class JobGroups:
    """The job's groups, one per limited site, made on enter and removed on exit.

        with JobGroups(ctl, job_id, {"B": 0.25}):
            ... run the job ...
    """

    def __init__(self, ctl: Controller, job_id: str, limits: Mapping[str, float]):
        self.ctl = ctl
        self.dir = job_dir(ctl, job_id)
        self.limits = dict(limits)
        self._made: list[Path] = []

    def __enter__(self) -> "JobGroups":
        try:
            self._make()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _mkdir(self, path: Path) -> None:
        try:
            path.mkdir()
        except OSError as e:
            raise IsthmusError(
                f"--site-cpu: cannot create the cgroup {path}: {e.strerror or e} (a CPU limit "
                f"needs root, or write access to {self.ctl.describe()})") from None
        self._made.append(path)

    def _make(self) -> None:
        self._mkdir(self.dir)
        if self.ctl.version == 2:
            _write(self.dir / "cgroup.subtree_control", "+cpu", "the job group's controllers")
        for site, cores in self.limits.items():
            group = self.dir / site
            self._mkdir(group)
            period, quota = period_quota(cores)
            where = f"site {site}'s limit of {cores:g} cores"
            if self.ctl.version == 2:
                _write(group / "cpu.max", f"{quota} {period}", where)
            else:
                _write(group / "cpu.cfs_period_us", str(period), where)
                _write(group / "cpu.cfs_quota_us", str(quota), where)

    def close(self) -> None:
        """Remove the groups, innermost first; processes still in one (a rank that
        outlived its launcher) are killed first. Raises if a group stays."""
        problems = []
        for path in reversed(self._made):
            problem = _remove_group(path)
            if problem:
                problems.append(problem)
        self._made.clear()
        if problems:
            raise IsthmusError("--site-cpu: cleanup incomplete: " + "; ".join(problems))


def _pids(group: Path) -> list[int]:
    return [int(p) for p in _read(group / "cgroup.procs").split() if p.isdigit()]


def _remove_group(path: Path) -> str | None:
    """rmdir the group, waiting for its processes to go (the supervisor has stopped the
    job's process groups; a rank may still be exiting); half-way, what is left in it,
    only the job's ranks, is killed."""
    start = time.monotonic()
    killed = False
    while True:
        try:
            path.rmdir()
            return None
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno != errno.EBUSY:
                return f"cannot remove {path}: {e.strerror or e}"
        waited = time.monotonic() - start
        if waited > REMOVE_WAIT_S:
            return f"cannot remove {path}: processes {_pids(path)} are still in it"
        if not killed and waited > REMOVE_WAIT_S / 2:
            for pid in _pids(path):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            killed = True
        time.sleep(0.02)


# ---- the ranks' command ------------------------------------------------------------------

def wrap(site: str, procs: str, program: str, args: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """The ranks' program and arguments with the join in front."""
    return "sh", ("-c", JOIN_SCRIPT, site, procs, program, *args)


def limited_builder(builder: Callable, ctl: Controller, limits: Mapping[str, float],
                    pid: int | None = None) -> Callable:
    """A command builder (launch/job.py) whose limited sites start their ranks in their
    group; the job id is the one the plan gives each site (ISTHMUS_JOB)."""

    def build(launch):
        name = launch.site.name
        if name not in limits:
            return builder(launch)
        procs = procs_path(ctl, launch.env["ISTHMUS_JOB"], name, pid)
        program, args = wrap(name, procs, launch.program, launch.args)
        return builder(replace(launch, program=program, args=args))

    return build
