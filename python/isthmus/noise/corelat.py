# isthmus/noise/corelat.py: the cache-line round trip between two cpus
# (`isthmus-noise corelat`), read back as numbers, and the judgement whether a set of
# such probes saw one machine state or several. On a virtual machine the host may move
# the guest's vCPUs nearer or farther apart for seconds at a time
# (bench/notebook/collectives.md, issue 8: 145 ns against 600 ns on this project's
# machine); every measurement of shared memory inside the node inherits that, so
# `isthmus model calibrate` records it around each launch.
from __future__ import annotations

import json
import os
import subprocess

from ..errors import IsthmusError
from .runner import noise_binary

# two probes whose round trips differ by more than this factor saw different states
STATE_RATIO = 1.5


def core_round_trip(trips: int = 20000, samples: int = 5, timeout: float = 30.0) -> float:
    """The shortest of `samples` mean round trips in ns between the first two cpus this
    process may use: the distance is a floor, and another process taking a cpu for a
    moment (a launch still ending) only lengthens a sample. Raises IsthmusError when
    there are fewer than two cpus or the probe fails."""
    if len(os.sched_getaffinity(0)) < 2:
        raise IsthmusError("the cores' round trip needs two cpus; this process may use one")
    cmd = [str(noise_binary()), "corelat", "--samples", str(samples), "--interval-ms", "2",
           "--trips", str(trips)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise IsthmusError(f"{' '.join(cmd)}: no answer in {timeout:.0f} s") from None
    if r.returncode != 0:
        raise IsthmusError(f"{' '.join(cmd)} failed: {r.stderr.strip()}")
    try:
        doc = json.loads(r.stdout)
        return float(doc["min_ns"])
    except (ValueError, KeyError, TypeError) as e:
        raise IsthmusError(f"{' '.join(cmd)}: unreadable output ({e}): {r.stdout[:200]!r}") from None


def states_differ(round_trips_ns: list[float], ratio: float = STATE_RATIO) -> bool:
    """Whether the probes saw more than one machine state: the slowest more than `ratio`
    times the fastest."""
    xs = [x for x in round_trips_ns if x and x > 0]
    return len(xs) >= 2 and max(xs) > ratio * min(xs)
