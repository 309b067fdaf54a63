# tests/test_coll_algorithms.py: every collective algorithm of libisthmus's collective
# library (native/src/coll), run for real by tests/mpi/coll_algorithms.c, which names each
# one in turn with the communicator hints isthmus_coll_<coll> / isthmus_coll_wan_<coll>
# and checks every result against one computed locally (a non-commutative matrix product
# on contiguous and non-contiguous derived types, MAXLOC on MPI_DOUBLE_INT, sums; counts
# 0, 1, 3, 6; roots 0 and last; in place). On one site with 9 ranks, split into groups
# of 1, 2, 3, 4, 5, 8 and 9 ranks, several at once; across 2 and 3 sites with the sites' members
# consecutive, reversed and interleaved; under Open MPI and MPICH. ISTHMUS_COLL_STATS=1
# makes every rank report how often each algorithm ran, so a hint that was silently
# ignored fails the test. Also: the selection table and the environment override, and
# that a wrong choice stops the job with a message naming the culprit.
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.native

REPO = Path(__file__).resolve().parents[2]
STAT = re.compile(r"isthmus coll: site (\S+) rank (\d+): (\w+) (intra|wan) (\w+): (\d+) calls")

# What tests/mpi/coll_algorithms.c names, by the library's names for them.
INTRA = {
    "bcast": {"binomial", "knomial", "scatter_allgather", "chain", "linear"},
    "reduce": {"binomial", "knomial", "rabenseifner", "chain", "linear"},
    "allreduce": {"recursive_doubling", "rabenseifner", "ring", "knomial", "linear", "exchange"},
    "reduce_scatter": {"ring", "recursive_halving", "pairwise", "vendor"},
    "scan": {"recursive_doubling", "chain", "vendor"},
    "exscan": {"recursive_doubling", "chain", "vendor"},
    "allgather": {"ring", "recursive_doubling", "bruck", "exchange"},
    "alltoall": {"pairwise", "bruck"},
    "barrier": {"dissemination", "linear"},
}
WAN = {
    "bcast": {"linear", "binomial", "knomial", "scatter_allgather", "chain"},
    "reduce": {"linear", "binomial", "knomial", "rabenseifner", "chain"},
    "allreduce": {"exchange", "recursive_doubling", "rabenseifner", "ring", "knomial", "linear",
                  "pipeline"},
    "exscan": {"chain", "recursive_doubling"},   # the leaders' phase of scan and exscan
    "reduce_scatter": {"pairwise", "ring", "recursive_halving"},
    "allgather": {"exchange", "ring", "recursive_doubling", "bruck"},
    "barrier": {"linear", "dissemination"},
}
# Inside a site across sites: the phases the two-level collectives run there (the
# vendor's scan and exscan are in INTRA already; reduce-scatter's site phases are a
# reduce and a scatter).
INTRA_ACROSS = {k: INTRA[k] | ({"vendor"} if k in ("bcast", "reduce", "allgather", "barrier")
                               else set())
                for k in ("bcast", "reduce", "scan", "exscan", "allgather", "barrier")}


@pytest.fixture(scope="module")
def exe(prefix, tmp_path_factory):
    out = tmp_path_factory.mktemp("coll-alg") / "coll_algorithms"
    r = subprocess.run([str(prefix.cc), "-O2", "-o", str(out),
                        str(REPO / "tests" / "mpi" / "coll_algorithms.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def run(exe, layout, mpi, args=(), env=None, timeout=150):
    n = sum(int(x) for x in layout.split(","))
    cmd = [sys.executable, "-m", "isthmus", "run", "-n", str(n), "--sites",
           str(len(layout.split(","))), "--ranks-per-site", layout, "--mpi", mpi,
           "--timeout", str(timeout - 20), "--", str(exe), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "ISTHMUS_COLL_STATS": "1", **(env or {})})


def ran(stderr):
    """{(coll, level): {algorithm, ...}} over all ranks, with more than 0 calls."""
    seen: dict[tuple[str, str], set[str]] = {}
    for m in STAT.finditer(stderr):
        if int(m.group(6)) > 0:
            seen.setdefault((m.group(3), m.group(4)), set()).add(m.group(5))
    return seen


def missing(seen, want, level):
    return {c: sorted(algs - seen.get((c, level), set())) for c, algs in want.items()
            if algs - seen.get((c, level), set())}


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_every_algorithm_on_one_site_for_1_to_9_ranks(exe, mpi):
    r = run(exe, "9", mpi, ["9;1,8;2,3,4;5,4"])  # groups of 1, 2, 3, 4, 5, 8 and 9 ranks
    assert r.returncode == 0 and "coll_algorithms: OK" in r.stdout, (r.stdout + r.stderr)[-6000:]
    seen = ran(r.stderr)
    assert not missing(seen, INTRA, "intra"), missing(seen, INTRA, "intra")


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
@pytest.mark.parametrize("layout", ["3,3", "1,2,2"])
def test_every_algorithm_across_sites(exe, mpi, layout):
    r = run(exe, layout, mpi)
    assert r.returncode == 0 and "coll_algorithms: OK" in r.stdout, (r.stdout + r.stderr)[-6000:]
    seen = ran(r.stderr)
    assert not missing(seen, WAN, "wan"), missing(seen, WAN, "wan")
    assert not missing(seen, INTRA_ACROSS, "intra"), missing(seen, INTRA_ACROSS, "intra")


def test_table_and_environment_choose(prefix, tmp_path):
    exe = tmp_path / "coll_wan_count"
    r = subprocess.run([str(prefix.cc), "-O2", "-o", str(exe),
                        str(REPO / "tests" / "mpi" / "coll_wan_count.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    table = tmp_path / "table.json"
    table.write_text('{"format": "isthmus-coll-table", "version": 1, "rules": ['
                     '{"coll": "allreduce", "ranks": [4, null], "algorithm": "linear"},'
                     '{"coll": "allreduce", "ranks": [1, 3], "bytes": [0, 1024],'
                     ' "algorithm": "ring", "segment": 8}]}')
    r = run(exe, "3", "openmpi", ["allreduce", "4"], env={"ISTHMUS_COLL_TABLE": str(table)},
            timeout=60)
    assert r.returncode == 0 and "coll_wan_count: OK" in r.stdout, r.stderr[-3000:]
    assert ran(r.stderr).get(("allreduce", "intra")) == {"ring"}, r.stderr[-2000:]
    # the environment comes before the table
    r = run(exe, "3", "openmpi", ["allreduce", "4"],
            env={"ISTHMUS_COLL_TABLE": str(table), "ISTHMUS_COLL_ALLREDUCE": "knomial:3"},
            timeout=60)
    assert r.returncode == 0 and "coll_wan_count: OK" in r.stdout, r.stderr[-3000:]
    assert ran(r.stderr).get(("allreduce", "intra")) == {"knomial"}, r.stderr[-2000:]


def test_a_wrong_choice_stops_the_job(prefix, tmp_path):
    """Each kind of mistake is covered by native/tests/test_coll_select.c; here, that one
    stops a real job at MPI_Init on every site, with the message."""
    table = tmp_path / "t.json"
    table.write_text('{"format": "isthmus-coll-table", "version": 1, "rules": ['
                     '{"coll": "allreduce", "algorithm": "ring"},'
                     ' {"coll": "bcast", "algorithm": "knomial:1"}]}')
    out = tmp_path / "demo"
    r = subprocess.run([str(prefix.cc), "-O2", "-o", str(out), str(REPO / "examples" / "demo.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = run(out, "1,1", "openmpi", env={"ISTHMUS_COLL_TABLE": str(table)}, timeout=60)
    assert r.returncode != 0, "the job ran despite a wrong selection table"
    assert f'collective selection table {table}: rule 2 (bcast): radix "1" must be 2..64' \
        in r.stderr, r.stderr[-3000:]


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_defaults_and_the_vendor_on_one_site(prefix, tmp_path, mpi):
    """On a communicator within one site the reductions run our schedules unless the
    vendor's collective is chosen (twolevel.c, vendor_default: the vendor's nonblocking
    forms measured slower at 2 ranks); "vendor" reaches the vendor's own scan too."""
    exe = tmp_path / "coll_wan_count"
    r = subprocess.run([str(prefix.cc), "-O2", "-o", str(exe),
                        str(REPO / "tests" / "mpi" / "coll_wan_count.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for coll, env, want in [("allreduce", {}, {"recursive_doubling"}),
                            ("allreduce", {"ISTHMUS_COLL_ALLREDUCE": "vendor"}, {"vendor"}),
                            ("scan", {"ISTHMUS_COLL_SCAN": "vendor"}, {"vendor"})]:
        r = run(exe, "2", mpi, [coll, "4"], env=env, timeout=60)
        assert r.returncode == 0 and "coll_wan_count: OK" in r.stdout, r.stderr[-3000:]
        assert ran(r.stderr).get((coll, "intra")) == want, (coll, env, r.stderr[-2000:])
