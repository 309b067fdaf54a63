# isthmus/batch/record.py: what `isthmus submit` leaves for `isthmus status` and `isthmus
# cancel` in other shells: one JSON file per job under ~/.isthmus/jobs (or
# $ISTHMUS_JOBS_DIR), naming the submitting process, the phase, and each Slurm site's login
# node, job id and reservation (--reserve), written atomically whenever they change.
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import IsthmusError
from ..launch.layout import Site

_JOB_RE = re.compile(r"^[0-9a-f]{12}$")


def jobs_dir() -> Path:
    return Path(os.environ.get("ISTHMUS_JOBS_DIR") or Path.home() / ".isthmus" / "jobs")


@dataclass
class SiteEntry:
    name: str
    launch: str
    ssh_host: str | None = None
    ssh_jump: str | None = None
    ssh_options: list[str] = field(default_factory=list)

    def site(self) -> Site:
        """Enough of the site to reach its Slurm."""
        return Site(name=self.name, ranks=1, launcher=self.launch, ssh_host=self.ssh_host,
                    ssh_jump=self.ssh_jump, ssh_options=tuple(self.ssh_options))


@dataclass
class JobRecord:
    job: str
    pid: int
    site_file: str
    entries: list[SiteEntry]
    phase: str = "allocating"  # allocating, running, done, failed, cancelled
    sites: dict[str, str | None] = field(default_factory=dict)  # site -> Slurm job id
    reservations: dict[str, str] = field(default_factory=dict)  # site -> its --reserve reservation
    submitted: float = field(default_factory=time.time)
    waited: float | None = None  # seconds from submission to every allocation running
    message: str = ""

    @property
    def path(self) -> Path:
        return jobs_dir() / f"{self.job}.json"

    def save(self) -> None:
        d = jobs_dir()
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = d / f".{self.job}.{os.getpid()}.tmp"
        data = asdict(self)
        tmp.write_text(json.dumps(data, indent=1) + "\n")
        os.replace(tmp, self.path)

    def set(self, phase: str, message: str = "") -> None:
        self.phase, self.message = phase, message
        self.save()

    @classmethod
    def new(cls, job: str, site_file: str, sites: list[Site]) -> "JobRecord":
        entries = [SiteEntry(s.name, s.launcher, s.ssh_host, s.ssh_jump, list(s.ssh_options))
                   for s in sites]
        return cls(job=job, pid=os.getpid(), site_file=site_file, entries=entries)

    @classmethod
    def load(cls, job: str) -> "JobRecord":
        if not _JOB_RE.match(job):
            raise IsthmusError(f"{job!r} is not an isthmus job id (12 hex digits, as `isthmus "
                               "submit` prints them)")
        path = jobs_dir() / f"{job}.json"
        try:
            data = json.loads(path.read_text())
            data["entries"] = [SiteEntry(**e) for e in data["entries"]]
            return cls(**data)
        except FileNotFoundError:
            raise IsthmusError(f"no job {job} here ({path} does not exist; jobs are recorded "
                               "where they were submitted)") from None
        except (ValueError, TypeError, KeyError) as e:
            raise IsthmusError(f"{path}: not a job record isthmus can read ({e})") from None

    def submitter_alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
