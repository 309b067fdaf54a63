# isthmus/launch/transport.py: the gateways' WAN transport settings, from `isthmus run`
# options to the ISTHMUS_WAN_* / ISTHMUS_LINK_* variables every gateway reads
# (native/src/gateway/tune.c and links.c), plus the link hints derived from an emulated
# link, so the gateways size their socket buffers and streams for it.
from __future__ import annotations

import re
from typing import Mapping

from ..errors import IsthmusError

_CC_NAME = re.compile(r"^[a-z0-9_]{1,15}$")  # the kernel's TCP_CA_NAME_MAX, as knobs.def
MAX_STREAMS = 16
UDP_CCS = ("bbr", "reno")  # native/src/wan/udp/cc.h


def transport_env(*, streams: int | None = None, cc: str | None = None, crc: bool = False,
                  outage: float | None = None, transport: str = "tcp",
                  crypto: str | None = None) -> dict[str, str]:
    """Variables for the options given (None/False: leave the gateway's default)."""
    env: dict[str, str] = {}
    if crypto is not None:
        env["ISTHMUS_WAN_CRYPTO"] = crypto
    if streams is not None:
        if not 1 <= streams <= MAX_STREAMS:
            raise IsthmusError(f"--wan-streams {streams}: give 1..{MAX_STREAMS} TCP streams per "
                               "link (or leave it out for the automatic choice)")
        if transport == "udp" and streams != 1:
            raise IsthmusError(f"--wan-streams {streams}: the udp transport carries each link "
                               "in one flow; leave --wan-streams out, or use --transport tcp")
        env["ISTHMUS_WAN_STREAMS"] = str(streams)
    if cc is not None:
        if not _CC_NAME.match(cc):
            raise IsthmusError(f"--wan-cc {cc!r}: not a congestion control name "
                               "(e.g. cubic, bbr, reno; see /proc/sys/net/ipv4/"
                               "tcp_available_congestion_control)")
        if transport == "udp" and cc not in UDP_CCS:
            raise IsthmusError(f"--wan-cc {cc}: the udp transport's congestion control is "
                               f"{' or '.join(UDP_CCS)} (its own, in user space); {cc} is a "
                               "kernel TCP one (--transport tcp)")
        env["ISTHMUS_WAN_CC"] = cc
    if crc:
        env["ISTHMUS_WAN_CRC"] = "1"
    if outage is not None:
        if not 1 <= outage <= 86400:
            raise IsthmusError(f"--link-outage {outage:g}: give 1..86400 seconds")
        env["ISTHMUS_LINK_OUTAGE"] = str(int(round(outage)))
    return env


UNENCRYPTED = ("links between sites are NOT encrypted or authenticated after the handshake "
               "(crypto none): anyone on the path can read and change this job's messages")


def effective_crypto(option: str | None, file_crypto: str | None,
                     env: Mapping[str, str]) -> tuple[str, str]:
    """The link protection the job runs with, and who chose it: --wan-crypto, else the
    site file's [job] crypto, else ISTHMUS_WAN_CRYPTO, else aead. An option that
    contradicts the site file is an error (every site must agree)."""
    if option is not None and file_crypto is not None and option != file_crypto:
        raise IsthmusError(f"--wan-crypto {option} contradicts the site file's [job] crypto = "
                           f"{file_crypto!r}; every site must use the same setting")
    if option is not None:
        return option, "--wan-crypto"
    if file_crypto is not None:
        return file_crypto, "[job] crypto"
    if env.get("ISTHMUS_WAN_CRYPTO"):
        return env["ISTHMUS_WAN_CRYPTO"], "ISTHMUS_WAN_CRYPTO"
    return "aead", "default"


def link_hints(matrix) -> dict[str, str]:
    """What the gateways should assume about the links of an emulated matrix: the
    slowest rate, the longest round trip and the highest loss over all site pairs (the
    gateways use one setting for all their links)."""
    rates, rtts, losses = [], [], []
    n = matrix.count
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            there, back = matrix.get(i, j), matrix.get(j, i)
            if there.rate > 0:
                rates.append(there.rate * 8)
            rtts.append((there.delay + back.delay) * 1000)
            losses.append(there.mean_loss())
    env = {}
    if rates:
        env["ISTHMUS_WAN_RATE"] = f"{min(rates):.0f}"
    if rtts and max(rtts) > 0:
        env["ISTHMUS_WAN_RTT_MS"] = f"{max(rtts):.3f}"
    if losses and max(losses) > 0:
        env["ISTHMUS_WAN_LOSS"] = f"{max(losses):.6g}"
    return env


def apply_env(target: dict, env: Mapping[str, str]) -> None:
    """Add env to target without overriding what the user set explicitly."""
    for k, v in env.items():
        target.setdefault(k, v)
