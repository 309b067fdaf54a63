# isthmus/batch/split.py: a site file that leaves the split of the job's ranks open
# (its [split] table): the whole job at whichever of some sites starts first (any_of), a
# fixed ratio scaled to the ranks (ratio), or as many ranks as the site that starts first
# holds and the rest at the next (fill_first). Parsed here with messages that say what was
# given and what is allowed; choose() turns each site's expected start and size into the
# ranks per site, with the reasons printed for the user.
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

MODES = ("any_of", "ratio", "fill_first")
SPLIT_KEYS = {"ranks", *MODES}
# Expected starts closer than this count as the same start, and the order the site file
# gives decides: two free sites answer `sbatch --test-only` a few seconds apart, and
# Slurm's backfill estimates move by its interval (30 s by default) anyway.
SAME_START = 60.0


@dataclass(frozen=True)
class Split:
    """How the job's `ranks` go to `sites` (in the site file's order of preference)."""

    ranks: int
    mode: str
    sites: tuple[str, ...]
    weights: tuple[int, ...] = ()  # ratio only, one per site

    def describe(self) -> str:
        if self.mode == "ratio":
            parts = " : ".join(f"{s} {w}" for s, w in zip(self.sites, self.weights))
            return f"{self.ranks} ranks in the ratio {parts}"
        how = "any one of" if self.mode == "any_of" else "as many as possible at the first to start of"
        return f"{self.ranks} ranks at {how} {', '.join(self.sites)}"

    def provisional(self, site: str) -> int:
        """A site's ranks before the choice: its share for a ratio, else all of them (the
        most it may get; the site file's checks then hold for any choice)."""
        if self.mode == "ratio":
            return ratio_shares(self.ranks, self.weights)[self.sites.index(site)]
        return self.ranks


def ratio_shares(total: int, weights: tuple[int, ...]) -> list[int]:
    """`total` split by `weights`, each share rounded down and the remainder given to the
    largest fractions (the earlier site on a tie): 10 in 1:2 -> [3, 7]."""
    whole = sum(weights)
    exact = [total * w / whole for w in weights]
    shares = [int(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - shares[i]), i))
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    return shares


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def parse_split(raw: Any, fail: Callable[[str], Exception]) -> Split:
    """The [split] table; `fail(msg)` makes the error that names the file and table."""
    if not isinstance(raw, dict):
        raise fail("must be a table ([split])")
    unknown = sorted(set(raw) - SPLIT_KEYS)
    if unknown:
        raise fail(f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(SPLIT_KEYS))})")
    if "ranks" not in raw:
        raise fail("'ranks' is missing (the job's application ranks, split over the sites named here)")
    ranks = raw["ranks"]
    if not _is_int(ranks) or ranks < 1:
        raise fail(f"'ranks' must be a positive integer, got {ranks!r}")
    given = [m for m in MODES if m in raw]
    if len(given) != 1:
        what = "none" if not given else " and ".join(given)
        raise fail(f"give exactly one of any_of = [sites] (the whole job at one of them), "
                   f"ratio = {{ A = n, B = m }} (a fixed ratio) or fill_first = [sites] (as many "
                   f"ranks as possible at the site that starts first); got {what}")
    mode = given[0]
    value = raw[mode]
    if mode == "ratio":
        if not isinstance(value, dict) or len(value) < 2:
            raise fail(f"'ratio' must be a table of at least 2 sites and their parts, e.g. "
                       f"ratio = {{ A = 1, B = 3 }}, got {value!r}")
        bad = [(s, w) for s, w in value.items() if not _is_int(w) or w < 1]
        if bad:
            raise fail(f"'ratio': site {bad[0][0]!r} has part {bad[0][1]!r}; parts are positive "
                       "integers (A = 1, B = 3: a quarter of the ranks at A)")
        sites, weights = tuple(value), tuple(value.values())
        shares = ratio_shares(ranks, weights)
        if min(shares) < 1:
            s = sites[shares.index(min(shares))]
            raise fail(f"'ratio' {' : '.join(map(str, weights))} of {ranks} ranks leaves site "
                       f"{s!r} with none; give more ranks or another ratio")
        return Split(ranks, mode, sites, weights)
    if (not isinstance(value, list) or len(value) < 2
            or not all(isinstance(s, str) and s for s in value)):
        raise fail(f"'{mode}' must be a list of at least 2 site names, e.g. {mode} = [\"A\", "
                   f"\"B\"], got {value!r} (one site is no choice: give its ranks in its [[site]])")
    if len(set(value)) != len(value):
        dup = next(s for s in value if value.count(s) > 1)
        raise fail(f"'{mode}' names site {dup!r} twice")
    return Split(ranks, mode, tuple(value))


@dataclass(frozen=True)
class Offer:
    """What one candidate site offers now: the most application ranks its request can
    hold, Slurm's expected start (seconds from now, and as Slurm wrote it), its free
    nodes out of those that qualify."""

    site: str
    capacity: int
    start_in: float
    start: str
    free: int
    nodes: int

    def describe(self) -> str:
        return (f"site {self.site}: expected start {when(self.start, self.start_in)}, "
                f"{self.free} of {self.nodes} node(s) free, room for {self.capacity} ranks")


def when(start: str, start_in: float) -> str:
    if start_in < SAME_START:
        return f"{start} (now)"
    minutes = start_in / 60
    return f"{start} (in {minutes:.0f} min)" if minutes < 120 else f"{start} (in {minutes / 60:.1f} h)"


@dataclass(frozen=True)
class Choice:
    ranks: dict[str, int]  # site -> ranks; a site not chosen has none (left out of the job)
    reason: str


def _first(offers: list[Offer]) -> Offer:
    """The earliest start; among starts within SAME_START of it, the earliest listed."""
    soonest = min(o.start_in for o in offers)
    return next(o for o in offers if o.start_in <= soonest + SAME_START)


def choose(split: Split, offers: Mapping[str, Offer]) -> Choice:
    """The ranks per site. `offers` has every site of the split; the caller has checked
    that the request can be met (check_capacity)."""
    listed = [offers[s] for s in split.sites]
    if split.mode == "ratio":
        shares = dict(zip(split.sites, ratio_shares(split.ranks, split.weights)))
        return Choice(shares, "fixed ratio: " + ", ".join(f"{s} {n}" for s, n in shares.items()))
    if split.mode == "any_of":
        pick = _first(listed)
        others = [o for o in listed if o is not pick]
        tie = all(o.start_in <= pick.start_in + SAME_START for o in others)
        why = ("every site starts as soon (within {:.0f} s): the first listed".format(SAME_START)
               if tie else "it starts first")
        later = "; ".join(f"{o.site} expected {when(o.start, o.start_in)}" for o in others)
        return Choice({o.site: (split.ranks if o is pick else 0) for o in listed},
                      f"site {pick.site} for all {split.ranks} ranks: {why} ({later})")
    left, ranks, steps, pool = split.ranks, {s: 0 for s in split.sites}, [], list(listed)
    while left > 0:
        pick = _first(pool)
        pool.remove(pick)
        ranks[pick.site] = min(left, pick.capacity)
        left -= ranks[pick.site]
        steps.append(f"{pick.site} {ranks[pick.site]} (expected {when(pick.start, pick.start_in)}, "
                     f"room for {pick.capacity})")
    unused = [o.site for o in pool]
    text = "as many as possible first where they start first: " + ", then ".join(steps)
    if unused:
        text += f"; {', '.join(unused)} not needed"
    return Choice(ranks, text)


def check_capacity(split: Split, capacity: Mapping[str, int], where: Callable[[str], str]) -> None:
    """Refuse a split that no choice can satisfy (ValueError with the message); `where`
    names a site for the message (its login node, partition)."""
    if split.mode == "any_of":
        small = [s for s in split.sites if capacity[s] < split.ranks]
        if small:
            s = small[0]
            raise ValueError(f"{where(s)}: any_of needs room for the whole job, {split.ranks} "
                             f"ranks; its request holds {capacity[s]} (raise [site.slurm] nodes, "
                             f"or use fill_first to split)")
    elif split.mode == "ratio":
        for s, n in zip(split.sites, ratio_shares(split.ranks, split.weights)):
            if n > capacity[s]:
                raise ValueError(f"{where(s)}: the ratio gives it {n} of {split.ranks} ranks; "
                                 f"its request holds {capacity[s]}")
    else:
        room = sum(capacity[s] for s in split.sites)
        if room < split.ranks:
            parts = ", ".join(f"{s} {capacity[s]}" for s in split.sites)
            raise ValueError(f"fill_first: {split.ranks} ranks, but the sites' requests hold "
                             f"{room} together ({parts})")
