# tests/test_batch_coalloc.py: the co-allocation loop's answers to a scheduler that does
# not answer: squeue failing now and then (the wait goes on) or for good (the job fails
# and every site's job is cancelled). The scheduler here is a script of command outputs
# behind the real SiteSlurm parsing; the real Slurm is in test_batch_slurm.py.
from __future__ import annotations

import subprocess

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
