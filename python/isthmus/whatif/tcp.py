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
# - Pacing. With a described rate the gateways cap each connection's sending rate
#   (SO_MAX_PACING_RATE, native/src/gateway/tune.c), and `isthmus run --wan-matrix`
#   describes every link by the matrix's slowest rate (platform.py, gateway_pace). Linux
#   paces per TSO frame (at least 2 segments): a frame leaves no sooner than the previous
#   one's length at the pace after it, so a message alone goes at once and a backlog
#   drains at the pace, however fast the link beneath.
#
# One Ramp per direction of a WAN link (a gateway's connection to the next site's); the
# replay (engine.py) asks it, for each message that crosses, how long the window holds
# the message back beyond what the link's bandwidth would. Stdlib only (see engine.py).
from __future__ import annotations

IW_SEGMENTS = 10          # Linux's initial (and restart) window, RFC 6928
RTO_MIN = 0.200           # Linux's TCP_RTO_MIN: the RTO is srtt + max(4 rttvar, 200 ms)
HEADERS = 52              # IPv4 + TCP + timestamp option, per segment
L2 = 14                   # Ethernet header, counted by a rate limiter on the interface
TSO_MIN_SEGS = 2          # net.ipv4.tcp_min_tso_segs: the least a paced TSO frame carries


def mss(mtu: int) -> int:
    return max(mtu - HEADERS, 1)


def goodput_share(mtu: int) -> float:
    """The share of a link's rate that carries payload: MSS / (MTU + L2)."""
    return mss(mtu) / (mtu + L2)


class Ramp:
    """One direction's congestion window, as slow start after idle moves it, and its
    pacing. rtt: the round trip (both directions' delays), rate: payload bytes/s (0:
    unlimited), pace: payload bytes/s the sender paces at (0: not paced)."""

    def __init__(self, rtt: float, rate: float, mtu: int = 1500, pace: float = 0.0):
        self.rtt = rtt
        self.rate = rate if rate > 0 else float("inf")
        self.pace = pace if pace > 0 else float("inf")
        # the unit Linux paces: a TSO frame of ~1 ms of the pace, at least 2 segments
        # (tcp_tso_autosize: sk_pacing_shift 10, net.ipv4.tcp_min_tso_segs 2)
        self.burst = mss(mtu) * max(TSO_MIN_SEGS, int(self.pace / 1024 / mss(mtu))
                                     if pace > 0 else TSO_MIN_SEGS)
        self.paced_free = float("-inf")  # when the pacing lets the next packet leave
        self.iw = IW_SEGMENTS * mss(mtu)
        self.rto = rtt + RTO_MIN
        self.bdp = rtt * self.rate       # window that fills the link (inf: never)
        self.cwnd = float(self.iw)       # window when the burst began
        self.start = float("-inf")       # when the current burst began (window cwnd then)
        self.sent = 0.0                  # bytes given to the connection since start
        self.last = float("-inf")        # when the last byte given was sent (modelled)
        self.bw_done = float("-inf")     # when it would have, at the link's bandwidth alone
        self.restarts = 0

    def _ramp(self, nbytes: float) -> float:
        """Seconds, from the burst's start, until the sender has sent nbytes: window w
        sent, one round trip for its acknowledgements, window doubled; at bandwidth once
        the window covers the bandwidth-delay product."""
        t, w, left = 0.0, self.cwnd, nbytes
        while left > 0 and w < self.bdp:
            chunk = min(w, left)
            left -= chunk
            if left <= 0:
                return t + chunk / self.rate
            t += self.rtt
            w *= 2
        return t + left / self.rate

    def delay(self, now: float, nbytes: int) -> float:
        """A message of nbytes handed to the connection at `now`: how long to hold it
        back so that, sent alone at the link's rate, its last byte leaves when the window
        lets it. 0 while the window is not what limits: the bandwidth's own queueing
        (bytes of the same burst ahead of it) is the simulated link's to count."""
        idle = now - self.last
        if idle > self.rto:
            # tcp_cwnd_restart: halve per RTO idle, not below the restart window
            halvings = min(idle / self.rto, 60.0)   # never sent yet: idle is infinite
            self.cwnd = max(float(self.iw), self.window() / 2 ** int(halvings))
            self.start, self.sent = now, 0.0
            self.restarts += 1
        self.sent += nbytes
        self.bw_done = max(now, self.bw_done) + nbytes / self.rate
        done = max(self.start + self._ramp(self.sent), self.bw_done, self._paced(now, nbytes))
        self.last = done
        if done <= self.bw_done:
            return 0.0
        return max(0.0, done - now - nbytes / self.rate)

    def _paced(self, now: float, nbytes: int) -> float:
        """When the pacing lets the message's last byte leave: its first TSO frame at once
        (or when the bytes before it have been paced out), the rest at the pace, the last
        frame at the link's rate."""
        if self.pace == float("inf"):
            return float("-inf")
        first = max(now, self.paced_free)
        last = min(nbytes, self.burst)
        self.paced_free = first + nbytes / self.pace
        return first + (nbytes - last) / self.pace + last / self.rate

    def window(self) -> float:
        """The window the burst's bytes grew (by what was acknowledged), at most twice
        what fills the link: a connection that is not window-limited stops growing."""
        return min(self.cwnd + self.sent, max(2 * self.bdp, float(self.iw)))
