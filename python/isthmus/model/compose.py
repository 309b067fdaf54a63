# isthmus/model/compose.py: the collectives in flight across sites as the model's
# schedules (schedule.Schedule over every rank of a layout), so that the cost model
# predicts, and simulate.check proves, what libisthmus composes, not only the per-level
# algorithms of schedule.py.
#
# The data movers' alltoallw (native/src/coll/nb_hub.c, nb_move.c): blocks within a site
# and blocks of at least `cut` bytes (ISTHMUS_COLL_HUB_MAX) go straight; the smaller ones
# cross the WAN through one rank per site, its hub (the site's leader, or the root at a
# gather's or scatter's root site): each member sends its hub its sizes and its bundle,
# hubs exchange one message per ordered site pair in segments of SEG bytes (blocks by
# destination rank, then source), and each hub hands each member its incoming bundle.
# Gather and scatter are the alltoallws whose blocks all go to or come from the root.
#
# A block that a segment boundary cuts is two chunks here ((src, dst, piece)), so each
# message of the C is one send of the model, with the C's bytes. The sizes message is a
# chunk of its own ("meta", rank) that no result checks.
from __future__ import annotations

from typing import Callable, Sequence

from .schedule import Schedule

SEG = 64 << 10   # nb_hub.c's HUB_SEG
CUT = 512        # ISTHMUS_COLL_HUB_MAX's default


def site_of_ranks(ranks_per_site: Sequence[int]) -> list[int]:
    """The site of each rank, ranks numbered site after site (the launcher's layout)."""
    out = []
    for s, k in enumerate(ranks_per_site):
        if k < 0:
            raise ValueError(f"site {s} has a negative rank count ({k})")
        out += [s] * k
    return out


def alltoallw(ranks_per_site: Sequence[int], block: Callable[[int, int], int], cut: int = CUT,
              root: int | None = None, seg: int = SEG) -> Schedule:
    """The alltoallw in flight: block(a, b) bytes from rank a to rank b (0: none); root:
    a gather's or scatter's root (its site's hub), or None."""
    site = site_of_ranks(ranks_per_site)
    n, ns = len(site), len(ranks_per_site)
    if n < 1:
        raise ValueError("the layout has no rank")
    if root is not None and not 0 <= root < n:
        raise ValueError(f"root {root} is not a rank of {n}")
    if cut < 0 or seg < 1:
        raise ValueError("cut must be at least 0 and seg at least 1")
    members = [[r for r in range(n) if site[r] == s] for s in range(ns)]
    hub = [(root if root is not None and site[root] == s else (m[0] if m else None))
           for s, m in enumerate(members)]
    size = {(a, b): int(block(a, b)) for a in range(n) for b in range(n)}
    if any(v < 0 for v in size.values()):
        raise ValueError("a block has a negative size")

    def via_hub(a, b):
        return site[a] != site[b] and 0 < size[(a, b)] < cut

    # each hub message's blocks in order, cut into segments: the chunks of each block
    pieces: dict[tuple[int, int], list[tuple]] = {}
    chunk_bytes: dict = {}
    segments: dict[tuple[int, int], list[list]] = {}   # (from site, to site) -> segments
    for s in range(ns):
        for t in range(ns):
            if s == t or hub[s] is None or hub[t] is None:
                continue
            segs, cur, filled = [], [], 0
            for b in members[t]:            # by destination rank, then source
                for a in members[s]:
                    if not via_hub(a, b):
                        continue
                    left, k = size[(a, b)], 0
                    while left:
                        take = min(left, seg - filled)
                        ch = (a, b, k)
                        chunk_bytes[ch] = take
                        pieces.setdefault((a, b), []).append(ch)
                        cur.append(ch)
                        filled += take
                        left -= take
                        k += 1
                        if filled == seg:
                            segs.append(cur)
                            cur, filled = [], 0
            if cur:
                segs.append(cur)
            segments[(s, t)] = segs
    for (a, b), v in size.items():
        if v and not via_hub(a, b):
            ch = (a, b, 0)
            chunk_bytes[ch] = v
            pieces[(a, b)] = [ch]
    remote = {r: sum(1 for x in range(n) if site[x] != site[r]) for r in range(n)}
    for r in range(n):
        if r != hub[site[r]]:
            chunk_bytes[("meta", r)] = 16 * remote[r]   # bytes to and from each remote rank
    results = tuple(ch for ch in chunk_bytes if ch[0] != "meta")
    s = Schedule("alltoall", "hubs", n, chunk_bytes, result_chunks=results,
                 root=root if root is not None else 0)

    def small_to(a, dest_sites):  # a's bundle: its small remote blocks by site, then rank
        return [ch for t in dest_sites for b in members[t] if via_hub(a, b)
                for ch in pieces[(a, b)]]

    def small_from(b, src_sites):
        return [ch for t in src_sites for a in members[t] if via_hub(a, b)
                for ch in pieces[(a, b)]]

    others = {x: [t for t in range(ns) if t != x and hub[t] is not None] for x in range(ns)}
    for r in range(n):
        me, h = site[r], hub[site[r]]
        # 1. straight: my own block (a copy), the site's blocks and the large ones
        if size[(r, r)]:
            s.copy(r, size[(r, r)])
        for b in range(n):
            if b != r and size[(r, b)] and not via_hub(r, b):
                s.send(r, b, pieces[(r, b)])
        if r != h:
            s.send(r, h, [("meta", r)])
            out = small_to(r, others[me])
            if out:
                s.send(r, h, out)
        for a in range(n):
            if a != r and size[(a, r)] and not via_hub(a, r):
                s.recv(r, a, pieces[(a, r)], "copy")
        if r != h:
            got = small_from(r, others[me])
            if got:
                s.recv(r, h, got, "copy")
                s.copy(r, s.bytes_of(got))   # 5. each block to its place
            continue
        # the hub: 1. the members' sizes, 2. their bundles
        for m in members[me]:
            if m != r:
                s.recv(r, m, [("meta", m)], "copy")
        for m in members[me]:
            if m != r and small_to(m, others[me]):
                s.recv(r, m, small_to(m, others[me]), "copy")
        # 3. one message (in segments) to and from each other site's hub
        alone = len(members[me]) == 1
        for t in others[me]:
            for part in segments[(me, t)]:
                if not alone:
                    s.copy(r, s.bytes_of(part))   # built from the bundles
                s.send(r, hub[t], part)
        for t in others[me]:
            for part in segments[(t, me)]:
                s.recv(r, hub[t], part, "copy")
        # 4. each member's incoming bundle
        for m in members[me]:
            got = small_from(m, others[me])
            if got and not alone:
                s.copy(r, s.bytes_of(got))
            if m != r and got:
                s.send(r, m, got)
        mine = small_from(r, others[me])
        if mine:
            s.copy(r, s.bytes_of(mine))   # 5. to their places
    return s


def alltoall(ranks_per_site: Sequence[int], block_bytes: int, cut: int = CUT) -> Schedule:
    return alltoallw(ranks_per_site, lambda a, b: block_bytes, cut)


def gather(ranks_per_site: Sequence[int], block_bytes: int, root: int = 0,
           cut: int = CUT) -> Schedule:
    return alltoallw(ranks_per_site, lambda a, b: block_bytes if b == root else 0, cut, root)


def scatter(ranks_per_site: Sequence[int], block_bytes: int, root: int = 0,
            cut: int = CUT) -> Schedule:
    return alltoallw(ranks_per_site, lambda a, b: block_bytes if a == root else 0, cut, root)


def wan_messages(s: Schedule, ranks_per_site: Sequence[int]) -> int:
    """Messages that cross between sites (what the gateways count)."""
    site = site_of_ranks(ranks_per_site)
    return sum(1 for r, ops in enumerate(s.ops) for op in ops
               if op[0] == "send" and site[op[1]] != site[r])


def wan_bytes(s: Schedule, ranks_per_site: Sequence[int]) -> int:
    site = site_of_ranks(ranks_per_site)
    return sum(s.bytes_of(op[2]) for r, ops in enumerate(s.ops) for op in ops
               if op[0] == "send" and site[op[1]] != site[r])
