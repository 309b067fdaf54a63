# isthmus/commands/run.py: `isthmus run`: builds the layout from options or a site file,
# checks the program, and runs the job (or, with --dry-run, shows what would be started).
from __future__ import annotations

import os
import shlex
import sys
from dataclasses import replace

import click
from click.core import ParameterSource
from rich.text import Text

from ..errors import IsthmusError
from ..launch import vendor
from ..launch.binary_check import check_program
from ..launch.env import CONTRACT_VARS
from ..launch.cpulimit import parse_site_cpu
from ..launch.job import JobPlan, assign_ports, cpu_limited, plan_job, run_job
from ..launch.knobs import check_settings
from ..launch.layout import (DEFAULT_HOST, MPI_CHOICES, TRANSPORTS, Layout, default_site_names,
                             embedded_layout)
from ..launch.secret import Secret
from ..launch.sitefile import load_site_file
from ..launch.transport import UNENCRYPTED, apply_env, effective_crypto, link_hints, transport_env
from ..outputs import OutputDir
from ..paths import find_prefix
from ..ui import err_console
from . import register

# Options that describe the sites, so they cannot be combined with --site-file.
_LAYOUT_OPTIONS = {
    "sites": "--sites",
    "ranks_per_site": "--ranks-per-site",
    "gateways": "--gateways",
    "host": "--host",
    "port": "--port",
    "site_cpu": "--site-cpu",
}
SECRET_PLACEHOLDER = "<private 0600 file, created at launch>"


def _given(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)


def build_layout(ctx: click.Context, params: dict) -> tuple[Layout, Secret | None, bool]:
    """The layout (and a secret, if the site file has one) from the command-line options,
    and whether a site file names the transport."""
    site_file = params["site_file"]
    if site_file is not None:
        clash = [flag for name, flag in _LAYOUT_OPTIONS.items() if _given(ctx, name)]
        if clash:
            raise IsthmusError(
                f"{', '.join(clash)} cannot be combined with --site-file (the site file describes the sites)"
            )
        sf = load_site_file(site_file, default_mpi=params["mpi"])
        for warning in sf.warnings:
            err_console().print(Text(f"isthmus: warning: {warning}", style="yellow"))
        if params["np"] is not None and params["np"] != sf.layout.total_ranks:
            raise IsthmusError(
                f"-n {params['np']} does not match {site_file}, which has "
                f"{sf.layout.total_ranks} ranks; drop -n or fix the site file"
            )
        params["_file_crypto"] = sf.crypto
        return sf.layout, sf.secret, sf.transport_given
    if params["np"] is None:
        raise click.UsageError("give the number of ranks with -n/--np (or use --site-file)")
    layout = embedded_layout(
        params["np"],
        sites=params["sites"],
        ranks_per_site=params["ranks_per_site"],
        gateways=params["gateways"],
        host=params["host"],
        port=params["port"],
        mpi=params["mpi"],
        transport=params["transport"],
    )
    if params["site_cpu"] is not None:
        limits = parse_site_cpu(params["site_cpu"], [s.name for s in layout.sites])
        layout = layout.with_sites([replace(s, cpu=c) for s, c in zip(layout.sites, limits)])
    return layout.validate(), None, False


def choose_transport(ctx: click.Context, params: dict, layout: Layout, file_transport: bool,
                     env_transport: str | None) -> Layout:
    """--transport, else ISTHMUS_WAN_TRANSPORT (already checked), else the site file's, else
    tcp; a choice that contradicts the site file's transport is an error."""
    if _given(ctx, "transport"):
        value, how = params["transport"], "--transport "
    elif env_transport:
        value, how = env_transport, "ISTHMUS_WAN_TRANSPORT="
    else:
        return layout
    if value == layout.transport:
        return layout
    if file_transport:
        raise IsthmusError(f"{how}{value} differs from transport {layout.transport!r} in "
                           f"{params['site_file']}")
    return layout.with_transport(value)


def _wan_matrix(ctx: click.Context, params: dict):
    """The link matrix for --wan/--wan-matrix (None without them), after checking that
    the other options allow it."""
    if params["wan"] is None and params["wan_matrix"] is None:
        if params["wan_nat"]:
            raise IsthmusError("--wan-nat needs --wan or --wan-matrix (it places a site of the "
                               "emulation behind NAT)")
        return None
    from ..netemu.emulation import check_privileges
    from ..netemu.matrix import load_matrix, uniform
    from ..netemu.spec import LinkSpec, parse_link_spec

    for name, flag in (("site_file", "--site-file"), ("host", "--host")):
        if _given(ctx, name):
            raise IsthmusError(f"--wan cannot be combined with {flag}: with --wan every site runs "
                               "on this machine in its own network namespace")
    if params["dry_run"]:
        raise IsthmusError("--wan cannot be combined with --dry-run (the addresses exist only "
                           "while the emulation runs)")
    base = parse_link_spec(params["wan"]) if params["wan"] else LinkSpec()
    if params["wan_matrix"]:
        matrix = load_matrix(params["wan_matrix"], base=base,
                             sites=params["sites"] if _given(ctx, "sites") else None)
        if list(matrix.names) != default_site_names(matrix.count):
            raise IsthmusError(f"{params['wan_matrix']}: with isthmus run the sites are named "
                               f"{', '.join(default_site_names(matrix.count))}; write sites = "
                               f"{matrix.count} and use those names in [links]")
        params["sites"] = matrix.count
    else:
        matrix = uniform(params["sites"], base)
    check_privileges()
    return matrix


def _span(r: range) -> str:
    return str(r.start) if len(r) == 1 else f"{r.start}-{r.stop - 1}"


def print_dry_run(plan: JobPlan, program_warning: str | None) -> None:
    con = err_console()
    layout = plan.layout
    con.print(
        Text(
            f"isthmus run --dry-run: {layout.total_ranks} ranks on {len(layout.sites)} sites, "
            f"transport {layout.transport} (nothing is started)",
            style="bold",
        )
    )
    for i, (site, sp) in enumerate(zip(layout.sites, plan.sites)):
        gws = f"{site.gateways} gateway{'s' if site.gateways > 1 else ''} at {site.gateway_addr}"
        if site.gateways > 1:
            gws += f" (+{site.gateways - 1} on the following ports)"
        launch = site.launcher + (f" via {site.ssh_host}" if site.ssh_host else "")
        if site.cpu is not None:
            launch += f", its ranks limited to {site.cpu:g} core{'' if site.cpu == 1 else 's'}"
        con.print(
            Text(f"  site {site.name}: ranks {_span(layout.rank_range(i))}, {gws}, {sp.vendor}, {launch}")
        )
    for site, sp in zip(layout.sites, plan.sites):
        con.print()
        con.print(Text(f"site {site.name} command:", style="bold"))
        con.print(Text("  " + shlex.join(sp.argv)))
        con.print(Text(f"site {site.name} environment:", style="bold"))
        shown = dict(sp.isthmus_env)
        shown.update({k: v for k, v in sp.env.items() if k in vendor.OPENMPI_ROOT_ENV})
        ordered = [k for k in CONTRACT_VARS if k in shown] + sorted(
            k for k in shown if k not in CONTRACT_VARS
        )
        for name in ordered:
            value = SECRET_PLACEHOLDER if name == "ISTHMUS_SECRET_FILE" else shlex.quote(shown[name])
            con.print(Text(f"  {name}={value}"))
    if program_warning:
        con.print()
        con.print(Text(f"warning: {program_warning} (a real run would stop here)", style="yellow"))


@register
@click.command(
    "run", short_help="Run an MPI program built with isthmus-cc across several sites.",
    context_settings={"allow_interspersed_args": False, "help_option_names": ["-h", "--help"]},
)
@click.option("-n", "--np", "np", type=int, default=None,
              help="Total number of application ranks over all sites (required unless --site-file is given).")
@click.option("--sites", type=int, default=2, show_default=True,
              help="Number of sites to split the ranks over (all on this machine).")
@click.option("--ranks-per-site", metavar="LIST", default=None,
              help="Comma-separated ranks of each site, e.g. 3,1; overrides the even split and must add up to -n.")
@click.option("--gateways", type=int, default=1, show_default=True,
              help="Number of gateway ranks each site gets in addition to its application ranks.")
@click.option("--mpi", type=click.Choice(MPI_CHOICES), default="auto", show_default=True,
              help="Vendor MPI that launches each site; auto picks Open MPI if usable, else MPICH.")
@click.option("--transport", type=click.Choice(TRANSPORTS), default="tcp", show_default=True,
              help="How gateways of different sites talk to each other: tcp (kernel TCP, "
                   "--wan-streams streams per link) or udp (isthmus's reliable UDP, one paced "
                   "flow per link with its own congestion control: bbr or reno). Also "
                   "ISTHMUS_WAN_TRANSPORT, or transport in the site file's [job].")
@click.option("--site-file", type=click.Path(dir_okay=False), default=None,
              help="TOML file describing the sites (names, ranks, gateways, hosts, launchers) instead of the options above.")
@click.option("--host", default=DEFAULT_HOST, show_default=True,
              help="Address the gateways listen on and connect to (without --site-file).")
@click.option("--port", type=int, default=None,
              help="First gateway port; gateways get consecutive ports from here (default: pick free ports).")
@click.option("--site-cpu", "site_cpu", metavar="LIST", default=None,
              help="Slow sites down: at most this many cores for each site's ranks together, "
                   "one value per site or none, e.g. 1,0.5,0.25 (a cgroup per site on this "
                   "machine; the gateways are not limited; needs root). Also cpu in the site file.")
@click.option("--stats", is_flag=True,
              help="Turn on isthmus statistics in every rank and gateway (sets ISTHMUS_STATS=1 for the job).")
@click.option("--trace", "trace_dir", type=OutputDir(), default=None, metavar="DIR",
              help="Record every MPI call of every rank and every frame of every gateway into "
                   "DIR (made if missing; an earlier trace there is replaced). Read it with "
                   "`isthmus trace summary DIR` and `isthmus trace export DIR`.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Stop the whole job, exiting 124, if it runs longer than this many seconds.")
@click.option("--wan", "wan", metavar="SPEC", default=None,
              help="Run each site in its own network namespace joined by the link emulator "
                   "(root), e.g. delay=20ms,rate=1gbit,loss=0.1%. See `isthmus link emulate --help`.")
@click.option("--wan-nat", "wan_nat", metavar="SITE", default=None,
              help="With --wan: put SITE behind NAT (masquerading, nothing can reach it): its "
                   "gateways dial every link out, as a site that grants no inbound port must.")
@click.option("--wan-matrix", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Per-pair link settings (TOML, as for `isthmus link emulate --matrix`); implies --wan.")
@click.option("--wan-streams", type=int, default=None, metavar="N",
              help="TCP streams per link between two gateways (default: automatic, from the "
                   "link's rate, round trip and loss when known).")
@click.option("--wan-cc", default=None, metavar="NAME",
              help="Congestion control of the links: with tcp the kernel's, e.g. cubic or bbr "
                   "(default: the system's); with udp bbr (default) or reno.")
@click.option("--wan-crc", is_flag=True,
              help="Add a CRC32C to every frame between gateways; a corrupted frame is sent again.")
@click.option("--wan-crypto", type=click.Choice(["aead", "none"]), default=None,
              help="Protection of everything between sites after the handshake: aead (the "
                   "default: encrypted and authenticated, docs/security.md) or none (in the "
                   "clear; only by explicit choice, and said at start).")
@click.option("--link-outage", type=float, default=None, metavar="SECONDS",
              help="How long a broken link may take to come back before the job aborts (default 60).")
@click.option("--dry-run", is_flag=True,
              help="Print each site's command line and environment (never the secret) and exit without starting anything.")
@click.argument("program", metavar="PROGRAM")
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="[ARGS]...")
@click.pass_context
def run_command(ctx: click.Context, **params) -> None:
    """Run PROGRAM (built with isthmus-cc) as one MPI job spread over several sites.

    Global ranks are numbered site by site: with -n 4 --sites 2, site A has ranks 0-1 and
    site B ranks 2-3. Put `--` before PROGRAM if its arguments start with '-'.

    Exit status: 0 if every site succeeded; else the exit code of the first site that
    failed, 124 after --timeout, 128+N when stopped by signal N, 2 for a usage error.
    """
    wan = _wan_matrix(ctx, params)
    prefix = find_prefix()
    layout, secret, file_transport = build_layout(ctx, params)
    batch = [s.name for s in layout.sites if s.launcher == "slurm"]
    if batch:
        raise IsthmusError(f"site {batch[0]} has launch = \"slurm\": start the job with "
                           f"`isthmus submit {params['site_file']} PROGRAM`, which obtains every "
                           "site's allocation first")
    # every ISTHMUS_* setting, as the library and the gateways will read them, before
    # anything starts (a site on another host reads its own collective table)
    check_settings(os.environ, prefix,
                   skip_files=any(s.launcher == "ssh" for s in layout.sites))
    layout = choose_transport(ctx, params, layout, file_transport,
                              os.environ.get("ISTHMUS_WAN_TRANSPORT"))
    # a CPU limit's controller is found (or its absence reported) before anything starts
    limited_builder, _ = cpu_limited(layout, None)
    crypto, crypto_by = effective_crypto(params["wan_crypto"], params.get("_file_crypto"),
                                         os.environ)
    tenv = transport_env(streams=params["wan_streams"], cc=params["wan_cc"],
                         crc=params["wan_crc"], outage=params["link_outage"],
                         transport=layout.transport, crypto=crypto)
    os.environ.update(tenv)  # explicit options win over the environment
    if crypto == "none":
        click.echo(f"isthmus: warning: {UNENCRYPTED} ({crypto_by})", err=True)
    if wan is not None:
        apply_env(os.environ, link_hints(wan))  # hints do not override what the user set
    program, args = params["program"], tuple(params["args"])
    trace_dir = params["trace_dir"]
    if trace_dir is not None:
        from ..trace.launch import tracer_path

        tracer_path(prefix)
        trace_dir = trace_dir.resolve()
        os.environ["ISTHMUS_TRACE_DIR"] = str(trace_dir)

    if params["dry_run"]:
        warning = None
        try:
            check_program(program)
        except IsthmusError as e:
            warning = str(e)
        layout = assign_ports(layout)
        if trace_dir is not None:
            from ..trace.launch import traced_command

            program, args = traced_command(prefix, program, args)
        plan = plan_job(
            layout, program, args, prefix=prefix, secret_path=SECRET_PLACEHOLDER,
            stats=params["stats"], command_builder=limited_builder,
        )  # fmt: skip
        print_dry_run(plan, warning)
        ctx.exit(0)

    # Resolve vendors first: a missing MPI is the more basic problem.
    for requested in sorted({s.mpi for s in layout.sites}):
        vendor.resolve(requested, prefix)
    check_program(program)
    if trace_dir is not None:
        from ..trace.launch import prepare_dir, report_files, traced_command

        prepare_dir(trace_dir, layout, program, args)
        program, args = traced_command(prefix, program, args)
    code = _run(ctx, params, layout, wan, program, args, prefix, secret)
    if trace_dir is not None:
        click.echo(report_files(trace_dir), err=True)
    sys.stdout.flush()
    ctx.exit(code)


def _run(ctx: click.Context, params: dict, layout: Layout, wan, program: str,
         args: tuple[str, ...], prefix, secret) -> int:
    if wan is not None:
        from ..netemu.wanjob import run_job_over_wan

        con = err_console()
        con.print(Text(f"sites joined by emulated links: {wan.get(0, 1).describe()}"
                       + (" (per-pair settings from the matrix)" if params["wan_matrix"] else "")))
        code = run_job_over_wan(
            layout, wan, program, args, prefix=prefix, port=params["port"], secret=secret,
            timeout=params["timeout"], stats=params["stats"],
            progress=lambda m: con.print(Text(m, style="dim")),
            link_stats=(lambda m: con.print(Text(m))) if params["stats"] else None,
            nat=(params["wan_nat"],) if params["wan_nat"] else (),
        )  # fmt: skip
        return code
    return run_job(
        layout, program, args, prefix=prefix, secret=secret, timeout=params["timeout"],
        stats=params["stats"],
    )  # fmt: skip
