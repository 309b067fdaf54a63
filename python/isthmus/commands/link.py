# isthmus/commands/link.py: `isthmus link`: the WAN link emulator. `emulate` joins N
# network namespaces through isthmus-linkemu and runs a command (or waits for Ctrl-C);
# `cleanup` removes namespaces left by a run that was killed with SIGKILL.
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from ..errors import IsthmusError
from ..netemu.clusters import Clusters, remove_etc_netns
from ..netemu.emulation import Emulation, check_privileges, list_namespaces, remove_namespace
from ..netemu.matrix import load_matrix, uniform
from ..netemu.spec import EXAMPLE, KEYS, LinkSpec, parse_link_spec
from ..ui import err_console
from . import register

_CTX = {"help_option_names": ["-h", "--help"]}


class _Terminated(Exception):
    """SIGTERM or SIGHUP arrived: unwind so the emulation is cleaned up."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum, _frame):
    raise _Terminated(signum)


def _spec_help() -> str:
    return "\b\nLink spec keys:\n" + "\n".join(f"  {k:<10} {v}" for k, v in KEYS.items())


@register
@click.group("link", short_help="Emulate WAN links between sites on this machine.", context_settings=_CTX)
def link_group() -> None:
    """Emulate WAN links (delay, jitter, rate, loss, duplication, MTU) between network
    namespaces on this machine, with the user-space emulator isthmus-linkemu."""


@link_group.command("emulate", context_settings=_CTX, epilog=_spec_help())
@click.option("--sites", type=click.IntRange(2, 64), default=None,
              help="Number of sites (namespaces), named A, B, ... [default: 2, or the matrix's].")
@click.option("--link", "link_spec", metavar="SPEC", default=None,
              help=f"Settings of every direction, e.g. {EXAMPLE}.")
@click.option("--matrix", "matrix_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="TOML file with per-pair settings (see docs/linkemu.md); --link is its base.")
@click.option("--site", "run_site", metavar="NAME", default=None,
              help="Run COMMAND inside this site's namespace (default: on the host, with "
                   "ISTHMUS_LINK_* variables naming the namespaces).")
@click.option("--job", default=None, help="Job name in the namespace names ism-<job>-<site> [default: the PID].")
@click.option("--seed", type=click.IntRange(0), default=1, show_default=True,
              help="Seed of the loss, duplication and jitter random numbers.")
@click.option("--rt-prio", type=click.IntRange(0, 99), default=10, show_default=True,
              help="SCHED_FIFO priority of the emulator, so busy cores do not delay packets; "
                   "0 for normal scheduling.")
@click.option("--stats", is_flag=True, help="Print per-link packet counters at the end.")
@click.option("--nodes-per-site", type=click.IntRange(1, 32), default=None,
              help="Make each site a cluster of this many nodes, each with its own host name, "
                   "address and sshd, plus a workstation to start jobs from (docs/deploy.md). "
                   "COMMAND then runs on the workstation.")
@click.option("--ranks-per-node", type=click.IntRange(1, 64), default=2, show_default=True,
              help="With --nodes-per-site: application ranks per node in the site file written "
                   "for the clusters.")
@click.option("--slurm", is_flag=True,
              help="With --nodes-per-site: a real Slurm at each site (slurmctld and munged on "
                   "node 0, slurmd on every node); the site file is for `isthmus submit` "
                   "(docs/batch.md).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def emulate_command(ctx: click.Context, sites, link_spec, matrix_file, run_site, job, seed, rt_prio,
                    stats, nodes_per_site, ranks_per_node, slurm, command):
    """Join SITES network namespaces through emulated links, then run COMMAND, or wait
    for Ctrl-C. Everything is removed on exit (normal, Ctrl-C, SIGTERM or error).

    \b
    Examples:
      isthmus link emulate --sites 2 --link delay=10ms,rate=100mbit
      isthmus link emulate --link delay=5ms --site A -- ping 10.77.0.2
      isthmus link emulate --matrix links.toml -- ./my-experiment.sh

    Site i has address 10.77.0.(i+1) on device ism0 in namespace ism-<job>-<site>.
    """
    con = err_console()
    base = parse_link_spec(link_spec) if link_spec else LinkSpec()
    if matrix_file is not None:
        matrix = load_matrix(matrix_file, base=base, sites=sites)
    else:
        matrix = uniform(sites or 2, base)
    if run_site is not None and run_site not in matrix.names:
        raise IsthmusError(f"--site {run_site}: no such site (sites: {', '.join(matrix.names)})")
    if slurm and nodes_per_site is None:
        raise IsthmusError("--slurm needs --nodes-per-site (Slurm runs on the clusters' nodes)")
    check_privileges()

    if nodes_per_site is not None:
        ctx.exit(_until_signal(con, "clusters", lambda: _clusters(
            con, matrix, nodes_per_site, ranks_per_node, job, seed, rt_prio, run_site, stats, command,
            slurm)))
    ctx.exit(_until_signal(con, "namespaces", lambda: _emulate(con, matrix, job, seed, rt_prio,
                                                                run_site, stats, command)))


def _until_signal(con, what: str, body) -> int:
    """Run body() with SIGTERM/SIGHUP unwinding it like Ctrl-C, so its context managers
    clean up; its exit code, or 128 + the signal."""
    old = {s: signal.signal(s, _raise_terminated) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        code = body()
    except KeyboardInterrupt:
        code = 130
    except _Terminated as t:
        code = 128 + t.signum
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if code >= 128:
        con.print(Text(f"stopped by signal {code - 128}; {what} removed", style="yellow"))
    return code


def _emulate(con, matrix, job, seed, rt_prio, run_site, stats, command) -> int:
    emu = Emulation(matrix=matrix, job=job, seed=seed, rt_prio=rt_prio, progress=lambda m: con.print(Text(m, style="dim")))
    with emu:
        _banner(con, emu)
        code = _run(con, emu, command, run_site) if command else _wait(con, emu)
        if stats:
            _print_stats(con, emu, emu.stats())
    return code


def _clusters(con, matrix, nodes_per_site, ranks_per_node, job, seed, rt_prio, run_site, stats,
              command, slurm: bool = False) -> int:
    """--nodes-per-site: emulated clusters (with --slurm, each with its Slurm); COMMAND runs
    on the workstation (or on node 0 of --site), with ISTHMUS_CLUSTERS_* variables naming
    the site file and ssh settings."""
    code = 0
    kwargs = dict(matrix=matrix, nodes_per_site=nodes_per_site, job=job, seed=seed,
                  rt_prio=rt_prio, progress=lambda m: con.print(Text(m, style="dim")))
    if slurm:
        from ..netemu.slurm import SlurmClusters

        owner = SlurmClusters(**kwargs)
        bed = owner.bed
    else:
        owner = bed = Clusters(**kwargs)
    starter = "submit" if slurm else "run --site-file"
    with owner:
        assert bed.dir is not None
        site_file = owner.site_file(bed.dir / "sites.toml", ranks_per_node=ranks_per_node)
        _cluster_banner(con, bed, site_file)
        env = {**os.environ, **bed.emu.environment(),
               "ISTHMUS_CLUSTERS_DIR": str(bed.dir), "ISTHMUS_CLUSTERS_SITE_FILE": str(site_file)}
        if command:
            node = bed.node(run_site, 0) if run_site else None
            proc = subprocess.Popen(bed.command(node, list(command)), env=env)
            try:
                code = _wait_proc(proc, bed.emu)
            finally:
                _end(proc)
        else:
            con.print(Text(
                f"clusters are up. Start jobs from the workstation:\n"
                f"  ip netns exec {bed.ws_namespace} isthmus {starter} {site_file} ./app\n"
                f"or log in to a node:  ip netns exec {bed.ws_namespace} ssh "
                f"{bed.node(bed.sites[0], 0).hostname}\n"
                "Ctrl-C stops the clusters and removes everything."))
            while True:
                bed.emu.check_alive()
                time.sleep(0.5)
        if stats:
            _print_stats(con, bed.emu, bed.emu.stats())
    return code


def _cluster_banner(con, bed: Clusters, site_file: Path) -> None:
    table = Table(title=f"isthmus link emulate: job {bed.job}, {bed.nodes_per_site} nodes per site",
                  title_justify="left")
    for col in ("site", "node", "namespace", "site address", "WAN address"):
        table.add_column(col)
    for node in bed.all_nodes():
        table.add_row(node.site, node.hostname, node.namespace, f"{node.address}/24",
                      f"{node.wan_address}/24 (login, gateway)" if node.wan_address else "-")
    table.add_row("workstation", "-", bed.ws_namespace, "-", bed.emu.address("ws"))
    con.print(table)
    con.print(Text(f"site file: {site_file}\nssh settings of every node: {bed.dir}/ssh_config"))


def _wait_proc(proc: subprocess.Popen, emu: Emulation) -> int:
    while True:
        try:
            return proc.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
        if not emu.alive():
            emu.check_alive()


def _end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _banner(con, emu: Emulation) -> None:
    table = Table(title=f"isthmus link emulate: job {emu.job}", title_justify="left")
    table.add_column("site")
    table.add_column("namespace")
    table.add_column("address")
    table.add_column("MTU", justify="right")
    for i, name in enumerate(emu.names):
        table.add_row(name, emu.namespace(i), f"{emu.address(i)}/24", str(emu.matrix.site_mtu(i)))
    con.print(table)
    specs = {}
    for (i, j), s in sorted(emu.matrix.links.items()):
        specs.setdefault(s.describe(), []).append(f"{emu.names[i]}→{emu.names[j]}")
    for desc, dirs in specs.items():
        con.print(Text(f"  {', '.join(dirs)}: {desc}"))


def _run(con, emu: Emulation, command, run_site) -> int:
    argv = list(command)
    env = {**os.environ, **emu.environment()}
    if run_site is not None:
        proc = emu.popen(run_site, argv, env=env)
    else:
        proc = subprocess.Popen(argv, env=env)
    try:
        return _wait_proc(proc, emu)
    finally:
        _end(proc)


def _wait(con, emu: Emulation) -> int:
    a, b = emu.names[0], emu.names[1]
    con.print(Text(
        f"links are up. Enter a site with:  ip netns exec {emu.namespace(a)} bash\n"
        f"e.g. from site {a} reach site {b} at {emu.address(b)}:  "
        f"ip netns exec {emu.namespace(a)} ping {emu.address(b)}\n"
        "Ctrl-C stops the emulation and removes the namespaces."))
    while True:
        emu.check_alive()
        time.sleep(0.5)


def _print_stats(con, emu: Emulation, stats: dict) -> None:
    table = Table(title="per-link packets", title_justify="left")
    for col in ("link", "in", "delivered", "lost", "queue drops", "dups", "MTU drops", "pool drops",
                "queued"):
        table.add_column(col, justify="right")
    for e in stats["links"]:
        table.add_row(f"{emu.names[e['from']]}→{emu.names[e['to']]}", str(e["in"]), str(e["delivered"]),
                      str(e["drop_loss"]), str(e["drop_queue"]), str(e["dup"]), str(e["drop_mtu"]),
                      str(e["drop_pool"]), str(e["queued"]))
    con.print(table)


@link_group.command("cleanup", context_settings=_CTX)
@click.option("--job", default=None, help="Only this job's namespaces (default: every ism-* namespace).")
def cleanup_command(job):
    """Remove namespaces left by `isthmus link emulate` runs that were killed (SIGKILL),
    and stop any process still inside them."""
    check_privileges()
    con = err_console()
    names = list_namespaces(job)
    etc = remove_etc_netns(job)  # the emulated clusters' per-node /etc files
    if etc:
        con.print(Text(f"removed {len(etc)} per-node /etc/netns director{'y' if len(etc) == 1 else 'ies'}",
                       style="dim"))
    if not names:
        con.print(Text("no isthmus namespaces to remove"))
        return
    problems = []
    for name in names:
        con.print(Text(f"removing {name}", style="dim"))
        problems += remove_namespace(name)
    if problems:
        raise IsthmusError("; ".join(problems) + " (check `ip netns pids <name>`)")
    con.print(Text(f"removed {len(names)} namespace(s)"))
