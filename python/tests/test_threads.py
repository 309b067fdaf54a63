# tests/test_threads.py: MPI_THREAD_MULTIPLE (native/src/core/mt.c, docs/design.md
# "Threads"). tests/mpi/thread_multiple.c runs 4 threads per rank calling MPI at once: each
# on its own duplicated communicator, all on one communicator with distinct tags, and
# probe / matched-probe races. Across 2 sites with both vendors, on one site without a
# gateway (the lock-free fast path), and under ThreadSanitizer; also the one-sided progress
# helper thread (core/rma_progress.c) under ThreadSanitizer.
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from test_mpi_programs import MPI_TESTS, run_job

pytestmark = pytest.mark.native

NAME = "thread_multiple"
TSAN_SUPP = MPI_TESTS / "tsan.supp"


def build_threads(cc: Path, out_dir: Path, *flags: str) -> Path:
    exe = out_dir / (NAME + ("-tsan" if flags else ""))
    if not exe.exists():
        r = subprocess.run([str(cc), "-O2", "-g", "-pthread", *flags, "-o", str(exe),
                            str(MPI_TESTS / f"{NAME}.c")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    return exe


@pytest.fixture(scope="module")
def threads_exe(prefix, tmp_path_factory):
    return build_threads(prefix.cc, tmp_path_factory.mktemp("threads"))


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
@pytest.mark.parametrize("ranks", ["2,2", "1,1"])
def test_threads_across_sites(threads_exe, mpi, ranks):
    r = run_job(threads_exe, ["all", "4"], ranks, mpi)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and f"{NAME}: OK" in r.stdout, out[-6000:]


# Without ISTHMUS_SITE there is no gateway: local sends and receives take the fast path,
# which holds no lock, while other threads hold it.
@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_threads_on_one_site_without_a_gateway(threads_exe, mpi):
    if mpi == "openmpi":
        cmd = ["mpirun.openmpi", "--oversubscribe", "-np", "3"]
    else:
        cmd = ["mpiexec.mpich", "-np", "3"]
    env = dict(os.environ, ISTHMUS_MPI=mpi, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_mpi_yield_when_idle="1")
    env.pop("ISTHMUS_SITE", None)
    r = subprocess.run([*cmd, str(threads_exe), "all", "4"], capture_output=True, text=True,
                       timeout=240, env=env)
    assert r.returncode == 0 and f"{NAME}: OK" in r.stdout, (r.stdout + r.stderr)[-6000:]


@pytest.fixture(scope="module")
def tsan_prefix():
    """The ThreadSanitizer build's install (scripts/test.sh: build-tsan, _install-tsan)."""
    p = os.environ.get("ISTHMUS_TSAN_PREFIX")
    if not p:
        if os.environ.get("ISTHMUS_REQUIRE_NATIVE"):
            pytest.fail("ISTHMUS_TSAN_PREFIX is not set: scripts/test.sh builds build-tsan")
        pytest.skip("needs the ThreadSanitizer build (ISTHMUS_TSAN_PREFIX)")
    return Path(p)


def tsan_env(tsan_prefix: Path) -> dict:
    # UCX (MPICH's transport here) patches malloc and mmap to watch memory, which breaks
    # TSan's own allocator (a SEGV in the first MPI call); these turn the patching off
    return {"ISTHMUS_PREFIX": str(tsan_prefix),
            "UCX_MEM_MALLOC_HOOKS": "no", "UCX_MEM_MMAP_HOOK_MODE": "none",
            "UCX_MEM_EVENTS": "no", "UCX_HANDLE_ERRORS": "none",
            "TSAN_OPTIONS": f"suppressions={TSAN_SUPP} halt_on_error=1 exitcode=66 "
                            "report_signal_unsafe=0"}


# Every process of the job (ranks and gateways) runs the TSan build; any report fails the
# test. The suppressions file holds only the vendor MPIs' own internals, each with why.
@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_threads_are_clean_under_thread_sanitizer(tsan_prefix, tmp_path, mpi):
    exe = build_threads(tsan_prefix / "bin" / "isthmus-cc", tmp_path, "-fsanitize=thread")
    r = run_job(exe, ["all", "4", "8"], "2,2", mpi, extra_env=tsan_env(tsan_prefix))
    out = r.stdout + r.stderr
    assert "ThreadSanitizer" not in out, out[-8000:]
    assert r.returncode == 0 and f"{NAME}: OK" in r.stdout, out[-6000:]


# Nonblocking collectives run as coroutines on stacks of their own (core/nbc.c), announced
# to TSan as fibers. A switch made in the wrong place leaves one frame too few on the
# resuming thread's shadow stack per finished collective; a program that finishes dozens
# of them on one thread then crashes TSan (the thread test's few MPI_Iallreduce did so only
# sometimes). coll_nonblocking finishes well over a hundred on each rank's main thread.
@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_nonblocking_collectives_are_clean_under_thread_sanitizer(tsan_prefix, tmp_path, mpi):
    exe = tmp_path / "coll_nonblocking-tsan"
    r = subprocess.run([str(tsan_prefix / "bin" / "isthmus-cc"), "-O2", "-g", "-pthread",
                        "-fsanitize=thread", "-o", str(exe),
                        str(MPI_TESTS / "coll_nonblocking.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = run_job(exe, [], "2,1", mpi, extra_env=tsan_env(tsan_prefix))
    out = r.stdout + r.stderr
    assert "ThreadSanitizer" not in out, out[-8000:]
    assert r.returncode == 0 and "coll_nonblocking: OK" in r.stdout, out[-6000:]


# The one-sided progress helper (core/rma_progress.c) is a second thread in programs that
# never asked for threads: it runs the progress engine while the program computes, taking
# the core lock as MPI_THREAD_MULTIPLE's threads do. rma_passive on 2 + 2 ranks (its busy
# target computes while the other ranks lock, put, flush, get and unlock it; counters,
# fetch-and-op, accumulates and compare-and-swap on every rank before that), every
# process on the TSan build; any report fails.
@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_the_rma_progress_helper_is_clean_under_thread_sanitizer(tsan_prefix, tmp_path, mpi):
    exe = tmp_path / "rma_passive-tsan"
    r = subprocess.run([str(tsan_prefix / "bin" / "isthmus-cc"), "-O2", "-g",
                        "-fsanitize=thread", "-o", str(exe), str(MPI_TESTS / "rma_passive.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # the helper asked for explicitly: under Open MPI it runs only then (core/init.c)
    r = run_job(exe, [], "2,2", mpi,
                extra_env={**tsan_env(tsan_prefix), "ISTHMUS_RMA_PROGRESS_US": "200"})
    out = r.stdout + r.stderr
    assert "ThreadSanitizer" not in out, out[-8000:]
    assert r.returncode == 0 and "rma_passive: OK" in r.stdout, out[-6000:]
