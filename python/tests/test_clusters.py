# tests/test_clusters.py: isthmus run against real sshds on emulated clusters
# (isthmus/netemu/clusters.py): 2 sites x 2 nodes x 2 ranks, each site's vendor MPI
# launching across its nodes over ssh, started from the workstation through each site's
# login node (ssh -J), with Open MPI, MPICH and one of each; the loss of one site's ssh
# connection stops every site with nothing left on any node; the shared-memory channels
# of the collectives stay inside a node. Needs root (namespaces) and openssh-server;
# mandatory under scripts/test.sh (ISTHMUS_REQUIRE_NETADMIN).
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from isthmus.netemu.clusters import Clusters, _ns_processes
from mpiprogs import HANG_C

pytestmark = pytest.mark.native

REPO = Path(__file__).resolve().parents[2]
JOB_TIMEOUT = 150



def _build(prefix, src: Path, out: Path) -> Path:
    r = subprocess.run([str(prefix.cc), "-O2", "-o", str(out), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def programs(netadmin, tmp_path_factory):
    d = tmp_path_factory.mktemp("clusters")
    (d / "hang.c").write_text(HANG_C)
    return {"demo": _build(netadmin, REPO / "examples" / "demo.c", d / "demo"),
            "hang": _build(netadmin, d / "hang.c", d / "hang"),
            "coll_shm": _build(netadmin, REPO / "tests" / "mpi" / "coll_shm.c", d / "coll_shm"),
            "dir": d}


def _bed(request, **kwargs) -> Clusters:
    """A test bed torn down by a finalizer whatever happens (a failed start included); the
    job name carries the pid so parallel runs never share a namespace or host name."""
    bed = Clusters(job=f"c{os.getpid()}{kwargs.pop('tag', '')}", **kwargs)
    request.addfinalizer(bed.close)
    bed.start()
    return bed


@pytest.fixture(scope="module")
def bed(request, netadmin):
    return _bed(request, sites=2, nodes_per_site=2, link="delay=2ms")


def _run(bed: Clusters, site_file: Path, program: Path, *args, env=None, timeout=JOB_TIMEOUT):
    cmd = [sys.executable, "-m", "isthmus", "run", "--site-file", str(site_file),
           "--timeout", str(timeout - 30), str(program), *args]
    return bed.workstation(cmd, capture_output=True, text=True, timeout=timeout,
                           cwd=str(site_file.parent), env={**os.environ, **(env or {})})


def _hosts_of_ranks(stdout: str) -> dict[int, tuple[str, str]]:
    """rank -> (site, host) from the demo's table, printed by rank 0 of site A."""
    rows = re.findall(r"^\[A:0\]\s+(\d+)\s+(\S+)\s+(\S+)$", stdout, re.M)
    return {int(r): (s, h) for r, s, h in rows}


RUN_DIR = Path.home() / ".isthmus" / "run"  # the nodes share this machine's $HOME


def _run_dirs() -> set[str]:
    return {p.name for p in RUN_DIR.glob("job-*")} if RUN_DIR.is_dir() else set()


def _assert_clean(bed: Clusters, before: set[str] | None = None):
    left = bed.leftovers(wait=15)
    assert not left, f"processes left on the nodes: {left}"
    if before is not None:  # the sites' secret files are gone with them
        assert not (_run_dirs() - before), f"secret directories left: {_run_dirs() - before}"


@pytest.mark.parametrize("mpis", [("openmpi", "openmpi"), ("mpich", "mpich"), ("openmpi", "mpich")],
                         ids=["openmpi", "mpich", "mixed"])
def test_two_sites_of_two_nodes(bed, programs, mpis):
    """Each site's vendor places 2 ranks on each of its 2 nodes and the gateway on node 0
    (the one with the WAN address); the job is started on the workstation through each
    site's login node; every line comes back with its site and rank."""
    site_file = bed.site_file(programs["dir"] / f"sites-{'-'.join(mpis)}.toml", ranks_per_node=2,
                              mpi=list(mpis), jump=True)
    r = _run(bed, site_file, programs["demo"])
    assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
    assert "[A:0] all results correct" in r.stdout, r.stdout[-3000:]
    hosts = _hosts_of_ranks(r.stdout)
    want = {}
    for i, site in enumerate(bed.sites):
        for k in range(2):
            for j in range(2):
                want[4 * i + 2 * k + j] = (site, bed.node(site, k).hostname)
    assert hosts == want, r.stdout[-3000:]
    _assert_clean(bed)


def _ws_ssh_clients(bed: Clusters, host: str) -> list[int]:
    return [pid for pid, cmd in _ns_processes(bed.ws_namespace)
            if cmd.startswith("ssh ") and f" {host} " in cmd]


def _start_hang(bed: Clusters, programs, name: str, *args: str, timeout: int = 200):
    site_file = bed.site_file(programs["dir"] / f"sites-{name}.toml", ranks_per_node=2,
                              mpi=["openmpi", "mpich"], jump=True)
    cmd = [sys.executable, "-m", "isthmus", "run", "--site-file", str(site_file), "--timeout",
           str(timeout), str(programs["hang"]), *args]
    out = programs["dir"] / f"{name}.out"
    with open(out, "w") as f:
        job = subprocess.Popen(bed.command(None, cmd), stdout=f, stderr=subprocess.STDOUT,
                               cwd=str(site_file.parent), start_new_session=True)
    deadline = time.monotonic() + 90
    while "all ranks up" not in out.read_text() and time.monotonic() < deadline:
        if job.poll() is not None:
            break
        time.sleep(0.2)
    return job, out


def _stop_job(job: subprocess.Popen) -> None:
    if job.poll() is None:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()


def test_losing_a_sites_ssh_connection_stops_every_site(bed, programs):
    """SIGKILL of site A's ssh client mid-run: every site stops within 30 s and nothing is
    left running on any node (the remote side stops its launcher when its stdin ends)."""
    before = _run_dirs()
    job, out = _start_hang(bed, programs, "loss")
    try:
        assert "all ranks up" in out.read_text(), out.read_text()[-3000:]
        launch_host = bed.node("A", 1).hostname
        clients = _ws_ssh_clients(bed, launch_host)
        assert clients, f"no ssh client to {launch_host} on the workstation"
        killed_at = time.monotonic()
        for pid in clients:
            os.kill(pid, signal.SIGKILL)
        code = job.wait(timeout=60)
        took = time.monotonic() - killed_at
        text = out.read_text()
        assert code != 0, text[-3000:]
        assert took < 30, f"the job took {took:.1f} s to stop after site A's ssh died"
        assert "site A" in text, text[-3000:]
    finally:
        _stop_job(job)
    _assert_clean(bed, before)


@pytest.mark.parametrize("how", ["crash", "timeout", "sigint"])
def test_every_exit_path_leaves_the_nodes_clean(bed, programs, how):
    """A rank that crashes on the gateway node (not the launcher's), --timeout, and Ctrl-C
    (SIGINT to isthmus run): every site stops and no process is left on any node."""
    before = _run_dirs()
    # --timeout counts from the start, and the ranks must be up before it fires (the
    # path under test stops a running job): starting them over ssh took 5-26 s at a load
    # of 10-14 on 2 cores, so 25 s was crossed; 60 s
    job, out = _start_hang(bed, programs, how, *(["crash"] if how == "crash" else []),
                           timeout=60 if how == "timeout" else 200)
    try:
        assert "all ranks up" in out.read_text(), out.read_text()[-3000:]
        if how == "sigint":
            pid = next(p for p, cmd in _ns_processes(bed.ws_namespace) if " isthmus run " in f" {cmd} ")
            os.kill(pid, signal.SIGINT)
        code = job.wait(timeout=90)
        text = out.read_text()
        want = {"crash": lambda c: c not in (0, 124), "timeout": lambda c: c == 124,
                "sigint": lambda c: c == 130}[how]
        assert want(code), f"exit code {code}:\n{text[-3000:]}"
    finally:
        _stop_job(job)
    _assert_clean(bed, before)


def test_shared_memory_channels_stay_inside_a_node(request, netadmin, programs):
    """Nodes that see one /dev/shm (as emulated nodes can) are still different nodes: the
    collectives' shared-memory channels are not used between them."""
    bed = _bed(request, sites=2, nodes_per_site=2, private_shm=False, tag="s")
    site_file = bed.site_file(programs["dir"] / "sites-shm.toml", ranks_per_node=2, mpi="openmpi")
    r = _run(bed, site_file, programs["coll_shm"], env={"ISTHMUS_COLL_STATS": "1"})
    assert r.returncode == 0 and "coll_shm: OK" in r.stdout, (r.stdout + r.stderr)[-5000:]
    msgs = {int(m.group(1)): int(m.group(2)) for m in re.finditer(
        r"isthmus coll: site \S+ rank (\d+): temporaries: .*?, (\d+) shared-memory messages", r.stderr)}
    assert sorted(msgs) == list(range(8)), r.stderr[-3000:]
    assert all(v == 0 for v in msgs.values()), msgs


def test_link_emulate_nodes_per_site_cli(netadmin):
    """The user-facing tool: COMMAND runs on the workstation, reaches a node through the
    site's login node by its name, and finds the site file written for the clusters."""
    job = f"c{os.getpid()}cli"
    tag = job.lower()
    script = f'ssh -J a0-{tag} a1-{tag} hostname && grep -c "^\\[\\[site\\]\\]" "$ISTHMUS_CLUSTERS_SITE_FILE"'
    r = subprocess.run([sys.executable, "-m", "isthmus", "link", "emulate", "--nodes-per-site", "2",
                        "--job", job, "--rt-prio", "0", "--", "sh", "-c", script],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert r.stdout.split() == [f"a1-{tag}", "2"], r.stdout
    assert f"a1-{tag}" in r.stderr  # the banner lists the nodes
    assert not list(Path("/var/run/netns").glob(f"ism-{job}-*"))
    assert not list(Path("/etc/netns").glob(f"ism-{job}-*"))
