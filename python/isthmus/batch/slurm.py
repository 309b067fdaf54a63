# isthmus/batch/slurm.py: one site's Slurm, reached the way its users reach it: its own
# commands (sbatch, squeue, scancel, scontrol, sinfo) run on the site's login node over ssh
# (or on this machine for a site without ssh_host). Everything isthmus asks of a
# scheduler goes through here, and every failure names the site and the command.
from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
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

    def test_only(self, options: Sequence[str], script: str) -> str:
        """sbatch --test-only: Slurm's own answer to whether and when the job would start."""
        r = self.call(["sbatch", "--test-only", *options], stdin=script, check=False)
        text = (r.stderr + r.stdout).strip()
        if r.returncode != 0:
            raise IsthmusError(f"{self.where}: Slurm refuses the request: "
                               f"{text.replace('sbatch: error: ', '')[-500:]}")
        return text.replace("sbatch: ", "")

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
