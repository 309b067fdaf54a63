# tests/test_wan_counts.py: every collective crosses the WAN with a number of messages
# that depends on the number of sites, never on the number of ranks. The gateways count
# the messages they forward (ISTHMUS_STATS=1); tests/mpi/coll_wan_count.c repeats one
# collective k times, and the difference to a run with 0 repetitions, divided by k, must
# equal the two-level algorithm's count exactly, for 2 sites with 2 and with 3 ranks each
# and for 3 sites; the pipelined allreduce sends one message per segment and site pair.
# The data movers' counts come from the model's schedules of them (model/compose.py), so
# the model and the C are held to each other.
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from isthmus.model import compose as C

pytestmark = pytest.mark.native

REPO = Path(__file__).resolve().parents[2]
REPS = 5
# cross-site messages per call, as a function of the number of sites S
EXPECTED = {
    "barrier": lambda s: 2 * (s - 1),     # gather to the first leader and release
    "bcast": lambda s: s - 1,             # root to every other site's leader
    "reduce": lambda s: s - 1,            # every other site's partial to the root
    "allreduce": lambda s: s * (s - 1),   # leaders swap partials
    "gather": lambda s: s - 1,            # each other site's hub to the root
    "scatter": lambda s: s - 1,
    "allgather": lambda s: s * (s - 1),
    "alltoall": lambda s: s * (s - 1),    # one message per ordered pair of sites
    "scan": lambda s: s - 1,              # site totals passed along the sites (exscan chain)
    "reduce_scatter": lambda s: s * (s - 1),  # leaders swap the other sites' shares
}
# The data movers' forms, from the model of what libisthmus composes
# (isthmus/model/compose.py: through each site's hub, coll/nb_hub.c): its schedule's
# cross-site sends for coll_wan_count's blocks of 4 ints on the layout, which must equal
# the gateways' count; "gather_last" has the root at the last rank, not its site's leader.
def _modelled(layout):
    n = sum(layout)
    return {
        "alltoall": C.alltoall(layout, 16), "ialltoall": C.alltoall(layout, 16),
        "alltoallv": C.alltoall(layout, 16),
        "gather": C.gather(layout, 16), "igather": C.gather(layout, 16),
        "gatherv": C.gather(layout, 16), "gather_last": C.gather(layout, 16, root=n - 1),
        "scatter": C.scatter(layout, 16), "iscatter": C.scatter(layout, 16),
    }


MODELLED = sorted(_modelled([1, 1]))
# the pipelined cross-site allreduce: one message per segment and ordered pair of sites;
# coll_wan_count's 4 ints in segments of 4 bytes
PIPE_SEGMENTS = 4
LAYOUTS = ["2,2", "3,3", "1,2,2"]
SENT = re.compile(r"isthmus stats: .* -> .*: sent (\d+) msgs")


@pytest.fixture(scope="module")
def exe(prefix, tmp_path_factory):
    out = tmp_path_factory.mktemp("wan-count") / "coll_wan_count"
    r = subprocess.run([str(prefix.cc), "-O2", "-o", str(out),
                        str(REPO / "tests" / "mpi" / "coll_wan_count.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def sent_messages(exe, layout, coll, reps, env=None):
    n = sum(int(x) for x in layout.split(","))
    cmd = [sys.executable, "-m", "isthmus", "run", "-n", str(n), "--sites",
           str(len(layout.split(","))), "--ranks-per-site", layout, "--mpi", "openmpi",
           "--timeout", "100", "--", str(exe), coll, str(reps)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "ISTHMUS_STATS": "1", **(env or {})})
    assert r.returncode == 0 and "coll_wan_count: OK" in r.stdout, (r.stdout + r.stderr)[-3000:]
    counts = [int(m.group(1)) for m in SENT.finditer(r.stderr)]
    assert counts, "no gateway statistics printed:\n" + r.stderr[-2000:]
    return sum(counts)


@pytest.fixture(scope="module")
def baseline(exe):
    return {layout: sent_messages(exe, layout, "barrier", 0) for layout in LAYOUTS}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("coll", sorted(EXPECTED))
def test_wan_messages_per_collective(exe, baseline, layout, coll):
    sites = len(layout.split(","))
    total = sent_messages(exe, layout, coll, REPS)
    per_call = (total - baseline[layout]) / REPS
    assert per_call == EXPECTED[coll](sites), (
        f"{coll} on {layout}: {per_call} cross-site messages per call, "
        f"expected {EXPECTED[coll](sites)}")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("coll", MODELLED)
def test_wan_messages_as_the_model_composes(exe, baseline, layout, coll):
    ranks = [int(x) for x in layout.split(",")]
    want = C.wan_messages(_modelled(ranks)[coll], ranks)
    total = sent_messages(exe, layout, coll, REPS)
    per_call = (total - baseline[layout]) / REPS
    assert per_call == want, (f"{coll} on {layout}: {per_call} cross-site messages per call, "
                              f"the model's schedule sends {want}")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_wan_messages_of_the_pipelined_allreduce(exe, baseline, layout):
    sites = len(layout.split(","))
    total = sent_messages(exe, layout, "allreduce", REPS,
                          env={"ISTHMUS_COLL_WAN_ALLREDUCE": f"pipeline::{PIPE_SEGMENTS}"})
    per_call = (total - baseline[layout]) / REPS
    assert per_call == PIPE_SEGMENTS * sites * (sites - 1), (
        f"pipelined allreduce on {layout}: {per_call} cross-site messages per call, expected "
        f"{PIPE_SEGMENTS} segments x {sites * (sites - 1)} ordered site pairs")
