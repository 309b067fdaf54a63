# isthmus/model/simulate.py: runs a schedule (schedule.py) two ways.
#
# predict(): its time under LogGP. Each rank runs its actions in order on one CPU clock.
#   A send starts when the rank's CPU and its injection gap allow, costs o_s, and its
#   last byte arrives o_s + (m-1)G + L later; the next send may start max(g, o_s) +
#   (m-1)G after this one. A receiver takes in data at the same 1/G, one message after the
#   other in the order it receives them. A receive finishes o_r after both the rank and the
#   message are there, plus the reduction of what it combines (gamma0 + bytes*gamma). The
#   overheads grow by O_s, O_r per byte, and a level with protocol ranges (loggp.LogGP.
#   regimes) gives each message its size's range's parameters. A receive is two-way when
#   its message left while one of the receiving rank's own messages was still on its way
#   (from its send until its receiver can have taken it: its arrival plus the receiver's
#   CPU for it, which in a single-copy protocol is the copy): the bytes that cross both
#   ways at once (each sent byte counted once) cost the receiver o_x + O_x per byte more
#   (loggp.LogGP.two_way_cpu; both ranks of a node copying at once share its cores and
#   memory). A reply to a message that has arrived is not two-way. The
#   parameters of a message are those of its (sender, receiver) level, so one schedule
#   over ranks on several sites mixes the intra-site and the WAN parameters. The
#   collective's time is the last rank's finish: completion at every rank.
# check(): its data flow on symbolic values. A reduced chunk holds the interval of ranks
#   combined into it ([lo, hi), adjacent intervals only, in order) or, for a commutative
#   op, the set of ranks (disjoint only); the final values must be what MPI defines for
#   the collective at every rank that gets a result.
from __future__ import annotations

from collections import defaultdict, deque
from typing import Callable

from .loggp import LogGP
from .schedule import Schedule


class ScheduleError(ValueError):
    """The schedule deadlocks, or computes a wrong result."""


def _run(s: Schedule, on_send, on_recv, on_copy=lambda r, op: None):
    pos = [0] * s.p
    queues: dict[tuple[int, int], deque] = defaultdict(deque)
    while True:
        progressed = False
        for r in range(s.p):
            ops = s.ops[r]
            while pos[r] < len(ops):
                op = ops[pos[r]]
                if op[0] == "send":
                    queues[(r, op[1])].append(on_send(r, op))
                elif op[0] == "copy":
                    on_copy(r, op)
                else:
                    q = queues[(op[1], r)]
                    if not q:
                        break
                    on_recv(r, op, q.popleft())
                pos[r] += 1
                progressed = True
        if all(pos[r] == len(s.ops[r]) for r in range(s.p)):
            break
        if not progressed:
            stuck = [f"rank {r} waits for rank {s.ops[r][pos[r]][1]}"
                     for r in range(s.p) if pos[r] < len(s.ops[r])]
            raise ScheduleError(f"{s.coll}/{s.algorithm} on {s.p} ranks deadlocks: "
                                + "; ".join(stuck[:6]))
    left = {k: len(v) for k, v in queues.items() if v}
    if left:
        raise ScheduleError(f"{s.coll}/{s.algorithm} on {s.p} ranks leaves messages "
                            f"unreceived: {left}")


def predict(s: Schedule, params: LogGP | Callable[[int, int], LogGP],
            link_of: Callable[[int, int], object] | None = None) -> float:
    """Seconds until the last rank finishes, under LogGP. link_of(a, b) names a link that
    messages from a to b share with others (the WAN between two sites), or None: the
    bodies of messages on one link go one after the other, at that link's 1/G."""
    level = params if callable(params) else (lambda a, b: params)
    cpu = [0.0] * s.p
    nic = [0.0] * s.p
    rx = [0.0] * s.p   # when the receiver's link is free again (it takes data at 1/G too)
    out: list[list[list[float]]] = [[] for _ in range(s.p)]  # per rank, its messages
    # [until when they are on their way, bytes not yet met by a receive going the other way]
    shared: dict[object, float] = {}
    # early data spent per (sender, receiver): [(when it is back at the sender, bytes)]
    early_out: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
    # when a rendezvous send to a receiver completes: its clear-to-send is back, a round
    # trip after the request left (the receive already waiting). libisthmus's schedules end
    # a round only when its sends have completed, so the next send to that receiver (the
    # next segment of a chain, the next step of a ring) leaves no earlier
    matched: dict[tuple[int, int], float] = {}

    def on_send(r, op):
        m = s.bytes_of(op[2])
        lv = level(r, op[1])
        pr = lv.at(m)  # the parameters of this size's protocol range
        start = max(cpu[r], nic[r], matched.get((r, op[1]), 0.0))
        cpu[r] = start + lv.send_cpu(m)
        body = max(m - 1, 0) * pr.G
        leave = cpu[r]
        if pr.rndv and m > pr.rndv:
            # request to send and clear to send first; the early bytes leave at once and
            # cover that much of the wait. A sender spends per receiver only the early
            # bytes that have come back: the receiver returns them once they are placed,
            # a one-way delay before the sender can use them again (core/p2p.c)
            spent = early_out[(r, op[1])]
            spent[:] = [e for e in spent if e[0] > leave]
            e = min(float(m), max(0.0, pr.early - sum(b for _, b in spent)))
            if m > e:
                leave += max(0.0, 2 * pr.L - e * pr.G)
            if e > 0:
                spent.append((leave + e * pr.G + 2 * pr.L, e))
            matched[(r, op[1])] = cpu[r] + 2 * pr.L
        link = link_of(r, op[1]) if link_of else None
        if link is not None:
            # the body streams on the shared link, not from the rank: the rank handed the
            # message to its gateway, whose links to different sites run side by side
            leave = max(leave, shared.get(link, 0.0))
            shared[link] = leave + body
            nic[r] = max(start + max(pr.g, lv.send_cpu(m)), leave)
        else:
            nic[r] = max(start + lv.gap(m), leave + body)
        if m > 0 and lv.has_two_way:  # no two-way cost (WAN, older calibrations): no books
            out[r].append([leave + body + pr.L + lv.recv_cpu(m), float(m)])
        return leave + body + pr.L, m, start

    def on_recv(r, op, msg):
        arrival, m, sent = msg
        lv = level(op[1], r)
        if not (link_of and link_of(op[1], r) is not None):
            # after the data received before it; over a shared link the link has already
            # put its messages one after the other, and links from different sites arrive
            # side by side through the gateway
            body = max(m - 1, 0) * lv.at(m).G
            arrival = max(arrival, rx[r] + body)
            rx[r] = arrival
        both = 0.0  # bytes that cross both ways at once
        if m > 0 and out[r]:
            for o in out[r]:
                if both >= m:
                    break
                if o[0] > sent:
                    take = min(m - both, o[1])
                    o[1] -= take
                    both += take
            out[r] = [o for o in out[r] if o[1] > 0]
        t = max(cpu[r], arrival) + lv.recv_cpu(m) + lv.two_way_cpu(m, both)
        if op[3] in ("left", "right"):
            t += level(r, r).reduce_cost(s.bytes_of(op[2]))
        cpu[r] = t

    def on_copy(r, op):
        cpu[r] += level(r, r).copy_cost(op[1])

    _run(s, on_send, on_recv, on_copy)
    return max(cpu) if cpu else 0.0


def exchange_time(params: LogGP, m: int, iters: int = 20) -> float:
    """Seconds per call of what `isthmus-bench loggp` times as "exchange": two ranks each
    MPI_Sendrecv m bytes to the other, iters calls back to back."""
    s = Schedule("exchange", "sendrecv", 2, {0: m})
    for _ in range(max(iters, 1)):
        for r in (0, 1):
            s.send(r, 1 - r, [0])
            s.recv(r, 1 - r, [0], "copy")
    return predict(s, params) / max(iters, 1)


def _initial(s: Schedule, commutative: bool):
    p, c = s.p, s.coll
    state = [dict() for _ in range(p)]
    for r in range(p):
        for ch in s.chunk_bytes:
            if isinstance(ch, tuple) and ch and ch[0] == "meta":
                # a message of sizes (compose.py), its sender's, part of no result
                if ch[1] == r:
                    state[r][ch] = "meta"
                continue
            if c == "bcast":
                if r == s.root:
                    state[r][ch] = "data"
            elif c == "allgather":
                if ch == r:
                    state[r][ch] = ("block", r)
            elif c == "alltoall":
                if ch[0] == r:
                    state[r][ch] = ("block", ch)
            elif c == "barrier":
                state[r][ch] = frozenset([r])
            else:
                state[r][ch] = frozenset([r]) if commutative else (r, r + 1)
    return state


def _combine(left, right, where):
    if left is None or right is None:
        raise ScheduleError(f"{where}: reduces a chunk that holds nothing yet")
    if isinstance(left, frozenset):
        if left & right:
            raise ScheduleError(f"{where}: ranks {sorted(left & right)} reduced twice")
        return left | right
    if left[1] != right[0]:
        raise ScheduleError(f"{where}: combines ranks [{left[0]},{left[1]}) with "
                            f"[{right[0]},{right[1]}): not adjacent in rank order")
    return (left[0], right[1])


def check(s: Schedule, commutative: bool = False) -> None:
    """Raises ScheduleError unless the schedule gives MPI's result."""
    state = _initial(s, commutative)

    def on_send(r, op):
        return {ch: state[r].get(ch) for ch in op[2]}

    def on_recv(r, op, payload):
        _, peer, chunks, mode, src = op
        for ch, sc in zip(chunks, src):
            if sc not in payload:
                raise ScheduleError(f"{s.coll}/{s.algorithm}: rank {r} expects chunk {sc!r} "
                                    f"that rank {peer} did not send")
            v = payload[sc]
            where = f"{s.coll}/{s.algorithm} p={s.p} rank {r} chunk {ch!r} from {peer}"
            if mode == "copy":
                if v is None:
                    raise ScheduleError(f"{where}: copies a chunk the sender does not have")
                state[r][ch] = v
            elif mode == "union":
                state[r][ch] = state[r][ch] | v
            elif mode == "left":
                state[r][ch] = _combine(v, state[r].get(ch), where)
            else:
                state[r][ch] = _combine(state[r].get(ch), v, where)

    _run(s, on_send, on_recv)
    full = frozenset(range(s.p)) if commutative else (0, s.p)
    chunks = s.result_chunks if s.result_chunks is not None else tuple(s.chunk_bytes)
    for r in range(s.p):
        for ch in chunks:
            got = state[r].get(ch)
            want = _expected(s, r, ch, full, commutative)
            if want is not _ANY and got != want:
                raise ScheduleError(f"{s.coll}/{s.algorithm} on {s.p} ranks: rank {r} chunk "
                                    f"{ch!r} ends as {got!r}, MPI says {want!r}")


_ANY = object()


def _expected(s, r, ch, full, commutative):
    c = s.coll
    if c == "bcast":
        return "data"
    if c == "reduce":
        return full if r == s.root else _ANY
    if c in ("allreduce", "barrier"):
        return frozenset(range(s.p)) if c == "barrier" else full
    if c == "reduce_scatter":
        return full if ch == r else _ANY
    if c == "scan":
        return frozenset(range(r + 1)) if commutative else (0, r + 1)
    if c == "allgather":
        return ("block", ch)
    if c == "alltoall":
        return ("block", ch) if ch[1] == r else _ANY
    raise ScheduleError(f"no expected result for collective {c!r}")
