# isthmus/whatif/collectives.py: a collective as the rounds of messages one rank takes part
# in, following isthmus's two-level scheme (docs/design.md, "Where they run"): a phase
# inside each site (a binomial tree to or from the site's leader, the lowest member or
# the root), a phase among the leaders (one member per site, so the WAN messages depend on
# the sites only), and a phase inside each site again. Sizes are what one member sends:
# V is this rank's recorded bytes (the vector of a reduction or broadcast, its own block
# of a gather, its block per peer of an all-to-all). The simulator (SimGrid) times the
# messages; this file only says which messages there are. Stdlib only (see engine.py).
from __future__ import annotations

from dataclasses import dataclass, field

# kind -> (up phase, leaders' pattern, down phase); up/down: None, "reduce" (V each),
# "gather" (V x subtree); leaders: "all" (each to each), "to_root", "from_root", "chain"
KINDS = {
    "barrier": ("reduce", "all", "reduce"),
    "bcast": (None, "from_root", "reduce"),
    "reduce": ("reduce", "to_root", None),
    "allreduce": ("reduce", "all", "reduce"),
    "gather": ("gather", "to_root", None),
    "scatter": (None, "from_root", "gather"),
    "allgather": ("gather", "all", "all"),
    "reduce_scatter": ("reduce", "all", "gather"),
    "scan": ("reduce", "chain", "reduce"),
    "alltoall": ("a2a", "a2a", "a2a"),
}


@dataclass
class Step:
    sends: list = field(default_factory=list)   # (to, bytes)
    recvs: list = field(default_factory=list)   # from


class Groups:
    """The members split by site, in the order the sites first appear, each group with its
    leader first (the root in the root's site). Built once per communicator and root."""

    def __init__(self, members: list[int], root: int, site_of):
        by_site: dict[int, list[int]] = {}
        for m in members:
            by_site.setdefault(site_of(m), []).append(m)
        self.groups = []
        for g in by_site.values():
            if root in g:
                g = [root] + [m for m in g if m != root]
            self.groups.append(g)
        self.where = {m: (gi, k) for gi, g in enumerate(self.groups) for k, m in enumerate(g)}
        self.root_group = self.where[root][0] if root in self.where else 0
        self.n = len(members)


_cache: dict[tuple, Groups] = {}


def groups(key: str, members: list[int], root: int, site_of) -> Groups:
    g = _cache.get((key, root))
    if g is None:
        g = _cache[(key, root)] = Groups(members, root, site_of)
    return g


def _subtree(k: int, mask: int, size: int) -> int:
    return min(mask, size - k)


def _tree_up(g: list[int], k: int, v: int, gather: bool) -> list[Step]:
    """Binomial tree towards g[0]: receive from children, then send to the parent."""
    steps, mask, n = [], 1, len(g)
    while mask < n:
        if k & mask:
            mine = _subtree(k, mask, n) if gather else 1
            steps.append(Step(sends=[(g[k - mask], v * mine)]))
            break
        if k + mask < n:
            steps.append(Step(recvs=[g[k + mask]]))
        mask <<= 1
    return steps


def _tree_down(g: list[int], k: int, v: int, gather: bool) -> list[Step]:
    """Binomial tree from g[0]: receive from the parent, then send to the children."""
    steps, mask, n = [], 1, len(g)
    while mask < n:
        if k & mask:
            steps.append(Step(recvs=[g[k - mask]]))
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if k + mask < n:
            child = k + mask
            steps.append(Step(sends=[(g[child], v * (_subtree(child, mask, n) if gather else 1))]))
        mask >>= 1
    return steps


def _leaders(pattern: str, gs: Groups, gi: int, v: int, gather: bool) -> list[Step]:
    lead = [g[0] for g in gs.groups]
    mine = len(gs.groups[gi])
    size = v * mine if gather else v
    rg = gs.root_group
    if pattern == "all":
        return [Step(sends=[(ld, size) for j, ld in enumerate(lead) if j != gi],
                     recvs=[ld for j, ld in enumerate(lead) if j != gi])]
    if pattern == "to_root":
        if gi == rg:
            return [Step(recvs=[ld for j, ld in enumerate(lead) if j != rg])]
        return [Step(sends=[(lead[rg], size)])]
    if pattern == "from_root":
        if gi == rg:
            return [Step(sends=[(ld, v * len(gs.groups[j]) if gather else v)
                                for j, ld in enumerate(lead) if j != rg])]
        return [Step(recvs=[lead[rg]])]
    if pattern == "chain":
        step = Step()
        if gi > 0:
            step.recvs.append(lead[gi - 1])
        if gi + 1 < len(lead):
            step.sends.append((lead[gi + 1], size))
        return [step] if step.sends or step.recvs else []
    raise ValueError(pattern)


def _alltoall(gs: Groups, gi: int, k: int, me: int, v: int) -> list[Step]:
    """In-site blocks go directly; the blocks for other sites go through the leaders,
    which exchange one message per pair of sites (gather per remote site at the leader)."""
    g = gs.groups[gi]
    outside = gs.n - len(g)
    steps = [Step(sends=[(m, v) for m in g if m != me], recvs=[m for m in g if m != me])]
    if len(gs.groups) == 1:
        return steps
    if k:
        steps.append(Step(sends=[(g[0], v * outside)]))
        steps.append(Step(recvs=[g[0]]))
        return steps
    steps.append(Step(recvs=g[1:]))
    lead = [x[0] for x in gs.groups]
    steps.append(Step(sends=[(ld, v * len(g) * len(gs.groups[j]))
                             for j, ld in enumerate(lead) if j != gi],
                      recvs=[ld for j, ld in enumerate(lead) if j != gi]))
    steps.append(Step(sends=[(m, v * outside) for m in g[1:]]))
    return steps


def schedule(kind: str, key: str, members: list[int], root: int, me: int, site_of,
             v: int) -> list[Step]:
    """The rounds rank `me` takes part in for one collective on `members` (root: a member,
    or -1 for an unrooted one)."""
    up, mid, down = KINDS[kind]
    gs = groups(key, members, root if root >= 0 else members[0], site_of)
    gi, k = gs.where[me]
    if up == "a2a":
        return _alltoall(gs, gi, k, me, v)
    g = gs.groups[gi]
    steps = []
    if up:
        steps += _tree_up(g, k, v, up == "gather")
    if k == 0 and len(gs.groups) > 1:
        steps += _leaders(mid, gs, gi, v, up == "gather" or down == "gather")
    if down == "all":        # allgather: everyone ends with every block
        steps += _tree_down(g, k, v * gs.n, False)
    elif down:
        steps += _tree_down(g, k, v, down == "gather")
    return steps


def kind_of(fn: str) -> str | None:
    """MPI_Iallreduce, MPI_Allreduce_init, MPI_Allgatherv_c -> the KINDS entry, or None."""
    name = fn.removeprefix("MPI_").lower()
    name = name.removesuffix("_c").removesuffix("_init")
    if name.startswith("i") and name[1:] in _NAMES:
        name = name[1:]
    return _NAMES.get(name)


_NAMES = {
    "barrier": "barrier", "bcast": "bcast", "reduce": "reduce", "allreduce": "allreduce",
    "gather": "gather", "gatherv": "gather", "scatter": "scatter", "scatterv": "scatter",
    "allgather": "allgather", "allgatherv": "allgather", "reduce_scatter": "reduce_scatter",
    "reduce_scatter_block": "reduce_scatter", "scan": "scan", "exscan": "scan",
    "alltoall": "alltoall", "alltoallv": "alltoall", "alltoallw": "alltoall",
}
