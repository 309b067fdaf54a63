# isthmus/commands/bench_baseline.py: `isthmus bench baseline`: the comparison users would
# make: the same MPI program as ONE Open MPI job spanning the emulated sites, its own TCP
# transport crossing the same emulated links as isthmus's gateways (isthmus/bench/vendorwan.py).
from __future__ import annotations

import os
import re
import sys

import click
from rich.text import Text

from ..bench.vendorwan import run_across_sites
from ..errors import IsthmusError
from ..launch.binary_check import dt_needed, resolve_program
from ..netemu.emulation import check_privileges
from ..netemu.spec import parse_link_spec
from ..ui import err_console
from .bench import _CTX, bench_group


@bench_group.command("baseline", context_settings={**_CTX, "allow_interspersed_args": False})
@click.option("-n", "--np", "np", type=click.IntRange(2), required=True, help="Total ranks over all sites.")
@click.option("--sites", type=click.IntRange(2, 64), default=2, show_default=True)
@click.option("--wan", "wan", metavar="SPEC", required=True,
              help="The emulated link between every pair of sites, as for `isthmus run --wan`.")
@click.option("--timeout", type=click.FloatRange(min=1), default=600, show_default=True, metavar="SECONDS")
@click.argument("program")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def baseline_command(np, sites, wan, timeout, program, args):
    """Run PROGRAM (built with mpicc.openmpi) as one Open MPI job whose ranks are split
    over --sites emulated sites, like `isthmus run --wan` splits them. Open MPI's TCP
    transport then crosses the same emulated links isthmus would, so every cross-site
    figure can be compared with plain MPI over the same link. Needs root."""
    parse_link_spec(wan)  # a bad spec is reported before anything starts
    check_privileges()
    exe = resolve_program(program)
    needed = dt_needed(exe) or ()
    if any(re.match(r"libisthmus\.so", n) for n in needed):
        raise IsthmusError(f"{program} is built with isthmus-cc; the baseline runs the vendor's own "
                           f"MPI: build it with mpicc.openmpi")
    if not any(re.match(r"libmpi\.so", n) for n in needed):
        raise IsthmusError(f"{program} is not linked with Open MPI's libmpi.so; build it with mpicc.openmpi")
    con = err_console()
    con.print(Text(f"one Open MPI job, {np} ranks over {sites} emulated sites, link {wan}", style="dim"))
    env = dict(os.environ)
    if os.geteuid() == 0:  # as `isthmus run` does for its sites
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out, err, code, timed_out, cmd = run_across_sites(np, sites, wan, [str(exe), *args], env=env,
                                                      timeout=timeout)
    sys.stdout.write(out)
    sys.stderr.write(err)
    if timed_out:
        con.print(Text(f"isthmus bench baseline: stopped after {timeout:g} s", style="red"))
        sys.exit(124)
    if code:
        con.print(Text(f"isthmus bench baseline: the job failed (exit {code}); command: {cmd}", style="red"))
    sys.exit(code)
