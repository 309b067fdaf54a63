# isthmus/netemu/wanjob.py: `isthmus run --wan SPEC`: every site of an embedded layout
# runs in its own network namespace, joined by the link emulator. Each site's gateway
# listens on the site's emulated address (10.77.0.<i+1>), so all traffic between sites
# crosses the emulated links, while traffic inside a site stays in its namespace.
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

from ..launch.job import SiteLaunch, default_command, run_job
from ..launch.layout import Layout
from ..paths import Prefix
from .emulation import Emulation
from .matrix import LinkMatrix

# Each namespace is empty, so every site's gateways can use the same ports.
WAN_GATEWAY_PORT = 41000


def wan_layout(layout: Layout, emu: Emulation, port: int | None = None) -> Layout:
    """The layout with each site's gateways on its namespace address."""
    sites = [replace(s, host=emu.address(i), port=port or WAN_GATEWAY_PORT)
             for i, s in enumerate(layout.sites)]
    return layout.with_sites(sites).validate()


def namespaced_builder(emu: Emulation) -> Callable[[SiteLaunch], Sequence[str]]:
    """A command builder that starts each site's launcher inside that site's namespace."""

    def build(launch: SiteLaunch) -> list[str]:
        return emu.command(launch.index, default_command(launch))

    return build


def run_job_over_wan(layout: Layout, matrix: LinkMatrix, program: str, args: Sequence[str], *,
                     prefix: Prefix, port: int | None = None, progress=None, **job_kwargs) -> int:
    """Set up the emulation, run the job through it, tear everything down; the job's code."""
    with Emulation(matrix=matrix, progress=progress) as emu:
        return run_job(wan_layout(layout, emu, port), program, args, prefix=prefix,
                       command_builder=namespaced_builder(emu), **job_kwargs)
