# isthmus/whatif/tcp.py: what TCP adds on a gateway's WAN connection that SimGrid's CM02
# (latency + size / bandwidth, max-min sharing) leaves out. Two costs, both from the link's
# own description, nothing fitted:
#
# - Headers. The link's rate counts whole packets (netem's rate, a real link's line rate)
#   and a gateway's TCP segment carries at most MSS = MTU - 52 payload bytes (IPv4 20, TCP
#   20, timestamps 12) in MTU + 14 bytes on the wire (Ethernet header), so the payload
#   moves at rate x MSS / (MTU + 14): 95.6 % of it at MTU 1500.
# - Slow start after idle. Linux (net.ipv4.tcp_slow_start_after_idle = 1, the default)
#   restarts a connection's congestion window when it has sent nothing for one
#   retransmission timeout (RTO: RTT + 200 ms, the minimum variance term): the window is
#   halved per RTO idle, down to the initial window (10 segments, RFC 6928), and then
#   grows by what is acknowledged, doubling per round trip, until it covers the
#   bandwidth-delay product. A message sent meanwhile waits for the round trips. The
#   gateways' connections sit idle through MPI_Init's clock alignment and between phases,
#   so the first exchanges of a run pay it (bench/notebook/whatif.md). Linux skips the
#   restart for a congestion control with its own cong_control (BBR); the gateways run
#   cubic on a described loss-free link (native/src/gateway/tune.c), as assumed here.
#
# - Pacing. With a described rate the gateways set SO_MAX_PACING_RATE on each connection
#   (native/src/gateway/tune.c), and `isthmus run --wan-matrix` describes every link by the
#   matrix's slowest rate (platform.py, gateway_pace). Setting it turns on TCP's own pacing
#   (sk_pacing_status), and Linux then paces at a rate of its own, capped there:
#   tcp_update_pacing_rate, 2 x cwnd x MSS / srtt in slow start (net.ipv4.
#   tcp_pacing_ss_ratio = 200 %), which is the cwnd-limited regime here (the links lose
#   nothing). A window's worth of segments thus leaves over half a round trip, not at
#   once: with the initial window of 10 segments, 480 kB/s on a 60 ms round trip however
#   fast the link (`ss -tin` in the site namespaces during a run: pacing_rate 3.8 Mbit/s,
#   cwnd 10, on the modern matrix's 200 Mbit/s link; bench/notebook/whatif.md, run 7).
#   Linux paces per TSO frame of about 1 ms of the rate, at least 2 segments
#   (net.ipv4.tcp_min_tso_segs): a frame leaves no sooner than the previous one's length
#   at the rate after it (half of it for the first frame after idle: the kernel's credit
#   for a sender behind its schedule), so a message alone leaves at once and a backlog
#   drains at the pace. tcpdump: 100 B, then 812 B 0.1 ms later, then TSO frames of
#   2 x 1448 B every 7.3 ms (2 x 10 x 1448 B / 73 ms srtt).
# - The window counts segments, not bytes, and grows only while the connection is
#   cwnd-limited: in slow start Linux adds one segment per segment acknowledged while
#   cwnd < 2 x the segments in flight (tcp_is_cwnd_limited). Connections that only ever
#   carry small messages stay at 10 segments (the run's samples: cwnd 10 through
#   MPI_Init and the set-up), and a segment carries what was queued when it left: bytes
#   written while the pacing holds the previous one coalesce into it, up to the MSS.
# - The gateways' ACK frames. Each frame carries the receiving side's acknowledgement,
#   and a gateway that has received frames and sends none back writes an explicit ACK
#   frame (80 bytes) after 8 frames, or at once when its last acknowledgement is 2 ms old,
#   else 2 ms after it (native/src/gateway/session.c, GW_ACK_EVERY, GW_ACK_DELAY_MS).
#   Written one at a time as the segments arrive, each mostly takes a segment of the way
#   back: 183 ACK frames beside 320 data frames from A to B in the naive aggregate's
#   timed steps. They fill the window of a connection whose own messages then wait.
#   A Ramp and the one of the opposite direction (its peer) write each other's.
#
# One Ramp per direction of a WAN link (a gateway's connection to the next site's): a small
# simulation of that connection's segments (sent, in flight, acknowledged a round trip
# later). The replay (engine.py) asks it, for each message that crosses, how long the
# window and the pacing hold the message back beyond what the link's bandwidth would.
# Stdlib only (see engine.py).
from __future__ import annotations

from collections import deque

IW_SEGMENTS = 10          # Linux's initial (and restart) window, RFC 6928
RTO_MIN = 0.200           # Linux's TCP_RTO_MIN: the RTO is srtt + max(4 rttvar, 200 ms)
HEADERS = 52              # IPv4 + TCP + timestamp option, per segment
L2 = 14                   # Ethernet header, counted by a rate limiter on the interface
TSO_MIN_SEGS = 2          # net.ipv4.tcp_min_tso_segs: the least a paced TSO frame carries
ACK_FRAME = 48 + 32       # a gateway's ACK frame: frame header and link header, no payload
ACK_EVERY = 8             # session.c GW_ACK_EVERY: frames received before an ACK at once
ACK_DELAY = 0.002         # session.c GW_ACK_DELAY_MS: least time between two ACKs otherwise


def mss(mtu: int) -> int:
    return max(mtu - HEADERS, 1)


def goodput_share(mtu: int) -> float:
    """The share of a link's rate that carries payload: MSS / (MTU + L2)."""
    return mss(mtu) / (mtu + L2)


class _Conn:
    """The sender's side of one connection at some moment: what a Ramp simulates forward.
    Times in seconds, window and flight in segments, backlog in bytes."""

    __slots__ = ("cwnd", "out", "peak", "flight", "backlog", "written", "sent", "free",
                 "last", "wrote", "ends")

    def __init__(self) -> None:
        self.cwnd = IW_SEGMENTS          # congestion window
        self.out = 0                     # segments sent and not yet acknowledged
        self.peak = 0                    # the most in flight since the flight was last empty
        self.flight: deque = deque()     # (acknowledged at, segments)
        self.backlog = 0.0               # bytes written and not yet sent
        self.written = 0.0               # bytes written since the connection began
        self.sent = 0.0                  # of which sent
        self.free = float("-inf")        # when the pacing (and the link) let the next frame go
        self.last = float("-inf")        # when data was last sent (Linux's lsndtime)
        self.wrote = float("-inf")       # when bytes were last written (the backlog's newest)
        self.ends: deque = deque()       # where each data frame not yet sent ends (written)

    def copy(self) -> "_Conn":
        c = _Conn.__new__(_Conn)
        for k in _Conn.__slots__:
            setattr(c, k, getattr(self, k))
        c.flight = deque(self.flight)
        c.ends = deque(self.ends)
        return c


class Ramp:
    """One direction's connection: its congestion window in segments as slow start (after
    idle, and while cwnd-limited) moves it, and its pacing. rtt: the round trip (both
    directions' delays), rate: payload bytes/s of the link (0: unlimited), pace: payload
    bytes/s of SO_MAX_PACING_RATE (0: not set, so TCP does not pace at all), oneway: this
    direction's delay (half the round trip if not given). Pair it with the opposite
    direction's (pair()) to have each write the other's ACK frames."""

    def __init__(self, rtt: float, rate: float, mtu: int = 1500, pace: float = 0.0,
                 oneway: float | None = None):
        self.rtt = rtt
        self.rate = rate if rate > 0 else float("inf")
        self.paced = pace > 0
        self.cap = min(pace, self.rate) if pace > 0 else self.rate
        self.mss = mss(mtu)
        self.rto = rtt + RTO_MIN
        self.oneway = rtt / 2 if oneway is None else oneway
        self.c = _Conn()
        self.bw_done = float("-inf")     # when the bytes would have left at the link's rate
        self.restarts = 0
        # ACK frames (see the top): the opposite direction, whose frames this one
        # acknowledges; their arrivals here (time, frames), not yet taken; frames received
        # and not acknowledged; when the last acknowledgement went; how far in time
        # this direction's frames and ACKs are settled
        self.peer: Ramp | None = None
        self.arrivals: deque = deque()
        self.owed = 0
        self.acked = float("-inf")
        self.due = float("inf")
        self.settled = float("-inf")
        self.acks_sent = 0
        self._pk: tuple | None = None    # _peek's answer while the state stands
        # the last message's forward simulation, kept while bytes wait: the connection
        # before its last frame, and when that frame leaves (None: more bytes since).
        # The next message goes on from there instead of simulating the whole backlog
        # again, which made a burst of n messages cost n^2 / 2 frames.
        self.proj: tuple | None = None

    def pacing_rate(self, c: _Conn) -> float:
        """Bytes/s at which Linux paces: 2 x cwnd x MSS / srtt in slow start (the window is
        the larger of cwnd and what is in flight), at most SO_MAX_PACING_RATE."""
        return min(self.cap, 2.0 * max(c.cwnd, c.out) * self.mss / self.rtt)

    def _acks(self, c: _Conn, t: float) -> None:
        """Take the acknowledgements that have arrived by t; in slow start each segment
        acknowledged grows the window by one while the connection is cwnd-limited:
        cwnd < 2 x the most in flight (tcp_is_cwnd_limited, with the most since the flight
        was last empty for Linux's max_packets_out over the last window)."""
        while c.flight and c.flight[0][0] <= t:
            _, segs = c.flight.popleft()
            c.out -= segs
            if 2 * c.peak > c.cwnd:
                c.cwnd += segs
            if c.out == 0:
                c.peak = 0

    def _next(self, c: _Conn, after: float) -> tuple[float, float, int]:
        """Send the next frame of the backlog, no sooner than `after`: (when it left, when
        its last byte was on the link, how many data frames it completed)."""
        t = max(after, c.free)
        self._acks(c, t)
        while c.out >= c.cwnd:          # window full: wait for the first acknowledgement
            t = max(t, c.flight[0][0])
            self._acks(c, t)
        # a TSO frame is about 1 ms of the pacing rate, which Linux computes (and sizes
        # frames by) whether or not it paces (tcp_tso_autosize)
        pace = self.pacing_rate(c)
        tso = max(TSO_MIN_SEGS, int(pace / 1024 / self.mss))
        segs = min(-(-int(c.backlog) // self.mss) or 1, c.cwnd - c.out, tso)
        n = min(c.backlog, segs * self.mss)
        wire = n / self.rate
        c.out += segs
        c.peak = max(c.peak, c.out)
        c.flight.append((t + wire + self.rtt, segs))
        c.backlog -= n
        c.sent += n
        if self.paced:
            # tcp_update_skb_after_send: the next frame waits this one's length at the
            # pacing rate, less up to half of it when the sender was behind its schedule
            # (after idle: the "OS jitter" credit)
            gap = n / pace
            gap -= min(gap / 2, max(0.0, t - c.free))
            c.free = t + max(gap, wire)
        else:
            c.free = t + wire
        c.last = t
        done = 0
        while c.ends and c.ends[0] <= c.sent:
            c.ends.popleft()
            done += 1
        return t, t + wire, done

    def _write(self, now: float, nbytes: float, frame: bool) -> None:
        """Bytes written to the connection at `now`: a data frame (which carries the
        acknowledgement of what this side received) or an ACK frame."""
        c = self.c
        waiting = c.backlog > 0
        idle = now - c.last
        if c.out == 0 and c.backlog == 0 and idle > self.rto:
            # tcp_cwnd_restart: halve per RTO idle, not below min(initial window, cwnd)
            restart = min(IW_SEGMENTS, c.cwnd)
            w, left = c.cwnd, idle - self.rto
            while left > 0 and w > restart:
                w //= 2
                left -= self.rto
            c.cwnd = max(w, restart)
            self.restarts += 1
        c.backlog += nbytes
        c.written += nbytes
        c.wrote = now
        if frame:
            c.ends.append(c.written)
        self.owed, self.acked, self.due = 0, now, float("inf")
        self._pk = None
        if not waiting or self.proj is None:
            self.proj = None
            return
        # the bytes join the projection: after its last frame if that has left by now
        # (no restart: bytes were waiting, so the connection was not idle)
        f, leaves = self.proj
        if leaves is not None and leaves < now:
            self._next(f, f.wrote)
        f.backlog += nbytes
        f.written += nbytes
        f.wrote = now
        if frame:
            f.ends.append(f.written)
        self.proj = (f, None)

    def _arrive(self, t: float) -> None:
        """Take the opposite direction's frames that arrived here by t: an ACK frame
        after ACK_EVERY of them, or once the last acknowledgement is ACK_DELAY old."""
        while self.arrivals and min(self.arrivals[0][0], self.due) <= t:
            if self.due < self.arrivals[0][0]:
                self._write(self.due, ACK_FRAME, False)
                self.acks_sent += 1
                continue
            ta, n = self.arrivals.popleft()
            self.owed += n
            if self.owed >= ACK_EVERY or ta - self.acked >= ACK_DELAY:
                self._write(ta, ACK_FRAME, False)
                self.acks_sent += 1
            elif self.due == float("inf"):
                self.due = self.acked + ACK_DELAY
        if self.due <= t:
            self._write(self.due, ACK_FRAME, False)
            self.acks_sent += 1

    def _peek(self) -> tuple:
        """The next frame this direction would send: (when it leaves, the state after,
        when its last byte is on the link, data frames completed); cached until the
        state changes."""
        if self._pk is None:
            c = self.c
            if c.backlog <= 0:
                self._pk = (float("inf"), None, 0.0, 0)
            else:
                f = c.copy()
                left, on_wire, done = self._next(f, c.wrote)
                self._pk = (left, f, on_wire, done)
        return self._pk

    def settle(self, t: float) -> None:
        """Send what left by t, this direction's frames and the opposite one's, with the
        ACK frames each writes meanwhile, in time order (each direction's arrivals are
        the other's ACK frames)."""
        if t < self.settled:
            return
        both = [self] if self.peer is None else [self, self.peer]
        for r in both:
            r.settled = max(r.settled, t)
        while True:
            first, what, who = float("inf"), None, None
            for r in both:
                left = r._peek()[0]
                ack_at = min(r.arrivals[0][0] if r.arrivals else float("inf"), r.due)
                if left < first and left <= ack_at:
                    first, what, who = left, "send", r
                elif ack_at < first:
                    first, what, who = ack_at, "ack", r
            if first > t:
                break
            if what == "send":
                _, f, on_wire, done = who._pk
                who.c, who._pk = f, None
                if done and who.peer is not None:
                    who.peer.arrivals.append((on_wire + who.oneway, done))
            else:
                who._arrive(first)
        for r in both:
            r._acks(r.c, t)
            r._pk = None

    def delay(self, now: float, nbytes: int) -> float:
        """A message of nbytes handed to the connection at `now`: how long to hold it
        back so that, sent alone at the link's rate, its last byte leaves when the window
        and the pacing let it. 0 when they do not limit: the bandwidth's own queueing
        (bytes ahead of it) is the simulated link's to count."""
        self.settle(now)
        self._write(now, nbytes, True)
        c = self.c
        f, done = (self.proj[0] if self.proj is not None else c.copy()), now
        before, leaves = None, None
        while f.sent < c.written:
            # the state before what may be the last frame (a frame is at most 64 segments)
            snap = f.copy() if f.backlog <= 64 * self.mss else None
            left, done, _ = self._next(f, now)
            if snap is not None:
                before, leaves = snap, left
        self.proj = (before, leaves) if before is not None else None
        self.bw_done = max(now, self.bw_done) + nbytes / self.rate
        if done <= self.bw_done + 1e-12:       # (rounding)
            return 0.0
        return max(0.0, done - now - nbytes / self.rate)


def pair(ramps: dict) -> dict:
    """Make each direction (i, j) of ramps the peer of (j, i): each writes the ACK frames
    of what the other carries. Returns ramps."""
    for (i, j), r in ramps.items():
        r.peer = ramps.get((j, i))
    return ramps
