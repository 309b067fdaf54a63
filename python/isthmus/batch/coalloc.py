# isthmus/batch/coalloc.py: co-allocation. Every Slurm site's allocation is asked for at
# once; the job starts only when all of them run. An allocation that starts early holds its
# nodes (its batch script waits) for at most `hold` seconds; past that it is given back,
# and either asked for again (on_hold = "resubmit", at most `resubmits` times) or the job
# fails (on_hold = "fail"). Every site's job is cancelled on every path out that does not
# start the job (cancel_all), so nothing is left in any queue.
#
# When the sites' expected starts lie further apart than `begin_gap`, the earlier ones are
# queued with --begin at the latest (plan_begin), so they do not hold idle nodes for the
# gap; a begin is moved earlier when the others turn out to start earlier (they run, or
# Slurm's estimate moved), and a resubmitted site gets one from the waiting sites' starts.
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from ..errors import IsthmusError
from ..launch.layout import Layout, Site
from . import script
from .record import JobRecord
from .slurm import Estimate, JobState, SiteSlurm
from .split import SAME_START

ON_HOLD = ("resubmit", "fail")
# squeue over ssh may fail once (a dropped connection, a busy slurmctld): a site's state is
# given up on only after this many failed looks in a row
QUERY_TRIES = 3


def request_options(site: Site, job: str) -> list[str]:
    """sbatch's options for the site: the site file's request, one task per rank and
    gateway, and the gateway's node (the one with the outside address) in the allocation."""
    assert site.slurm is not None
    opts = [*site.slurm.sbatch_options(), f"--job-name=isthmus-{job}-{site.name}",
            f"--ntasks={site.ranks + site.gateways}"]
    if site.gateway_node:
        opts.append(f"--nodelist={site.gateway_node}")
    return opts


def plan_begin(estimates: dict[str, Estimate], gap: float) -> dict[str, float]:
    """The sites to queue with --begin, and when (time.monotonic()): those whose expected
    start lies more than `gap` seconds before the latest site's, at that latest start."""
    if not estimates:
        return {}
    latest = max(e.asked + e.start_in for e in estimates.values())
    return {site: latest for site, e in estimates.items() if latest - (e.asked + e.start_in) > gap}


@dataclass
class Allocation:
    """One Slurm site's request as it goes through its queue."""

    site: Site
    slurm: SiteSlurm
    job_id: str | None = None
    submitted: float = 0.0
    running_since: float | None = None
    state: JobState | None = None
    attempts: int = 0
    nodes: list[str] = field(default_factory=list)
    failed_looks: int = 0  # squeue failures in a row
    begin_at: float | None = None  # time.monotonic() of its --begin, if it has one
    extra: list[str] = field(default_factory=list)  # more sbatch options (a reservation)

    def describe(self) -> str:
        s = self.state
        if s is None:
            return f"site {self.site.name}: not in the queue"
        text = f"site {self.site.name}: Slurm job {self.job_id} {s.state}"
        if s.waiting:
            text += f" (reason {s.reason}, expected start {s.start})"
        elif s.running:
            text += f" on {s.nodes}"
        return text


class CoAllocator:
    def __init__(self, layout: Layout, job: str, *, hold: float, on_hold: str = "resubmit",
                 resubmits: int = 3, poll: float = 2.0, max_wait: float | None = None,
                 say: Callable[[str], None] = lambda m: None, record: JobRecord | None = None,
                 slurm_factory: Callable[[Site], SiteSlurm] = SiteSlurm,
                 begin_gap: float = float("inf"), begins: dict[str, float] | None = None,
                 slurms: dict[str, SiteSlurm] | None = None,
                 extra: dict[str, list[str]] | None = None):
        if on_hold not in ON_HOLD:
            raise IsthmusError(f"--on-hold must be one of {', '.join(ON_HOLD)}, got {on_hold!r}")
        if hold <= 0 or poll <= 0:
            raise IsthmusError(f"--hold and --poll must be positive (got {hold:g}, {poll:g})")
        self.layout = layout
        self.job = job
        self.hold = hold
        self.on_hold = on_hold
        self.resubmits = resubmits
        self.poll = poll
        self.max_wait = max_wait
        self.say = say
        self.record = record
        self.begin_gap = begin_gap
        # the sites' SiteSlurm of the check (which know their clocks), else new ones
        known = slurms or {}
        self.allocs = [Allocation(s, known.get(s.name) or slurm_factory(s),
                                  begin_at=(begins or {}).get(s.name), extra=(extra or {}).get(s.name, []))
                       for s in layout.sites if s.launcher == "slurm"]
        self.started = time.monotonic()
        self.waited: float | None = None  # from the first submission to every site running

    # ---- queue operations ----
    def _submit(self, a: Allocation) -> None:
        opts = [*request_options(a.site, self.job), *a.extra]
        begin = None if a.begin_at is None else a.begin_at - time.monotonic()
        if begin is not None and begin > 0:
            opts.append(f"--begin=now+{int(begin)}")
        # the batch script gives the allocation back by itself if isthmus never starts it
        safety = self.hold + 120
        a.job_id = self._sbatch(a, opts, safety)
        a.submitted = time.monotonic()
        a.running_since, a.state, a.nodes = None, None, []
        a.attempts += 1
        self.say(f"site {a.site.name}: submitted Slurm job {a.job_id}"
                 + (f" (attempt {a.attempts})" if a.attempts > 1 else "")
                 + (f" with {' '.join(a.extra)}" if a.extra else "")
                 + (f" to begin in {begin:.0f} s (--begin), when the other sites are expected to "
                    "start" if begin is not None and begin > 0 else ""))
        self._save()

    def _sbatch(self, a: Allocation, opts: list[str], safety: float) -> str:
        argv = script.submit_argv(self.job, a.site.name, ["--parsable", *opts])
        r = a.slurm.call(argv, stdin=script.holder_script(self.job, a.site.name, safety))
        job_id = r.stdout.strip().split(";")[0]
        if not job_id.isdigit():
            raise IsthmusError(f"{a.slurm.where}: sbatch answered {r.stdout.strip()!r}, not a job id")
        return job_id

    def _release(self, a: Allocation) -> None:
        if a.job_id is not None:
            a.slurm.cancel(a.job_id)
            a.slurm.call(script.cleanup_argv(self.job, a.site.name), check=False)
        a.job_id, a.state, a.running_since, a.nodes = None, None, None, []

    def cancel_all(self) -> None:
        """Cancel every site's Slurm job (errors reported, never raised: this runs on the
        way out)."""
        for a in self.allocs:
            try:
                self._release(a)
            except IsthmusError as e:
                self.say(f"warning: {e}")
        self._save()

    def _save(self) -> None:
        if self.record is not None:
            # the latest job id of each site stays for status and cancel, even once released
            self.record.sites.update({a.site.name: a.job_id for a in self.allocs if a.job_id})
            self.record.save()

    # ---- the wait ----
    def run(self) -> float:
        """Submit everywhere and wait until every allocation runs; returns the seconds
        waited. Raises IsthmusError (after cancelling every site's job) when it cannot."""
        try:
            for a in self.allocs:
                self._submit(a)
            while True:
                if self._step():
                    self.waited = time.monotonic() - self.started
                    return self.waited
                time.sleep(self.poll)
        except BaseException:
            self.cancel_all()
            raise

    def _step(self) -> bool:
        now = time.monotonic()
        for a in self.allocs:
            assert a.job_id is not None
            try:
                state = a.slurm.query(a.job_id)
            except IsthmusError as e:
                a.failed_looks += 1
                if a.failed_looks >= QUERY_TRIES:
                    raise IsthmusError(f"{e} ({a.failed_looks} times in a row); giving up") from None
                self.say(f"warning: {e}; looking again")
                continue
            a.failed_looks = 0
            before, a.state = a.state, state
            if a.state is None or not (a.state.running or a.state.waiting):
                what = "left the queue" if a.state is None else f"is {a.state.state}"
                raise IsthmusError(f"site {a.site.name}: Slurm job {a.job_id} {what} before the "
                                   f"job could start (cancelled, or refused by the site)")
            if a.state.running and a.running_since is None:
                a.running_since = now
                a.nodes = a.slurm.hostnames(a.state.nodes)
                self.say(f"site {a.site.name}: allocation running on {', '.join(a.nodes)} after "
                         f"{now - a.submitted:.1f} s")
            elif a.state.waiting and (before is None or before.reason != a.state.reason):
                self.say(a.describe())
        if all(a.running_since is not None for a in self.allocs):
            return True
        self._move_begins()
        if self.max_wait is not None and now - self.started > self.max_wait:
            raise IsthmusError(f"not every site's allocation ran within {self.max_wait:g} s: "
                               + "; ".join(a.describe() for a in self.allocs))
        for a in self.allocs:
            if a.running_since is not None and now - a.running_since > self.hold:
                self._hold_expired(a)
        return False

    def _hold_expired(self, a: Allocation) -> None:
        waiting = "; ".join(b.describe() for b in self.allocs if b.running_since is None)
        if self.on_hold == "fail" or a.attempts > self.resubmits:
            why = ("--on-hold fail" if self.on_hold == "fail"
                   else f"resubmitted {self.resubmits} times already")
            raise IsthmusError(f"site {a.site.name}: its allocation held its nodes for "
                               f"{self.hold:g} s (--hold) while {waiting}; released, and the "
                               f"job fails ({why})")
        self.say(f"site {a.site.name}: held {self.hold:g} s (--hold) while {waiting}; "
                 "releasing it and asking again")
        self._release(a)
        later = self._others_start(a)
        a.begin_at = time.monotonic() + later if later is not None and later > self.begin_gap else None
        self._submit(a)

    def _others_start(self, a: Allocation) -> float | None:
        """Seconds until every site but `a` is expected to run (0 for running ones, Slurm's
        estimate for waiting ones); None when a waiting site has no estimate."""
        latest = 0.0
        for b in self.allocs:
            if b is a or b.running_since is not None:
                continue
            start = None if b.state is None else b.slurm.seconds_until(b.state.start)
            if start is None:
                return None
            latest = max(latest, start)
        return latest

    def _move_begins(self) -> None:
        """A site queued with --begin whose others now start earlier (they run, or their
        estimate moved) is moved to their start."""
        now = time.monotonic()
        for a in self.allocs:
            if a.begin_at is None or a.job_id is None or a.state is None or not a.state.waiting:
                continue
            later = self._others_start(a)
            if later is None or a.begin_at - now <= later + SAME_START:
                continue
            try:
                a.slurm.set_begin(a.job_id, later)
            except IsthmusError as e:
                self.say(f"warning: {e}; it keeps its --begin")
                a.begin_at = None  # asked once; the hold and the estimates go on as before
                continue
            self.say(f"site {a.site.name}: the other sites now start earlier than expected "
                     f"({'running' if later <= 0 else f'in {later:.0f} s'}); its --begin moved "
                     f"from {a.begin_at - now:.0f} s to {later:.0f} s from now")
            a.begin_at = now + later
