# tests/test_batch_slurm.py: isthmus submit against a real Slurm at each emulated site
# (isthmus/netemu/slurm.py: munged, slurmctld and slurmd of Debian's Slurm 22.05 on the
# nodes of the emulated clusters), from the workstation through each site's login node.
# A 2-site job in Slurm allocations with Open MPI, MPICH, and a Slurm site joined by an
# ssh site; a busy site that frees up (the job runs, the wait is reported); one that never
# does (released at --hold, by failing or after resubmitting, nothing left in any queue);
# isthmus cancel; the submit-time check; [split] (any_of with one site busy goes to the
# other, a ratio, fill_first, bad splits refused before queueing); a busy site lined up
# with --begin, moved when it frees; --reserve, and its refusal to a user who is not
# Slurm's operator. Needs root; mandatory under scripts/test.sh.
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from isthmus.netemu.slurm import Partition, SlurmClusters
from mpiprogs import HANG_C

pytestmark = pytest.mark.native

REPO = Path(__file__).resolve().parents[2]
JOB_TIMEOUT = 180
WAIT = 120.0  # seconds for anything a test waits on (ssh and Slurm are slow on a loaded machine)


@pytest.fixture(scope="module")
def slurm(request, netadmin):
    """2 sites x 2 nodes with their own Slurm; node 0 of each (the gateway node) has the
    feature "wan"; a second partition "short" of 5 minutes. Torn down whatever happens."""
    job = f"s{os.getpid()}"
    tag = job.lower()
    parts = [Partition("batch", max_time="01:00:00", default=True), Partition("short", max_time="00:05:00")]
    sl = SlurmClusters(sites=2, nodes_per_site=2, link="delay=1ms", job=job, rt_prio=0,
                       partitions={"A": parts, "B": parts},
                       features={f"{s}0-{tag}": ["emu", "wan"] for s in "ab"}
                       | {f"{s}1-{tag}": ["emu"] for s in "ab"})
    request.addfinalizer(sl.close)
    sl.start()
    return sl


@pytest.fixture(scope="module")
def programs(netadmin, tmp_path_factory):
    d = tmp_path_factory.mktemp("slurm")
    r = subprocess.run([str(netadmin.cc), "-O2", "-o", str(d / "demo"), str(REPO / "examples" / "demo.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return d


def _env(sl: SlurmClusters) -> dict[str, str]:
    """The job records of the tests' jobs in the bed's directory, not in ~/.isthmus."""
    return {**os.environ, "ISTHMUS_JOBS_DIR": str(sl.bed.dir / "jobs")}


def _isthmus(sl: SlurmClusters, *args: str, timeout: float = JOB_TIMEOUT, cwd: Path | None = None):
    return sl.bed.workstation([sys.executable, "-m", "isthmus", *args], capture_output=True,
                              text=True, timeout=timeout, cwd=str(cwd) if cwd else None, env=_env(sl))


def _submit_bg(sl: SlurmClusters, d: Path, name: str, *args: str):
    out = d / f"{name}.out"
    with open(out, "w") as f:
        # started with SIGINT ignored, as a script's background job is: Ctrl-C must still
        # cancel (Python keeps an inherited SIG_IGN unless the command installs a handler)
        p = subprocess.Popen(sl.bed.command(None, [sys.executable, "-m", "isthmus", "submit", *args]),
                             stdout=f, stderr=subprocess.STDOUT, cwd=str(d), start_new_session=True,
                             env=_env(sl),
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    return p, out


def _wait_for(what: str, check, timeout: float = WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def _job_id(out: Path) -> str:
    def find():
        m = re.search(r"job ([0-9a-f]{12}): submitting", out.read_text())
        return m.group(1) if m else None
    return _wait_for(f"the job id in {out}", find)


def _stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def _isthmus_jobs(sl: SlurmClusters) -> dict[str, list[str]]:
    return {s: [j for j in sl.queue(s) if "|isthmus-" in j] for s in sl.bed.sites}


def _assert_clean(sl: SlurmClusters) -> None:
    # a cancelled job stays COMPLETING while its steps' slurmstepd give up on their srun,
    # which died with the batch step (MessageTimeout and retries): tens of seconds here
    _wait_for("every isthmus job to leave the queues", lambda: not any(_isthmus_jobs(sl).values()))
    procs = sl.leftovers(wait=15)
    assert not procs, f"processes left on the nodes: {procs}"


def _block(sl: SlurmClusters, site: str) -> str:
    """Another user's job holding every node of the site."""
    r = sl.run(site, ["sbatch", "--parsable", "--exclusive", "-N2", "-J", "blocker", "-o", "/dev/null",
                      "--wrap", "sleep 600"])
    assert r.returncode == 0, r.stderr
    jid = r.stdout.strip()
    _wait_for(f"the blocker at site {site} to run",
              lambda: any(line.startswith(f"{jid}|") and "|RUNNING|" in line for line in sl.queue(site)))
    return jid


def _hosts_of_ranks(stdout: str, first: str = "A") -> dict[int, tuple[str, str]]:
    """The demo's table (printed by rank 0, at site `first`): rank -> (site, host)."""
    rows = re.findall(rf"^\[{first}:0\]\s+(\d+)\s+(\S+)\s+(\S+)$", stdout, re.M)
    return {int(r): (s, h) for r, s, h in rows}


@pytest.mark.parametrize("mpis,launch", [(("openmpi", "openmpi"), ("slurm", "slurm")),
                                         (("mpich", "mpich"), ("slurm", "slurm")),
                                         (("openmpi", "mpich"), ("slurm", "ssh"))],
                         ids=["openmpi", "mpich", "slurm+ssh"])
def test_job_runs_in_every_sites_allocation(slurm, programs, mpis, launch):
    """Each Slurm site's ranks and gateway run in its allocation (2 nodes, partition,
    time, constraint and QoS passed through), 2 ranks on each node, the gateway on node 0;
    afterwards nothing is left in either queue or on any node."""
    extra = {"partition": "batch", "time": "10:00", "constraint": "emu", "qos": "normal"}
    sf = slurm.site_file(programs / f"job-{'-'.join(launch)}-{mpis[1]}.toml", mpi=list(mpis),
                         launch=list(launch), slurm={"A": extra})
    r = _isthmus(slurm, "submit", "--poll", "0.3", "--timeout", str(JOB_TIMEOUT - 40), str(sf),
                 str(programs / "demo"), cwd=programs)
    assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
    assert "[A:0] all results correct" in r.stdout, r.stdout[-3000:]
    assert re.search(r"every allocation runs after [\d.]+ s of waiting", r.stderr), r.stderr
    bed = slurm.bed
    # an allocation's ranks go to its other node first, then to the gateway's node 0;
    # an ssh site's in the order of its node list
    order = {site: (1, 0) if how == "slurm" else (0, 1) for site, how in zip(bed.sites, launch)}
    want = {4 * i + 2 * k + j: (site, bed.node(site, order[site][k]).hostname)
            for i, site in enumerate(bed.sites) for k in range(2) for j in range(2)}
    assert _hosts_of_ranks(r.stdout) == want, r.stdout[-3000:]
    _assert_clean(slurm)




@pytest.fixture(scope="module")
def hang(netadmin, programs):
    (programs / "hang.c").write_text(HANG_C)
    r = subprocess.run([str(netadmin.cc), "-O2", "-o", str(programs / "hang"), str(programs / "hang.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return programs / "hang"


def _submit_to_busy_site(sl: SlurmClusters, d: Path, name: str, *opts: str):
    """Site B busy with another job, then the demo submitted in the background."""
    blocker = _block(sl, "B")
    sf = sl.site_file(d / f"job-{name}.toml", mpi="openmpi")
    p, out = _submit_bg(sl, d, name, "--poll", "0.3", "--hold", "120", *opts, str(sf), str(d / "demo"))
    return blocker, p, out


def test_busy_site_then_freed(slurm, programs):
    """Site B's nodes are held by another job: A's allocation runs and holds, B's waits
    (status shows Slurm's reason); once B is freed the job runs, and the wait is reported."""
    # hold and wait, not --begin: A's allocation runs and holds its nodes
    blocker, p, out = _submit_to_busy_site(slurm, programs, "busy", "--begin-gap", "inf",
                                           "--timeout", "120")
    try:
        job = _job_id(out)

        def waiting():
            r = _isthmus(slurm, "status", job, timeout=60)
            text = r.stdout
            return text if re.search(r"site A: Slurm job \d+: RUNNING", text) and \
                re.search(r"site B: Slurm job \d+: PENDING \(reason \w+, expected start", text) else None
        status = _wait_for("A running and B pending in isthmus status", waiting)
        assert "allocating" in status, status
        blocked_for = 3.0
        time.sleep(blocked_for)
        assert p.poll() is None, out.read_text()[-3000:]
        slurm.run("B", ["scancel", blocker])
        code = p.wait(timeout=JOB_TIMEOUT)
        text = out.read_text()
        assert code == 0, text[-5000:]
        assert "[A:0] all results correct" in text, text[-3000:]
        m = re.search(r"every allocation runs after ([\d.]+) s of waiting \(A [\d.]+ s, B ([\d.]+) s\)", text)
        assert m and float(m.group(2)) >= blocked_for, text[-3000:]
        r = _isthmus(slurm, "status", job, timeout=60)
        assert f"job {job}: done" in r.stdout, r.stdout
    finally:
        _stop(p)
        slurm.run("B", ["scancel", blocker])
    _assert_clean(slurm)


@pytest.mark.parametrize("on_hold", ["fail", "resubmit"])
def test_site_never_freed(slurm, programs, on_hold):
    """B never frees up: A's allocation is given back at --hold, the job fails (at once, or
    after asking A again once), and neither queue keeps anything of the job."""
    blocker = _block(slurm, "B")
    try:
        sf = slurm.site_file(programs / f"job-never-{on_hold}.toml", mpi="openmpi")
        r = _isthmus(slurm, "submit", "--poll", "0.3", "--hold", "3", "--begin-gap", "inf", "--on-hold", on_hold,
                     "--resubmits", "1", str(sf), str(programs / "demo"), timeout=120)
        text = r.stdout + r.stderr
        assert r.returncode == 2, text[-3000:]
        assert re.search(r"site A: its allocation held its nodes for 3 s \(--hold\) while site B: "
                         r"Slurm job \d+ PENDING \(reason \w+", text), text[-3000:]
        if on_hold == "resubmit":
            assert "releasing it and asking again" in text and "(attempt 2)" in text, text[-3000:]
        else:
            assert "asking again" not in text, text[-3000:]
        assert "all ranks" not in text and "[A:0]" not in text
        assert not any(_isthmus_jobs(slurm).values()), _isthmus_jobs(slurm)
        assert any(line.startswith(f"{blocker}|") for line in slurm.queue("B"))
    finally:
        slurm.run("B", ["scancel", blocker])
    _assert_clean(slurm)


@pytest.mark.parametrize("how", ["cancel", "ctrl-c"])
def test_cancel_while_waiting(slurm, programs, how):
    """isthmus cancel JOB from another shell, or Ctrl-C on isthmus submit: the submitter
    stops and every site's job is removed from its queue."""
    blocker, p, out = _submit_to_busy_site(slurm, programs, how)
    try:
        job = _job_id(out)
        _wait_for("both sites' jobs in their queues", lambda: all(_isthmus_jobs(slurm).values()))
        if how == "cancel":
            r = _isthmus(slurm, "cancel", job, timeout=90)
            assert r.returncode == 0, r.stdout + r.stderr
        else:
            os.killpg(p.pid, signal.SIGINT)
        assert p.wait(timeout=60) == (143 if how == "cancel" else 130), out.read_text()[-3000:]
        assert not any(_isthmus_jobs(slurm).values())
        r = _isthmus(slurm, "status", job, timeout=60)
        assert f"job {job}: cancelled" in r.stdout, r.stdout
    finally:
        _stop(p)
        slurm.run("B", ["scancel", blocker])
    _assert_clean(slurm)


@pytest.mark.parametrize("how", ["timeout", "sigint"])
def test_running_job_stopped(slurm, programs, hang, how):
    """A running job stopped by --timeout or Ctrl-C: both sites' Slurm jobs end, nothing
    is left on any node, and the shared directories (with the secret) are gone."""
    sf = slurm.site_file(programs / f"job-stop-{how}.toml", mpi=["openmpi", "mpich"])
    timeout = "20" if how == "timeout" else "200"
    p, out = _submit_bg(slurm, programs, f"stop-{how}", "--poll", "0.3", "--timeout", timeout,
                        str(sf), str(hang))
    try:
        job = _job_id(out)
        if how == "sigint":  # (--timeout counts from the start: it may stop the job earlier)
            _wait_for("all ranks up", lambda: "all ranks up" in out.read_text())
            os.killpg(p.pid, signal.SIGINT)
        code = p.wait(timeout=120)
        assert code == (124 if how == "timeout" else 130), out.read_text()[-3000:]
    finally:
        _stop(p)
    _assert_clean(slurm)
    left = list((Path.home() / ".isthmus" / "batch").glob(f"{job}-*"))
    assert not left, left


@pytest.mark.parametrize("name,extra,ranks_per_node,msg", [
    ("ranks", {}, 8, "site A (via a0-{tag}), partition batch: 16 ranks + 1 gateway(s) need 17 CPUs; "
                     "2 node(s) of this partition have at most 8"),
    ("partition", {"partition": "gpu"}, 2, "site B (via b0-{tag}): partition 'gpu' does not exist "
                                           "(the site has: batch, short)"),
    ("feature", {"constraint": "emu&ib"}, 2, "site B (via b0-{tag}), partition batch: no node has "
                                             "feature 'ib' (constraint 'emu&ib'; the partition's "
                                             "features: emu, wan)"),
    ("time", {"partition": "short", "time": "10:00"}, 2,
     "site B (via b0-{tag}), partition short: time 10:00 is above the partition's limit (00:05:00)"),
    ("nodes", {"nodes": 3}, 1, "site B (via b0-{tag}), partition batch: 3 nodes asked for, the "
                               "partition has 2 that qualify"),
])
def test_submit_check_refuses_impossible_requests(slurm, programs, name, extra, ranks_per_node, msg):
    """Refused before anything is queued at any site, with what the site offers."""
    sf = slurm.site_file(programs / f"job-check-{name}.toml", mpi="openmpi",
                         ranks_per_node=ranks_per_node, slurm={"B": extra})
    r = _isthmus(slurm, "submit", str(sf), str(programs / "demo"), timeout=90)
    assert r.returncode == 2, r.stdout + r.stderr
    assert msg.format(tag=slurm.bed.job.lower()) in r.stderr, r.stderr
    assert "submitting" not in r.stderr
    assert not any(_isthmus_jobs(slurm).values())


def test_link_emulate_slurm_cli(netadmin):
    """The user-facing rehearsal: `isthmus link emulate --nodes-per-site 2 --slurm` runs
    COMMAND on the workstation with a Slurm at each site reachable through its login node
    and a site file for isthmus submit; everything is gone afterwards."""
    job = f"s{os.getpid()}cli"
    tag = job.lower()
    script = (f'ssh a0-{tag} sinfo -h -o %D && ssh b0-{tag} sinfo -h -o %D && '
              'grep -c "^launch = \\"slurm\\"" "$ISTHMUS_CLUSTERS_SITE_FILE"')
    r = subprocess.run([sys.executable, "-m", "isthmus", "link", "emulate", "--nodes-per-site", "2",
                        "--slurm", "--job", job, "--rt-prio", "0", "--", "sh", "-c", script],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert r.stdout.split() == ["2", "2", "2"], r.stdout
    assert not list(Path("/var/run/netns").glob(f"ism-{job}-*"))
    assert not list(Path("/etc/netns").glob(f"ism-{job}-*"))
    assert not [line for line in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
                if f"isthmus-clusters-{tag}-" in line]


def test_stage_in_and_out(slurm, programs):
    """A directory staged into site B's stage_dir while the allocations are obtained
    (largest file first, subdirectories made); back after the job into ./B/: a file, a
    directory (under its own name) and a glob's matches; contents equal, summaries
    printed, the copy server gone afterwards."""
    tag = slurm.bed.job.lower()
    src = programs / "stage-src" / "in"
    (src / "sub").mkdir(parents=True, exist_ok=True)
    blobs = {"small.txt": b"hello\n", "big.bin": os.urandom(300_000), "sub/mid.bin": os.urandom(20_000)}
    for rel, data in blobs.items():
        (src / rel).write_bytes(data)
    stage_dir = f"isthmus-stage-test-{tag}"
    remote = Path.home() / stage_dir  # the nodes share this machine's $HOME
    keys = {"B": {"stage_in": ["in"], "stage_out": ["in/big.bin", "in/sub", "in/*.txt"],
                  "stage_dir": stage_dir,
                  "stage_listen": f"{slurm.bed.node('B', 0).wan_address}:41998"}}
    sf = slurm.site_file(programs / "job-stage.toml", mpi="openmpi", keys=keys)
    work = programs / "stage-src"
    try:
        r = _isthmus(slurm, "submit", "--poll", "0.3", "--timeout", "120", str(sf),
                     str(programs / "demo"), cwd=work)
        assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
        assert "[A:0] all results correct" in r.stdout
        assert re.search(r"staged 3 file\(s\), 320006 bytes into site B in [\d.]+ s", r.stderr), r.stderr
        assert re.search(r"staged 3 file\(s\), 320006 bytes from site B", r.stderr), r.stderr
        for rel, data in blobs.items():
            assert (remote / "in" / rel).read_bytes() == data, rel
            assert (work / "B" / rel).read_bytes() == data, rel
    finally:
        shutil.rmtree(remote, ignore_errors=True)
    _assert_clean(slurm)


def test_stage_out_of_a_missing_file_fails_the_job(slurm, programs):
    """A stage_out file the job did not leave: the job ran, the summary names the file,
    the exit status is 1, nothing is left at the sites."""
    keys = {"A": {"stage_out": ["nope.dat"], "stage_dir": f"isthmus-stage-none-{slurm.bed.job.lower()}",
                  "stage_listen": f"{slurm.bed.node('A', 0).wan_address}:41998"}}
    sf = slurm.site_file(programs / "job-stage-missing.toml", mpi="openmpi", keys=keys)
    try:
        r = _isthmus(slurm, "submit", "--poll", "0.3", "--timeout", "120", str(sf),
                     str(programs / "demo"), cwd=programs)
        assert r.returncode == 1, (r.stdout + r.stderr)[-5000:]
        assert "[A:0] all results correct" in r.stdout
        assert re.search(r"staged 0 file\(s\), 0 bytes from site A in [\d.]+ s \([\d.]+ MB/s\); "
                         r"FAILED: nope\.dat \(", r.stderr), r.stderr[-3000:]
    finally:
        shutil.rmtree(Path.home() / keys["A"]["stage_dir"], ignore_errors=True)
    _assert_clean(slurm)


def _split_file(sl: SlurmClusters, path: Path, split: str) -> Path:
    """The bed's site file with the sites' ranks left to a [split] table."""
    text = sl.site_file(path, mpi="openmpi").read_text()
    path.write_text(f"[split]\n{split}\n\n" + re.sub(r"^ranks = \d+\n", "", text, flags=re.M))
    return path


def _end_time(sl: SlurmClusters, site: str, job: str) -> str:
    r = sl.run(site, ["squeue", "-h", "-j", job, "-o", "%e"])
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_any_of_goes_to_the_free_site(slurm, programs):
    """any_of = ["A", "B"] with A's nodes held by another job: the whole job runs at B,
    and the reason printed names A's expected start (the other job's end) and free nodes."""
    blocker = _block(slurm, "A")
    try:
        sf = _split_file(slurm, programs / "job-any-of.toml", 'ranks = 4\nany_of = ["A", "B"]')
        r = _isthmus(slurm, "submit", "--poll", "0.3", "--timeout", "120", str(sf),
                     str(programs / "demo"), cwd=programs)
        text = r.stdout + r.stderr
        assert r.returncode == 0, text[-5000:]
        end = _end_time(slurm, "A", blocker)
        assert re.search(rf"site A: expected start {end} \(in \d+ min\), 0 of 2 node\(s\) free, "
                         r"room for 7 ranks", r.stderr), r.stderr[-3000:]
        assert re.search(r"site B: expected start \S+ \(now\), 2 of 2 node\(s\) free", r.stderr), r.stderr
        assert f"chosen: site B for all 4 ranks: it starts first (A expected {end} (in " in r.stderr, r.stderr
        assert "submitting to B " in r.stderr, r.stderr
        assert "[B:0] all results correct" in r.stdout, r.stdout[-3000:]
        assert {s for s, _ in _hosts_of_ranks(r.stdout, "B").values()} == {"B"}, r.stdout[-3000:]
        assert len(_hosts_of_ranks(r.stdout, "B")) == 4
    finally:
        slurm.run("A", ["scancel", blocker])
    _assert_clean(slurm)


def test_ratio_splits_as_asked(slurm, programs):
    """ratio = { A = 1, B = 3 } of 8 ranks: 2 at A, 6 at B (global ranks by site)."""
    sf = _split_file(slurm, programs / "job-ratio.toml", "ranks = 8\nratio = { A = 1, B = 3 }")
    r = _isthmus(slurm, "submit", "--poll", "0.3", "--timeout", "120", str(sf),
                 str(programs / "demo"), cwd=programs)
    assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
    assert "chosen: fixed ratio: A 2, B 6" in r.stderr, r.stderr
    sites = {rank: s for rank, (s, _) in _hosts_of_ranks(r.stdout).items()}
    assert sites == {0: "A", 1: "A", **{i: "B" for i in range(2, 8)}}, r.stdout[-3000:]
    _assert_clean(slurm)


def test_fill_first_fills_the_first_listed_of_free_sites(slurm, programs):
    """fill_first = ["A", "B"] of 10 ranks, both sites free (the same start: the listed
    order decides): A gets as many as its 2 nodes hold (8 CPUs less the gateway: 7), B
    the other 3."""
    sf = _split_file(slurm, programs / "job-fill-first.toml", 'ranks = 10\nfill_first = ["A", "B"]')
    r = _isthmus(slurm, "submit", "--poll", "0.3", "--timeout", "120", str(sf),
                 str(programs / "demo"), cwd=programs)
    assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
    assert re.search(r"chosen: as many as possible first where they start first: A 7 \(expected "
                     r"\S+ \(now\), room for 7\), then B 3 \(expected \S+ \(now\), room for 7\)",
                     r.stderr), r.stderr
    sites = {rank: s for rank, (s, _) in _hosts_of_ranks(r.stdout).items()}
    assert sites == {**{i: "A" for i in range(7)}, **{i: "B" for i in range(7, 10)}}, r.stdout[-3000:]
    _assert_clean(slurm)


@pytest.mark.parametrize("name,split,msg", [
    ("any-of", 'ranks = 8\nany_of = ["A", "B"]',
     "[split] (8 ranks at any one of A, B): site A (via a0-{tag}), partition batch: any_of needs "
     "room for the whole job, 8 ranks; its request holds 7"),
    ("ratio", "ranks = 12\nratio = { A = 1, B = 3 }",
     "site B (via b0-{tag}), partition batch: the ratio gives it 9 of 12 ranks; its request holds 7"),
    ("fill-first", 'ranks = 15\nfill_first = ["A", "B"]',
     "fill_first: 15 ranks, but the sites' requests hold 14 together (A 7, B 7)"),
    ("unknown-site", 'ranks = 4\nany_of = ["A", "C"]', "[split]: names site 'C', which no [[site]] has"),
])
def test_bad_split_refused_before_queueing(slurm, programs, name, split, msg):
    """A split no site can satisfy (or that names no site) is refused with what was given
    and what the sites hold; nothing reaches either queue."""
    sf = _split_file(slurm, programs / f"job-bad-split-{name}.toml", split)
    r = _isthmus(slurm, "submit", str(sf), str(programs / "demo"), timeout=90)
    assert r.returncode == 2, r.stdout + r.stderr
    assert msg.format(tag=slurm.bed.job.lower()) in r.stderr, r.stderr
    assert "submitting" not in r.stderr
    assert not any(_isthmus_jobs(slurm).values()), _isthmus_jobs(slurm)


def test_begin_lines_up_then_moves_when_the_other_runs(slurm, programs):
    """B busy for an hour (the other job's limit): A is queued with --begin at B's expected
    start, so it holds nothing meanwhile (PENDING, reason BeginTime); once B is freed and
    runs, A's begin is moved to now and the job runs."""
    blocker, p, out = _submit_to_busy_site(slurm, programs, "begin", "--timeout", "120")
    try:
        job = _job_id(out)
        end = _end_time(slurm, "B", blocker)
        _wait_for("A's job pending on its begin time",
                  lambda: any("|PENDING|BeginTime" in j for j in _isthmus_jobs(slurm)["A"]))
        text = out.read_text()
        assert (f"A queued with --begin at site B's expected start {end} (in " in text), text[-3000:]
        assert re.search(r"site A: submitted Slurm job \d+ to begin in \d+ s \(--begin\)", text), text
        r = _isthmus(slurm, "status", job, timeout=60)
        assert re.search(r"site A: Slurm job \d+: PENDING \(reason BeginTime, expected start ", r.stdout), r.stdout
        slurm.run("B", ["scancel", blocker])
        code = p.wait(timeout=JOB_TIMEOUT)
        text = out.read_text()
        assert code == 0, text[-5000:]
        assert "its --begin moved from" in text and "[A:0] all results correct" in text, text[-3000:]
    finally:
        _stop(p)
        slurm.run("B", ["scancel", blocker])
    _assert_clean(slurm)


def _reservations(sl: SlurmClusters, site: str) -> list[str]:
    r = sl.run(site, ["scontrol", "show", "reservation", "-o"])
    return [line for line in r.stdout.splitlines() if line.startswith("ReservationName=")]


def test_reserve_queues_into_reservations_and_deletes_them(slurm, programs):
    """--reserve (root is Slurm's operator here): a reservation at each site holding the
    gateway's node, each site's job queued into it, the job runs, and afterwards neither
    the reservations nor the jobs are left."""
    sf = slurm.site_file(programs / "job-reserve.toml", mpi="openmpi", slurm={"A": {"time": "5"}})
    r = _isthmus(slurm, "submit", "--reserve", "--hold", "120", "--poll", "0.3", "--timeout", "120", str(sf),
                 str(programs / "demo"), cwd=programs)
    text = r.stdout + r.stderr
    assert r.returncode == 0, text[-5000:]
    tag = slurm.bed.job.lower()
    job = re.search(r"job ([0-9a-f]{12}): submitting", r.stderr).group(1)
    for site, minutes in (("A", 5 + 2), ("B", 60 + 2)):  # the time limit (A's, B's partition's) + --hold
        assert re.search(rf"site {site}: reservation isthmus-{job}-{site}: {site.lower()}0-{tag}, "
                         rf"{site.lower()}1-{tag} from \d+ s from now for {minutes} min", r.stderr), r.stderr
        assert re.search(rf"site {site}: submitted Slurm job \d+ with --reservation=isthmus-{job}-{site}\n",
                         r.stderr), r.stderr
    assert "[A:0] all results correct" in r.stdout, r.stdout[-3000:]
    assert not _reservations(slurm, "A") and not _reservations(slurm, "B")
    _assert_clean(slurm)


def test_cancel_deletes_the_reservations_of_a_killed_submitter(slurm, programs, hang):
    """isthmus submit --reserve killed outright (SIGKILL: no way out of its own) leaves its
    reservations; isthmus cancel JOB deletes them from the job's record, with the jobs."""
    sf = slurm.site_file(programs / "job-reserve-kill.toml", mpi="openmpi", slurm={"A": {"time": "5"}})
    p, out = _submit_bg(slurm, programs, "reserve-kill", "--reserve", "--hold", "120", "--poll",
                        "0.3", str(sf), str(hang))
    try:
        job = _job_id(out)
        _wait_for("all ranks up", lambda: "all ranks up" in out.read_text())
        _stop(p)
        assert len(_reservations(slurm, "A")) == 1 and len(_reservations(slurm, "B")) == 1
        r = _isthmus(slurm, "cancel", job, timeout=90)
        assert r.returncode == 0, r.stdout + r.stderr
        for site in "AB":
            assert f"site {site}: reservation isthmus-{job}-{site} deleted" in r.stdout, r.stdout
    finally:
        _stop(p)
    assert not _reservations(slurm, "A") and not _reservations(slurm, "B")
    _assert_clean(slurm)


def test_reserve_without_operator_rights_is_said(slurm):
    """A user who is not Slurm's operator: scontrol refuses the reservation, and isthmus
    says that it takes operator rights and what to do instead; nothing is left."""
    code = ("from isthmus.batch.slurm import SiteSlurm\n"
            "from isthmus.launch.layout import Site\n"
            "from isthmus.errors import IsthmusError\n"
            "try:\n"
            f"    SiteSlurm(Site(name='A', ranks=1)).reserve('isthmus-t-A', 0, 5, 'batch', ['a0-{slurm.bed.job.lower()}'])\n"
            "except IsthmusError as e:\n"
            "    print(e)\n")
    bed_dir = slurm.bed.dir
    mode = bed_dir.stat().st_mode
    bed_dir.chmod(mode | 0o001)  # (0700) the user may reach munged's socket in it
    try:
        r = slurm.run("A", ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "env",
                            f"PYTHONPATH={REPO / 'python'}", sys.executable, "-c", code])
    finally:
        bed_dir.chmod(mode)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.fullmatch(r"site A: --reserve: creating a reservation needs Slurm operator rights, which "
                        r"this user does not have here \(scontrol create reservation: Error creating "
                        r"the reservation: Invalid user id\); leave out --reserve \(isthmus "
                        r"then lines up the starts with --begin\), or ask the centre for a reservation "
                        r"and pass it with sbatch_args = \[\"--reservation=NAME\"\]\n", r.stdout), r.stdout + r.stderr
    # (Slurm 22.05's words for it; its log says why)
    log = (slurm.sites["A"].dir / "slurmctld.log").read_text(errors="replace")
    assert "Security violation, CREATE_RESERVATION RPC from uid=65534" in log, log[-2000:]
    assert not _reservations(slurm, "A")
