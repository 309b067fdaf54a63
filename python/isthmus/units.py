# isthmus/units.py: the one parser of sizes and the one parser of rates of the CLI, the
# same grammar as the native side's (native/src/common/units.h), which reads the ISTHMUS_*
# settings; python/tests/test_units.py runs both on a corpus and requires the same answer.
#
#   size  bytes: 65536, 64k, 64KiB, 64kB, 1.5m, 2g, 1t; every prefix is a power of 1024
#         (as OSU and isthmus-bench count), in any case, optionally followed by i and/or
#         B; the result must be a whole number of bytes
#   rate  bits/s: 10e9, 100mbit, 1Gbit, 10mbps (bits), 125MB/s (bytes); k, m, g, t are
#         powers of 1000 (as tc counts), ki, mi, gi, ti powers of 1024
#
# No sign, no spaces, no hexadecimal.
from __future__ import annotations

import math
import re
from fractions import Fraction

SIZE_HELP = "a size in bytes (e.g. 65536, 64k, 1m)"
RATE_HELP = "a rate in bits/s (e.g. 10e9, 100mbit, 1gbit, 125MB/s)"

_INT64_MAX = (1 << 63) - 1
_SIZE_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?)(?:([kmgtKMGT])[iI]?)?[bB]?")
_RATE_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)(?:([kmgtKMGT])([iI]?))?"
                      r"(bit|bps|B/s)?", re.IGNORECASE)
_POWER = {"k": 1, "m": 2, "g": 3, "t": 4}


def parse_size(text: str) -> int:
    """Bytes; ValueError names the text and the grammar."""
    m = _SIZE_RE.fullmatch(text)
    digits = m.group(1) if m else ""
    if not m or len(digits) > 19:
        raise ValueError(f"{text!r} is not {SIZE_HELP}")
    value = Fraction(digits) * (1024 ** _POWER[m.group(2).lower()] if m.group(2) else 1)
    if value.denominator != 1:
        raise ValueError(f"{text!r} is not a whole number of bytes")
    if value > _INT64_MAX:
        raise ValueError(f"{text!r} is too large")
    return int(value)


def parse_rate(text: str) -> float:
    """Bits per second; ValueError names the text and the grammar."""
    m = _RATE_RE.fullmatch(text)
    unit = m.group(4) if m else None
    # a prefix needs a unit (100m is not a rate), and B/s its capital B (1b/s is not one)
    if not m or (m.group(2) and not unit) or (unit and unit.lower() == "b/s" and unit != "B/s"):
        raise ValueError(f"{text!r} is not {RATE_HELP}")
    value = float(m.group(1))
    if m.group(2):
        k = _POWER[m.group(2).lower()]
        value *= 2.0 ** (10 * k) if m.group(3) else 1000.0**k
    if unit == "B/s":
        value *= 8
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite rate")
    return value


def size_text(v: int) -> str:
    """The shortest exact text of a size: 65536 -> '64k', 1000 -> '1000'."""
    for suffix, f in (("t", 1 << 40), ("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)):
        if v and v % f == 0:
            return f"{v // f}{suffix}"
    return str(v)
