# isthmus/batch/request.py: what a site file asks of a site's Slurm ([site.slurm]): the
# allocation's size and the site's own scheduling terms (partition, account, time limit,
# constraints, QoS), passed through to sbatch unchanged, and parsed here with messages
# that name the site and the key.
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

SLURM_KEYS = {"partition", "account", "time", "constraint", "qos", "nodes", "sbatch_args"}
_TIME_RE = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")
_WORD_RE = re.compile(r"^[A-Za-z0-9_.+-]{1,64}$")
_CONSTRAINT_RE = re.compile(r"^[A-Za-z0-9_.&|\[\]()*:,!-]{1,256}$")


@dataclass(frozen=True)
class SlurmRequest:
    """One site's allocation request; None fields are left to the site's defaults."""

    nodes: int = 1
    partition: str | None = None
    account: str | None = None
    time: str | None = None  # Slurm's format: minutes, MM:SS, HH:MM:SS, D-HH[:MM[:SS]]
    constraint: str | None = None  # --constraint: features, with Slurm's & | operators
    qos: str | None = None
    sbatch_args: tuple[str, ...] = ()

    def sbatch_options(self) -> list[str]:
        out = [f"--nodes={self.nodes}"]
        for flag, value in (("--partition", self.partition), ("--account", self.account),
                            ("--time", self.time), ("--constraint", self.constraint),
                            ("--qos", self.qos)):
            if value is not None:
                out.append(f"{flag}={value}")
        return out + list(self.sbatch_args)

    @property
    def minutes(self) -> float | None:
        return None if self.time is None else time_minutes(self.time)


def time_minutes(text: str) -> float:
    """Slurm's time formats in minutes: "30" (minutes), "30:00" (MM:SS), "1:00:00",
    "2-0", "2-12:30" (D-HH:MM), "2-12:30:00". ValueError for anything else."""
    m = _TIME_RE.match(text.strip())
    if not m:
        raise ValueError(text)
    days, a, b, c = m.groups()
    if days is not None:  # D-HH, D-HH:MM, D-HH:MM:SS
        return int(days) * 1440 + int(a) * 60 + int(b or 0) + int(c or 0) / 60
    if b is None:
        return float(int(a))
    if c is None:  # MM:SS
        return int(a) + int(b) / 60
    return int(a) * 60 + int(b) + int(c) / 60


def parse_request(raw: Any, fail: Callable[[str], Exception]) -> SlurmRequest:
    """The [site.slurm] table; `fail(msg)` makes the error that names the site."""
    if not isinstance(raw, dict):
        raise fail("'slurm' must be a table ([site.slurm])")
    unknown = sorted(set(raw) - SLURM_KEYS)
    if unknown:
        raise fail(f"[site.slurm]: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(SLURM_KEYS))})")
    nodes = raw.get("nodes", 1)
    if not isinstance(nodes, int) or isinstance(nodes, bool) or not 1 <= nodes <= 100000:
        raise fail(f"[site.slurm]: 'nodes' must be a positive integer, got {nodes!r}")
    words = {}
    for key in ("partition", "account", "qos"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, str) or not _WORD_RE.match(value)):
            raise fail(f"[site.slurm]: '{key}' must be a name (letters, digits, _ . + -), got {value!r}")
        words[key] = value
    tl = raw.get("time")
    if isinstance(tl, int) and not isinstance(tl, bool) and tl > 0:
        tl = str(tl)
    if tl is not None:
        try:
            if not isinstance(tl, str) or time_minutes(tl) <= 0:
                raise ValueError
        except ValueError:
            raise fail(f"[site.slurm]: 'time' must be a Slurm time limit (minutes, \"HH:MM:SS\" "
                       f"or \"D-HH:MM\"), got {tl!r}") from None
    constraint = raw.get("constraint")
    if constraint is not None and (not isinstance(constraint, str)
                                   or not _CONSTRAINT_RE.match(constraint)):
        raise fail(f"[site.slurm]: 'constraint' must be features as sbatch --constraint takes "
                   f"them (e.g. \"wan&ib\"), got {constraint!r}")
    extra = raw.get("sbatch_args", [])
    if not isinstance(extra, list) or not all(isinstance(a, str) for a in extra):
        raise fail("[site.slurm]: 'sbatch_args' must be a list of strings")
    return SlurmRequest(nodes=nodes, time=tl, constraint=constraint, sbatch_args=tuple(extra),
                        **words)
