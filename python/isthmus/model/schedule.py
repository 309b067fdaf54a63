# isthmus/model/schedule.py: collective algorithms written as schedules, the form the cost
# model predicts and checks.
#
# A schedule gives each rank a list of actions in program order:
#   ("send", peer, chunks)           send those chunks' current values (eager: never blocks)
#   ("recv", peer, chunks, mode)     wait for the next message from peer; mode says what to
#                                    do with each chunk: "copy" (take it), "left" (it is the
#                                    left operand: payload op mine), "right" (mine op
#                                    payload), "union" (barrier tokens)
#   ("copy", nbytes)                 a local copy the C schedule makes (staging a vector
#                                    in a temporary, rotating blocks): time, no value
# The vector (or each rank's block) is cut into chunks of known byte sizes. A chunk's value
# is symbolic: the interval of ranks [lo, hi) reduced into it, so a reduction that combines
# non-adjacent intervals, or one rank twice, is caught (simulate.check) — the same check
# that proves an algorithm right for non-commutative ops proves it right for all.
#
# Algorithms (seed 001 §2; MPICH's and Open MPI's forms): bcast binomial/knomial/chain/
# scatter_allgather; reduce binomial/knomial/chain/rabenseifner; allreduce
# recursive_doubling/rabenseifner/ring/knomial/linear; reduce_scatter ring/recursive_halving/
# pairwise; scan recursive_doubling/chain; allgather ring/recursive_doubling/bruck; alltoall
# pairwise/bruck; barrier dissemination. Ring reduce_scatter/allreduce need a commutative
# op (block b is reduced from rank b+1 round to rank b), as in MPICH.
from __future__ import annotations

from dataclasses import dataclass, field


def split(total: int, parts: int, unit: int = 1) -> list[int]:
    """total bytes cut into `parts` pieces of whole units, the first ones one unit larger."""
    n = total // unit
    q, r = divmod(n, parts)
    return [(q + (1 if i < r else 0)) * unit for i in range(parts)]


@dataclass
class Schedule:
    coll: str
    algorithm: str
    p: int
    chunk_bytes: dict = field(default_factory=dict)   # chunk id -> bytes
    ops: list = field(default_factory=list)           # per rank: list of actions
    root: int = 0
    result_chunks: tuple | None = None                # None: every chunk is a result

    def __post_init__(self):
        if not self.ops:
            self.ops = [[] for _ in range(self.p)]

    def send(self, r, peer, chunks):
        if peer != r:
            self.ops[r].append(("send", peer, tuple(chunks)))

    def recv(self, r, peer, chunks, mode, src=None):
        """src: the payload's chunk for each of `chunks` (default: the same ids)."""
        if peer != r:
            self.ops[r].append(("recv", peer, tuple(chunks), mode,
                                tuple(src) if src is not None else tuple(chunks)))

    def copy(self, r, nbytes):
        """A local copy of nbytes at rank r (libisthmus's schedules stage data through
        temporaries: native/src/coll/b_*.c); it costs time, it moves no value."""
        if nbytes > 0:
            self.ops[r].append(("copy", int(nbytes)))

    def bytes_of(self, chunks) -> int:
        return sum(self.chunk_bytes[c] for c in chunks)


def _zero_bits(x: int, pp: int) -> int:
    """Zero bits of x below pp (a power of two): how often a recursive-doubling member
    is the lower of its pair, which swaps its accumulator and temporary in the C
    builders (b_allreduce.c), so an odd count ends with a copy into the result."""
    return sum(1 for b in range(pp.bit_length() - 1) if not (x >> b) & 1)


def _pow2_below(p: int) -> int:
    q = 1
    while q * 2 <= p:
        q *= 2
    return q


# ---- trees ---------------------------------------------------------------------------

def _knomial_children(v: int, p: int, k: int) -> list[int]:
    """Children of vrank v in a k-nomial tree rooted at 0, in increasing order."""
    out, step = [], 1
    while step < p:
        if v % (step * k) != 0:
            break
        for d in range(1, k):
            c = v + d * step
            if c < p:
                out.append(c)
        step *= k
    return sorted(out)


def _knomial_parent(v: int, k: int) -> int:
    step = 1
    while v % (step * k) == 0:
        step *= k
    return v - (v // step % k) * step


def bcast_tree(p, nbytes, root=0, k=2, name=None):
    s = Schedule("bcast", name or ("binomial" if k == 2 else f"knomial{k}"), p,
                 {0: nbytes}, root=root)
    for r in range(p):
        v = (r - root) % p
        if v:
            s.recv(r, (_knomial_parent(v, k) + root) % p, [0], "copy")
        for c in sorted(_knomial_children(v, p, k), reverse=True):   # biggest subtree first
            s.send(r, (c + root) % p, [0])
    return s


def bcast_chain(p, nbytes, root=0, segment=65536):
    segs = split(nbytes, max(1, -(-nbytes // segment)))
    s = Schedule("bcast", f"chain{segment}", p, dict(enumerate(segs)), root=root)
    for r in range(p):
        v = (r - root) % p
        for i in range(len(segs)):
            if v:
                s.recv(r, (r - 1) % p, [i], "copy")
            if v < p - 1:
                s.send(r, (r + 1) % p, [i])
    return s


def bcast_scatter_allgather(p, nbytes, root=0, unit=1):
    s = Schedule("bcast", "scatter_allgather", p, dict(enumerate(split(nbytes, p, unit))),
                 root=root)
    # binomial scatter of the p blocks (vrank order), then a ring allgather
    for r in range(p):
        v = (r - root) % p
        if v:
            par = _knomial_parent(v, 2)
            size = _subtree(v, p, 2)
            s.recv(r, (par + root) % p, [(v + i + root) % p for i in range(size)], "copy")
        for c in sorted(_knomial_children(v, p, 2), reverse=True):
            size = _subtree(c, p, 2)
            s.send(r, (c + root) % p, [(c + i + root) % p for i in range(size)])
    # ring allgather in vrank order that skips the root's receives and the last one's
    # sends (the root has everything), as the C builder does
    for st in range(p - 1):
        for r in range(p):
            v = (r - root) % p
            if v:
                s.recv(r, (r - 1) % p, [((v - st - 1) % p + root) % p], "copy")
            if v != p - 1:
                s.send(r, (r + 1) % p, [((v - st) % p + root) % p])
    return s


def _subtree(v, p, k):
    if v == 0:
        return p
    step = 1
    while v % (step * k) == 0:
        step *= k
    return min(step, p - v)


def reduce_tree(p, nbytes, root=0, k=2, name=None):
    """k-nomial reduction in rank order (contributions of a subtree are adjacent), then
    the result to the root if the root is not rank 0."""
    s = Schedule("reduce", name or ("binomial" if k == 2 else f"knomial{k}"), p, {0: nbytes},
                 root=root)
    for r in range(p):
        for c in _knomial_children(r, p, k):
            s.recv(r, c, [0], "right")
        if r:
            s.send(r, _knomial_parent(r, k), [0])
    if root:
        s.send(0, root, [0])
        s.recv(root, 0, [0], "copy")
    return s


def reduce_chain(p, nbytes, root=0, segment=65536):
    """Pipeline (seed 001 §2.2.4): segments flow from rank p-1 down to rank 0, each rank
    reducing its own contribution in on the way; then to the root."""
    segs = split(nbytes, max(1, -(-nbytes // segment)))
    s = Schedule("reduce", f"chain{segment}", p, dict(enumerate(segs)), root=root)
    for r in range(p):
        for i in range(len(segs)):
            if r < p - 1:
                s.recv(r, r + 1, [i], "right")
            if r:
                s.send(r, r - 1, [i])
    if root:
        s.send(0, root, list(range(len(segs))))
        s.recv(root, 0, list(range(len(segs))), "copy")
    return s


# ---- the power-of-two fold used by recursive doubling and Rabenseifner -----------------

def _fold_in(s, p, chunks):
    """Ranks < 2r: even ones give their vector to the odd neighbour and sit out. Returns
    (p', newrank of each rank or None, real rank of each newrank)."""
    pp = _pow2_below(p)
    rem = p - pp
    newrank, real = [None] * p, []
    for r in range(p):
        if r < 2 * rem:
            if r % 2 == 0:
                s.send(r, r + 1, chunks)
            else:
                s.recv(r, r - 1, chunks, "left")
                newrank[r] = len(real)
                real.append(r)
        else:
            newrank[r] = len(real)
            real.append(r)
    return pp, newrank, real


def _fold_out(s, p, chunks):
    rem = p - _pow2_below(p)
    for r in range(0, 2 * rem, 2):
        s.send(r + 1, r, chunks)
        s.recv(r, r + 1, chunks, "copy")


def allreduce_recursive_doubling(p, nbytes):
    s = Schedule("allreduce", "recursive_doubling", p, {0: nbytes})
    if p & (p - 1):  # the C builder copies IN to OUT first (a power of two needs not)
        for r in range(p):
            s.copy(r, nbytes)
    pp, nr, real = _fold_in(s, p, [0])
    mask = 1
    while mask < pp:
        for r in range(p):
            if nr[r] is None:
                continue
            d = real[nr[r] ^ mask]
            s.send(r, d, [0])
            s.recv(r, d, [0], "right" if r < d else "left")
        mask *= 2
    if p & (p - 1):
        for r in range(p):
            if nr[r] is not None and _zero_bits(nr[r], pp) % 2:
                s.copy(r, nbytes)
    _fold_out(s, p, [0])
    return s


def _bitrev(x, bits):
    y = 0
    for _ in range(bits):
        y = (y << 1) | (x & 1)
        x >>= 1
    return y


def _rabenseifner_rs(s, pp, real, chunks_of=lambda block: [block]):
    """Reduce-scatter by recursive halving with distance doubling over pp newranks: block
    positions are bit-reversed so newrank x ends holding block x, and contributions stay
    adjacent (so non-commutative ops work). chunks_of(block) are the chunks of a block.
    Returns the position -> block map, each newrank's final [lo, hi) positions, and the
    ranges before each step (mask, ranges)."""
    bits = pp.bit_length() - 1
    pos = [_bitrev(i, bits) for i in range(pp)]     # position -> block
    at = lambda rg: [c for i in range(*rg) for c in chunks_of(pos[i])]
    rng = {x: (0, pp) for x in range(pp)}
    trace = []
    mask = 1
    while mask < pp:
        step = {}
        for x in range(pp):
            lo, hi = rng[x]
            mid = (lo + hi) // 2
            d = x ^ mask
            keep, give = ((lo, mid), (mid, hi)) if x < d else ((mid, hi), (lo, mid))
            s.send(real[x], real[d], at(give))
            s.recv(real[x], real[d], at(keep), "right" if x < d else "left")
            step[x] = keep
        trace.append((mask, dict(rng)))
        rng = step
        mask *= 2
    return pos, rng, trace


def allreduce_rabenseifner(p, nbytes, unit=1):
    pp = _pow2_below(p)
    s = Schedule("allreduce", "rabenseifner", p, dict(enumerate(split(nbytes, pp, unit))))
    allc = list(range(pp))
    for r in range(p):   # the C builder starts from a copy of IN in OUT
        s.copy(r, nbytes)
    pp, nr, real = _fold_in(s, p, allc)
    pos, rng, trace = _rabenseifner_rs(s, pp, real)
    for x in range(pp):  # the reduced block back from the temporary
        if _zero_bits(x, pp) % 2:
            s.copy(real[x], s.bytes_of([pos[i] for i in range(*rng[x])]))
    for mask, before in reversed(trace):          # allgather: undo the halvings
        for x in range(pp):
            d = x ^ mask
            s.send(real[x], real[d], [pos[i] for i in range(*rng[x])])
            s.recv(real[x], real[d], [pos[i] for i in range(*rng[d])], "copy")
        rng = before
    _fold_out(s, p, allc)
    return s


def reduce_rabenseifner(p, nbytes, root=0, unit=1):
    pp = _pow2_below(p)
    s = Schedule("reduce", "rabenseifner", p, dict(enumerate(split(nbytes, pp, unit))),
                 root=root)
    allc = list(range(pp))
    for r in range(p):   # the C builder starts from a copy of IN in OUT
        s.copy(r, nbytes)
    pp, nr, real = _fold_in(s, p, allc)
    pos, rng, trace = _rabenseifner_rs(s, pp, real)
    for mask, before in reversed(trace):          # gather to newrank 0
        for x in range(pp):
            if x >= 2 * mask:
                continue
            d = x ^ mask
            if x < mask:
                s.recv(real[x], real[d], [pos[i] for i in range(*rng[d])], "copy")
            else:
                s.send(real[x], real[d], [pos[i] for i in range(*rng[x])])
        rng = before
    if real[0] != root:
        s.send(real[0], root, allc)
        s.recv(root, real[0], allc, "copy")
    elif p > 1 and _zero_bits(0, pp) % 2:
        s.copy(root, nbytes)  # the gathered vector from the temporary into OUT
    return s


def _ring_rs(s, p, block_of):
    """Ring reduce-scatter: after p-1 steps rank r holds block_of(r) fully reduced."""
    for step in range(p - 1):
        for r in range(p):
            s.send(r, (r + 1) % p, [block_of((r - step - 1) % p)])
            s.recv(r, (r - 1) % p, [block_of((r - step - 2) % p)], "left")


def _ring_allgather(s, block_of):
    p = s.p
    for step in range(p - 1):
        for r in range(p):
            s.send(r, (r + 1) % p, [block_of((r - step) % p)])
            s.recv(r, (r - 1) % p, [block_of((r - step - 1) % p)], "copy")


def allreduce_ring(p, nbytes, unit=1):
    s = Schedule("allreduce", "ring", p, dict(enumerate(split(nbytes, p, unit))))
    for r in range(p):   # the C builder reduces in OUT, which starts as a copy of IN
        s.copy(r, nbytes)
    _ring_rs(s, p, lambda b: b)
    _ring_allgather(s, lambda b: b)
    return s


def allreduce_knomial(p, nbytes, k=4):
    s = reduce_tree(p, nbytes, 0, k)
    b = bcast_tree(p, nbytes, 0, k)
    s.copy(0, nbytes)  # the C builder: the reduced vector from a temporary into OUT
    for r in range(p):
        s.ops[r].extend(b.ops[r])
    s.coll, s.algorithm = "allreduce", f"knomial{k}"
    return s


def allreduce_exchange(p, nbytes):
    """Everyone sends its vector to everyone in one step and folds all of them in rank
    order (the two-level default between sites' leaders)."""
    s = Schedule("allreduce", "exchange", p, {0: nbytes})
    for r in range(p):
        s.copy(r, nbytes)  # the C builder: mine into the gathering temporary, sent from
        for i in range(1, p):  # there; the last vector into OUT before the folds
            s.send(r, (r + i) % p, [0])
        s.copy(r, nbytes)
        # the others' vectors are combined around mine in rank order: lower ranks on the
        # left (nearest first), higher ones on the right (nearest first)
        for src in range(r - 1, -1, -1):
            s.recv(r, src, [0], "left")
        for src in range(r + 1, p):
            s.recv(r, src, [0], "right")
    return s


def allgather_exchange(p, block_bytes):
    s = Schedule("allgather", "exchange", p, {b: block_bytes for b in range(p)})
    for r in range(p):
        s.copy(r, block_bytes)  # my block into OUT
        for i in range(1, p):
            s.send(r, (r + i) % p, [r])
        for i in range(1, p):
            src = (r - i) % p
            s.recv(r, src, [src], "copy")
    return s


def barrier_linear(p, _nbytes=0):
    s = Schedule("barrier", "linear", p, {0: 0})
    for r in range(1, p):
        s.send(r, 0, [0])
        s.recv(0, r, [0], "union")
    for r in range(1, p):
        s.send(0, r, [0])
        s.recv(r, 0, [0], "union")
    return s


def allreduce_linear(p, nbytes):
    s = Schedule("allreduce", "linear", p, {0: nbytes})
    for r in range(1, p):
        s.recv(0, r, [0], "right")
        s.send(r, 0, [0])
    s.copy(0, nbytes)  # the C builder: the reduced vector from a temporary into OUT
    for r in range(1, p):
        s.send(0, r, [0])
        s.recv(r, 0, [0], "copy")
    return s


def reduce_scatter_ring(p, block_bytes):
    s = Schedule("reduce_scatter", "ring", p, {b: block_bytes for b in range(p)})
    for r in range(p):   # the C builder reduces in a copy of IN, then takes its block
        s.copy(r, p * block_bytes)
    _ring_rs(s, p, lambda b: b)   # rank r ends with block r
    for r in range(p):
        s.copy(r, block_bytes)
    return s


def reduce_scatter_pairwise(p, block_bytes, commutative=True):
    """Step i: send block r+i to rank r+i and receive from rank r-i. With a commutative op
    (what the benchmark and the model's predictions use) the C builder folds each arrival
    into OUT as it comes, the first one landing there, with no copy. With a
    non-commutative op each rank folds the contributions to its own block in rank order:
    r-1, r-2, .., 0 on the left, then r+1, .., p-1 on the right."""
    s = Schedule("reduce_scatter", "pairwise", p, {b: block_bytes for b in range(p)})
    for r in range(p):
        if commutative:
            for i in range(1, p):
                s.send(r, (r + i) % p, [(r + i) % p])
                s.recv(r, (r - i) % p, [r], "left")
            continue
        s.copy(r, block_bytes)  # the C builder: my block into OUT, the first block from
        for i in range(1, p):   # above into its own partial, which is folded in and
            s.send(r, (r + i) % p, [(r + i) % p])  # copied back at the end
        for src in range(r - 1, -1, -1):
            s.recv(r, src, [r], "left")
        for src in range(r + 1, p):
            s.recv(r, src, [r], "right")
        if r < p - 1:
            s.copy(r, 2 * block_bytes)
    return s


def reduce_scatter_recursive_halving(p, block_bytes):
    """Power-of-two ranks; otherwise the fold in first and each folded-out rank gets its
    block from its partner at the end. Newrank x keeps the blocks of the real ranks it
    stands for."""
    s = Schedule("reduce_scatter", "recursive_halving", p, {b: block_bytes for b in range(p)})
    allc = list(range(p))
    rem = p - _pow2_below(p)
    for r in range(1, 2 * rem, 2):  # the C builder: a writable copy for the fold
        s.copy(r, p * block_bytes)
    pp, nr, real = _fold_in(s, p, allc)
    if p == 1:
        s.copy(0, block_bytes)
    else:
        for x in range(pp):  # the vector into position order
            s.copy(real[x], p * block_bytes)
    owned = {x: [real[x] - 1, real[x]] if real[x] < 2 * (p - pp) else [real[x]]
             for x in range(pp)}
    _rabenseifner_rs(s, pp, real, lambda x: owned[x])
    if p > 1:
        for x in range(pp):  # my block out of the working vector
            s.copy(real[x], block_bytes)
    for r in range(0, 2 * (p - pp), 2):
        s.send(r + 1, r, [r])
        s.recv(r, r + 1, [r], "copy")
    return s


def scan_recursive_doubling(p, nbytes):
    """Each rank keeps its prefix (chunk 0) and a partial over a window ending at it
    (chunk 1), exchanged at distance 1, 2, 4, ... (MPICH's scan)."""
    s = Schedule("scan", "recursive_doubling", p, {0: nbytes, 1: nbytes}, result_chunks=(0,))
    later = lambda r, mask: any((r ^ m) < p for m in (1 << i for i in range(p.bit_length() + 1))
                                if m > mask and m < p)
    # a partial nobody needs is not sent (as in the C builder): r needs d's for its
    # prefix (d below it) or for its own partial when it has exchanges still to make
    needs = lambda r, mask: (r ^ mask) < r or later(r, mask)
    partial_is_in = [True] * p  # the C builder's partial stays the read-only IN until
    for r in range(p):          # it first changes; OUT starts as a copy of IN
        s.copy(r, nbytes)
    mask = 1
    while mask < p:
        for r in range(p):
            d = r ^ mask
            if d >= p:
                continue
            if needs(d, mask):
                s.send(r, d, [1])
            if not needs(r, mask):
                continue
            if d < r:   # the lower window joins both on the left
                s.recv(r, d, [0, 1], "left", src=[1, 1])
                if later(r, mask) and partial_is_in[r]:
                    s.copy(r, nbytes)  # into a writable spare
                    partial_is_in[r] = False
            else:
                s.recv(r, d, [1], "right")
                if later(r, mask):
                    partial_is_in[r] = False
        mask *= 2
    return s


def scan_chain(p, nbytes, segment=65536):
    segs = split(nbytes, max(1, -(-nbytes // segment)))
    s = Schedule("scan", f"chain{segment}", p, dict(enumerate(segs)))
    for r in range(p):
        s.copy(r, nbytes)  # the C builder: OUT starts as a copy of IN
        for i in range(len(segs)):
            if r:
                s.recv(r, r - 1, [i], "left")
            if r < p - 1:
                s.send(r, r + 1, [i])
    return s


def allgather_ring(p, block_bytes):
    s = Schedule("allgather", "ring", p, {b: block_bytes for b in range(p)})
    for r in range(p):
        s.copy(r, block_bytes)  # my block into OUT
    _ring_allgather(s, lambda b: b)
    return s


def allgather_recursive_doubling(p, block_bytes):
    """Power-of-two: exchange doubling halves. Otherwise Bruck's algorithm does it."""
    if p & (p - 1):
        s = allgather_bruck(p, block_bytes)
        s.algorithm = "recursive_doubling"
        return s
    s = Schedule("allgather", "recursive_doubling", p, {b: block_bytes for b in range(p)})
    for r in range(p):
        s.copy(r, block_bytes)  # my block into OUT
    mask = 1
    while mask < p:
        for r in range(p):
            d = r ^ mask
            mine = [b for b in range(p) if b // mask == r // mask]
            theirs = [b for b in range(p) if b // mask == d // mask]
            s.send(r, d, mine)
            s.recv(r, d, theirs, "copy")
        mask *= 2
    return s


def allgather_bruck(p, block_bytes):
    s = Schedule("allgather", "bruck", p, {b: block_bytes for b in range(p)})
    for r in range(p):
        s.copy(r, block_bytes)  # my block into the rotated temporary
    have = 1
    while have < p:
        n = min(have, p - have)
        for r in range(p):
            s.send(r, (r - have) % p, [(r + i) % p for i in range(n)])
            s.recv(r, (r + have) % p, [(r + have + i) % p for i in range(n)], "copy")
        have *= 2
    for r in range(p):
        s.copy(r, p * block_bytes)  # back to member order in OUT
    return s


def alltoall_pairwise(p, block_bytes):
    s = Schedule("alltoall", "pairwise", p,
                 {(a, b): block_bytes for a in range(p) for b in range(p)})
    for r in range(p):
        s.copy(r, block_bytes)  # my own block
    for i in range(1, p):
        for r in range(p):
            s.send(r, (r + i) % p, [(r, (r + i) % p)])
            s.recv(r, (r - i) % p, [((r - i) % p, r)], "copy")
    return s


def alltoall_bruck(p, block_bytes):
    """Bruck: at step k every rank forwards, to rank r + 2^k, each block whose remaining
    distance to its destination has bit k set."""
    s = Schedule("alltoall", "bruck", p,
                 {(a, b): block_bytes for a in range(p) for b in range(p)})
    held = {r: {(r, b) for b in range(p)} for r in range(p)}
    for r in range(p):
        s.copy(r, p * block_bytes)  # the C builder: IN rotated into a temporary
    k = 1
    while k < p:
        moves = {}
        for r in range(p):
            out = sorted(c for c in held[r] if ((c[1] - r) % p) & k)
            moves[r] = out
        packed = block_bytes * sum(1 for i in range(p) if i & k)
        for r in range(p):   # packed before the send, unpacked after the receive
            s.copy(r, packed)
            s.send(r, (r + k) % p, moves[r])
            s.recv(r, (r - k) % p, moves[(r - k) % p], "copy")
            s.copy(r, packed)
        for r in range(p):
            held[r] -= set(moves[r])
        for r in range(p):
            held[(r + k) % p] |= set(moves[r])
        k *= 2
    for r in range(p):
        s.copy(r, p * block_bytes)  # back from positions into OUT
    return s


def barrier_dissemination(p, _nbytes=0):
    s = Schedule("barrier", "dissemination", p, {0: 0})
    k = 1
    while k < p:
        for r in range(p):
            s.send(r, (r + k) % p, [0])
            s.recv(r, (r - k) % p, [0], "union")
        k *= 2
    return s


# ---- the catalogue -------------------------------------------------------------------

ALGORITHMS = {
    "bcast": {
        "binomial": lambda p, m: bcast_tree(p, m, 0, 2),
        "knomial4": lambda p, m: bcast_tree(p, m, 0, 4),
        "scatter_allgather": lambda p, m: bcast_scatter_allgather(p, m),
        "chain": lambda p, m: bcast_chain(p, m, 0, max(1024, m // 8)),
        "linear": lambda p, m: bcast_tree(p, m, 0, max(p, 2), "linear"),
    },
    "reduce": {
        "binomial": lambda p, m: reduce_tree(p, m, 0, 2),
        "knomial4": lambda p, m: reduce_tree(p, m, 0, 4),
        "rabenseifner": lambda p, m: reduce_rabenseifner(p, m),
        "chain": lambda p, m: reduce_chain(p, m, 0, max(1024, m // 8)),
        "linear": lambda p, m: reduce_tree(p, m, 0, max(p, 2), "linear"),
    },
    "allreduce": {
        "recursive_doubling": allreduce_recursive_doubling,
        "rabenseifner": allreduce_rabenseifner,
        "ring": allreduce_ring,
        "knomial4": lambda p, m: allreduce_knomial(p, m, 4),
        "linear": allreduce_linear,
        "exchange": allreduce_exchange,
    },
    "reduce_scatter": {
        "ring": lambda p, m: reduce_scatter_ring(p, m // p),
        "recursive_halving": lambda p, m: reduce_scatter_recursive_halving(p, m // p),
        "pairwise": lambda p, m, commutative=True: reduce_scatter_pairwise(p, m // p,
                                                                           commutative),
    },
    "scan": {
        "recursive_doubling": scan_recursive_doubling,
        "chain": lambda p, m: scan_chain(p, m, max(1024, m // 8)),
    },
    "allgather": {
        "ring": lambda p, m: allgather_ring(p, m),
        "recursive_doubling": lambda p, m: allgather_recursive_doubling(p, m),
        "bruck": lambda p, m: allgather_bruck(p, m),
        "exchange": lambda p, m: allgather_exchange(p, m),
    },
    "alltoall": {
        "pairwise": lambda p, m: alltoall_pairwise(p, m),
        "bruck": lambda p, m: alltoall_bruck(p, m),
    },
    "barrier": {"dissemination": barrier_dissemination, "linear": barrier_linear},
}

# which need a commutative op (their contributions wrap around the ring)
COMMUTATIVE_ONLY = {("allreduce", "ring"), ("reduce_scatter", "ring")}
# which the C builders build differently for a commutative op (build(commutative=...))
TWO_FORMS = {("reduce_scatter", "pairwise")}

# what the size argument means: bytes of the whole vector, or of each rank's block
SIZE_MEANS = {"bcast": "vector", "reduce": "vector", "allreduce": "vector",
              "reduce_scatter": "vector", "scan": "vector", "allgather": "block",
              "alltoall": "block", "barrier": "none"}


def build(coll: str, algorithm: str, p: int, nbytes: int, commutative: bool = True) -> Schedule:
    """The schedule libisthmus runs; `commutative`: for an op that commutes (the
    benchmark's sum), which some builders exploit (TWO_FORMS)."""
    if coll not in ALGORITHMS:
        raise ValueError(f"unknown collective {coll!r}; known: {', '.join(sorted(ALGORITHMS))}")
    algs = ALGORITHMS[coll]
    if algorithm not in algs:
        raise ValueError(f"unknown {coll} algorithm {algorithm!r}; known: {', '.join(algs)}")
    if p < 1:
        raise ValueError(f"process count {p} must be at least 1")
    if nbytes < 0:
        raise ValueError(f"size {nbytes} must not be negative")
    if (coll, algorithm) in TWO_FORMS:
        return algs[algorithm](p, nbytes, commutative=commutative)
    return algs[algorithm](p, nbytes)
