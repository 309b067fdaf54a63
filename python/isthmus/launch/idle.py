# isthmus/launch/idle.py: how long waiting ranks yield the CPU before they nap, when every
# site runs on this machine and the job has more processes than it has CPUs.
#
# libisthmus's idle wait (native/src/core/gwlink.c, ism_idle) spins, then yields the core
# for ISTHMUS_IDLE_YIELD_US (default 1000), then sleeps in 50 us naps. On a machine the job
# oversubscribes, a rank that yields for a millisecond at every idle spell keeps the
# processes it waits for (the gateways, the link emulator, the rank holding the data) off
# the CPU: on 2 cores, 2 emulated sites of 4 ranks ran their 1 MiB collectives 15-30 %
# slower and single calls stalled for 100-500 ms (bench/notebook/collectives.md, issue 8 stop
# 22). This is what Open MPI does with mpi_yield_when_idle, which it turns on when oversubscribed.
from __future__ import annotations

import os
from typing import Mapping

from .layout import Layout

VAR = "ISTHMUS_IDLE_YIELD_US"
OVERSUBSCRIBED_US = 50


def cpus() -> int:
    """CPUs this process may run on (its affinity, as the ranks inherit it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def processes_here(layout: Layout) -> int:
    """Busy processes on this machine: the ranks of local sites whose launcher is not told
    where to put them (no extra mpirun arguments such as --host), and their gateways when
    there is another site to talk to (a lone site's gateway sleeps in ppoll throughout)."""
    gateways = len(layout.sites) > 1
    return sum(s.ranks + (s.gateways if gateways else 0) for s in layout.sites
               if s.launcher == "local" and not s.mpirun_args)


def idle_env(layout: Layout, base: Mapping[str, str], ncpu: int | None = None) -> dict[str, str]:
    """{VAR: "50"} when this machine is oversubscribed and the user has not set VAR."""
    if VAR in base:
        return {}
    if processes_here(layout) > (ncpu if ncpu is not None else cpus()):
        return {VAR: str(OVERSUBSCRIBED_US)}
    return {}
