# tests/test_fortran.py: what isthmus's Fortran bindings promise beyond the MPI programs of
# tests/mpi/ (which run every binding across sites): isthmus-fc's command line, an entry
# point in libisthmus_fortran.so for every interface the generated modules declare, a
# profiling layer that replaces mpi_x_ (mpif.h) and the mpi_f08 specific MPI_X_f08ts, and
# handle integers given back when the program frees the handles (completed requests,
# freed datatypes).
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.native

REPO = Path(__file__).resolve().parents[2]
FORTRAN = REPO / "native" / "fortran"


def run_job(exe: Path, ranks: str, mpi: str = "mpich") -> subprocess.CompletedProcess:
    n = sum(int(x) for x in ranks.split(","))
    cmd = [sys.executable, "-m", "isthmus", "run", "-n", str(n), "--sites",
           str(len(ranks.split(","))), "--ranks-per-site", ranks, "--mpi", mpi,
           "--timeout", "100", "--", str(exe)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=130)


def build(prefix, tmp_path: Path, name: str, sources: dict[str, str]) -> Path:
    for file, text in sources.items():
        (tmp_path / file).write_text(text)
    exe = tmp_path / name
    r = subprocess.run([str(prefix.fc), "-O2", "-o", str(exe), *sources], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return exe


def test_fc_show_prints_the_command(prefix):
    show = subprocess.run([str(prefix.fc), "-show", "-o", "x", "x.f90"], capture_output=True,
                          text=True, check=True).stdout.split()
    assert show[0] == "gfortran"
    assert f"-I{prefix.root}/include" in show and "-fallow-argument-mismatch" in show
    # the bindings and libisthmus stay direct dependencies even under --as-needed
    assert show[-4:] == ["-Wl,--push-state,--no-as-needed", "-listhmus_fortran", "-listhmus",
                         "-Wl,--pop-state"]
    link = subprocess.run([str(prefix.fc), "-showme:link"], capture_output=True, text=True,
                          check=True).stdout
    assert "-listhmus_fortran -listhmus" in link and "-rpath" in link
    # another compiler: isthmus-fc's own flags are gfortran's, so they go
    other = subprocess.run([str(prefix.fc), "-show", "x.f90"], capture_output=True, text=True,
                           env=dict(os.environ, ISTHMUS_FC="flang"), check=True).stdout
    assert other.startswith("flang ") and "-fallow-argument-mismatch" not in other
    for f in ("mpif.h", "mpi.mod", "mpi_f08.mod", "mpi_f08_types.mod"):
        assert (prefix.root / "include" / f).is_file(), f


def joined(path: Path) -> str:
    """A free-form source with its continuation lines joined."""
    return re.sub(r"&\n\s*", "", path.read_text())


def entry_points() -> set[str]:
    """The symbols the generated modules and mpif.h make a program call."""
    want = set()
    f08 = joined(FORTRAN / "mpi_f08.f90")
    # abstract interfaces describe the program's procedures, not the library's; the glue
    # module is the library's own
    f08 = re.sub(r"ABSTRACT INTERFACE.*?END INTERFACE", "", f08, flags=re.S)
    f08 = re.sub(r"MODULE mpi_f08_glue.*?END MODULE mpi_f08_glue", "", f08, flags=re.S)
    # every specific (and predefined callback) is an external procedure: gfortran's name
    for name in re.findall(r"^    (?:SUBROUTINE|FUNCTION) (\w+)\(", f08, re.M):
        want.add(name.lower() + "_")
    for name in re.findall(r"^    (?:SUBROUTINE|FUNCTION) (\w+)\(", joined(FORTRAN / "mpi.f90"),
                           re.M):
        name = name.lower().removeprefix("p")
        want |= {name + "_", "p" + name + "_"}
    return want


def test_every_interface_has_its_entry_point(prefix):
    lib = next((prefix.root / "lib").glob("libisthmus_fortran.so*"))
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                         text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.strip()}
    want = entry_points()
    assert len(want) > 900, len(want)
    missing = sorted(want - exported)
    assert not missing, f"{len(missing)} Fortran routines have no entry point: {missing[:20]}"
    # the helpers of the glue stay inside the library
    assert not any(s.startswith("ism_f") for s in exported)
    assert {"mpi_send_f08ts_", "pmpi_send_f08ts_", "mpi_comm_rank_f08_",
            "pmpi_comm_rank_f08_"} <= want


PROFILED = """
program profiled
  use mpi_f08
  implicit none
  integer :: rank, size, x, n77, n08
  integer, external :: count77, count08
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  x = rank
  call send77(x, mod(rank + 1, size))
  call MPI_Send(x, 1, MPI_INTEGER, mod(rank + 1, size), 2, MPI_COMM_WORLD)
  call MPI_Recv(x, 1, MPI_INTEGER, mod(rank - 1 + size, size), 1, MPI_COMM_WORLD, &
                MPI_STATUS_IGNORE)
  call MPI_Recv(x, 1, MPI_INTEGER, mod(rank - 1 + size, size), 2, MPI_COMM_WORLD, &
                MPI_STATUS_IGNORE)
  n77 = count77()
  n08 = count08()
  print '(a,i0,a,i0,a,i0)', 'rank ', rank, ' profiled ', n77, ' ', n08
  call MPI_Finalize()
end program profiled

subroutine send77(x, to)
  implicit none
  include 'mpif.h'
  integer :: x, to, ierr
  call MPI_SEND(x, 1, MPI_INTEGER, to, 1, MPI_COMM_WORLD, ierr)
end subroutine send77
"""

PROFILER = """
#include <stddef.h>
typedef int MPI_Fint;
void pmpi_send_(const void *, const MPI_Fint *, const MPI_Fint *, const MPI_Fint *,
                const MPI_Fint *, const MPI_Fint *, MPI_Fint *);
/* the mpi_f08 specific takes gfortran's descriptor of the buffer: passed on untouched */
void pmpi_send_f08ts_(void *, const MPI_Fint *, const MPI_Fint *, const MPI_Fint *,
                      const MPI_Fint *, const MPI_Fint *, MPI_Fint *);
static int n77, n08;
void mpi_send_(const void *b, const MPI_Fint *c, const MPI_Fint *t, const MPI_Fint *d,
               const MPI_Fint *g, const MPI_Fint *m, MPI_Fint *e)
{ n77++; pmpi_send_(b, c, t, d, g, m, e); }
void mpi_send_f08ts_(void *b, const MPI_Fint *c, const MPI_Fint *t, const MPI_Fint *d,
                     const MPI_Fint *g, const MPI_Fint *m, MPI_Fint *e)
{ n08++; pmpi_send_f08ts_(b, c, t, d, g, m, e); }
int count77_(void) { return n77; }
int count08_(void) { return n08; }
"""


def test_a_fortran_profiling_layer_replaces_the_entry_points(prefix, tmp_path):
    exe = build(prefix, tmp_path, "profiled", {"profiled.f90": PROFILED, "profiler.c": PROFILER})
    r = run_job(exe, "1,1")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert sorted(re.findall(r"profiled (\d+) (\d+)", r.stdout)) == [("1", "1")] * 2, r.stdout


REQUESTS = """
program requests
  use mpi
  use, intrinsic :: iso_c_binding, only : c_int
  implicit none
  interface
    ! libisthmus: how many handles hold an integer (abi/fortran.h)
    integer(c_int) function live() bind(C, name="ism_abi_f_live")
      import :: c_int
    end function live
  end interface
  integer :: rank, size, ierr, i, x(200), y(200), reqs(400), types(100), top, to, from
  integer :: live0, vec, dup, inner(1), ints(1), sz
  integer(kind=MPI_ADDRESS_KIND) :: addrs(1)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  to = mod(rank + 1, size)
  from = mod(rank - 1 + size, size)
  live0 = live()
  do i = 1, 200
    x(i) = i
    call MPI_Irecv(y(i), 1, MPI_INTEGER, from, i, MPI_COMM_WORLD, reqs(i), ierr)
  end do
  do i = 1, 200
    call MPI_Isend(x(i), 1, MPI_INTEGER, to, i, MPI_COMM_WORLD, reqs(200 + i), ierr)
  end do
  top = maxval(reqs)
  call MPI_Waitall(200, reqs, MPI_STATUSES_IGNORE, ierr)
  do i = 201, 400
    call MPI_Wait(reqs(i), MPI_STATUS_IGNORE, ierr)
  end do
  print '(a,i0,a,i0)', 'requests: live ', live() - live0, ' top ', top
  do i = 1, 100
    call MPI_Type_vector(i, 1, 2, MPI_INTEGER, types(i), ierr)
  end do
  do i = 1, 100
    call MPI_Type_free(types(i), ierr)
  end do
  print '(a,i0)', 'types: live ', live() - live0
  ! MPI_Type_get_contents hands out the duplicated type again: freeing that handle
  ! leaves the program's own one valid
  call MPI_Type_vector(2, 1, 2, MPI_INTEGER, vec, ierr)
  call MPI_Type_dup(vec, dup, ierr)
  call MPI_Type_get_contents(dup, 1, 1, 1, ints, addrs, inner, ierr)
  call MPI_Type_free(inner(1), ierr)
  call MPI_Type_size(vec, sz, ierr)
  print '(a,i0,a,i0)', 'inner ', merge(1, 0, inner(1) == MPI_DATATYPE_NULL), ' size ', sz
  call MPI_Type_free(dup, ierr)
  call MPI_Type_free(vec, ierr)
  print '(a,i0)', 'all: live ', live() - live0
  call MPI_Finalize(ierr)
end program requests
"""


def test_freed_handles_give_their_integers_back(prefix, tmp_path):
    """400 requests outstanding at once hold 400 integers; completing them (MPI_Waitall,
    MPI_Wait) gives them all back, as freeing 100 datatypes does. An object handed out
    twice (MPI_Type_get_contents of a duplicate) keeps its integer until both are freed."""
    exe = build(prefix, tmp_path, "requests", {"requests.f90": REQUESTS})
    r = run_job(exe, "1,1")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    reqs = re.findall(r"requests: live (-?\d+) top (\d+)", r.stdout)
    assert len(reqs) == 2 and all(int(live) == 0 and int(top) >= 0x1000 + 399
                                  for live, top in reqs), r.stdout
    assert re.findall(r"types: live (-?\d+)", r.stdout) == ["0", "0"], r.stdout
    assert re.findall(r"inner (\d) size (\d+)", r.stdout) == [("1", "8")] * 2, r.stdout
    assert re.findall(r"all: live (-?\d+)", r.stdout) == ["0", "0"], r.stdout


SECTION_ERRORS = """
program section_errors
  use mpi_f08
  implicit none
  real :: a(20)
  integer :: ierr, cls
  type(MPI_Request) :: req
  a = 1
  call MPI_Init()
  ! the bindings' own errors go to MPI_COMM_WORLD's error handler
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
  call MPI_Send(a(1:20:4), 6, MPI_REAL, 0, 1, MPI_COMM_SELF, ierr)
  call MPI_Error_class(ierr, cls)
  print '(a,i0)', 'count beyond the section: ', cls
  call MPI_Send_init(a(1:20:2), 40, MPI_BYTE, 0, 1, MPI_COMM_SELF, req, ierr)
  call MPI_Error_class(ierr, cls)
  print '(a,i0)', 'persistent copy: ', cls
  call MPI_Send_init(a(1:20:2), 10, MPI_REAL, 0, 1, MPI_COMM_SELF, req, ierr)
  print '(a,i0)', 'persistent with a datatype: ', ierr
  call MPI_Request_free(req)
  print '(a,i0,1x,i0)', 'classes ', MPI_ERR_COUNT, MPI_ERR_BUFFER
  call MPI_Finalize()
end program section_errors
"""


def test_sections_the_bindings_cannot_take_are_refused(prefix, tmp_path):
    """More elements than an mpi_f08 section holds (MPI_ERR_COUNT), and a persistent request
    on a section whose datatype is not one element (it would need a copy kept current
    between starts: MPI_ERR_BUFFER); a persistent request
    on a section of MPI_REAL is fine."""
    exe = build(prefix, tmp_path, "section_errors", {"section_errors.f90": SECTION_ERRORS})
    r = run_job(exe, "1")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    count, buffer = re.search(r"classes (\d+) (\d+)", r.stdout).groups()
    assert f"count beyond the section: {count}" in r.stdout, r.stdout
    assert f"persistent copy: {buffer}" in r.stdout, r.stdout
    assert "persistent with a datatype: 0" in r.stdout, r.stdout
