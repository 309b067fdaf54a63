# isthmus/bench/results.py: the results folder of a campaign. results.jsonl holds one JSON
# line per measured point (isthmus-bench's record plus where and how it was launched) and
# one "launch" line per launch, ok or failed, written together in one append so that an
# interrupted campaign leaves either all of a launch or none of it. campaign.json keeps
# the plan, the environment and every session (start, end, how many launches ran).
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..errors import IsthmusError

RESULTS = "results.jsonl"
META = "campaign.json"


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cmd_out(argv: list[str]) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        return (r.stdout or r.stderr).strip().splitlines()[0] if (r.stdout or r.stderr) else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def environment() -> dict:
    """What the report shows about the machine the campaign ran on."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    from .. import __version__

    return {
        "host": platform.node(), "kernel": platform.release(), "os": _os_release(),
        "cpu": cpu, "cpus": os.cpu_count(), "memory": mem, "python": sys.version.split()[0],
        "isthmus": __version__,
        "openmpi": _cmd_out(["mpirun.openmpi", "--version"]) if shutil.which("mpirun.openmpi") else None,
        "mpich": _cmd_out(["mpichversion"]) if shutil.which("mpichversion") else None,
        "loadavg": _loadavg(),
    }


def _os_release() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return platform.platform()


def _loadavg() -> list[float] | None:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return None


@dataclass
class Results:
    """Everything read from one or more result files."""

    points: list[dict] = field(default_factory=list)      # kind "point" (ok or skipped)
    launches: list[dict] = field(default_factory=list)    # kind "launch" (ok or failed)
    meta: list[dict] = field(default_factory=list)        # campaign.json of each folder
    sources: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[dict]:
        return [l for l in self.launches if l.get("status") != "ok"]

    @property
    def ok_points(self) -> list[dict]:
        return [p for p in self.points if p.get("status") == "ok"]


def results_file(path: Path) -> Path:
    return path / RESULTS if path.is_dir() else path


def load(paths: Iterable[str | Path]) -> Results:
    """Read result folders or .jsonl files. A truncated last line (an interrupted write)
    is skipped with a warning; point records whose launch has no launch record (the
    launch was interrupted) are ignored, as the campaign will run it again."""
    res = Results()
    for p in paths:
        p = Path(p)
        f = results_file(p)
        if not f.is_file():
            raise IsthmusError(f"{p}: no results here (expected a results folder with {RESULTS}, "
                               "or a .jsonl file written by isthmus bench)")
        res.sources.append(f)
        meta = f.parent / META
        if meta.is_file():
            try:
                res.meta.append(json.loads(meta.read_text()))
            except ValueError:
                res.warnings.append(f"{meta}: not valid JSON, ignored")
        points, launches = [], []
        lines = f.read_text().splitlines()
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                res.warnings.append(f"{f}:{n}: unreadable line skipped"
                                    + (" (interrupted write)" if n == len(lines) else ""))
                continue
            if rec.get("kind") == "launch":
                launches.append(rec)
            elif rec.get("kind") == "point" or rec.get("isthmus_bench") == 1:
                points.append(rec)
        # the last launch of a key wins (a failed launch retried with --retry-failed)
        latest = {l.get("key"): l for l in launches}
        for rec in points:
            if "key" in rec and (rec["key"] not in latest
                                 or rec.get("launch_id") != latest[rec["key"]].get("launch_id")):
                continue
            res.points.append(rec)
        res.launches += list(latest.values())
    return res


class ResultStore:
    """Appends the launches of one campaign to its folder."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise IsthmusError(f"cannot create results folder {self.folder}: {e.strerror or e}") from None
        self.file = self.folder / RESULTS

    def completed(self, include_failed: bool = True) -> set[str]:
        if not self.file.exists():
            return set()
        res = load([self.file])
        return {l["key"] for l in res.launches
                if "key" in l and (l.get("status") == "ok" or include_failed)}

    def start_session(self, plan, argv: list[str]) -> dict:
        meta_path = self.folder / META
        meta = {}
        if meta_path.exists():
            try:
                meta = json.loads(meta_path.read_text())
            except ValueError:
                meta = {}
        session = {"start": now(), "command": argv, "plan_path": str(plan.path),
                   "plan_sha256": hashlib.sha256(plan.text.encode()).hexdigest(),
                   "environment": environment()}
        meta.setdefault("name", plan.name)
        meta["plan"] = plan.text
        meta.setdefault("sessions", []).append(session)
        self._write_meta(meta)
        (self.folder / "plan.toml").write_text(plan.text)
        return meta

    def end_session(self, meta: dict, **info) -> None:
        meta["sessions"][-1].update({"end": now(), **info})
        self._write_meta(meta)

    def _write_meta(self, meta: dict) -> None:
        tmp = self.folder / (META + ".tmp")
        tmp.write_text(json.dumps(meta, indent=1))
        os.replace(tmp, self.folder / META)

    def append_launch(self, point, result, campaign: str) -> dict:
        """Write the launch's point records and its launch record in one append."""
        common = {"campaign": campaign, "key": point.key, "launch_id": uuid.uuid4().hex[:12], "library": point.library,
                  "profile": point.profile.name, "link": point.profile.link, "sites": point.sites,
                  "ranks": point.ranks, "run": point.run, "command": result.command,
                  "options": dict(point.options)}
        lines = []
        for rec in result.records:
            lines.append({**rec, "kind": "point", **common})
        status = "ok" if result.ok and result.records else "failed"
        launch = {"kind": "launch", "status": status, "benchmark": point.benchmark,
                  "returncode": result.returncode, "timed_out": result.timed_out,
                  "seconds": round(result.seconds, 3), "points": len(result.records),
                  "time": now(), "loadavg": _loadavg(), **common}
        if status != "ok":
            launch["error"] = _failure_text(result)
            launch["stderr_tail"] = result.stderr_tail
        lines.append(launch)
        block = "".join(json.dumps(l, separators=(",", ":")) + "\n" for l in lines)
        with open(self.file, "a") as f:
            f.write(block)
            f.flush()
            os.fsync(f.fileno())
        return launch


def _failure_text(result) -> str:
    if result.timed_out:
        return f"timed out after {result.seconds:.0f} s"
    if result.returncode != 0:
        last = [l for l in result.stderr_tail.splitlines() if l.strip()]
        hint = f": {last[-1].strip()}" if last else ""
        return f"exit code {result.returncode}{hint}"
    return "the program printed no results"
