# isthmus/batch/slurm.py: one site's Slurm, reached the way its users reach it: its own
# commands (sbatch, squeue, scancel, scontrol, sinfo) run on the site's login node over ssh
# (or on this machine for a site without ssh_host). Everything isthmus asks of a
# scheduler goes through here, and every failure names the site and the command.
from __future__ import annotations

import re
import shlex
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

from ..errors import IsthmusError
from ..launch.layout import Site
from ..launch.ssh import ssh_prefix

CALL_TIMEOUT = 60.0
# squeue's states that hold an allocation; the others are before it or after it
RUNNING = ("RUNNING",)
WAITING = ("PENDING", "CONFIGURING", "REQUEUED", "RESV_DEL_HOLD", "REQUEUE_HOLD", "SUSPENDED")


@dataclass(frozen=True)
class JobState:
    """squeue's view of one batch job: state, reason (why it waits), expected start (Slurm's
    estimate, "N/A" when it has none), the nodes it holds."""

    job_id: str
    state: str
    reason: str
    start: str
    nodes: str

    @property
    def running(self) -> bool:
        return self.state in RUNNING

    @property
    def waiting(self) -> bool:
        return self.state in WAITING


@dataclass(frozen=True)
class Estimate:
    """Slurm's answer to sbatch --test-only: when the job would start (as Slurm wrote it,
    in the site's local time, and in seconds from the moment asked) and where."""

    start: str
    start_in: float
    asked: float  # time.monotonic() when asked
    answer: str  # Slurm's whole line


_TEST_ONLY_RE = re.compile(r"to start at (\S+)")
_SLURM_TIME = "%Y-%m-%dT%H:%M:%S"


def slurm_time(text: str) -> datetime | None:
    """A Slurm timestamp ("2026-11-28T04:10:00"), or None for "N/A", "Unknown" and the like."""
    try:
        return datetime.strptime(text.strip(), _SLURM_TIME)
    except ValueError:
        return None


@dataclass(frozen=True)
class NodeInfo:
    name: str
    cpus: int
    features: tuple[str, ...]
    state: str


class SiteSlurm:
    """The Slurm commands of one site."""

    def __init__(self, site: Site, timeout: float = CALL_TIMEOUT):
        self.site = site
        self.timeout = timeout
        # the site's clock minus this one's (time zone and skew): Slurm's times are the
        # site's local time; known after the first estimate()
        self.offset: float | None = None

    @property
    def where(self) -> str:
        via = f" (via {self.site.ssh_host})" if self.site.ssh_host else ""
        return f"site {self.site.name}{via}"

    def command(self, argv: Sequence[str]) -> list[str]:
        """argv as run for this site: locally, or through ssh to its login node."""
        s = self.site
        if s.ssh_host is None:
            return list(argv)
        return [*ssh_prefix(s.ssh_host, jump=s.ssh_jump, options=s.ssh_options), shlex.join(argv)]

    def call(self, argv: Sequence[str], stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        try:
            r = subprocess.run(self.command(argv), input=stdin, capture_output=True, text=True,
                               timeout=self.timeout,
                               stdin=None if stdin is not None else subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise IsthmusError(f"{self.where}: `{shlex.join(argv)}` did not answer within "
                               f"{self.timeout:g} s") from None
        except OSError as e:
            raise IsthmusError(f"{self.where}: cannot run {argv[0]}: {e.strerror or e}") from None
        if check and r.returncode != 0:
            raise IsthmusError(f"{self.where}: `{shlex.join(argv)}` failed (exit {r.returncode}): "
                               f"{(r.stderr or r.stdout).strip()[-500:] or 'no output'}")
        return r

    # ---- jobs ----
    def query(self, job_id: str) -> JobState | None:
        """The job's state, or None when it has left the queue."""
        r = self.call(["squeue", "-h", "-j", job_id, "-o", "%i|%T|%r|%S|%N"], check=False)
        for line in r.stdout.splitlines():
            parts = line.strip().split("|")
            if len(parts) == 5 and parts[0] == job_id:
                return JobState(*parts)
        if r.returncode != 0 and "Invalid job id" not in r.stderr:
            raise IsthmusError(f"{self.where}: squeue -j {job_id} failed: {r.stderr.strip()[-300:]}")
        return None

    def cancel(self, job_id: str) -> None:
        self.call(["scancel", job_id], check=False)

    def hostnames(self, nodelist: str) -> list[str]:
        """Slurm's compressed node list ("a[0-3]") as host names, in Slurm's order."""
        return self.call(["scontrol", "show", "hostnames", nodelist]).stdout.split()

    def estimate(self, options: Sequence[str], script: str) -> Estimate:
        """sbatch --test-only: Slurm's own answer to whether and when the job would start,
        with the site's clock read in the same call (for seconds from now)."""
        argv = ["/bin/sh", "-c", f'date +{_SLURM_TIME}; exec sbatch --test-only "$@"', "sh", *options]
        before = time.time()
        r = self.call(argv, stdin=script, check=False)
        asked = time.monotonic()
        lines = r.stdout.splitlines()
        now = slurm_time(lines[0]) if lines else None
        text = (r.stderr + "\n".join(lines[1:])).strip()
        if r.returncode != 0:
            raise IsthmusError(f"{self.where}: Slurm refuses the request: "
                               f"{text.replace('sbatch: error: ', '')[-500:]}")
        m = _TEST_ONLY_RE.search(text)
        start = slurm_time(m.group(1)) if m else None
        if now is None or start is None or m is None:
            raise IsthmusError(f"{self.where}: sbatch --test-only answered {text[-300:]!r} "
                               f"(clock {lines[0] if lines else 'not read'!r}); no start time "
                               "in it")
        # this machine's clock as the site's local time would read it, to the second
        self.offset = now.timestamp() - int((before + time.time()) / 2)
        return Estimate(m.group(1), max(0.0, (start - now).total_seconds()), asked,
                        text.replace("sbatch: ", ""))

    def seconds_until(self, stamp: str) -> float | None:
        """Seconds from now until a Slurm time of this site (squeue's %S); None when it is
        no time or the site's clock is not known yet."""
        t = slurm_time(stamp)
        if t is None or self.offset is None:
            return None
        return t.timestamp() - self.offset - time.time()

    def reserve(self, name: str, start_in: float, minutes: int, partition: str,
                nodes: Sequence[str]) -> None:
        """scontrol create reservation for this site's user, `nodes` of `partition` from
        `start_in` seconds from now for `minutes`; a refusal for want of operator rights
        is said as such."""
        argv = ["/bin/sh", "-c", 'exec scontrol create reservation "$@" Users="$(id -un)"', "sh",
                f"ReservationName={name}", f"StartTime=now+{max(0, int(start_in))}",
                f"Duration={minutes}", f"PartitionName={partition}", f"Nodes={','.join(nodes)}"]
        r = self.call(argv, check=False)
        if r.returncode == 0:
            return
        text = (r.stderr or r.stdout).strip().replace("scontrol: error: ", "")[-300:] or f"exit {r.returncode}"
        # slurmctld's answer to a user who is not an operator: "Invalid user id" in 22.05
        # (ESLURM_USER_ID_MISSING, its log says "Security violation"; Users= is this very
        # user, so the id is not what is wrong), "Access/permission denied" in others. A
        # plain "Permission denied" is something else (munge's socket, a file).
        if any(w in text.lower() for w in ("invalid user id", "access/permission denied")):
            raise IsthmusError(f"{self.where}: --reserve: creating a reservation needs Slurm operator "
                               f"rights, which this user does not have here (scontrol create "
                               f"reservation: {text}); leave out --reserve (isthmus then lines up "
                               "the starts with --begin), or ask the centre for a reservation and "
                               "pass it with sbatch_args = [\"--reservation=NAME\"]")
        raise IsthmusError(f"{self.where}: --reserve: scontrol create reservation {name} of "
                           f"{','.join(nodes)} failed: {text}")

    def unreserve(self, name: str) -> None:
        self.call(["scontrol", "delete", f"ReservationName={name}"], check=False)

    def set_begin(self, job_id: str, seconds: float) -> None:
        """Move a pending job's earliest start (--begin) to `seconds` from now."""
        self.call(["scontrol", "update", f"JobId={job_id}", f"StartTime=now+{max(0, int(seconds))}"])

    # ---- the cluster ----
    def partitions(self) -> dict[str, dict[str, str]]:
        """Every partition's settings (scontrol show partition -o)."""
        out = {}
        for line in self.call(["scontrol", "show", "partition", "-o"]).stdout.splitlines():
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            if "PartitionName" in fields:
                out[fields["PartitionName"]] = fields
        return out

    def nodes(self, partition: str) -> list[NodeInfo]:
        r = self.call(["sinfo", "-h", "-N", "-p", partition, "-o", "%N|%c|%f|%t"])
        out, seen = [], set()
        for line in r.stdout.splitlines():
            parts = line.strip().split("|")
            if len(parts) != 4 or parts[0] in seen:
                continue
            seen.add(parts[0])
            feats = tuple(f for f in parts[2].split(",") if f and f != "(null)")
            out.append(NodeInfo(parts[0], int(parts[1]) if parts[1].isdigit() else 0, feats, parts[3]))
        return out
