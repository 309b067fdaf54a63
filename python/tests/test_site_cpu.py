# tests/test_site_cpu.py: the CPU limit per site (isthmus run --site-cpu, cpu in a site
# file; launch/cpulimit.py). Without the native build: the values and their errors, the
# controller's discovery on cgroup v1 and v2 layouts written into a temporary folder, and a
# bad --site-cpu stopping the run before anything starts. With it (root, this machine's
# controller): a limited site's ranks, and only they, run in the job's group and get no
# more CPU than the limit; the groups are gone after the job, also after --timeout or with a
# process left in one (killed); and the speed-weighted decomposition, timed by the wall
# clock, gives the limited site fewer cells.
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from isthmus.cli import main
from isthmus.errors import IsthmusError
from isthmus.launch import cpulimit
from isthmus.launch.layout import Layout, Site
from isthmus.launch.sitefile import load_site_file

REPO = Path(__file__).resolve().parents[2]
JOB_TIMEOUT = 150


# ---- values ------------------------------------------------------------------------------

def test_site_cpu_values():
    assert cpulimit.parse_site_cpu("1,0.25, none", ["A", "B", "C"]) == (1.0, 0.25, None)
    assert cpulimit.period_quota(0.25) == (10_000, 2_500)
    assert cpulimit.period_quota(2) == (10_000, 20_000)
    period, quota = cpulimit.period_quota(0.01)  # the quota stays at the kernel's 1 ms at least
    assert quota == 1_000 and period == 100_000


@pytest.mark.parametrize("text,message", [
    ("0,1,1", "site A: the CPU limit must be more than 0 cores, got 0"),
    ("1,-0.5,1", "site B: the CPU limit must be more than 0 cores, got -0.5"),
    ("1,1", "has 2 value(s) but there are 3 sites (A, B, C)"),
    ("1,1,1,1", "has 4 value(s) but there are 3 sites"),
    ("1,fast,1", "site B: 'fast' is not a number of cores"),
    ("1,1,nan", "site C: the CPU limit must be a number of cores"),
    ("1,1,0.0001", "below the smallest the kernel enforces"),
    ("1,1,100000", "more cores than this machine has"),
])
def test_bad_site_cpu(text, message):
    with pytest.raises(IsthmusError) as e:
        cpulimit.parse_site_cpu(text, ["A", "B", "C"])
    assert message in str(e.value)


def test_site_file_cpu(tmp_path):
    f = tmp_path / "job.toml"
    f.write_text('[[site]]\nname = "A"\nranks = 1\ncpu = 0.5\n[[site]]\nname = "B"\nranks = 1\n')
    assert [s.cpu for s in load_site_file(f).layout.sites] == [0.5, None]
    f.write_text('[[site]]\nname = "A"\nranks = 1\ncpu = 0\n')
    with pytest.raises(IsthmusError, match=r"job.toml: site 'A': 'cpu': the CPU limit must be more than 0"):
        load_site_file(f)
    f.write_text('[[site]]\nname = "A"\nranks = 1\ncpu = "half"\n')
    with pytest.raises(IsthmusError, match=r"site 'A': 'cpu': the CPU limit must be a number"):
        load_site_file(f)
    f.write_text('[[site]]\nname = "A"\nranks = 1\ncpu = 0.5\nlaunch = "ssh"\nssh_host = "h"\n'
                 'gateway = "h:4000"\n')
    with pytest.raises(IsthmusError, match=r"needs a site whose ranks all run here, not launch 'ssh'"):
        load_site_file(f)


def test_layout_refuses_a_limit_on_several_nodes():
    site = Site(name="A", ranks=2, cpu=0.5, nodes=("n1", "n2"))
    with pytest.raises(IsthmusError, match="not several nodes"):
        Layout(sites=(site,)).validate()


# ---- finding the controller -------------------------------------------------------------

def _v2(root: Path, controllers: str, subtree: str) -> Path:
    root.mkdir()
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text(subtree + "\n")
    return root


def test_controller_v2(tmp_path):
    root = _v2(tmp_path / "cg", "cpuset cpu io memory pids", "cpu memory pids")
    mounts = f"cgroup2 {root} cgroup2 rw,nosuid 0 0\n"
    assert cpulimit.find_controller(mounts, "0::/user.slice\n") == cpulimit.Controller(2, root)


def test_controller_v2_without_cpu_for_children(tmp_path):
    root = _v2(tmp_path / "cg", "cpu memory", "memory")
    with pytest.raises(IsthmusError, match=r"does not give it to child groups \(cpu is missing "
                                           r"from .*cgroup.subtree_control"):
        cpulimit.find_controller(f"cgroup2 {root} cgroup2 rw 0 0\n", "0::/\n")


def test_controller_v1_in_own_group(tmp_path):
    """A hybrid layout (this machine's): the v2 part has no cpu, a v1 hierarchy has it
    (here together with cpuacct); the groups go under this process's own v1 group."""
    unified = _v2(tmp_path / "unified", "hugetlb", "")
    cpu = tmp_path / "cpu,cpuacct"
    (cpu / "box").mkdir(parents=True)
    (cpu / "box" / "cpu.cfs_quota_us").write_text("-1\n")
    mounts = (f"cgroup2 {unified} cgroup2 rw 0 0\n"
              f"cgroup {tmp_path / 'memory'} cgroup rw,memory 0 0\n"
              f"cgroup {cpu} cgroup rw,relatime,cpu,cpuacct 0 0\n")
    own = "4:memory:/x\n2:cpu,cpuacct:/box\n0::/\n"
    assert cpulimit.find_controller(mounts, own) == cpulimit.Controller(1, cpu / "box")
    # its own group not visible (another mount namespace's path): the hierarchy's root
    assert cpulimit.find_controller(mounts, "2:cpu,cpuacct:/elsewhere\n") == \
        cpulimit.Controller(1, cpu)


def test_no_controller(tmp_path):
    unified = _v2(tmp_path / "unified", "hugetlb", "")
    mounts = (f"cgroup2 {unified} cgroup2 rw 0 0\n"
              f"cgroup {tmp_path / 'memory'} cgroup rw,memory 0 0\n")
    with pytest.raises(IsthmusError) as e:
        cpulimit.find_controller(mounts, "")
    msg = str(e.value)
    assert "--site-cpu needs the kernel's CPU controller" in msg
    assert f"cgroup v2 at {unified} offers hugetlb" in msg
    assert "no cgroup v1 hierarchy is mounted with the cpu controller" in msg


# ---- a bad value starts nothing ----------------------------------------------------------

@pytest.mark.parametrize("value,message", [
    ("0,1,1", "site A: the CPU limit must be more than 0 cores"),
    ("1,-1,1", "site B: the CPU limit must be more than 0 cores"),
    ("1,1", "has 2 value(s) but there are 3 sites"),
])
def test_bad_site_cpu_starts_nothing(fake_prefix, script, tmp_path, value, message):
    marker = tmp_path / "started"
    prog = script("prog.sh", f"touch {marker}\n")
    r = CliRunner().invoke(main, ["run", "-n", "3", "--sites", "3", "--site-cpu", value,
                                  "--", str(prog)])
    assert r.exit_code == 2 and message in r.stderr, r.output
    assert not marker.exists()


def test_site_cpu_and_site_file_do_not_mix(fake_prefix, script, tmp_path):
    f = tmp_path / "job.toml"
    f.write_text('[[site]]\nname = "A"\nranks = 1\n')
    r = CliRunner().invoke(main, ["run", "--site-file", str(f), "--site-cpu", "1", "--",
                                  str(script("p.sh", "exit 0\n"))])
    assert r.exit_code == 2 and "--site-cpu cannot be combined with --site-file" in r.stderr


def test_dry_run_shows_the_limit(fake_prefix, script):
    prog = script("p.sh", "exit 0\n")
    r = CliRunner().invoke(main, ["run", "-n", "2", "--site-cpu", "none,0.5", "--dry-run",
                                  "--", str(prog)])
    if r.exit_code == 2 and "needs the kernel's CPU controller" in r.stderr:
        pytest.skip("no CPU controller here: " + r.stderr.strip())
    assert r.exit_code == 0, r.output
    assert "site B: ranks 1, " in r.stderr and "its ranks limited to 0.5 cores" in r.stderr
    b = r.stderr.split("site B command:")[1].split("site B environment:")[0]
    a = r.stderr.split("site A command:")[1].split("site A environment:")[0]
    assert re.search(rf"-np 1 sh -c .* B /proc/\d+/root/\S+/isthmus-[0-9a-f]{{32}}/B/"
                     rf"cgroup.procs {prog} :", b), b
    assert "sh -c" not in a and "cgroup.procs" not in a


# ---- on this machine's controller (root) --------------------------------------------------

def _controller() -> cpulimit.Controller:
    if os.geteuid() != 0:
        pytest.fail("these tests make cgroups and network namespaces: run them as root")
    return cpulimit.find_controller()


def _build(prefix, tmp_path, source: Path, name: str, *libs: str) -> Path:
    exe = tmp_path / name
    r = subprocess.run([str(prefix.cc), "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                        str(source), *libs], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return exe


# every rank spins for SECONDS of wall time and prints its CPU time, wall time and cgroups
SPIN_C = r"""/* spin: every rank spins for SECONDS of wall time and prints its CPU time, wall time and
 * its cgroup lines (the CPU limit test of isthmus run --site-cpu) */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double seconds = argc > 1 ? atof(argv[1]) : 1.5;
    char groups[512] = "", line[256];
    FILE *f = fopen("/proc/self/cgroup", "r");
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = ' ';
        strncat(groups, line, sizeof groups - strlen(groups) - 1);
    }
    if (f)
        fclose(f);
    MPI_Barrier(MPI_COMM_WORLD);
    double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    volatile unsigned long x = 0;
    while (clock_s(CLOCK_MONOTONIC) - w0 < seconds)
        for (int i = 0; i < 100000; i++)
            x += (unsigned long)i;
    double wall = clock_s(CLOCK_MONOTONIC) - w0, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    printf("spin: rank %d cpu %.4f wall %.4f cgroup %s\n", rank, cpu, wall, groups);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
"""
SPIN = re.compile(r"spin: rank (\d+) cpu ([\d.]+) wall ([\d.]+) cgroup (.*)")
GROUP = re.compile(r"isthmus-([0-9a-f]{32})/([A-Z])\b")


def _build_spin(prefix, tmp_path) -> Path:
    src = tmp_path / "site_cpu_spin.c"
    src.write_text(SPIN_C)
    return _build(prefix, tmp_path, src, "site_cpu_spin")


def _isthmus_run(*args: str) -> list[str]:
    return [sys.executable, "-m", "isthmus", "run", *args]


def _watch_groups(ctl, proc) -> dict[str, set[str]]:
    """While the job runs: the command names of the processes in each isthmus group."""
    seen: dict[str, set[str]] = {}
    while proc.poll() is None:
        for procs in ctl.base.glob(f"{cpulimit.GROUP_PREFIX}*/*/cgroup.procs"):
            try:
                pids = procs.read_text().split()
            except OSError:
                continue
            for pid in pids:
                try:
                    comm = Path(f"/proc/{pid}/comm").read_text().strip()
                except OSError:
                    continue
                seen.setdefault(f"{procs.parent.parent.name}/{procs.parent.name}", set()).add(comm)
        time.sleep(0.05)
    return seen


@pytest.mark.native
def test_limited_sites_get_their_limit(prefix, tmp_path):
    """Three sites across emulated links (each in its network namespace), ranks 1,2,1,
    limits none,0.5,0.25. Every rank spins for 2 s of wall time: the ranks of B and C are
    in their site's group, A's in none; together B's two ranks get at most 0.5 of a core
    and C's at most 0.25 (with a margin for the 10 ms period; less is fine: the machine is
    shared). Only ranks are ever in the groups (no gateway, no launcher), and the groups
    are gone after the job."""
    ctl = _controller()
    spin = _build_spin(prefix, tmp_path)
    before = set(ctl.base.glob(f"{cpulimit.GROUP_PREFIX}*"))
    proc = subprocess.Popen(
        _isthmus_run("-n", "4", "--sites", "3", "--ranks-per-site", "1,2,1", "--site-cpu",
                     "none,0.5,0.25", "--wan", "delay=5ms", "--timeout", str(JOB_TIMEOUT - 30),
                     "--", str(spin), "2"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = _watch_groups(ctl, proc)
        out, err = proc.communicate(timeout=JOB_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, (out + err)[-4000:]
    ranks = {int(m[0]): (float(m[1]), float(m[2]), m[3]) for m in SPIN.findall(out)}
    assert sorted(ranks) == [0, 1, 2, 3], out
    sites = {0: "A", 1: "B", 2: "B", 3: "C"}
    jobs = set()
    for rank, (_, _, groups) in ranks.items():
        found = GROUP.findall(groups)
        if sites[rank] == "A":
            assert not found, groups
        else:
            assert [s for _, s in found] == [sites[rank]], groups
            jobs.update(j for j, _ in found)
    assert len(jobs) == 1, jobs
    for site, limit in (("B", 0.5), ("C", 0.25)):
        cpu = sum(c for r, (c, _, _) in ranks.items() if sites[r] == site)
        wall = max(w for r, (_, w, _) in ranks.items() if sites[r] == site)
        assert cpu / wall <= limit * 1.2 + 0.02, (site, cpu, wall, out)
    job = jobs.pop()
    assert set(seen) <= {f"isthmus-{job}/B", f"isthmus-{job}/C"}, seen
    assert all(comm in ("site_cpu_spin", "sh") for comms in seen.values() for comm in comms), seen
    assert set(ctl.base.glob(f"{cpulimit.GROUP_PREFIX}*")) == before


@pytest.mark.native
def test_groups_are_removed_after_a_timeout(prefix, tmp_path):
    """A job stopped by --timeout while its limited ranks spin leaves no group behind."""
    ctl = _controller()
    spin = _build_spin(prefix, tmp_path)
    before = set(ctl.base.glob(f"{cpulimit.GROUP_PREFIX}*"))
    r = subprocess.run(_isthmus_run("-n", "2", "--site-cpu", "0.2,0.2", "--timeout", "6", "--",
                                    str(spin), "600"),
                       capture_output=True, text=True, timeout=JOB_TIMEOUT)
    assert r.returncode == 124, (r.stdout + r.stderr)[-3000:]
    assert set(ctl.base.glob(f"{cpulimit.GROUP_PREFIX}*")) == before


SITE_CELLS = re.compile(r"decompose: site (\d+): slow (\d+), (\d+) ranks, (\d+) cells")


@pytest.mark.native
def test_weighted_decomposition_finds_the_limited_site(prefix, tmp_path):
    """Three sites of one rank each, the middle one limited to 0.03 of a core, the same
    work per cell everywhere (SLOW 60,60,60: B's compute per step lasts many of its limit's
    periods, so the limit, not a period's allowance, decides; a burst within one allowance
    runs at full speed). Timed by the wall clock, the weighted split gives B well under the
    others' cells (the unlimited ranks get 0.15-1 core each on this shared machine: B's
    balanced share is a sixth of theirs or less; four half-way moves from an even split get
    close); the field equals a serial run's. Timed by CPU time (the other mode) the limit
    would not show: B would keep about a third."""
    _controller()
    exe = _build(prefix, tmp_path, REPO / "examples" / "decompose.c", "decompose",
                 "-listhmus-patterns", "-lm")
    cells = 1_000_000
    r = subprocess.run(_isthmus_run("-n", "3", "--sites", "3", "--site-cpu", "none,0.03,none",
                                    "--timeout", str(JOB_TIMEOUT - 30), "--", str(exe),
                                    "weighted", "60,60,60", str(cells), "20", "4", "wall"),
                       capture_output=True, text=True, timeout=JOB_TIMEOUT)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "decompose: ok" in r.stdout, out[-6000:]
    assert "compute timed by the wall clock" in r.stdout
    got = {int(s): int(c) for s, _, _, c in SITE_CELLS.findall(r.stdout)}
    assert sum(got.values()) == cells
    assert got[1] < 0.6 * max(got[0], got[2]), out[-3000:]


@pytest.mark.native
def test_a_process_left_in_a_group_is_killed_and_the_group_removed():
    """A rank that outlived its launcher (here a sleep put in the group by hand) does not
    keep the group: closing kills it, then removes the group and the job's directory."""
    ctl = _controller()
    job = "0" * 31 + "1"
    with cpulimit.JobGroups(ctl, job, {"B": 0.5}) as groups:
        group = groups.dir / "B"
        period, quota = (group / "cpu.cfs_period_us", group / "cpu.cfs_quota_us")
        if ctl.version == 1:
            assert (int(period.read_text()), int(quota.read_text())) == (10_000, 5_000)
        else:
            assert (group / "cpu.max").read_text().split() == ["5000", "10000"]
        p = subprocess.Popen(["sh", "-c", f"echo $$ > {group / 'cgroup.procs'} && exec sleep 60"])
        deadline = time.monotonic() + 10
        while str(p.pid) not in (group / "cgroup.procs").read_text().split():
            assert time.monotonic() < deadline and p.poll() is None
            time.sleep(0.02)
    assert p.wait(timeout=10) == -9
    assert not groups.dir.exists()
