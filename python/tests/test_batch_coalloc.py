# tests/test_batch_coalloc.py: the co-allocation loop's answers to a scheduler that does
# not answer: squeue failing now and then (the wait goes on) or for good (the job fails
# and every site's job is cancelled); a site given back at --hold asked for again with
# --begin at the waiting sites' expected start. The scheduler here is a script of command outputs
# behind the real SiteSlurm parsing; the real Slurm is in test_batch_slurm.py.
from __future__ import annotations

import subprocess
from datetime import datetime, timedelta

import pytest

from isthmus.batch.coalloc import QUERY_TRIES, CoAllocator
from isthmus.batch.request import SlurmRequest
from isthmus.batch.slurm import SiteSlurm
from isthmus.errors import IsthmusError
from isthmus.launch.layout import Layout, Site


class ScriptedSlurm(SiteSlurm):
    """sbatch answers job 7; squeue fails `failures` times, then says RUNNING."""

    def __init__(self, site: Site, failures: int):
        super().__init__(site)
        self.failures = failures
        self.calls: list[str] = []

    def call(self, argv, stdin=None, check=True):
        text = " ".join(argv)
        name = next(n for n in ("sbatch", "squeue", "scancel", "scontrol", "rm") if n in text.split()
                    or f"exec {n} " in text or f"{n} -rf " in text)
        self.calls.append(name)
        out = {"sbatch": "7\n", "scontrol": "n0\n"}.get(name, "")
        if name == "squeue":
            if self.failures > 0:
                self.failures -= 1
                raise IsthmusError(f"{self.where}: `squeue -j 7` failed (exit 255): connection reset")
            out = "7|RUNNING|None|N/A|n0\n"
        return subprocess.CompletedProcess(argv, 0, out, "")


def _coalloc(failures: int):
    site = Site(name="B", ranks=2, launcher="slurm", host="10.0.0.1", port=41000,
                gateway_node="n0", slurm=SlurmRequest())
    made: list[ScriptedSlurm] = []

    def factory(s):
        made.append(ScriptedSlurm(s, failures))
        return made[-1]

    said: list[str] = []
    ca = CoAllocator(Layout(sites=(site,)), "0123456789ab", hold=60, poll=0.01,
                     say=said.append, slurm_factory=factory)
    return ca, made[0], said


def test_a_few_failed_looks_are_survived():
    ca, slurm, said = _coalloc(QUERY_TRIES - 1)
    ca.run()
    assert ca.allocs[0].nodes == ["n0"]
    assert sum("looking again" in m for m in said) == QUERY_TRIES - 1
    assert "scancel" not in slurm.calls


def test_a_site_that_never_answers_fails_the_job_and_is_cancelled():
    ca, slurm, said = _coalloc(QUERY_TRIES)
    with pytest.raises(IsthmusError, match=rf"site B: `squeue -j 7` failed .* \({QUERY_TRIES} times in a row\); giving up"):
        ca.run()
    assert slurm.calls[-2:] == ["scancel", "rm"]


class Queue(SiteSlurm):
    """A site whose jobs are always in `state`, Slurm's expected start `start`; its clock
    is this machine's. Keeps every sbatch command line."""

    def __init__(self, site: Site, state: str, start: str):
        super().__init__(site)
        self.state, self.start = state, start
        self.offset = 0.0
        self.sbatch: list[list[str]] = []

    def call(self, argv, stdin=None, check=True):
        out = ""
        if "sbatch" in " ".join(argv):
            self.sbatch.append(list(argv))
            out = f"{len(self.sbatch)}\n"
        elif argv[0] == "squeue":
            out = f"{argv[3]}|{self.state}|{'None' if self.state == 'RUNNING' else 'Resources'}|{self.start}|n0\n"
        elif argv[0] == "scontrol":
            out = "n0\n"
        return subprocess.CompletedProcess(argv, 0, out, "")


@pytest.mark.parametrize("gap,begins", [(300.0, True), (float("inf"), False)])
def test_a_site_resubmitted_at_hold_begins_when_the_others_are_expected(gap, begins):
    """A runs, B waits with Slurm's estimate an hour away: A, given back at --hold, is
    asked for again with --begin at B's expected start when that is more than the gap
    away (and never with --begin-gap inf)."""
    later = (datetime.now() + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S")
    made: dict[str, Queue] = {}

    def factory(s):
        made[s.name] = Queue(s, "RUNNING" if s.name == "A" else "PENDING", later)
        return made[s.name]

    sites = tuple(Site(name=n, ranks=2, launcher="slurm", host=f"10.0.{i}.1", port=41000,
                       gateway_node="n0", slurm=SlurmRequest()) for i, n in enumerate("AB"))
    ca = CoAllocator(Layout(sites=sites), "0123456789ab", hold=0.05, poll=0.01, resubmits=1,
                     begin_gap=gap, slurm_factory=factory)
    with pytest.raises(IsthmusError, match="resubmitted 1 times already"):
        ca.run()
    first, second = made["A"].sbatch
    assert not [o for o in first if o.startswith("--begin")]
    got = [int(o.split("+")[1]) for o in second if o.startswith("--begin=now+")]
    if begins:
        assert len(got) == 1 and 3500 < got[0] <= 3600, second
    else:
        assert not got, second
    assert not [o for argv in made["B"].sbatch for o in argv if o.startswith("--begin")]
