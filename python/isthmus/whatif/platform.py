# isthmus/whatif/platform.py: the simulated machine as a SimGrid platform file. Each site is
# a SimGrid cluster (one host per rank, a private full-duplex link per host whose latency
# is half the site-local one-way delay, so host to host is the delay given); sites are
# joined through their routers (the gateways) by one link per direction, with the delay
# and rate of that direction in the link matrix (the TOML file `isthmus run --wan-matrix`
# and `isthmus link emulate --matrix` take). Jitter, loss, queues and MTU are not modelled.
from __future__ import annotations

from xml.sax.saxutils import quoteattr

from ..launch.transport import link_hints
from ..netemu.matrix import LinkMatrix
from ..netemu.spec import LinkSpec
from .tcp import goodput_share

UNLIMITED = 1e12  # bytes/s standing for "no rate limit" (rate = 0 in a link spec)


def _bw(spec: LinkSpec) -> str:
    return f"{spec.rate if spec.rate > 0 else UNLIMITED:.6g}Bps"


def _lat(seconds: float) -> str:
    return f"{seconds:.9g}s"


def ignored(matrix: LinkMatrix) -> list[str]:
    """What the simulation leaves out of the link matrix, one line per kind of setting."""
    out = []
    for what, test in (("jitter", lambda s: s.jitter > 0),
                       ("loss", lambda s: s.mean_loss() > 0 or s.ge is not None),
                       ("duplication", lambda s: s.dup > 0),
                       ("corruption", lambda s: s.corrupt > 0)):
        pairs = [f"{matrix.names[i]}>{matrix.names[j]}"
                 for (i, j), s in sorted(matrix.links.items()) if test(s)]
        if pairs:
            out.append(f"{what} on {', '.join(pairs[:4])}{' ...' if len(pairs) > 4 else ''} "
                       "is not simulated (delay and rate only)")
    return out


def gateway_pace(matrix: LinkMatrix) -> float:
    """Bytes/s at which the gateways pace each of their WAN connections (0: not paced).
    `isthmus run --wan-matrix` describes the links to the gateways with one rate for all,
    the slowest of the matrix (launch/transport.py, link_hints), and a gateway caps every
    connection at that rate times ISTHMUS_WAN_PACE (native/src/gateway/tune.c,
    SO_MAX_PACING_RATE; its default, 1, is assumed). A backlog on a faster link of the
    matrix therefore drains at the slowest one's rate (tcp.py, Ramp). The gateways' link
    samples of a seed-links trace show it: pacing 100 000 B/s on the 680 kB/s link
    (bench/notebook/whatif.md, run 6)."""
    return float(link_hints(matrix).get("ISTHMUS_WAN_RATE", 0)) / 8


def payload_rate(spec: LinkSpec, tcp: bool) -> float:
    """Bytes/s of payload a WAN direction carries (0: unlimited); with tcp, what is left
    once each segment's headers are paid (tcp.py)."""
    return spec.rate * (goodput_share(spec.mtu) if tcp else 1.0)


def tcp_ramps(matrix: LinkMatrix) -> dict[str, list]:
    """Each WAN direction's connection for tcp.Ramp: "i>j" -> [round trip, payload rate,
    MTU, payload pace, one-way delay]; the round trip is the direction's delay and the way back's; the
    pace is the gateways' SO_MAX_PACING_RATE (gateway_pace) net of headers, 0 when they
    set none. It is given even when not below the direction's rate: setting it is what
    turns on TCP's own pacing at 2 x cwnd / srtt (tcp.py)."""
    out = {}
    pace = gateway_pace(matrix)
    for (i, j), spec in sorted(matrix.links.items()):
        back = matrix.links.get((j, i), spec)
        out[f"{i}>{j}"] = [spec.delay + back.delay, payload_rate(spec, True), spec.mtu,
                           pace * goodput_share(spec.mtu), spec.delay]
    return out


def write_platform(path, matrix: LinkMatrix, counts: list[int], lan: LinkSpec,
                   wan_as_lan: bool = False, tcp: bool = False) -> None:
    """counts[i]: the ranks (hosts) of site i. wan_as_lan: every WAN direction replaced by
    the site-local network (the baseline that tells what the WAN costs). tcp: WAN rates
    net of TCP/IP headers (tcp.py)."""
    lines = ["<?xml version='1.0'?>",
             '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">', '<zone id="world" routing="Full">']
    for name, n in zip(matrix.names, counts):
        lines.append(f'  <cluster id={quoteattr(name)} prefix={quoteattr(name + "-")} suffix="" '
                     f'radical="0-{n - 1}" speed="1Gf" bw="{_bw(lan)}" '
                     f'lat="{_lat(lan.delay / 2)}" sharing_policy="SPLITDUPLEX" '
                     f'router_id={quoteattr(name + "-gw")}/>')
    for (i, j), spec in sorted(matrix.links.items()):
        s = lan if wan_as_lan else LinkSpec(delay=spec.delay, rate=payload_rate(spec, tcp))
        lines.append(f'  <link id={quoteattr(f"{matrix.names[i]}>{matrix.names[j]}")} '
                     f'bandwidth="{_bw(s)}" latency="{_lat(s.delay)}"/>')
    for (i, j) in sorted(matrix.links):
        a, b = matrix.names[i], matrix.names[j]
        lines.append(f'  <zoneRoute src={quoteattr(a)} dst={quoteattr(b)} '
                     f'gw_src={quoteattr(a + "-gw")} gw_dst={quoteattr(b + "-gw")} '
                     f'symmetrical="NO"><link_ctn id={quoteattr(f"{a}>{b}")}/></zoneRoute>')
    lines += ["</zone>", "</platform>", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
