# isthmus/netemu/wanjob.py: `isthmus run --wan SPEC`: every site of an embedded layout
# runs in its own network namespace, joined by the link emulator. Each site's gateway
# listens on the site's emulated address (10.77.0.<i+1>), so all traffic between sites
# crosses the emulated links, while traffic inside a site stays in its namespace.
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

from ..errors import IsthmusError
from ..launch.job import SiteLaunch, default_command, run_job
from ..launch.layout import Layout
from ..paths import Prefix
from .emulation import Emulation
from .matrix import LinkMatrix

# Each namespace is empty, so every site's gateways can use the same ports.
WAN_GATEWAY_PORT = 41000


def wan_layout(layout: Layout, emu: Emulation, port: int | None = None) -> Layout:
    """The layout with each site's gateways on its namespace address; a site behind NAT
    (emu.nat) only dials out."""
    sites = [replace(s, host=emu.address(i), port=port or WAN_GATEWAY_PORT,
                     dial_out=s.dial_out or i in emu.nat)
             for i, s in enumerate(layout.sites)]
    return layout.with_sites(sites).validate()


def namespaced_builder(emu: Emulation) -> Callable[[SiteLaunch], Sequence[str]]:
    """A command builder that starts each site's launcher inside that site's namespace."""

    def build(launch: SiteLaunch) -> list[str]:
        return emu.command(launch.index, default_command(launch))

    return build


def link_counters(emu: Emulation, stats: dict) -> list[str]:
    """One line per link direction from the emulator's counters: what went in, what came
    out, every kind of drop (a drop under light load means a TCP timeout for the job), and
    what was still on its way (the counters are read as the job ends, and its last
    packets may still wait out the link's delay)."""
    out = []
    for e in stats.get("links", []):
        out.append(f"isthmus stats: link {emu.names[e['from']]} -> {emu.names[e['to']]}: "
                   f"{e['in']} packets in, {e['delivered']} delivered, {e['drop_loss']} lost "
                   f"by the loss model, {e['drop_queue']} queue drops, {e['drop_mtu']} MTU "
                   f"drops, {e['drop_pool']} pool drops, {e['dup']} duplicated"
                   + (f", {e['reordered']} reordered" if e.get("reordered") else "")
                   + f", {e['queued']} still in the delay line")
    out.append(f"isthmus stats: link emulator: {stats.get('write_errors', 0)} packets it could "
               f"not hand to the destination site (write errors), {stats.get('unroutable', 0)} "
               "for no site of this emulation; releases late by "
               f"{stats.get('late_mean_ns', 0) / 1e3:.1f} us on average, "
               f"{stats.get('late_max_ns', 0) / 1e3:.1f} us at most")
    return out


def run_job_over_wan(layout: Layout, matrix: LinkMatrix, program: str, args: Sequence[str], *,
                     prefix: Prefix, port: int | None = None, progress=None,
                     link_stats: Callable[[str], None] | None = None, nat: Sequence[str] = (),
                     **job_kwargs) -> int:
    """Set up the emulation, run the job through it, tear everything down; the job's code.
    link_stats: called with a line per link direction of the emulator's counters at the
    end of the job (isthmus run --stats)."""
    with Emulation(matrix=matrix, progress=progress, nat=nat) as emu:
        code = run_job(wan_layout(layout, emu, port), program, args, prefix=prefix,
                       command_builder=namespaced_builder(emu), **job_kwargs)
        if link_stats is not None:
            try:
                for line in link_counters(emu, emu.stats()):
                    link_stats(line)
            except (IsthmusError, OSError, ValueError) as e:  # the job's result stands
                link_stats(f"isthmus stats: the link emulator's counters are not available ({e})")
        return code
