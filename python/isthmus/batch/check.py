# isthmus/batch/check.py: the submit-time check (seed 002's submit filter): a request a
# site can never satisfy is refused before anything is queued anywhere, with what the site
# offers: a partition that does not exist, a time limit above the partition's, more
# nodes or ranks than the partition has, a feature no node has, a gateway node outside
# the partition. What passes is then put to Slurm itself (sbatch --test-only), which also
# judges the account and QoS, and whose expected start is reported.
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import IsthmusError
from ..launch.layout import Site
from .request import time_minutes
from .slurm import NodeInfo, SiteSlurm

_FEATURE_SPLIT = re.compile(r"[&|,\[\]()!]+")


def _partition(slurm: SiteSlurm, site: Site) -> tuple[str, dict[str, str]]:
    parts = slurm.partitions()
    req = site.slurm
    assert req is not None
    if req.partition is None:
        default = [n for n, f in parts.items() if f.get("Default") == "YES"]
        if not default:
            raise IsthmusError(f"{slurm.where}: the site has no default partition; name one in "
                               f"[site.slurm] partition (the site has: {', '.join(sorted(parts))})")
        return default[0], parts[default[0]]
    if req.partition not in parts:
        raise IsthmusError(f"{slurm.where}: partition {req.partition!r} does not exist (the site "
                           f"has: {', '.join(sorted(parts)) or 'none'})")
    return req.partition, parts[req.partition]


def _features(constraint: str) -> set[str]:
    """The feature names in a --constraint expression (counts like "*2" dropped)."""
    return {w.split("*")[0] for w in _FEATURE_SPLIT.split(constraint) if w.split("*")[0]}


@dataclass(frozen=True)
class Survey:
    """What a site's partition offers a request: the nodes that qualify (its constraint)."""

    where: str  # "site B (via login.b), partition batch", for messages
    partition: str
    nodes: tuple[NodeInfo, ...]
    limit: float | None = None  # the partition's time limit for a job (minutes), if any

    def largest(self, count: int, first: str | None = None) -> list[str]:
        """`count` node names with the most CPUs, `first` (the gateway's) among them."""
        names = [n.name for n in sorted(self.nodes, key=lambda n: -n.cpus) if n.name != first]
        return ([first] if first else []) + names[: count - (1 if first else 0)]

    def cpus(self, count: int) -> int:
        """The most CPUs any allocation of `count` of the nodes can have."""
        return sum(sorted((n.cpus for n in self.nodes), reverse=True)[:count])

    def capacity(self, site: Site) -> int:
        """The most application ranks the site's request can hold (one CPU each, the
        gateways' CPUs taken off)."""
        assert site.slurm is not None
        return max(0, self.cpus(site.slurm.nodes) - site.gateways)

    @property
    def free(self) -> int:
        return sum(1 for n in self.nodes if n.state.rstrip("*~#") == "idle")


def check_site(slurm: SiteSlurm, site: Site) -> Survey:
    """Raise IsthmusError for a request the site can never satisfy; else what it offers."""
    survey = survey_site(slurm, site)
    check_size(survey, site)
    return survey


def survey_site(slurm: SiteSlurm, site: Site) -> Survey:
    """check_site without the ranks: partition, time, features, gateway node, node count."""
    req = site.slurm
    assert req is not None
    name, part = _partition(slurm, site)
    where = f"{slurm.where}, partition {name}"
    if part.get("State", "UP") not in ("UP",):
        raise IsthmusError(f"{where}: the partition is {part.get('State')}, it starts no jobs")
    max_time = part.get("MaxTime", "UNLIMITED")
    limit = _minutes(max_time)
    if req.time is not None and limit is not None:
        if (req.minutes or 0) > limit:
            raise IsthmusError(f"{where}: time {req.time} is above the partition's limit "
                               f"({max_time})")
    nodes = slurm.nodes(name)
    if req.constraint:
        known = {f for n in nodes for f in n.features}
        missing = sorted(_features(req.constraint) - known)
        if missing:
            raise IsthmusError(f"{where}: no node has feature {missing[0]!r} (constraint "
                               f"{req.constraint!r}; the partition's features: "
                               f"{', '.join(sorted(known)) or 'none'})")
        if "|" not in req.constraint and "[" not in req.constraint:
            wanted = _features(req.constraint)
            nodes = [n for n in nodes if wanted <= set(n.features)]
    if site.gateway_node and site.gateway_node not in {n.name for n in nodes}:
        raise IsthmusError(f"{where}: gateway_node {site.gateway_node!r} is not one of its "
                           f"nodes{' with ' + repr(req.constraint) if req.constraint else ''} "
                           f"({', '.join(n.name for n in nodes) or 'none'})")
    if req.nodes > len(nodes):
        raise IsthmusError(f"{where}: {req.nodes} nodes asked for, the partition has "
                           f"{len(nodes)} that qualify")
    default = _minutes(part.get("DefaultTime", "NONE"))
    return Survey(where, name, tuple(nodes), req.minutes or default or limit)


def _minutes(text: str) -> float | None:
    """A partition's time setting in minutes; None for UNLIMITED, NONE and the like."""
    try:
        return time_minutes(text)
    except ValueError:
        return None


def check_size(survey: Survey, site: Site) -> None:
    """The site's ranks and gateways fit the CPUs of the nodes it asks for."""
    req = site.slurm
    assert req is not None
    tasks = site.ranks + site.gateways
    cpus = survey.cpus(req.nodes)
    if tasks > cpus:
        raise IsthmusError(f"{survey.where}: {site.ranks} ranks + {site.gateways} gateway(s) need "
                           f"{tasks} CPUs; {req.nodes} node(s) of this partition have at most "
                           f"{cpus}")
