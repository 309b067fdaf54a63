# isthmus/whatif/rma.py: one-sided communication in the replay (engine.py), as isthmus does
# it on the wire (docs/design.md, "One-sided communication"):
#
# - A remote operation is applied by the target's progress helper, not by the target's
#   program, so the target's replay never waits for it: the origin's actor moves the
#   bytes between the two hosts itself (SimGrid's host-to-host Comm.sendto, no mailbox).
# - get, get_accumulate, fetch_and_op, compare_and_swap: a request (with the data that go
#   to the target) and a reply with the bytes back, in a helper actor on the origin's
#   host; it is waited for where MPI completes the operation (flush, unlock, fence,
#   complete, flush_local, or the request's wait).
# - put, accumulate: the bytes leave at the call. Small puts (up to ISTHMUS_RMA_BATCH, 4
#   KiB) wait in a batch per target that leaves with the next frame to that target.
# - Passive target: MPI_Win_lock to a target at another site is one round trip (LOCK,
#   GRANT); unlock and flush are one round trip (UNLOCK/FLUSH, ACK) whose answer leaves
#   once the frame and every byte sent to that target before it have arrived; lock_all,
#   unlock_all and flush_all send to every member at another site at once, so their
#   round trips overlap. MPI_MODE_NOCHECK takes no lock. flush_local waits only for the
#   replies on their way. A target of the same site is the vendor's: the same moves over
#   the site network. The target itself costs nothing.
# - Active target: a fence is one exchange with every member at another site (FENCE);
#   post/start and complete/wait are point-to-point messages, as isthmus sends them.
#   Puts of such an epoch to another site are messages the target collects in its fence
#   or wait: the closing message carries how many there were, so the target's epoch ends
#   when the last of them has arrived, as the order of frames on the link makes it.
#
# - Locks: each target's lock word (per window) holds readers and a writer; a request that
#   cannot be granted when it arrives waits in the target's queue, first come first served,
#   and is granted (its GRANT leaves) when the UNLOCK that frees the word arrives. Origins
#   of the target's own site take the word without a frame (the vendor's atomics).
#
# Not modelled: the vendor's barrier in a fence within each site, and the order of frames
# of one pair:
# each frame is a flow of its own, so a small frame may overtake a large one that left
# before it. Stdlib only (see engine.py); SimGrid's classes come from the engine.
from __future__ import annotations

RMA_BATCH = 4096       # ISTHMUS_RMA_BATCH: puts up to this many bytes are batched
BATCH_MAX = 1 << 20    # a batch is posted before it would outgrow one chunk
SEGMENT = 16           # bytes of segment description per batched put (PUTV)
FETCHING = ("get", "gacc", "fop", "cas")


class Leg:
    """Something in flight: a host-to-host Comm, or a helper actor moving bytes."""

    def __init__(self, comm=None, actor=None):
        self.comm, self.actor = comm, actor

    def wait(self) -> None:
        if self.comm is not None:
            self.comm.wait()
        if self.actor is not None:
            self.actor.join()


class LockWord:
    """A target's lock word in one window, and the requests waiting for it."""

    def __init__(self):
        self.readers = 0
        self.writer = False
        self.queue: list = []                   # (exclusive, Semaphore) in arrival order

    def free_for(self, excl: bool) -> bool:
        return not self.writer and (not excl or self.readers == 0)

    def take(self, excl: bool) -> None:
        if excl:
            self.writer = True
        else:
            self.readers += 1


class RankRma:
    """One simulated rank's one-sided state."""

    def __init__(self):
        self.locked: dict[tuple, tuple] = {}    # (win, target) -> (nocheck, exclusive)
        self.lock_all: dict[str, bool] = {}     # win -> nocheck
        self.out: dict[tuple, list] = {}        # (win, target) -> data in flight (passive)
        self.batch: dict[tuple, int] = {}       # (win, target) -> bytes of small puts held
        self.replies: dict[str, list] = {}      # win -> [(target, Leg)] of fetching ops
        self.epoch: dict[tuple, int] = {}       # (win, target) -> data messages this epoch
        self.posted: dict[str, list] = {}       # win -> origins of the exposure epoch
        self.started: dict[str, list] = {}      # win -> targets of the access epoch


class Rma:
    """The one-sided operations of every simulated rank (engine.run makes one)."""

    def __init__(self, sg, lay, hosts, hdr, held, eager_put, actors, frames):
        self.Actor, self.Comm, self.Mailbox, self.this_actor, self.Semaphore = sg
        self.words: dict[tuple, LockWord] = {}  # (win, target) -> its lock word
        self.lay, self.hosts, self.hdr, self.held = lay, hosts, hdr, held
        self.eager_put, self.actors, self.frames = eager_put, actors, frames

    # ---- moving bytes ----

    def _move(self, src: int, dst: int, size: int, hold: float | None = None) -> None:
        """size bytes from src's host to dst's, after what the sending connection's window
        holds back (tcp.py, asked here unless given); blocking."""
        if hold is None:
            hold = self.held(src, dst, size)
        if hold > 0:
            self.this_actor.sleep_for(hold)
        self.Comm.sendto(self.hosts(src), self.hosts(dst), size)

    def _wire(self, src: int, dst: int, payload: int) -> int:
        """Bytes on the wire of a frame (or frames) carrying payload between two ranks; at
        least 1: SimGrid starts an asynchronous transfer of 0 bytes only when it is waited
        for (3.32, found here: a FLUSH sent with the put before it took one delay more)."""
        return max(1, payload + self.frames(payload) * self.hdr(src, dst))

    def _send_leg(self, src: int, dst: int, size: int) -> Leg:
        hold = self.held(src, dst, size)      # asked once: the window counts the bytes
        if hold > 0:
            return Leg(actor=self.Actor.create("rma-put", self.hosts(src), self._move, src,
                                               dst, size, hold))
        return Leg(comm=self.Comm.sendto_async(self.hosts(src), self.hosts(dst), size))

    def _round_trip(self, me: int, dst: int, out: int, back: int, before: list,
                    at_target=None) -> None:
        """A frame of `out` bytes to dst and the answer of `back` bytes, which leaves once
        the frame and everything in `before` (sent to dst earlier) have arrived, and
        at_target(dst) (taking or freeing a lock word) has returned."""
        fwd = self._wire(me, dst, out)
        hold = self.held(me, dst, fwd)
        if hold > 0:
            self.this_actor.sleep_for(hold)
        c = self.Comm.sendto_async(self.hosts(me), self.hosts(dst), fwd)
        for leg in before:
            leg.wait()
        c.wait()
        if at_target is not None:
            at_target(dst)
        self._move(dst, me, self._wire(dst, me, back))

    def _round_trips(self, st, win: str, dsts: list[int], at_target=None) -> None:
        """One round trip to each of dsts, all at once (the answers after what was sent to
        each before); the batches held for them go first, in the same frames' stream."""
        work = []
        for d in dsts:
            extra = self._take_batch(st, win, d)
            work.append((d, extra, st.rma.out.pop((win, d), [])))
        if len(work) == 1:
            d, extra, before = work[0]
            self._round_trip(st.r, d, extra, 0, before, at_target)
            return
        helpers = [self.Actor.create("rma-sync", self.this_actor.get_host(), self._round_trip,
                                     st.r, d, extra, 0, before, at_target)
                   for d, extra, before in work]
        for h in helpers:
            h.join()

    def _take_batch(self, st, win: str, dst: int) -> int:
        """The bytes of the small puts held for dst (0 if none), now leaving."""
        return st.rma.batch.pop((win, dst), 0)

    def _post_batch(self, st, win: str, dst: int) -> None:
        n = self._take_batch(st, win, dst)
        if n:
            st.rma.out.setdefault((win, dst), []).append(
                self._send_leg(st.r, dst, self._wire(st.r, dst, n)))

    def post_all_batches(self, st) -> None:
        """The progress engine posts the held batches when it idles (any wait)."""
        for (win, dst) in list(st.rma.batch):
            if (win, dst) in st.rma.locked or win in st.rma.lock_all:
                self._post_batch(st, win, dst)

    def _wait_replies(self, st, win: str, dst: int | None = None) -> None:
        keep = []
        for d, leg in st.rma.replies.pop(win, []):
            if dst is None or d == dst:
                leg.wait()
            else:
                keep.append((d, leg))
        if keep:
            st.rma.replies[win] = keep

    def _members(self, st, win: str) -> list[int]:
        gid = win.split(".", 1)[0]
        return self.lay.members(st.r, st.t, st.comms[gid], int(gid))

    def _remote_members(self, st, win: str) -> list[int]:
        return [m for m in self._members(st, win) if self.lay.site(m) != self.lay.site(st.r)]

    # ---- lock words ----

    def _acquire(self, win: str, dst: int, excl: bool) -> None:
        """Take dst's lock word, or wait in its queue until an unlock grants it."""
        w = self.words.setdefault((win, dst), LockWord())
        if not w.queue and w.free_for(excl):
            w.take(excl)
            return
        sem = self.Semaphore(0)
        w.queue.append((excl, sem))
        sem.acquire()

    def _release(self, win: str, dst: int, excl: bool) -> None:
        w = self.words.setdefault((win, dst), LockWord())
        if excl:
            w.writer = False
        else:
            w.readers = max(0, w.readers - 1)
        while w.queue and w.free_for(w.queue[0][0]):
            e, sem = w.queue.pop(0)
            w.take(e)
            sem.release()

    # ---- operations ----

    def operation(self, st, op: str, win: str, target: int, out: int, back: int):
        """An MPI_Put, MPI_Get, ...: what to wait for to complete it (a request form), or
        None. Returns (leg or None, crosses sites)."""
        dst = self.lay.send_peer(st.r, st.t, target)
        remote = self.lay.site(dst) != self.lay.site(st.r)
        if dst == st.r:
            return None, False
        key = (win, dst)
        passive = key in st.rma.locked or win in st.rma.lock_all
        if op in FETCHING:
            self._post_batch(st, win, dst)
            leg = Leg(actor=self.Actor.create("rma-get", self.this_actor.get_host(),
                                              self._round_trip, st.r, dst, out, back,
                                              st.rma.out.pop(key, []) if passive else []))
            st.rma.replies.setdefault(win, []).append((dst, leg))
            return leg, remote
        if not passive:
            self._epoch_data(st, win, dst, out)
            return None, remote
        if op == "put" and out <= RMA_BATCH:
            held = st.rma.batch.get(key, 0)
            if held + out + SEGMENT > BATCH_MAX:
                self._post_batch(st, win, dst)
                held = 0
            st.rma.batch[key] = held + out + SEGMENT
            return None, remote
        self._post_batch(st, win, dst)
        st.rma.out.setdefault(key, []).append(self._send_leg(st.r, dst,
                                                             self._wire(st.r, dst, out)))
        return None, remote

    def _epoch_data(self, st, win: str, dst: int, out: int) -> None:
        """Data of an active-target epoch: a message the target collects when its epoch
        ends (counted for a target at another site; one of this site is not waited for)."""
        size = self._wire(st.r, dst, out)
        self.eager_put(self.Mailbox, f"D{win}:{st.r}>{dst}", 0, size, self.actors[dst])
        if self.lay.site(dst) != self.lay.site(st.r):
            st.rma.epoch[(win, dst)] = st.rma.epoch.get((win, dst), 0) + 1

    def _close_to(self, st, kind: str, win: str, dst: int) -> None:
        """The message that ends an epoch towards dst (FENCE, COMPLETE): it carries how
        many data messages went to dst in it."""
        n = st.rma.epoch.pop((win, dst), 0)
        self.eager_put(self.Mailbox, f"{kind}{win}:{st.r}>{dst}", n,
                       self._wire(st.r, dst, 0), self.actors[dst])

    def _close_from(self, st, kind: str, win: str, src: int) -> None:
        n = self.Mailbox.by_name(f"{kind}{win}:{src}>{st.r}").get()
        data = self.Mailbox.by_name(f"D{win}:{src}>{st.r}")
        for _ in range(int(n or 0)):
            data.get()

    # ---- synchronisation ----

    def sync(self, st, op: str, win: str, targets: list[int], nocheck: bool, done: bool,
             excl: bool = False) -> bool:
        """A synchronisation call, blocking as long as isthmus's does; returns whether it
        waited on another site."""
        me = st.r
        peers = [self.lay.send_peer(me, st.t, t) for t in targets]
        dst = peers[0] if peers else None
        if op == "lock":
            st.rma.locked[(win, dst)] = (nocheck, excl)
            if nocheck:
                return False
            if self.lay.site(dst) == self.lay.site(me):   # the vendor's atomics, no frame
                self._acquire(win, dst, excl)
                return False
            self._round_trips(st, win, [dst], lambda d: self._acquire(win, d, excl))
            return True
        if op in ("unlock", "flush"):
            held = st.rma.locked.pop((win, dst), (True, False)) if op == "unlock" else None
            free = None if held is None or held[0] else \
                (lambda d: self._release(win, d, held[1]))
            if dst != me:
                self._round_trips(st, win, [dst], free)
            elif free is not None:
                free(dst)
            self._wait_replies(st, win, dst)
            return dst != me and self.lay.site(dst) != self.lay.site(me)
        if op == "lock_all":
            st.rma.lock_all[win] = nocheck
            if nocheck:
                return False
            remote = self._remote_members(st, win)
            for m in self._members(st, win):
                if m not in remote:
                    self._acquire(win, m, False)
            if remote:
                self._round_trips(st, win, remote, lambda d: self._acquire(win, d, False))
            return bool(remote)
        if op in ("unlock_all", "flush_all"):
            nocheck_all = st.rma.lock_all.pop(win, True) if op == "unlock_all" else True
            remote = self._remote_members(st, win)
            if not nocheck_all:
                for m in self._members(st, win):
                    if m not in remote:
                        self._release(win, m, False)
            for (w, d) in list(st.rma.batch):     # those of this site: the vendor's flush
                if w == win and d not in remote:
                    self._post_batch(st, w, d)
            if remote:
                self._round_trips(st, win, remote, None if nocheck_all else
                                  (lambda d: self._release(win, d, False)))
            for (w, d) in list(st.rma.out):
                if w == win:
                    for leg in st.rma.out.pop((w, d)):
                        leg.wait()
            self._wait_replies(st, win)
            return bool(remote)
        if op in ("flush_local", "flush_local_all"):
            self._wait_replies(st, win)
            return False
        if op == "fence":
            self._wait_replies(st, win)
            remote = self._remote_members(st, win)
            for m in remote:
                self._close_to(st, "F", win, m)
            for m in remote:
                self._close_from(st, "F", win, m)
            return bool(remote)
        if op == "post":
            for p in peers:
                if p != me:                     # its own exposure: no message (win.c)
                    self.eager_put(self.Mailbox, f"P{win}:{me}>{p}", 0, self._wire(me, p, 0),
                                   self.actors[p])
            st.rma.posted[win] = [self.lay.recv_peer(me, st.t, t) for t in targets]
            return False
        if op == "start":
            srcs = [self.lay.recv_peer(me, st.t, t) for t in targets]
            for s in srcs:
                if s != me:
                    self.Mailbox.by_name(f"P{win}:{s}>{me}").get()
            st.rma.started[win] = peers
            return any(self.lay.site(s) != self.lay.site(me) for s in srcs)
        if op == "complete":
            self._wait_replies(st, win)
            started = st.rma.started.pop(win, [])
            for p in started:
                if p != me:
                    self._close_to(st, "C", win, p)
            return False
        if op in ("wait", "test") and (op == "wait" or done):
            origins = st.rma.posted.pop(win, [])
            for s in origins:
                if s != me:
                    self._close_from(st, "C", win, s)
            return any(self.lay.site(s) != self.lay.site(me) for s in origins)
        return False                            # sync, a test that found the epoch open
