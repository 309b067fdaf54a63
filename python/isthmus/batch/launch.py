# isthmus/batch/launch.py: the command that starts a Slurm site's part of the job once its
# allocation runs: the vendor's MPMD line placed on the allocation's nodes (app ranks spread
# over them, the gateways on gateway_node), handed to the waiting batch script by the
# runner (script.py), over ssh to the site's login node when it has one.
from __future__ import annotations

import shlex
from typing import Mapping, Sequence

from ..launch import vendor
from ..launch.job import CommandBuilder, SiteLaunch, default_command
from ..launch.layout import split_ranks
from ..launch.ssh import ssh_prefix
from . import script


def placement(nodes: Sequence[str], ranks: int, gateway_node: str | None) -> vendor.Placement | None:
    """App ranks evenly over the allocation's nodes in Slurm's order, but the gateway
    node's last, then the gateways on it (MPICH's hydra under Slurm wants each node once in
    its host list: "b:2,a:3", never "a:2,b:2,a:1"); None for one node."""
    if len(nodes) < 2:
        return None
    gw = gateway_node if gateway_node in nodes else nodes[0]
    order = [n for n in nodes if n != gw] + [gw]
    app = tuple((h, c) for h, c in zip(order, split_ranks(ranks, len(order))) if c > 0)
    return vendor.Placement(app_hosts=app, gateway_node=gw)


def slurm_command(launch: SiteLaunch, job: str, slurm_job: str, nodes: Sequence[str]) -> list[str]:
    site = launch.site
    where = placement(nodes, site.ranks, site.gateway_node)
    extra = list(site.mpirun_args)
    if launch.vendor == "mpich" and where is not None:
        # hydra's Slurm launcher (MPICH 4.0) gives its proxies their host list's contents
        # in Slurm's node order, not the list's: `srun --nodelist b,a` ran proxy 0 (meant
        # for b) on a, and the gateway lands on a node without its address. Its ssh
        # launcher keeps the order; the nodes are the allocation's own.
        extra = ["-launcher", "ssh", *extra]
    argv = vendor.build_command(
        launch.vendor, ranks=site.ranks, gateways=site.gateways, program=launch.program,
        args=launch.args, gateway_path=str(launch.prefix.gateway),
        export_names=vendor.export_names(launch.env), extra_args=extra, placement=where,
        tag_output=True,
    )  # fmt: skip
    root_env = vendor.OPENMPI_ROOT_ENV if launch.vendor == "openmpi" else None
    go = script.go_script(job, site.name, argv, launch.env, launch.workdir, root_env)
    runner = script.runner_script(job, site.name, slurm_job, go)
    if site.ssh_host is None:
        return ["/bin/sh", "-c", runner]
    return [*ssh_prefix(site.ssh_host, jump=site.ssh_jump, options=site.ssh_options),
            f"exec /bin/sh -c {shlex.quote(runner)}"]


def command_builder(job: str, allocations: Mapping[str, tuple[str, Sequence[str]]]) -> CommandBuilder:
    """Slurm sites (by name: their Slurm job id and nodes) started in their allocations,
    the other sites as `isthmus run` starts them."""

    def build(launch: SiteLaunch) -> list[str]:
        if launch.site.launcher != "slurm":
            return default_command(launch)
        slurm_job, nodes = allocations[launch.site.name]
        return slurm_command(launch, job, slurm_job, nodes)

    return build
