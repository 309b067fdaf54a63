# tests/test_coll_shm.py: the shared-memory channels of the collective executor
# (native/src/coll/shm.c, shm_ring.c) in real jobs, by tests/mpi/coll_shm.c: allreduce,
# reduce, scan, reduce_scatter_block, bcast and barrier on MPI_COMM_WORLD, a dup and a
# split, at sizes on both sides of the 8 KiB cell, every result checked, and an
# allreduce entered with a 4 MiB rendezvous send pending (MPI's progress rule while a
# rank waits on the channels). ISTHMUS_COLL_STATS=1 makes every rank report how many
# messages went through the channels: some on every rank of a site with two or more
# members, none with ISTHMUS_COLL_SHM=0, and none anywhere when a single member has it
# (the choice of channel must be the same at both ends of every message).
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.native

REPO = Path(__file__).resolve().parents[2]
STATS = re.compile(r"isthmus coll: site (\S+) rank (\d+): temporaries: .*?, "
                   r"(\d+) shared-memory messages")


@pytest.fixture(scope="module")
def exe(prefix, tmp_path_factory):
    out = tmp_path_factory.mktemp("coll-shm") / "coll_shm"
    r = subprocess.run([str(prefix.cc), "-O2", "-o", str(out),
                        str(REPO / "tests" / "mpi" / "coll_shm.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def run(exe, layout, mpi, *args, env=None, timeout=150):
    n = sum(int(x) for x in layout.split(","))
    cmd = [sys.executable, "-m", "isthmus", "run", "-n", str(n), "--sites",
           str(len(layout.split(","))), "--ranks-per-site", layout, "--mpi", mpi,
           "--timeout", str(timeout - 30), "--", str(exe), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "ISTHMUS_COLL_STATS": "1", **(env or {})})
    assert r.returncode == 0 and "coll_shm: OK" in r.stdout, (r.stdout + r.stderr)[-6000:]
    msgs = {int(m.group(2)): int(m.group(3)) for m in STATS.finditer(r.stderr)}
    sites = {int(m.group(2)): m.group(1) for m in STATS.finditer(r.stderr)}
    assert sorted(msgs) == list(range(n)), r.stderr[-3000:]
    return msgs, sites, r.stderr


@pytest.mark.parametrize("mpi,layout", [("openmpi", "2"), ("mpich", "3"), ("openmpi", "2,2")])
def test_channels_carry_the_site_messages(exe, mpi, layout):
    msgs, sites, err = run(exe, layout, mpi)
    if "," not in layout:
        # one site: every collective is a schedule of ours or its vendor's; every rank
        # sends some of its small messages through the channels
        assert all(m > 0 for m in msgs.values()), (msgs, err[-2000:])
    # across sites the site phases of most collectives are the vendor's own; those of
    # ours (scan, reduce-scatter) still carry messages through each site's channels
    for site in set(sites.values()):
        assert sum(m for r, m in msgs.items() if sites[r] == site) > 0, (site, msgs)
    if layout == "2":
        # two members, 16 KiB and more: reduce and scan default to the chain in cells
        assert re.search(r"reduce intra chain: \d+ calls", err), err[-2000:]
        assert re.search(r"scan intra chain: \d+ calls", err), err[-2000:]
    if layout == "2,2":
        # between exactly two sites the barrier's leaders exchange once (dissemination)
        assert re.search(r"barrier wan dissemination: \d+ calls", err), err[-2000:]


def test_switched_off(exe):
    msgs, _, err = run(exe, "2", "mpich", env={"ISTHMUS_COLL_SHM": "0"})
    assert all(m == 0 for m in msgs.values()), (msgs, err[-2000:])


def test_one_member_without_them_turns_them_off_for_all(exe):
    msgs, _, err = run(exe, "3", "openmpi", "mixed")
    assert all(m == 0 for m in msgs.values()), (msgs, err[-2000:])
