# tests/test_batch_request.py: a Slurm site in a site file ([site.slurm]) and what isthmus
# makes of it without a scheduler: the request's checks and sbatch options, Slurm's time
# formats, the allocation's placement (the gateway node last, hydra's host list once per
# node), the batch and runner scripts run with sh against a stand-in squeue, and `isthmus
# run` refusing a Slurm site. The real Slurm is in test_batch_slurm.py.
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from isthmus.batch import script
from isthmus.batch.launch import placement
from isthmus.batch.request import time_minutes
from isthmus.batch.stage import local_files
from isthmus.errors import IsthmusError
from isthmus.launch import vendor
from isthmus.launch.sitefile import load_site_file

SLURM_SITE = '''[[site]]
name = "A"
ranks = 1
[[site]]
name = "B"
ranks = 4
launch = "slurm"
ssh_host = "login.b"
gateway = "10.0.0.1:41000"
gateway_node = "n0"
'''


def _load(tmp_path, text: str):
    p = tmp_path / "job.toml"
    p.write_text(text)
    return load_site_file(p)


def _error(tmp_path, text: str) -> str:
    with pytest.raises(IsthmusError) as e:
        _load(tmp_path, text)
    return str(e.value)


def test_slurm_site_request_passed_through(tmp_path):
    sf = _load(tmp_path, SLURM_SITE + '[site.slurm]\nnodes = 2\npartition = "big"\naccount = "p1"\n'
               'time = "1:30:00"\nconstraint = "wan&ib"\nqos = "high"\nsbatch_args = ["--exclusive"]\n')
    site = sf.layout.sites[1]
    assert site.launcher == "slurm" and site.remote and site.gateway_node == "n0"
    assert site.slurm.sbatch_options() == ["--nodes=2", "--partition=big", "--account=p1",
                                           "--time=1:30:00", "--constraint=wan&ib", "--qos=high",
                                           "--exclusive"]
    assert site.slurm.minutes == 90


def test_slurm_site_defaults_and_local_sbatch(tmp_path):
    sf = _load(tmp_path, SLURM_SITE.replace('ssh_host = "login.b"\n', "") + "[site.slurm]\ntime = 30\n")
    site = sf.layout.sites[1]
    assert site.ssh_host is None and not site.remote
    assert site.slurm.sbatch_options() == ["--nodes=1", "--time=30"]


@pytest.mark.parametrize("extra,msg", [
    ("", "site 'B': launch = \"slurm\" needs a [site.slurm] table"),
    ("[site.slurm]\npartitions = \"x\"\n", "site 'B': [site.slurm]: unknown key 'partitions'"),
    ("[site.slurm]\nnodes = 0\n", "'nodes' must be a positive integer, got 0"),
    ("[site.slurm]\ntime = \"soon\"\n", "'time' must be a Slurm time limit"),
    ("[site.slurm]\ntime = \"0\"\n", "'time' must be a Slurm time limit"),
    ("[site.slurm]\npartition = \"a b\"\n", "'partition' must be a name"),
    ("[site.slurm]\nconstraint = \"x;rm\"\n", "'constraint' must be features"),
    ("[site.slurm]\nsbatch_args = \"--exclusive\"\n", "'sbatch_args' must be a list of strings"),
    ("nodes = [\"n0\", \"n1\"]\n[site.slurm]\n", "'nodes' cannot be used with launch = \"slurm\""),
])
def test_slurm_site_errors(tmp_path, extra, msg):
    assert msg in _error(tmp_path, SLURM_SITE + extra)


def test_slurm_site_needs_gateway_node_for_several_nodes(tmp_path):
    text = SLURM_SITE.replace('gateway_node = "n0"\n', "") + "[site.slurm]\nnodes = 2\n"
    assert "an allocation of 2 nodes needs 'gateway_node'" in _error(tmp_path, text)


def test_slurm_table_only_for_slurm_sites(tmp_path):
    text = '[[site]]\nname = "A"\nranks = 1\n[site.slurm]\nnodes = 1\n'
    assert "[site.slurm] is only allowed with launch = \"slurm\"" in _error(tmp_path, text)


def test_ssh_jump_needs_login_node(tmp_path):
    text = SLURM_SITE.replace('ssh_host = "login.b"\n', 'ssh_jump = "gw"\n') + "[site.slurm]\n"
    assert "'ssh_jump' needs 'ssh_host'" in _error(tmp_path, text)


@pytest.mark.parametrize("text,minutes", [("30", 30), ("30:30", 30.5), ("1:00:00", 60),
                                          ("2-0", 2880), ("1-2:30", 1590), ("1-00:00:30", 1440.5)])
def test_time_formats(text, minutes):
    assert time_minutes(text) == minutes


@pytest.mark.parametrize("text", ["", "1:2:3:4", "x", "-5", "1-"])
def test_bad_time_formats(text):
    with pytest.raises(ValueError):
        time_minutes(text)


def test_placement_puts_the_gateway_node_last():
    pl = placement(["n0", "n1", "n2"], 5, "n0")
    assert pl.app_hosts == (("n1", 2), ("n2", 2), ("n0", 1)) and pl.gateway_node == "n0"
    assert placement(["n0"], 4, "n0") is None
    argv = vendor.build_command("mpich", ranks=5, gateways=1, program="./app", args=(),
                                gateway_path="gw", placement=pl)
    assert argv[argv.index("-hosts") + 1] == "n1:2,n2:2,n0:2"  # n0 once: hydra under Slurm


def _fake_slurm(tmp_path, queue_state: str):
    """squeue printing `queue_state` (empty: the job is gone), scancel recording its call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "squeue").write_text(f"#!/bin/sh\necho '{queue_state}'\n")
    (bin_dir / "scancel").write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/scancel.log\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path)}


def test_holder_runs_go_and_runner_follows_it(tmp_path):
    """The batch script waits for go; the runner writes the secret and go, prints the
    batch job's output as it comes and exits with the launcher's code, leaving nothing."""
    env = _fake_slurm(tmp_path, "RUNNING")
    d = tmp_path / ".isthmus" / "batch" / "j1-A"
    d.mkdir(parents=True)
    with open(d / "out", "w") as out:
        holder = subprocess.Popen(["/bin/sh", "-c", script.holder_script("j1", "A", 60)],
                                  env=env, stdout=out, stderr=subprocess.STDOUT)
    go = script.go_script("j1", "A", ["/bin/sh", "-c", 'echo "secret $(cat "$ISTHMUS_SECRET_FILE") x=$X"; exit 3'],
                          {"X": "a b", "ISTHMUS_SECRET_FILE": "ignored"}, str(tmp_path))
    r = subprocess.run(["/bin/sh", "-c", script.runner_script("j1", "A", "42", go)], env=env,
                       input="s3cr3t\n", capture_output=True, text=True, timeout=30)
    assert holder.wait(timeout=10) == 3
    assert r.returncode == 3, r.stderr
    assert "secret s3cr3t x=a b" in r.stdout
    assert not d.exists()


def test_holder_gives_the_allocation_back(tmp_path):
    env = _fake_slurm(tmp_path, "RUNNING")
    (tmp_path / ".isthmus" / "batch" / "j2-A").mkdir(parents=True)
    started = time.monotonic()
    r = subprocess.run(["/bin/sh", "-c", script.holder_script("j2", "A", 0.5)], env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 75 and "giving it back" in r.stderr
    assert time.monotonic() - started < 20


def test_runner_notices_the_job_gone(tmp_path):
    """Slurm ended the job (scancel, time limit) before the launcher wrote its code."""
    env = _fake_slurm(tmp_path, "")
    d = tmp_path / ".isthmus" / "batch" / "j3-A"
    d.mkdir(parents=True)
    r = subprocess.run(["/bin/sh", "-c", script.runner_script("j3", "A", "7", "true\n")],
                       env=env, input="s\n", capture_output=True, text=True, timeout=60)
    assert r.returncode == 75 and "Slurm job 7 ended before the site's part did" in r.stderr
    assert not d.exists()


def test_runner_cancels_when_stdin_ends(tmp_path):
    """isthmus stopped the site (or the connection is gone): the Slurm job is cancelled."""
    env = _fake_slurm(tmp_path, "RUNNING")
    d = tmp_path / ".isthmus" / "batch" / "j4-A"
    d.mkdir(parents=True)
    p = subprocess.Popen(["/bin/sh", "-c", script.runner_script("j4", "A", "9", "true\n")],
                         env=env, stdin=subprocess.PIPE, text=True)
    p.stdin.write("s\n")
    p.stdin.flush()
    time.sleep(0.5)
    p.stdin.close()
    deadline = time.monotonic() + 20
    log = tmp_path / "scancel.log"
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    p.kill()
    p.wait()
    assert log.read_text().split() == ["9"]
    # killed outright (no trap runs), the runner leaves nothing behind: its tail of the
    # job's output ends with it
    out = str(d / "out")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _processes_naming(out):
        time.sleep(0.1)
    assert not _processes_naming(out), _processes_naming(out)


def _processes_naming(text: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd:
            found.append(f"{proc.name}: {cmd}")
    return found


def test_run_refuses_a_slurm_site(tmp_path, fake_prefix):
    (tmp_path / "job.toml").write_text(SLURM_SITE + "[site.slurm]\n")
    r = subprocess.run([sys.executable, "-m", "isthmus", "run", "--site-file", "job.toml", "./app"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 2
    assert "site B has launch = \"slurm\": start the job with `isthmus submit job.toml" in r.stderr


def test_stage_keys(tmp_path):
    sf = _load(tmp_path, SLURM_SITE + 'stage_in = ["in", "x.dat"]\nstage_out = ["out/r.dat"]\n'
               'stage_dir = "runs/7"\nstage_listen = "10.0.0.1:41998"\n[site.slurm]\n')
    site = sf.layout.sites[1]
    assert (site.stage_in, site.stage_out, site.stage_dir, site.stage_listen) == (
        ("in", "x.dat"), ("out/r.dat",), "runs/7", "10.0.0.1:41998")


@pytest.mark.parametrize("extra,msg", [
    ('stage_in = ["a"]\n', "staging needs 'stage_listen'"),
    ('stage_in = "a"\nstage_listen = "h:1"\n', "'stage_in' must be a list of paths"),
    ('stage_out = ["../etc/passwd"]\nstage_listen = "h:1"\n', "must be relative to stage_dir"),
    ('stage_dir = "/abs"\n', "'stage_dir' must be a path relative to the site's $HOME"),
    ('stage_in = ["a"]\nstage_listen = "h"\n', "'stage_listen' must look like \"host:port\""),
])
def test_stage_key_errors(tmp_path, extra, msg):
    assert msg in _error(tmp_path, SLURM_SITE + extra + "[site.slurm]\n")


def test_stage_needs_a_login_node(tmp_path):
    text = SLURM_SITE.replace('ssh_host = "login.b"\n', "") + 'stage_in = ["a"]\nstage_listen = "h:1"\n[site.slurm]\n'
    assert "staging (stage_in, stage_out) needs 'ssh_host'" in _error(tmp_path, text)


def test_stage_in_files_largest_first(tmp_path):
    (tmp_path / "d" / "s").mkdir(parents=True)
    (tmp_path / "d" / "a").write_bytes(b"x" * 10)
    (tmp_path / "d" / "s" / "b").write_bytes(b"x" * 30)
    (tmp_path / "c").write_bytes(b"x" * 20)
    got = [(p.name, rel) for p, rel in local_files(["d", "c"], tmp_path)]
    assert got == [("b", "d/s/b"), ("c", "c"), ("a", "d/a")]
    with pytest.raises(IsthmusError, match="stage_in: .*missing is neither a file nor a directory"):
        local_files(["missing"], tmp_path)
