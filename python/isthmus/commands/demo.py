# isthmus/commands/demo.py: `isthmus demo`: compiles the bundled demo.c with isthmus-cc and
# runs it as 2 sites x 2 ranks on this machine, through the same job runner as `isthmus run`.
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import click
from rich.panel import Panel
from rich.text import Text

from ..errors import IsthmusError
from ..launch import vendor
from ..launch.binary_check import check_program
from ..launch.job import assign_ports, run_job
from ..launch.knobs import check_settings
from ..launch.layout import MPI_CHOICES, embedded_layout
from ..paths import Prefix, find_prefix, repo_demo_source
from ..ui import err_console
from . import register

DEMO_SITES = 2
DEMO_RANKS_PER_SITE = 2


def demo_source(prefix: Prefix) -> Path:
    for candidate in (prefix.demo_source, repo_demo_source()):
        if candidate.is_file():
            return candidate
    raise IsthmusError(
        f"demo.c not found (looked in {prefix.demo_source} and {repo_demo_source()})"
    )


def compile_demo(prefix: Prefix, source: Path, outdir: Path) -> Path:
    if not prefix.cc.is_file():
        raise IsthmusError(f"{prefix.cc} is missing; run scripts/bootstrap.sh")
    binary = outdir / "demo"
    argv = [str(prefix.cc), "-O2", "-o", str(binary), str(source)]
    with err_console().status(f"compiling {source.name} with isthmus-cc ..."):
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout)
        raise IsthmusError(
            f"compiling {source} failed (isthmus-cc exited with code {proc.returncode}): {' '.join(argv)}"
        )
    return binary


@register
@click.command("demo", short_help="Build and run the bundled demo as 2 sites x 2 ranks.", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--mpi", type=click.Choice(MPI_CHOICES), default="auto", show_default=True,
              help="Vendor MPI that launches both sites; auto picks Open MPI if usable, else MPICH.")
@click.option("--keep", is_flag=True,
              help="Keep the temporary directory holding the compiled demo and print where it is.")
@click.pass_context
def demo_command(ctx: click.Context, mpi: str, keep: bool) -> None:
    """Build the bundled demo with isthmus-cc and run it as 2 sites x 2 ranks on this machine.

    The demo prints where each rank runs, passes a token around a ring, measures latency
    inside a site and across sites, checks reductions, and ends with "all results correct".
    """
    prefix = find_prefix()
    check_settings(os.environ, prefix)  # the user's ISTHMUS_* settings apply to the demo too
    source = demo_source(prefix)
    chosen = vendor.resolve(mpi, prefix)
    outdir = Path(tempfile.mkdtemp(prefix="isthmus-demo-"))
    con = err_console()
    try:
        binary = compile_demo(prefix, source, outdir)
        check_program(str(binary))
        layout = assign_ports(
            embedded_layout(DEMO_SITES * DEMO_RANKS_PER_SITE, sites=DEMO_SITES, mpi=chosen)
        )
        parts = [
            f"site {s.name} = ranks {layout.first_rank(i)}-{layout.first_rank(i) + s.ranks - 1}"
            for i, s in enumerate(layout.sites)
        ]
        gws = ", ".join(f"{s.name} {s.gateway_addr}" for s in layout.sites)
        con.print(
            Panel(
                Text(
                    f"{DEMO_SITES} sites × {DEMO_RANKS_PER_SITE} ranks: {', '.join(parts)},\n"
                    f"gateways {gws}\n"
                    f"MPI: {chosen}, transport tcp, {source.name} built with isthmus-cc"
                ),
                title="isthmus demo",
                expand=False,
            )
        )
        code = run_job(layout, str(binary), (), prefix=prefix)
    finally:
        if keep:
            con.print(Text(f"kept {outdir}"))
        else:
            shutil.rmtree(outdir, ignore_errors=True)
    sys.stdout.flush()
    if code != 0:
        con.print(Text(f"demo failed (exit code {code})", style="bold red"))
    ctx.exit(code)
