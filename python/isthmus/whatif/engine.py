# isthmus/whatif/engine.py: the replay itself, one SimGrid simulation per process. Each
# simulated rank is an S4U actor that plays its template rank's operations (events.py) on
# its host of the platform (platform.py): compute bursts as executions, point-to-point as
# mailbox transfers, collectives as the two-level schedule of isthmus (collectives.py).
#
# Run as `python3 -m isthmus.whatif.engine JOB.json RESULT.json` by Debian's python3, which
# holds python3-simgrid: a SimGrid engine can be created once per process, and the venv of
# the CLI does not see the system's packages. This module imports nothing of isthmus but
# whatif's own stdlib-only modules.
from __future__ import annotations

import heapq
import json
import sys
import time

from .collectives import schedule
from .rma import Rma, RankRma
from .scale import Layout
from .tcp import Ramp, pair

# A message crossing sites travels in gateway frames: a 48-byte frame header
# (native/src/contract/frame.h) and a 32-byte link header (docs/design.md, the TCP link)
# per frame of at most 1 MiB; the RTS and the clear-to-send are frames of their own.
FRAME_OVERHEAD = 48 + 32
FRAME_MAX_PAYLOAD = 1 << 20
RMA_EXCL, RMA_NOCHECK, RMA_DONE = 0x02, 0x04, 0x08   # RMA records' flags (trace/records.py)


class Rank:
    """One simulated rank's state while its actor runs."""

    def __init__(self, job: dict, lay: Layout, rank: int):
        self.r = rank
        self.lay = lay
        self.t = lay.template(rank)
        self.ops = job["templates"][str(self.t)]
        self.eager = int(job["eager"])
        self.comms = job["comms"]
        self.pending: dict[int, object] = {}   # op id -> what to wait for (None: done)
        self.remote: dict[int, bool] = {}      # op id -> crosses sites
        self.phase = 0
        self.phase_t: dict[int, float] = {}
        self.patterns: dict[str, list] = {}    # pattern -> [calls, blocked seconds, remote]
        self.timeline: list | None = [] if job.get("timeline") else None  # (fn, t0, t1)
        self.rma = RankRma()


_with_receiver: dict = {}  # eager mailboxes whose permanent receiver is set


def _eager_put(Mailbox, name: str, payload, size: int, receiver) -> None:
    """A message below the eager limit: the mailbox has a permanent receiver, so the
    transfer starts when it is sent and the send completes at once, as in MPI (and in
    isthmus's gateways, EAGER frames)."""
    mb = _with_receiver.get(name)
    if mb is None:
        mb = _with_receiver[name] = Mailbox.by_name(name)
        mb.set_receiver(receiver)
    mb.put_init(payload, size).detach()


def _rendezvous_send(Mailbox, name: str, size: int, early: int, receiver, hdr: int = 0) -> None:
    """Above the eager limit, isthmus's rendezvous with early data (docs/design.md, "Early
    data"): the RTS and the message's first `early` bytes leave at once, the rest once the
    clear-to-send (sent when the receive has matched) is back; the send completes then."""
    first = min(size, early)
    _eager_put(Mailbox, "t" + name, 0, hdr, receiver)
    if first:
        _eager_put(Mailbox, "x" + name, 0, first + hdr, receiver)
    Mailbox.by_name("c" + name).get()
    if size > first:
        Mailbox.by_name("r" + name).put(0, size - first + _frames(size - first) * hdr)


def _frames(size: int) -> int:
    """Frames a message's bytes take (at most ISM_FRAME_MAX_PAYLOAD each)."""
    return max(1, -(-size // FRAME_MAX_PAYLOAD))


def _rendezvous_recv(Mailbox, name: str, size: int, early: int, hdr: int = 0) -> None:
    first = min(size, early)
    Mailbox.by_name("t" + name).get()
    waits = []
    if first:
        waits.append(Mailbox.by_name("x" + name).get_async())
    if size > first:
        waits.append(Mailbox.by_name("r" + name).get_async())
    Mailbox.by_name("c" + name).put(0, hdr)
    for comm, slot in waits:
        comm.wait()


def _later(this_actor, delay: float, fn, *args) -> None:
    """fn(*args) once the sending connection's window lets the message go (tcp.py)."""
    this_actor.sleep_for(delay)
    fn(*args)


class _Outbox:
    """The eager messages of one rank that its connections' windows or pacing hold back
    (tcp.py), or that its gateway took later (gwwrites.py), each handled at its time,
    earliest first, by one actor on the rank's host while any are waiting: fn(*args) puts
    the message, or asks its connection and comes back when the window lets it go. The
    actor ends when none is left and the next one starts another.
    Not an actor per message: an actor of SimGrid's Python binding is a system thread,
    and at 10^3-10^4 ranks creating one per held message was most of a replay's time,
    and a thread per rank that never ends would double the threads (BENCHMARKS.md,
    "What a prediction costs")."""

    def __init__(self, Actor, Semaphore, Engine, host):
        self.heap: list = []
        self.seq = 0
        self.sem = Semaphore(0)
        self.actor, self.engine, self.host = Actor, Engine, host
        self.running = False
        self.written = float("-inf")    # the latest time a message of the rank is written
                                        # to its connection (the gateway takes them in order)

    def add(self, release: float, fn, *args) -> None:
        heapq.heappush(self.heap, (release, self.seq, fn, args))
        self.seq += 1
        if self.running:
            self.sem.release()      # wake it: this one may be due before what it waits for
        else:
            self.running = True
            self.actor.create("outbox", self.host, self._run)

    def _run(self) -> None:
        while self.heap:
            wait = self.heap[0][0] - self.engine.clock
            # a message added meanwhile may be due earlier: look again
            if wait > 0 and not self.sem.acquire_timeout(wait):
                continue
            if self.heap[0][0] > self.engine.clock:
                continue
            _, _, fn, args = heapq.heappop(self.heap)
            fn(*args)
        self.running = False
        while not self.sem.would_block:     # wake-ups left over: the next actor's
            self.sem.acquire()              # timeouts must not end at once


class _Helper:
    """A rendezvous runs in a helper actor on the rank's host, so that the rank goes on
    (MPI_Isend/MPI_Irecv) until it waits for the request."""

    def __init__(self, Actor, this_actor, fn, *args):
        self.actor = Actor.create("rendezvous", this_actor.get_host(), fn, *args)

    def wait(self) -> None:
        self.actor.join()


def run(job: dict) -> dict:
    from simgrid import Actor, Comm, Engine, Mailbox, Semaphore, this_actor

    e = Engine(["isthmus-whatif", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                "--log=root.thresh:critical"])
    e.load_platform(job["platform"])
    lay = Layout.from_job(job)
    actors: list = [None] * lay.size
    results: list = [None] * lay.size
    speed = float(job.get("speed", 1e9))
    early = int(job["early"])
    # the WAN connections (tcp.py): "i>j" -> [rtt, payload rate, mtu, pace, one way], each
    # paired with the opposite direction's for the ACK frames
    ramps = pair({tuple(map(int, k.split(">"))): Ramp(*v)
                  for k, v in job.get("tcp", {}).items()})
    framing = FRAME_OVERHEAD if job.get("framing", False) else 0
    st_site = lay.site

    def held(st: Rank, dst: int, size: int) -> float:
        """How long the sending gateway's window holds a message to dst back."""
        ramp = ramps.get((st.lay.site(st.r), st.lay.site(dst)))
        return ramp.delay(Engine.clock, size) if ramp is not None else 0.0

    def hdr(a: int, b: int) -> int:
        """Bytes of framing per frame between ranks a and b (none inside a site)."""
        return framing if st_site(a) != st_site(b) else 0

    outboxes: dict[int, _Outbox] = {}
    # the gateways' write lags of the trace (gwwrites.py), on the traced layout only
    writes = bool(job.get("gw_writes")) and bool(ramps)

    def outbox(r: int) -> _Outbox:
        box = outboxes.get(r)
        if box is None:
            box = outboxes[r] = _Outbox(Actor, Semaphore, Engine, hosts(r))
        return box

    def put_later(name: str, payload, size: int, receiver) -> None:
        _eager_put(Mailbox, name, payload, size, receiver)

    def write(src: int, dst: int, name: str, wire: int) -> None:
        """An eager message written to its connection now (by the gateway): it leaves when
        the window and the pacing let it (its rank's outbox puts it then)."""
        hold = held_between(src, dst, wire)
        if hold > 0:       # the send completed at once; the bytes leave later
            outbox(src).add(Engine.clock + hold, put_later, name, src, wire, actors[dst])
        else:
            _eager_put(Mailbox, name, src, wire, actors[dst])

    def send(st: Rank, dst: int, name: str, size: int, eager: bool = False,
             lag: float = 0.0):
        """Start a send; something to wait for, or None when it completes at once. lag: how
        long after it the gateway took it (eager messages across sites, gw_writes)."""
        h = hdr(st.r, dst)
        if eager or size <= st.eager:
            wire = size + _frames(size) * h
            if writes and h:
                # the rank's gateway takes its messages in order, each at its lag
                box = outbox(st.r)
                at = box.written = max(Engine.clock + lag, box.written)
                if at > Engine.clock:
                    box.add(at, write, st.r, dst, "e" + name, wire)
                    return None
            write(st.r, dst, "e" + name, wire)
            return None
        hold = held(st, dst, size + (_frames(size) + 1) * h)
        if hold > 0:
            return _Helper(Actor, this_actor, _later, this_actor, hold, _rendezvous_send,
                           Mailbox, name, size, early, actors[dst], h)
        return _Helper(Actor, this_actor, _rendezvous_send, Mailbox, name, size, early,
                       actors[dst], h)

    host_of: dict[int, object] = {}

    def hosts(r: int):
        h = host_of.get(r)
        if h is None:
            h = host_of[r] = e.host_by_name(lay.host(r))
        return h

    def held_between(src: int, dst: int, size: int) -> float:
        ramp = ramps.get((st_site(src), st_site(dst)))
        return ramp.delay(Engine.clock, size) if ramp is not None else 0.0

    rma = Rma((Actor, Comm, Mailbox, this_actor, Semaphore), lay, hosts, hdr, held_between,
              _eager_put, actors, _frames)

    def recv(name: str, size: int, eager: int, h: int = 0):
        if size <= eager:
            return _Recv(Mailbox, "e" + name)
        return _Helper(Actor, this_actor, _rendezvous_recv, Mailbox, name, size, early, h)

    def p2p_name(cid: int, src: int, dst: int, tag: int) -> str:
        return f"p{cid}:{src}>{dst}:{tag}"

    def account(st: Rank, key: str, dt: float, remote: bool) -> None:
        if st.timeline is not None:
            st.timeline.append((key, Engine.clock - dt, Engine.clock))
        p = st.patterns.setdefault(f"{st.phase}\t{key}", [0, 0.0, 0])
        p[0] += 1
        p[1] += dt
        p[2] += 1 if remote else 0

    def body(st: Rank):
        start = Engine.clock
        st.phase_t[0] = 0.0
        mark = start
        for op in st.ops:
            kind = op[0]
            if kind == "c":
                this_actor.execute(op[1] * speed)
                continue
            if kind == "p":
                now = Engine.clock
                st.phase_t[st.phase] = st.phase_t.get(st.phase, 0.0) + now - mark
                mark, st.phase = now, op[1]
                continue
            t0 = Engine.clock
            if st.rma.batch and kind in "wkry":   # the progress engine idles: batches leave
                rma.post_all_batches(st)
            if kind == "s":                       # s, fn, op id, peer, tag, cid, bytes(, lag)
                oid, peer, tag, cid, size = op[2:7]
                dst = st.lay.send_peer(st.r, st.t, peer)
                st.pending[oid] = send(st, dst, p2p_name(cid, st.r, dst, tag), size,
                                       lag=op[7] if len(op) > 7 else 0.0)
                st.remote[oid] = st.lay.site(dst) != st.lay.site(st.r)
            elif kind == "r":                     # r, ... as s (bytes: what arrived)
                _, fn, oid, peer, tag, cid, size = op
                src = st.lay.recv_peer(st.r, st.t, peer)
                st.pending[oid] = recv(p2p_name(cid, src, st.r, tag), size, st.eager,
                                       hdr(src, st.r))
                st.remote[oid] = st.lay.site(src) != st.lay.site(st.r)
            elif kind == "w":                     # w, fn, [op ids]
                _, fn, oids = op
                remote = False
                for oid in oids:
                    c = st.pending.pop(oid, None)
                    remote |= st.remote.pop(oid, False)
                    if c is not None:
                        c.wait()
                account(st, f"{fn} ({'cross-site' if remote else 'in-site'})",
                        Engine.clock - t0, remote)
            elif kind == "k":                     # k, fn, coll kind, cid, root, bytes
                _, fn, ckind, cid, root, size = op
                comm = st.comms[str(cid)]
                members = st.lay.members(st.r, st.t, comm, cid)
                inst = st.lay.comm_instance(st.r, st.t, comm, cid)
                rootg = st.lay.map_member(st.r, st.t, comm, root) if root >= 0 else -1
                steps = schedule(ckind, inst, members, rootg, st.r, st.lay.site, size)
                remote = False
                for step in steps:
                    comms = []
                    for (to, nbytes) in step.sends:
                        # always eager: isthmus's collective schedules stream their
                        # rounds, and both sides then agree without knowing each
                        # other's sizes (a gatherv's differ)
                        c = send(st, to, f"k{inst}:{st.r}>{to}", nbytes, eager=True)
                        remote |= st.lay.site(to) != st.lay.site(st.r)
                        if c is not None:
                            comms.append(c)
                    for frm in step.recvs:
                        comms.append(recv(f"k{inst}:{frm}>{st.r}", 0, 0))
                        remote |= st.lay.site(frm) != st.lay.site(st.r)
                    for c in comms:
                        c.wait()
                account(st, f"{fn} {_size_class(size)}", Engine.clock - t0, remote)
            elif kind == "a":                     # a, fn, op, win, target, out, back, op id
                _, fn, name, win, target, out, back, oid = op
                leg, remote = rma.operation(st, name, win, target, out, back)
                if oid:
                    st.pending[oid] = leg
                    st.remote[oid] = remote
            elif kind == "y":                     # y, fn, op, win, targets, flags
                _, fn, name, win, targets, flags = op
                remote = rma.sync(st, name, win, targets, bool(flags & RMA_NOCHECK),
                                  bool(flags & RMA_DONE), bool(flags & RMA_EXCL))
                account(st, f"{fn} ({'cross-site' if remote else 'in-site'})",
                        Engine.clock - t0, remote)
        now = Engine.clock
        st.phase_t[st.phase] = st.phase_t.get(st.phase, 0.0) + now - mark
        results[st.r] = {"end": now - start, "phases": st.phase_t, "patterns": st.patterns,
                         "timeline": st.timeline}

    wall = time.monotonic()
    for r in range(lay.size):
        host = e.host_by_name(lay.host(r))
        actors[r] = Actor.create(f"rank{r}", host, body, Rank(job, lay, r))
    e.run()
    wall = time.monotonic() - wall
    missing = [r for r, x in enumerate(results) if x is None]
    if missing:
        raise RuntimeError(f"ranks {missing[:8]} never finished their replay (a receive without "
                           "its send: a trace with lost records, or a pattern the replay "
                           "cannot map)")
    return {"end": max(x["end"] for x in results), "ranks": lay.size,
            "sim_seconds": wall, "per_rank": _reduce(results),
            "restarts": sum(r.restarts for r in ramps.values()),
            "timelines": [x["timeline"] for x in results] if job.get("timeline") else None}


class _Recv:
    """An eager receive posted (sender and receiver agree on eager or not: the trace
    recorded what arrived). SimGrid writes the payload into the PyGetAsync, so it must
    live until the Comm completes."""

    def __init__(self, Mailbox, name: str):
        self.comm, self.slot = Mailbox.by_name(name).get_async()

    def wait(self) -> None:
        self.comm.wait()


def _size_class(n: int) -> str:
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:g} {unit}"
    return f"{n} B"


def _reduce(results: list) -> dict:
    """Per phase: the longest any rank spent in it; per pattern: calls, blocked seconds
    summed over ranks, and how many of its calls crossed sites."""
    phases: dict[str, float] = {}
    patterns: dict[str, list] = {}
    for x in results:
        for ph, t in x["phases"].items():
            phases[str(ph)] = max(phases.get(str(ph), 0.0), t)
        for key, (n, t, rem) in x["patterns"].items():
            p = patterns.setdefault(key, [0, 0.0, 0])
            p[0] += n
            p[1] += t
            p[2] += rem
    return {"phases": phases, "patterns": patterns}


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python3 -m isthmus.whatif.engine JOB.json RESULT.json", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        job = json.load(f)
    out = run(job)
    with open(argv[2], "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
