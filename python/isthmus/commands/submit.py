# isthmus/commands/submit.py: `isthmus submit` (a job over sites owned by Slurm: checked,
# co-allocated with its data staged in meanwhile, run in the allocations, data staged
# out), `isthmus status JOB` and `isthmus cancel JOB`
# (from any shell on the submitting machine, through the job's record).
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import click
from rich.text import Text

from ..batch.check import check_site
from ..batch.coalloc import ON_HOLD, CoAllocator, request_options
from ..batch.launch import command_builder
from ..batch.record import JobRecord
from ..batch.script import holder_script
from ..batch.slurm import SiteSlurm
from ..batch.stage import Staging
from ..errors import IsthmusError
from ..launch import vendor
from ..launch.binary_check import check_program
from ..launch.job import run_job
from ..launch.knobs import check_settings
from ..launch.layout import MPI_CHOICES
from ..launch.secret import Secret, new_job_id
from ..launch.sitefile import load_site_file
from ..paths import find_prefix
from ..ui import err_console
from . import register

_CTX = {"help_option_names": ["-h", "--help"]}
CANCEL_WAIT = 30.0  # seconds `isthmus cancel` gives the submitter to clean up itself


class _Stopped(Exception):
    """SIGTERM (isthmus cancel) while the allocations are being obtained."""


def _say(msg: str, style: str | None = None) -> None:
    err_console().print(Text(f"isthmus: {msg}", style=style or ""))


def _raise_stopped(signum, frame) -> None:
    raise _Stopped(signal.Signals(signum).name)


def _check(layout, job: str) -> None:
    """The submit-time check at every Slurm site, then Slurm's own --test-only answer."""
    for site in layout.sites:
        if site.launcher != "slurm":
            continue
        slurm = SiteSlurm(site)
        partition = check_site(slurm, site)
        # Slurm 22.05's --test-only refuses any --nodelist ("Requested node configuration
        # is not available") where sbatch accepts it; check_site has placed the node already
        opts = [o for o in request_options(site, job) if not o.startswith("--nodelist=")]
        answer = slurm.test_only(opts, holder_script(job, site.name, 60))
        _say(f"site {site.name}: partition {partition}: {answer}", "dim")


@register
@click.command(
    "submit", short_help="Run an MPI program across sites whose nodes Slurm allocates.",
    context_settings={"allow_interspersed_args": False, **_CTX},
)
@click.option("--hold", type=click.FloatRange(min=0, min_open=True), default=300.0,
              show_default=True, metavar="SECONDS",
              help="How long an allocation that runs early holds its nodes while other sites "
                   "still wait.")
@click.option("--on-hold", "on_hold", type=click.Choice(ON_HOLD), default="resubmit",
              show_default=True,
              help="Past --hold: give the allocation back and ask again, or fail the job.")
@click.option("--resubmits", type=click.IntRange(min=0), default=3, show_default=True,
              help="How often --on-hold resubmit asks again before the job fails.")
@click.option("--max-wait", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="SECONDS", help="Fail (cancelling every site's job) if the allocations "
                                      "are not all running after this long.")
@click.option("--poll", type=click.FloatRange(min=0.05), default=2.0, show_default=True,
              metavar="SECONDS", help="How often each site's queue is looked at.")
@click.option("--mpi", type=click.Choice(MPI_CHOICES), default="auto", show_default=True,
              help="Vendor MPI of the sites whose site file does not name one.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="SECONDS", help="Stop the job, exiting 124, if it runs longer than this "
                                      "once started (queue time not counted).")
@click.option("--stats", is_flag=True, help="Turn on isthmus statistics (ISTHMUS_STATS=1).")
@click.argument("site_file", type=click.Path(dir_okay=False, exists=True))
@click.argument("program", metavar="PROGRAM")
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="[ARGS]...")
@click.pass_context
def submit_command(ctx: click.Context, site_file: str, program: str, args: tuple[str, ...],
                   **opts) -> None:
    """Run PROGRAM over the sites of SITE_FILE, asking each site with launch = "slurm" for
    an allocation ([site.slurm]: partition, account, time, constraint, qos, nodes) and
    starting the job when every allocation runs. A site's stage_in is copied to it while
    the allocations are obtained, its stage_out back after the job (docs/batch.md).
    Prints the job id for `isthmus status` and `isthmus cancel`; Ctrl-C cancels every
    site's job.

    Exit status: the job's (as `isthmus run`), 1 when stage-out failed, 2 when the request
    is refused, stage-in failed or the allocations could not be obtained, 130/143 when
    cancelled."""
    prefix = find_prefix()
    sf = load_site_file(site_file, default_mpi=opts["mpi"])
    layout = sf.layout
    if not any(s.launcher == "slurm" for s in layout.sites):
        raise IsthmusError(f"{site_file}: no site has launch = \"slurm\"; start it with "
                           f"`isthmus run --site-file {site_file}`")
    check_settings(os.environ, prefix, skip_files=any(s.remote for s in layout.sites))
    for requested in sorted({s.mpi for s in layout.sites}):
        vendor.resolve(requested, prefix)
    check_program(program)
    full_id = new_job_id()
    job = full_id[:12]
    secret = sf.secret or Secret.generate()
    staging = Staging(layout.sites, prefix, full_id, secret, Path.cwd(), say=_say)
    _check(layout, job)

    record = JobRecord.new(job, str(site_file), list(layout.sites))
    record.save()
    _say(f"job {job}: submitting to {', '.join(s.name for s in layout.sites if s.launcher == 'slurm')} "
         f"(isthmus status {job}; isthmus cancel {job})", "bold")
    coalloc = CoAllocator(layout, job, hold=opts["hold"], on_hold=opts["on_hold"],
                          resubmits=opts["resubmits"], poll=opts["poll"], max_wait=opts["max_wait"],
                          say=lambda m: _say(m, "dim"), record=record)
    old = signal.signal(signal.SIGTERM, _raise_stopped)
    # Ctrl-C cancels every site's job even when the shell started us with SIGINT ignored
    # (a background job of a script: Python then keeps ignoring it), as `isthmus run` does
    old_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        staging.start_in()  # overlaps the queue wait
        waited = coalloc.run()
        staging.wait_in()
    except (_Stopped, KeyboardInterrupt) as e:
        staging.stop()
        record.set("cancelled", f"stopped ({e or 'SIGINT'}) while waiting for the allocations")
        _say(f"job {job}: cancelled while waiting; every site's Slurm job removed")
        ctx.exit(143 if isinstance(e, _Stopped) else 130)
    except IsthmusError as e:
        coalloc.cancel_all()  # a failed stage-in after the allocations ran
        staging.stop()
        record.set("failed", str(e))
        raise
    finally:
        signal.signal(signal.SIGTERM, old)
        signal.signal(signal.SIGINT, old_int)
    per_site = ", ".join(f"{a.site.name} {a.running_since - a.submitted:.1f} s"
                         for a in coalloc.allocs if a.running_since is not None)
    _say(f"job {job}: every allocation runs after {waited:.1f} s of waiting ({per_site}); "
         "starting the job")
    record.waited = waited
    record.set("running")
    allocations = {a.site.name: (a.job_id, a.nodes) for a in coalloc.allocs}
    code = 1
    try:
        code = run_job(layout, program, args, prefix=prefix, secret=secret,
                       timeout=opts["timeout"], stats=opts["stats"], job_id=full_id,
                       command_builder=command_builder(job, allocations))
        if code == 0 and not staging.stage_out():
            code = 1
    finally:
        coalloc.cancel_all()  # a finished job is gone already; anything else goes now
        staging.stop()
        record.set("done" if code == 0 else "failed", f"exit code {code}")
    sys.stdout.flush()
    ctx.exit(code)


@register
@click.command("status", short_help="Each site's state of a job started with isthmus submit.",
               context_settings=_CTX)
@click.argument("job")
def status_command(job: str) -> None:
    """Show JOB's phase and, for each Slurm site, its batch job's state: the reason it
    waits and Slurm's expected start, or the nodes it runs on."""
    record = JobRecord.load(job)
    alive = record.submitter_alive()
    head = f"job {job}: {record.phase}"
    if record.waited is not None:
        head += f" (the allocations waited {record.waited:.1f} s)"
    if record.phase in ("allocating", "running") and not alive:
        head += f"; its isthmus submit (pid {record.pid}) is gone"
    click.echo(head)
    if record.message:
        click.echo(f"  {record.message}")
    for entry in record.entries:
        if entry.launch != "slurm":
            click.echo(f"  site {entry.name}: {entry.launch} (started with the job)")
            continue
        slurm_job = record.sites.get(entry.name)
        if slurm_job is None:
            click.echo(f"  site {entry.name}: no Slurm job")
            continue
        state = SiteSlurm(entry.site()).query(slurm_job)
        if state is None:
            click.echo(f"  site {entry.name}: Slurm job {slurm_job}: no longer in the queue")
        elif state.running:
            click.echo(f"  site {entry.name}: Slurm job {slurm_job}: RUNNING on {state.nodes}")
        else:
            click.echo(f"  site {entry.name}: Slurm job {slurm_job}: {state.state} (reason "
                       f"{state.reason}, expected start {state.start})")


@register
@click.command("cancel", short_help="Cancel a job started with isthmus submit at every site.",
               context_settings=_CTX)
@click.argument("job")
def cancel_command(job: str) -> None:
    """Stop JOB's isthmus submit and remove every site's Slurm job."""
    record = JobRecord.load(job)
    if record.submitter_alive() and record.phase in ("allocating", "running"):
        os.kill(record.pid, signal.SIGTERM)  # it cancels its sites' jobs on the way out
        deadline = time.monotonic() + CANCEL_WAIT
        while record.submitter_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
    # whatever the submitter did or could not do: every site's job, from the record
    record = JobRecord.load(job)
    for entry in record.entries:
        slurm_job = record.sites.get(entry.name)
        if entry.launch == "slurm" and slurm_job is not None:
            SiteSlurm(entry.site()).cancel(slurm_job)
            click.echo(f"site {entry.name}: Slurm job {slurm_job} cancelled")
    if record.phase in ("allocating", "running"):
        record.set("cancelled", "isthmus cancel")
    click.echo(f"job {job}: cancelled")
