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
from pathlib import Path

import pytest

pytestmark = pytest.mark.native

MPI_TESTS = Path(__file__).resolve().parents[2] / "tests" / "mpi"

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


def reports_of(prefix, tmp_path, mpi, name, program, ranks, sites):
    """Builds and runs program (its text, or a Path: a program of tests/mpi) on ranks over
    sites with ISTHMUS_COLL_STATS=1: each rank's report (site, rank, started, held,
    temporaries), after "NAME: OK"."""
    if isinstance(program, Path):
        src = program
    else:
        src = tmp_path / f"{name}.c"
        src.write_text(program)
    exe = tmp_path / name
    r = subprocess.run([str(prefix.cc), "-O2", f"-I{MPI_TESTS}", "-o", str(exe), str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "isthmus", "run", "-n", str(ranks), "--sites",
                        str(sites), "--mpi", mpi, "--timeout", "100", "--", str(exe)],
                       capture_output=True, text=True, timeout=160,
                       env=dict(os.environ, ISTHMUS_COLL_STATS="1"))
    out = r.stdout + r.stderr
    assert r.returncode == 0 and f"{name}: OK" in r.stdout, out[-4000:]
    reports = [m.groups() for m in REPORT.finditer(out)]
    assert len(reports) == ranks, out[-4000:]  # every rank ran them as schedules in flight
    return reports


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_an_8_byte_iallreduce_holds_at_most_4_kib(prefix, tmp_path, mpi):
    for site, rank, started, held, temps in reports_of(prefix, tmp_path, mpi, "in_flight",
                                                       PROGRAM, 4, 2):
        assert int(started) == 24, (site, rank, started)
        assert 0 < int(held) <= 4096, f"site {site} rank {rank}: {held} bytes"


# On a communicator held at one site (coll/nb_site.c): the vendor's own nonblocking
# collective issued in the call, and for a user op one phase of our schedule once a
# blocking collective has made the communicator's second vendor communicator (before that,
# the coroutine: not counted). Either way a collective in flight, counted by the report.
ONE_SITE = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static void add(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Op userop;
    MPI_Op_create(add, 1, &userop);
    for (int pass = 0; pass < 2; pass++) { /* pass 1 after a blocking collective */
        MPI_Request q[9];
        int usum = -1;
        int s = rank + 1 + pass, sum = -1, b = rank == 1 ? 42 + pass : -1, scan = -1;
        int *g = malloc(sizeof(int) * size), *a2a = malloc(sizeof(int) * size);
        int *a2r = malloc(sizeof(int) * size), mx = -1, one = -1;
        for (int r = 0; r < size; r++)
            a2a[r] = rank * 100 + r + pass;
        MPI_Ibarrier(c, &q[0]);
        MPI_Iallreduce(&s, &sum, 1, MPI_INT, MPI_SUM, c, &q[1]);
        MPI_Ibcast(&b, 1, MPI_INT, 1, c, &q[2]);
        MPI_Igather(&s, 1, MPI_INT, g, 1, MPI_INT, size - 1, c, &q[3]);
        MPI_Ialltoall(a2a, 1, MPI_INT, a2r, 1, MPI_INT, c, &q[4]);
        MPI_Iscan(&s, &scan, 1, MPI_INT, MPI_SUM, c, &q[5]);
        MPI_Ireduce(&s, &mx, 1, MPI_INT, MPI_MAX, 0, c, &q[6]);
        MPI_Iscatter(g, 1, MPI_INT, &one, 1, MPI_INT, size - 1, c, &q[7]);
        MPI_Iallreduce(&s, &usum, 1, MPI_INT, userop, c, &q[8]);
        for (int i = 8; i >= 0; i--) /* the last started first */
            MPI_Wait(&q[i], MPI_STATUS_IGNORE);
        bad += sum != size * (size + 1) / 2 + size * pass;
        bad += usum != sum;
        bad += b != 42 + pass;
        bad += scan != (rank + 1) * (rank + 2) / 2 + (rank + 1) * pass;
        bad += rank == 0 && mx != size + pass;
        bad += one != (rank == size - 1 ? rank + 1 + pass : -1) && rank == size - 1;
        for (int r = 0; r < size; r++) {
            bad += a2r[r] != r * 100 + rank + pass;
            bad += rank == size - 1 && g[r] != r + 1 + pass;
        }
        free(g);
        free(a2a);
        free(a2r);
        int x = 1, y = 0;
        MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, c);
        bad += y != size;
    }
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? "one_site: FAILED (%d)\n" : "one_site: OK\n", all);
    MPI_Comm_free(&c);
    MPI_Op_free(&userop);
    MPI_Finalize();
    return all != 0;
}
"""


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_one_site_nonblocking_collectives_are_in_flight(prefix, tmp_path, mpi):
    # none ran on a coroutine but the first user-op Iallreduce (no vcoll yet): 8 + 9 on
    # every rank
    for site, rank, started, held, temps in reports_of(prefix, tmp_path, mpi, "one_site",
                                                       ONE_SITE, 3, 1):
        assert int(started) == 17, (site, rank, started)
        assert 0 < int(held) <= 4096, f"site {site} rank {rank}: {held} bytes"


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_intercommunicator_nonblocking_collectives_are_in_flight(prefix, tmp_path, mpi):
    # tests/mpi/coll_inter_nb.c: on two intercommunicators (one group per site, and groups
    # spanning both sites), 3 rounds of 19 nonblocking collectives of every kind, results
    # checked, then a blocking barrier and allreduce (started in flight and waited for),
    # 4 _c forms beyond INT_MAX, bad arguments refused (nothing started) and one more round:
    # all 2 x (4 x (19 + 2) + 4) = 176 ran in flight on every rank (a coroutine's is not
    # counted), none holding more than 4 KiB besides its temporaries
    for site, rank, started, held, temps in reports_of(
            prefix, tmp_path, mpi, "coll_inter_nb", MPI_TESTS / "coll_inter_nb.c", 4, 2):
        assert int(started) == 176, (site, rank, started)
        assert 0 < int(held) <= 4096, f"site {site} rank {rank}: {held} bytes"


STRIDED = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype vec; /* 3 ints, every other one */
    MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int rep = 0; rep < 3; rep++) {
        int s[12], a[12], b[12], ip[6];
        for (int i = 0; i < 12; i++) {
            s[i] = rank + i + rep;
            a[i] = b[i] = -1;
        }
        for (int i = 0; i < 6; i++)
            ip[i] = i % 2 ? -9 : rank * 2 + i;
        MPI_Request q[3];
        MPI_Iallreduce(s, a, 2, vec, MPI_SUM, MPI_COMM_WORLD, &q[0]);
        MPI_Ireduce(s, b, 2, vec, MPI_MAX, size - 1, MPI_COMM_WORLD, &q[1]);
        MPI_Iallreduce(MPI_IN_PLACE, ip, 1, vec, MPI_SUM, MPI_COMM_WORLD, &q[2]);
        MPI_Type_free(&vec); /* pending operations complete normally */
        MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        MPI_Waitall(3, q, MPI_STATUSES_IGNORE);
        /* 2 vectors of 3 ints, the second at the first's extent (5 ints): 0,2,4 and 5,7,9 */
        for (int i = 0; i < 12; i++) {
            int used = i < 5 ? i % 2 == 0 : i < 10 && i % 2 == 1;
            int sum = size * (size - 1) / 2 + size * (i + rep), mx = size - 1 + i + rep;
            bad += a[i] != (used ? sum : -1);
            bad += rank == size - 1 ? b[i] != (used ? mx : -1) : b[i] != -1;
        }
        for (int i = 0; i < 6; i++)
            bad += ip[i] != (i % 2 ? -9 : size * (size - 1) + size * i);
    }
    MPI_Type_free(&vec);
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? "strided: FAILED (%d)\n" : "strided: OK\n", all);
    MPI_Finalize();
    return all != 0;
}
"""


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_reductions_on_strided_types_are_in_flight(prefix, tmp_path, mpi):
    # MPI_Iallreduce and MPI_Ireduce of 2 vectors of 3 strided ints (one in place), the
    # type freed while they are pending, across two sites: packed, the op applied to
    # packed bytes, unpacked at the end; all 3 x 3 in flight (they were coroutines)
    for site, rank, started, held, temps in reports_of(prefix, tmp_path, mpi, "strided",
                                                       STRIDED, 4, 2):
        assert int(started) == 9, (site, rank, started)
