# isthmus/commands/submit.py: `isthmus submit` (a job over sites owned by Slurm: checked,
# its [split] chosen, starts lined up, co-allocated with its data staged in meanwhile,
# run in the allocations, data staged out), `isthmus status JOB` and `isthmus cancel JOB`
# (from any shell on the submitting machine, through the job's record).
from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

import click
from rich.text import Text

from ..batch.check import Survey, check_size, survey_site
from ..batch.coalloc import ON_HOLD, CoAllocator, plan_begin, request_options
from ..batch.launch import command_builder
from ..batch.record import JobRecord
from ..batch.reserve import Reservations
from ..batch.script import holder_script
from ..batch.slurm import Estimate, SiteSlurm
from ..batch.split import Offer, Split, check_capacity, choose, when
from ..batch.stage import Staging
from ..errors import IsthmusError
from ..launch import vendor
from ..launch.binary_check import check_program
from ..launch.job import run_job
from ..launch.knobs import check_settings
from ..launch.layout import MPI_CHOICES, Layout
from ..launch.secret import Secret, new_job_id
from ..launch.sitefile import SiteFile, load_site_file
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


def _estimate(slurm: SiteSlurm, site, job: str) -> Estimate:
    # Slurm 22.05's --test-only refuses any --nodelist ("Requested node configuration
    # is not available") where sbatch accepts it; the check has placed the node already
    opts = [o for o in request_options(site, job) if not o.startswith("--nodelist=")]
    return slurm.estimate(opts, holder_script(job, site.name, 60))


def _check(sf: SiteFile, job: str) -> tuple[Layout, dict[str, Estimate], dict[str, SiteSlurm],
                                            dict[str, Survey]]:
    """The submit-time check at every Slurm site, the split of [split] chosen from the
    sites' expected starts, and Slurm's own --test-only answer for every site of the job:
    the layout to run, each Slurm site's estimate, SiteSlurm and what it offers."""
    layout = sf.layout
    slurms = {s.name: SiteSlurm(s) for s in layout.sites if s.launcher == "slurm"}
    surveys = {s.name: survey_site(slurms[s.name], s) for s in layout.sites if s.launcher == "slurm"}
    estimates: dict[str, Estimate] = {}
    if sf.split is not None:
        layout = _choose(sf.split, layout, job, slurms, surveys, estimates)
    for site in layout.sites:
        if site.launcher != "slurm":
            continue
        check_size(surveys[site.name], site)
        if site.name not in estimates:
            estimates[site.name] = _estimate(slurms[site.name], site, job)
            _say(f"site {site.name}: partition {surveys[site.name].partition}: "
                 f"{estimates[site.name].answer}", "dim")
    return layout, estimates, slurms, surveys


def _choose(split: Split, layout: Layout, job: str, slurms, surveys, estimates) -> Layout:
    """Each site of the split asked when it would start with the ranks it would get, the
    choice made and said; the layout with the chosen ranks (sites given none left out)."""
    by_name = {s.name: s for s in layout.sites}
    capacity = {s: surveys[s].capacity(by_name[s]) for s in split.sites}
    try:
        check_capacity(split, capacity, lambda s: surveys[s].where)
    except ValueError as e:
        raise IsthmusError(f"[split] ({split.describe()}): {e}") from None
    offers = {}
    for name in split.sites:
        trial = replace(by_name[name], ranks=min(by_name[name].ranks, capacity[name]))
        est = estimates[name] = _estimate(slurms[name], trial, job)
        sv = surveys[name]
        offers[name] = Offer(name, capacity[name], est.start_in, est.start, sv.free, len(sv.nodes))
    choice = choose(split, offers)
    _say(f"[split] {split.describe()}:", "bold")
    for name in split.sites:
        _say(f"  {offers[name].describe()}")
    _say(f"  chosen: {choice.reason}", "bold")
    sites = []
    for site in layout.sites:
        ranks = choice.ranks.get(site.name, site.ranks)
        if ranks == 0:
            estimates.pop(site.name, None)
            continue
        if ranks < site.gateways:
            raise IsthmusError(f"[split]: site {site.name} would get {ranks} rank(s), fewer than "
                               f"its {site.gateways} gateways; give it fewer gateways")
        if ranks != min(site.ranks, capacity.get(site.name, site.ranks)):
            estimates.pop(site.name, None)  # asked with other ranks: asked again
        sites.append(replace(site, ranks=ranks))
    return layout.with_sites(sites).validate()


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
@click.option("--begin-gap", "begin_gap", type=click.FloatRange(min=0), default=None,
              metavar="SECONDS",
              help="Sites expected to start more than this before the last one are queued with "
                   "--begin at its expected start (default: --hold; inf: never).")
@click.option("--reserve", is_flag=True,
              help="Create a Slurm reservation at every site from the latest expected start "
                   "and queue into it (needs Slurm operator rights at every site).")
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
    starting the job when every allocation runs. A [split] table leaves the ranks of some
    sites to be chosen from each scheduler's expected start; sites expected to start far
    apart are lined up with --begin (or reservations, --reserve). A site's stage_in is copied to it while
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
    layout, estimates, slurms, surveys = _check(sf, job)
    staging = Staging(layout.sites, prefix, full_id, secret, Path.cwd(), say=_say)
    gap = opts["hold"] if opts["begin_gap"] is None else opts["begin_gap"]
    reservations = Reservations(job, say=lambda m: _say(m, "dim"))
    if opts["reserve"]:
        # everything queued into reservations from the latest expected start: no --begin
        begins: dict[str, float] = {}
        now = time.monotonic()
        start = max(0.0, max(e.start_in - (now - e.asked) for e in estimates.values()))
        extra = reservations.make(layout, slurms, surveys, start, opts["hold"])
    else:
        begins, extra = _plan_begin(estimates, gap), {}
    coalloc = CoAllocator(layout, job, hold=opts["hold"], on_hold=opts["on_hold"],
                          resubmits=opts["resubmits"], poll=opts["poll"], max_wait=opts["max_wait"],
                          say=lambda m: _say(m, "dim"), begin_gap=gap, begins=begins,
                          slurms=slurms, extra=extra)
    try:
        _wait_and_run(ctx, sf, layout, job, full_id, program, args, prefix, secret, staging,
                      opts, reservations.names(), coalloc)
    finally:
        reservations.delete()


def _plan_begin(estimates: dict[str, Estimate], gap: float) -> dict[str, float]:
    begins = plan_begin(estimates, gap)
    if begins:
        last = max(estimates, key=lambda s: estimates[s].asked + estimates[s].start_in)
        e = estimates[last]
        _say(f"the sites' expected starts lie more than {gap:g} s (--begin-gap) apart: "
             f"{', '.join(sorted(begins))} queued with --begin at site {last}'s expected start "
             f"{when(e.start, e.start_in)}")
    return begins


def _wait_and_run(ctx: click.Context, sf: SiteFile, layout: Layout, job: str, full_id: str,
                  program: str, args: tuple[str, ...], prefix, secret: Secret, staging: Staging,
                  opts: dict, reserved: dict[str, str], coalloc: CoAllocator) -> None:
    """The allocations obtained (data staged in meanwhile), the job run in them, data
    staged out; exits with the job's code."""
    record = JobRecord.new(job, str(sf.path), list(layout.sites))
    record.reservations = reserved  # for isthmus cancel, should this process be killed
    record.save()
    coalloc.record = record
    _say(f"job {job}: submitting to {', '.join(s.name for s in layout.sites if s.launcher == 'slurm')} "
         f"(isthmus status {job}; isthmus cancel {job})", "bold")
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
    """Stop JOB's isthmus submit and remove every site's Slurm job (and the reservations
    of --reserve)."""
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
        if entry.name in record.reservations:
            SiteSlurm(entry.site()).unreserve(record.reservations[entry.name])
            click.echo(f"site {entry.name}: reservation {record.reservations[entry.name]} deleted")
    if record.phase in ("allocating", "running"):
        record.set("cancelled", "isthmus cancel")
    click.echo(f"job {job}: cancelled")
