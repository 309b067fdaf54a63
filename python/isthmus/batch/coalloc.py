# isthmus/batch/coalloc.py: co-allocation. Every Slurm site's allocation is asked for at
# once; the job starts only when all of them run. An allocation that starts early holds its
# nodes (its batch script waits) for at most `hold` seconds; past that it is given back,
# and either asked for again (on_hold = "resubmit", at most `resubmits` times) or the job
# fails (on_hold = "fail"). Every site's job is cancelled on every path out that does not
# start the job (cancel_all), so nothing is left in any queue.
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from ..errors import IsthmusError
from ..launch.layout import Layout, Site
from . import script
from .record import JobRecord
from .slurm import JobState, SiteSlurm

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
                 slurm_factory: Callable[[Site], SiteSlurm] = SiteSlurm):
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
        self.allocs = [Allocation(s, slurm_factory(s)) for s in layout.sites if s.launcher == "slurm"]
        self.started = time.monotonic()
        self.waited: float | None = None  # from the first submission to every site running

    # ---- queue operations ----
    def _submit(self, a: Allocation) -> None:
        opts = request_options(a.site, self.job)
        # the batch script gives the allocation back by itself if isthmus never starts it
        safety = self.hold + 120
        a.job_id = self._sbatch(a, opts, safety)
        a.submitted = time.monotonic()
        a.running_since, a.state, a.nodes = None, None, []
        a.attempts += 1
        self.say(f"site {a.site.name}: submitted Slurm job {a.job_id}"
                 + (f" (attempt {a.attempts})" if a.attempts > 1 else ""))
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
        self._submit(a)
