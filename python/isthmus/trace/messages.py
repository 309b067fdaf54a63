# isthmus/trace/messages.py: the point-to-point messages of a trace, from the ranks' call
# records: every send (blocking, nonblocking, persistent start, the send of a sendrecv)
# and every receive (blocking, or a request's completion in a Wait/Test), each with its
# peer as a global rank, then paired as MPI pairs them: per source, destination,
# communicator and tag, in order (the non-overtaking rule).
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from . import records as R
from .reader import Call, RankTrace, Trace


@dataclass
class Send:
    src: int
    dst: int
    key: tuple          # the communicator's key (reader._keys)
    tag: int
    bytes: int
    t: float            # when the send started (the call's entry)
    call: Call


@dataclass
class Recv:
    dst: int
    src: int
    key: tuple
    tag: int
    bytes: int
    t_post: float       # the receive was posted (its call's entry)
    t_done: float       # it completed (the exit of the call that completed it)
    call: Call          # the call that completed it


@dataclass
class Message:
    send: Send
    recv: Recv | None

    @property
    def transfer(self) -> float | None:
        """From when both sides were ready (the send started, the receive was posted) to
        the receive's completion: what the network and the gateways took."""
        if self.recv is None:
            return None
        return max(0.0, self.recv.t_done - max(self.send.t, self.recv.t_post))


def _world(rt: RankTrace, cid: int, peer: int):
    c = rt.comms.get(cid)
    return (c.world(peer), c.key) if c else (None, None)


def rank_messages(rt: RankTrace) -> tuple[list[Send], list[Recv]]:
    sends: list[Send] = []
    recvs: list[Recv] = []
    templates: dict[int, tuple] = {}   # persistent request -> (kind, comm, peer, tag, bytes)
    pending: dict[int, tuple] = {}     # request -> (t_post, comm, posted peer, tag, bytes)
    for call in rt.calls:
        for d in call.details:
            kind, flags = d[0], d[1]
            if kind in (R.SEND, R.RECV):
                cid, peer, tag, _, nbytes, req = d[2:]
                if flags & R.P2P_INIT:
                    templates[req] = (kind, cid, peer, tag, nbytes)
                    continue
                if kind == R.SEND:
                    w, key = _world(rt, cid, peer)
                    if w is not None:
                        sends.append(Send(rt.rank, w, key, tag, nbytes, call.t0, call))
                elif flags & R.P2P_NB:
                    pending[req] = (call.t0, cid, peer, tag, nbytes)
                elif peer != R.MPI_PROC_NULL:  # a completed receive: peer, tag from status
                    w, key = _world(rt, cid, peer)
                    if w is not None:
                        recvs.append(Recv(rt.rank, w, key, tag, nbytes, call.t0, call.t1, call))
            elif kind == R.START:
                req = d[2]
                t = templates.get(req)
                if not t:
                    continue
                tk, cid, peer, tag, nbytes = t
                if tk == R.SEND:
                    w, key = _world(rt, cid, peer)
                    if w is not None:
                        sends.append(Send(rt.rank, w, key, tag, nbytes, call.t0, call))
                else:
                    pending[req] = (call.t0, cid, peer, tag, nbytes)
            elif kind == R.DONE:
                req, source, tag, nbytes = d[2:]
                p = pending.pop(req, None)
                if p is None or flags & R.DONE_CANCELLED or source < 0:
                    continue
                w, key = _world(rt, p[1], source)
                if w is not None:
                    recvs.append(Recv(rt.rank, w, key, tag, nbytes, p[0], call.t1, call))
    return sends, recvs


def messages(trace: Trace) -> tuple[list[Message], list[Send], list[Recv]]:
    """Every send paired with its receive (None when it was not received in the trace)."""
    all_sends: list[Send] = []
    all_recvs: list[Recv] = []
    for rt in trace.ranks.values():
        s, r = rank_messages(rt)
        all_sends += s
        all_recvs += r
    by: dict[tuple, list[Recv]] = defaultdict(list)
    for r in sorted(all_recvs, key=lambda r: (r.t_post, r.t_done)):
        by[(r.src, r.dst, r.key, r.tag)].append(r)
    nxt: dict[tuple, int] = defaultdict(int)
    out = []
    for s in sorted(all_sends, key=lambda s: s.t):
        k = (s.src, s.dst, s.key, s.tag)
        lst, i = by.get(k, []), nxt[k]
        out.append(Message(s, lst[i] if i < len(lst) else None))
        nxt[k] = i + 1
    return out, all_sends, all_recvs


def phase_at(marks: list[tuple[float, int]], t: float) -> int:
    """The application's phase at time t: the level of the last MPI_Pcontrol before it."""
    level = 0
    for tm, lv in marks:
        if tm > t:
            break
        level = lv
    return level
