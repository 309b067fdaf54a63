# isthmus/batch/check.py: the submit-time check (seed 002's submit filter): a request a
# site can never satisfy is refused before anything is queued anywhere, with what the site
# offers: a partition that does not exist, a time limit above the partition's, more
# nodes or ranks than the partition has, a feature no node has, a gateway node outside
# the partition. What passes is then put to Slurm itself (sbatch --test-only), which also
# judges the account and QoS, and whose expected start is reported.
from __future__ import annotations

import re

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


def check_site(slurm: SiteSlurm, site: Site) -> str:
    """Raise IsthmusError for a request the site can never satisfy; else the partition."""
    req = site.slurm
    assert req is not None
    name, part = _partition(slurm, site)
    where = f"{slurm.where}, partition {name}"
    if part.get("State", "UP") not in ("UP",):
        raise IsthmusError(f"{where}: the partition is {part.get('State')}, it starts no jobs")
    max_time = part.get("MaxTime", "UNLIMITED")
    if req.time is not None and max_time not in ("UNLIMITED", "INFINITE"):
        try:
            limit = time_minutes(max_time)
        except ValueError:
            limit = None
        if limit is not None and (req.minutes or 0) > limit:
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
    _check_size(where, site, nodes)
    return name


def _check_size(where: str, site: Site, nodes: list[NodeInfo]) -> None:
    req = site.slurm
    assert req is not None
    if req.nodes > len(nodes):
        raise IsthmusError(f"{where}: {req.nodes} nodes asked for, the partition has "
                           f"{len(nodes)} that qualify")
    tasks = site.ranks + site.gateways
    # the most CPUs any allocation of req.nodes nodes can have
    cpus = sum(sorted((n.cpus for n in nodes), reverse=True)[:req.nodes])
    if tasks > cpus:
        raise IsthmusError(f"{where}: {site.ranks} ranks + {site.gateways} gateway(s) need "
                           f"{tasks} CPUs; {req.nodes} node(s) of this partition have at most "
                           f"{cpus}")
