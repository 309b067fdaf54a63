# isthmus/netemu/spec.py: the link spec language, e.g.
#   delay=20ms,jitter=1ms,rate=1gbit,loss=0.1%,queue=256kB,mtu=9000
# parsed into a LinkSpec, checked, given defaults, and turned into the plain-number form
# that isthmus-linkemu reads (native/tools/linkemu/conf.h).
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

from .. import units
from ..errors import IsthmusError

EXAMPLE = "delay=20ms,jitter=1ms,rate=1gbit,loss=0.1%,queue=256kB,mtu=9000"
KEYS = {
    "delay": "one-way delay, e.g. 20ms",
    "jitter": "delay varies uniformly by +- this, e.g. 1ms (packet order kept unless reorder=on)",
    "reorder": "on|off: let jitter reorder packets (default off); or P%: that share of packets "
               "skips the delay and overtakes those in flight (as netem's reorder)",
    "rate": "link rate, e.g. 100mbit, 1gbit, 808kB/s (default unlimited)",
    "queue": "bytes queued at the rate limit before drop-tail, e.g. 256kB (k = 1024; default ~1 RTT of data)",
    "bucket": "token bucket depth in bytes (default one MTU)",
    "loss": "random loss, e.g. 0.1% or 0.001",
    "lossburst": "mean loss burst in packets (Gilbert model with the mean given by loss)",
    "ge": "Gilbert-Elliott P/R/LOSS_BAD/LOSS_GOOD, e.g. 1%/25%/100%/0%",
    "dup": "duplication probability, e.g. 0.1%",
    "corrupt": "probability of one flipped payload bit that the UDP/TCP checksum does not see, e.g. 0.01%",
    "mtu": "largest IP packet, 68-65535 bytes (default 1500)",
}

_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
_NUM = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"


class SpecError(IsthmusError):
    """A bad link spec (the message says which part and how to write it)."""


def _bad(spec: str, detail: str) -> SpecError:
    return SpecError(f"bad link spec {spec!r}: {detail}; example: {EXAMPLE}")


def parse_time(text: str) -> float:
    m = re.fullmatch(_NUM + r"\s*(ns|us|µs|ms|s)", text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a time (give a unit: ns, us, ms, s; e.g. 20ms)")
    return float(m.group(1)) * _TIME_UNITS[m.group(2)]


def parse_rate(text: str) -> float:
    """Bytes per second from a rate in the one grammar of rates (isthmus/units.py):
    '100mbit', '1gbit', '10mbps' (bits) or '808kB/s', '1MiB/s' (bytes)."""
    return units.parse_rate(text) / 8


def parse_size(text: str) -> int:
    """Bytes, in the one grammar of sizes (isthmus/units.py: k = 1024)."""
    return units.parse_size(text)


def parse_fraction(text: str) -> float:
    t = text.strip()
    m = re.fullmatch(_NUM + r"\s*(%?)", t)
    if not m:
        raise ValueError(f"{text!r} is not a probability (e.g. 0.1% or 0.001)")
    v = float(m.group(1)) / (100 if m.group(2) else 1)
    if not 0 <= v <= 1:
        raise ValueError(f"{text!r} is not between 0 and 100%")
    return v


def parse_bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("on", "yes", "true", "1"):
        return True
    if t in ("off", "no", "false", "0"):
        return False
    raise ValueError(f"{text!r} is not on or off")


def _fmt_time(s: float) -> str:
    if s == 0:
        return "0"
    return f"{s * 1e3:g}ms" if s >= 1e-3 else f"{s * 1e6:g}us"


def _fmt_rate(bps: float) -> str:
    bits = bps * 8
    for unit, f in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if bits >= f:
            return f"{bits / f:g}{unit}"
    return f"{bits:g}bit"


@dataclass(frozen=True)
class LinkSpec:
    """One direction of a link. Times in seconds, rate in bytes/s (0 = unlimited),
    probabilities as fractions. queue and bucket None mean "the default"."""

    delay: float = 0.0
    jitter: float = 0.0
    reorder: bool = False
    reorder_share: float = 0.0
    rate: float = 0.0
    queue: int | None = None
    bucket: int | None = None
    loss: float = 0.0
    lossburst: float | None = None
    ge: tuple[float, float, float, float] | None = None
    dup: float = 0.0
    corrupt: float = 0.0
    mtu: int = 1500
    text: str = field(default="", compare=False)

    def queue_bytes(self) -> int:
        """The queue limit: as given, else about one round trip of data at the rate
        (at least 64 KiB and 4 MTUs), so one TCP flow can fill the link."""
        if self.queue is not None:
            return self.queue
        rtt = max(2 * self.delay, 0.01)
        return int(max(65536, 4 * self.mtu, self.rate * rtt))

    def bucket_bytes(self) -> int:
        return self.bucket if self.bucket is not None else self.mtu

    def mean_loss(self) -> float:
        if self.ge is not None:
            p, r, bad, good = self.ge
            return good if p + r == 0 else (p * bad + r * good) / (p + r)
        return self.loss

    def ge_params(self) -> tuple[float, float, float, float] | None:
        """Gilbert-Elliott parameters, from ge= or from loss + lossburst."""
        if self.ge is not None:
            return self.ge
        if self.lossburst is not None and self.loss > 0:
            r = 1.0 / self.lossburst
            p = r * self.loss / (1.0 - self.loss)
            return (p, r, 1.0, 0.0)
        return None

    def native(self) -> str:
        """The plain-number form isthmus-linkemu reads (conf.h)."""
        parts = [
            f"delay={int(round(self.delay * 1e9))}",
            f"jitter={int(round(self.jitter * 1e9))}",
            f"reorder={int(self.reorder)}",
            f"reorderp={self.reorder_share!r}",
            f"rate={self.rate!r}",
            f"queue={self.queue_bytes()}",
            f"burst={self.bucket_bytes()}",
            f"dup={self.dup!r}",
            f"corrupt={self.corrupt!r}",
            f"mtu={self.mtu}",
        ]
        ge = self.ge_params()
        if ge is not None:
            parts.append("ge=" + "/".join(repr(v) for v in ge))
        else:
            parts.append(f"loss={self.loss!r}")
        return ",".join(parts)

    def describe(self) -> str:
        """Short human form for banners."""
        out = [f"delay {_fmt_time(self.delay)}"]
        if self.jitter:
            out.append(f"jitter ±{_fmt_time(self.jitter)}" + (" (reordering)" if self.reorder else ""))
        out.append(f"rate {_fmt_rate(self.rate)}" if self.rate else "rate unlimited")
        if self.rate:
            out.append(f"queue {self.queue_bytes() / 1000:g} kB")
        if self.mean_loss():
            burst = self.ge_params()
            out.append(f"loss {self.mean_loss() * 100:g}%" + (" (bursty)" if burst else ""))
        if self.reorder_share:
            out.append(f"reorder {self.reorder_share * 100:g}%")
        if self.dup:
            out.append(f"dup {self.dup * 100:g}%")
        if self.corrupt:
            out.append(f"corrupt {self.corrupt * 100:g}%")
        out.append(f"MTU {self.mtu}")
        return ", ".join(out)


def parse_link_spec(spec: str, base: LinkSpec | None = None) -> LinkSpec:
    """Parse 'key=value,...' (keys: see KEYS) on top of base (default: LinkSpec())."""
    values: dict = {}
    text = spec.strip()
    if not text:
        raise _bad(spec, "it is empty")
    for item in text.split(","):
        key, sep, val = item.partition("=")
        key, val = key.strip().lower(), val.strip()
        if not sep or not key or not val:
            raise _bad(spec, f"{item.strip()!r} is not key=value")
        if key not in KEYS:
            raise _bad(spec, f"unknown key {key!r} (known: {', '.join(KEYS)})")
        if key in values:
            raise _bad(spec, f"{key} is given twice")
        try:
            conv = _convert(key, val)
            if key == "reorder" and isinstance(conv, float):
                values["reorder_share"] = conv  # reorder=5%: a share, not on/off
            else:
                values[key] = conv
        except ValueError as e:
            raise _bad(spec, f"{key}: {e}") from None
    result = replace(base or LinkSpec(), **values, text=text)
    _check(spec, result)
    return result


def _convert(key: str, val: str):
    if key in ("delay", "jitter"):
        return parse_time(val)
    if key == "reorder":
        if val.endswith("%"):
            return parse_fraction(val)
        return parse_bool(val)
    if key == "rate":
        return parse_rate(val)
    if key in ("queue", "bucket"):
        return parse_size(val)
    if key in ("loss", "dup", "corrupt"):
        return parse_fraction(val)
    if key == "lossburst":
        v = float(val) if re.fullmatch(_NUM, val) else math.nan
        if not v >= 1:
            raise ValueError(f"{val!r} is not a mean burst length of at least 1 packet")
        return v
    if key == "ge":
        parts = val.split("/")
        if len(parts) != 4:
            raise ValueError(f"{val!r} is not P/R/LOSS_BAD/LOSS_GOOD (e.g. 1%/25%/100%/0%)")
        return tuple(parse_fraction(p) for p in parts)
    if key == "mtu":
        if not re.fullmatch(r"[0-9]+", val) or not 68 <= int(val) <= 65535:
            raise ValueError(f"{val!r} is not an MTU between 68 and 65535")
        return int(val)
    raise ValueError(f"unknown key {key}")


def _check(spec: str, s: LinkSpec) -> None:
    if s.delay > 3600:
        raise _bad(spec, "delay above one hour")
    if s.jitter and s.jitter > 3600:
        raise _bad(spec, "jitter above one hour")
    if s.rate and s.rate < 125:
        raise _bad(spec, "rate below 1 kbit/s")
    if s.rate > 1.25e11:
        raise _bad(spec, "rate above 1 Tbit/s")
    if s.queue is not None and s.queue < s.mtu:
        raise _bad(spec, f"queue {s.queue} B cannot hold one packet of MTU {s.mtu} B")
    if s.bucket is not None and s.bucket < 1:
        raise _bad(spec, "bucket must be at least 1 byte")
    if s.lossburst is not None and s.ge is not None:
        raise _bad(spec, "give lossburst (with loss) or ge, not both")
    if s.lossburst is not None and not 0 < s.loss < 1:
        raise _bad(spec, "lossburst needs loss between 0 and 100% exclusive")
    if s.lossburst is not None and s.loss / (1 - s.loss) / s.lossburst > 1:
        raise _bad(spec, f"loss {s.loss:.0%} with bursts of {s.lossburst:g} is impossible (too few good packets)")
