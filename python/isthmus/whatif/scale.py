# isthmus/whatif/scale.py: which traced rank each simulated rank replays, and whom it talks
# to. Without extrapolation simulated rank r is traced rank r. With N sites x M ranks
# from a trace of s0 sites x m0 ranks (N a multiple of s0, M of m0), simulated rank
# (site S, local i) replays traced rank (S mod s0, i mod m0), and a message keeps its
# *forward offsets*: a send from traced (s, i) to (s', i') goes from (S, I) to
# ((S + (s'-s) mod s0) mod N, (I + (i'-i) mod m0) mod M), and the receiver inverts the
# same offsets, so every send meets its receive. A communicator of every traced rank
# becomes the whole simulated world; a smaller one is copied into each block of s0 x m0.
# Stdlib only: the replay engine (engine.py) imports it under Debian's python3.
from __future__ import annotations


class Layout:
    def __init__(self, names: list[str], counts: list[int], trace_site: list[int],
                 trace_local: list[int], trace_counts: list[int]):
        self.names = names
        self.counts = counts
        self.first = [sum(counts[:k]) for k in range(len(counts))]
        self.size = sum(counts)
        self.trace_site = trace_site
        self.trace_local = trace_local
        self.trace_counts = trace_counts
        self.s0 = len(trace_counts)
        self.m0 = trace_counts[0]
        self.identity = counts == trace_counts
        self._site = [s for s, n in enumerate(counts) for _ in range(n)]
        self._trace_rank = {(s, i): r for r, (s, i) in enumerate(zip(trace_site, trace_local))}
        self._members: dict[str, list[int]] = {}
        if not self.identity:
            check(trace_counts, len(counts), counts[0] if counts else 0)

    @classmethod
    def from_job(cls, job: dict) -> "Layout":
        return cls(job["site_names"], job["counts"], job["trace_site"], job["trace_local"],
                   job["trace_counts"])

    def site(self, r: int) -> int:
        return self._site[r]

    def local(self, r: int) -> int:
        return r - self.first[self._site[r]]

    def host(self, r: int) -> str:
        return f"{self.names[self.site(r)]}-{self.local(r)}"

    def _at(self, s: int, i: int) -> int:
        return self.first[s] + i

    def template(self, r: int) -> int:
        if self.identity:
            return r
        return self._trace_rank[(self.site(r) % self.s0, self.local(r) % self.m0)]

    def _shift(self, r: int, t: int, p: int, sign: int) -> int:
        ds = (self.trace_site[p] - self.trace_site[t]) % self.s0
        di = (self.trace_local[p] - self.trace_local[t]) % self.m0
        n, m = len(self.counts), self.counts[0]
        return self._at((self.site(r) + sign * ds) % n, (self.local(r) + sign * di) % m)

    def send_peer(self, r: int, t: int, p: int) -> int:
        """Where simulated rank r (replaying t) sends what t sent to traced rank p."""
        return p if self.identity else self._shift(r, t, p, +1)

    def recv_peer(self, r: int, t: int, p: int) -> int:
        """Whom r receives from where t received from traced rank p: the inverse of
        send_peer, so that p's replica that sends to r is the one r listens to."""
        if self.identity:
            return p
        ds = (self.trace_site[t] - self.trace_site[p]) % self.s0
        di = (self.trace_local[t] - self.trace_local[p]) % self.m0
        n, m = len(self.counts), self.counts[0]
        return self._at((self.site(r) - ds) % n, (self.local(r) - di) % m)

    def _block(self, r: int) -> tuple[int, int]:
        return self.site(r) // self.s0, self.local(r) // self.m0

    def _in_block(self, r: int, p: int) -> int:
        bs, bi = self._block(r)
        return self._at(bs * self.s0 + self.trace_site[p], bi * self.m0 + self.trace_local[p])

    def comm_instance(self, r: int, t: int, comm: dict, cid: int) -> str:
        if self.identity or comm["world"]:
            return str(cid)
        bs, bi = self._block(r)
        return f"{cid}.{bs}.{bi}"

    def members(self, r: int, t: int, comm: dict, cid: int) -> list[int]:
        """The simulated communicator's members (global ranks, in its rank order)."""
        key = self.comm_instance(r, t, comm, cid)
        got = self._members.get(key)
        if got is None:
            if self.identity:
                got = list(comm["members"])
            elif comm["world"]:
                got = list(range(self.size))
            else:
                got = [self._in_block(r, p) for p in comm["members"]]
            self._members[key] = got
        return got

    def map_member(self, r: int, t: int, comm: dict, p: int) -> int:
        """The simulated rank that stands for traced rank p (a root) in r's copy of comm."""
        if self.identity:
            return p
        if comm["world"]:
            return self._at(self.trace_site[p], self.trace_local[p])
        return self._in_block(r, p)


def check(trace_counts: list[int], sites: int, per_site: int) -> None:
    """Raise ValueError unless the trace can be extrapolated to sites x per_site."""
    if len(set(trace_counts)) != 1:
        raise ValueError(f"the trace's sites hold {', '.join(map(str, trace_counts))} ranks: "
                         "extrapolation replicates whole sites of equal size, so it needs the "
                         "same number of ranks on every traced site")
    s0, m0 = len(trace_counts), trace_counts[0]
    if sites % s0 or sites < s0:
        raise ValueError(f"{sites} sites is not a multiple of the trace's {s0} sites "
                         "(each traced site is replicated whole)")
    if per_site % m0 or per_site < m0:
        raise ValueError(f"{per_site} ranks per site is not a multiple of the trace's {m0} "
                         "ranks per site (each traced rank is replicated whole)")
