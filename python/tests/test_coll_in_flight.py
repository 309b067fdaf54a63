# tests/test_coll_in_flight.py: nonblocking collectives as schedules in flight (coll/nb.c).
# What one costs: an 8-byte MPI_Iallreduce across two sites holds at most 4 KiB besides its
# temporaries (the ISTHMUS_COLL_STATS report at finalize says how much each held). That
# they run as schedules, not coroutines: the same report counts them; a coroutine's
# collective is not counted there. Correctness of many at once, of every kind, is
# tests/mpi/coll_nb_many.c (test_mpi_programs).
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.native

PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x[8], y[8];
    MPI_Request q[8];
    for (int rep = 0; rep < 3; rep++) {
        for (int i = 0; i < 8; i++) {
            x[i] = rank + i + rep;
            MPI_Iallreduce(&x[i], &y[i], 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[i]);
        }
        MPI_Waitall(8, q, MPI_STATUSES_IGNORE);
        for (int i = 0; i < 8; i++)
            bad += y[i] != size * (size - 1) / 2.0 + size * (i + rep);
    }
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? "in_flight: FAILED\n" : "in_flight: OK\n");
    MPI_Finalize();
    return all != 0;
}
"""

REPORT = re.compile(r"site (\S+) rank (\d+): in flight: (\d+) nonblocking collectives, each held "
                    r"at most (\d+) bytes besides at most (\d+) bytes of temporaries")


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_an_8_byte_iallreduce_holds_at_most_4_kib(prefix, tmp_path, mpi):
    src = tmp_path / "in_flight.c"
    src.write_text(PROGRAM)
    exe = tmp_path / "in_flight"
    r = subprocess.run([str(prefix.cc), "-O2", "-o", str(exe), str(src)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "isthmus", "run", "-n", "4", "--sites", "2",
                        "--mpi", mpi, "--timeout", "100", "--", str(exe)], capture_output=True,
                       text=True, timeout=160, env=dict(os.environ, ISTHMUS_COLL_STATS="1"))
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "in_flight: OK" in r.stdout, out[-4000:]
    reports = [m.groups() for m in REPORT.finditer(out)]
    assert len(reports) == 4, out[-4000:]  # every rank ran them as schedules in flight
    for site, rank, started, held, temps in reports:
        assert int(started) == 24, (site, rank, started)
        assert 0 < int(held) <= 4096, f"site {site} rank {rank}: {held} bytes"
