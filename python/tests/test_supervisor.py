# tests/test_supervisor.py: the job runner with fake site launchers (an injected command
# builder): first failure stops the others, signal deaths, timeout, signals to isthmus,
# SIGKILL after the grace period, and that no child survives.
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from isthmus.errors import IsthmusError
from isthmus.launch.job import run_job
from isthmus.launch.layout import embedded_layout
from isthmus.paths import Prefix

PY = sys.executable


def alive(pid: int) -> bool:
    """True if pid exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def read_pids(tmp_path, name, count=1, timeout=5.0):
    f = tmp_path / f"{name}.pids"
    assert wait_for(lambda: f.exists() and len(f.read_text().split()) >= count, timeout), f"{name} never started"
    return [int(x) for x in f.read_text().split()]


def sleeper(tmp_path, name, ignore_term=False):
    """A fake launcher that starts a 'rank' (sleep 30) in the background, like mpirun."""
    trap = 'trap "" TERM; ' if ignore_term else ""
    return ["sh", "-c", f'{trap}sleep 30 & echo $$ $! > {tmp_path}/{name}.pids; wait']


def builder_from(commands):
    return lambda launch: commands[launch.site.name]


def run(layout_sites, commands, capfd=None, **kw):
    layout = embedded_layout(sum(layout_sites), sites=len(layout_sites), ranks_per_site=list(layout_sites), mpi="openmpi")
    return run_job(
        layout, "prog", (), prefix=Prefix(Path("/nonexistent-prefix")),
        command_builder=builder_from(commands), vendor_resolver=lambda r: r, **kw,
    )


def test_failing_site_stops_the_others(tmp_path, capfd):
    start = time.monotonic()
    code = run(
        (2, 2),
        {"A": sleeper(tmp_path, "A"),
         "B": [PY, "-c", "import sys,time; time.sleep(0.2); sys.exit(3)"]},
    )
    elapsed = time.monotonic() - start
    assert code == 3
    # about 0.3 s; the bound only has to tell a stop from the ranks' own 30 s
    assert elapsed < 15.0
    err = capfd.readouterr().err
    assert "isthmus: site B exited with code 3; stopping the other sites" in err
    for pid in read_pids(tmp_path, "A", 2):
        assert not alive(pid)


def test_first_failure_decides_exit_code(tmp_path, capfd):
    code = run(
        (1, 1, 1),
        {"A": [PY, "-c", "import sys,time; time.sleep(1.5); sys.exit(5)"],
         "B": [PY, "-c", "import sys,time; time.sleep(0.2); sys.exit(7)"],
         "C": sleeper(tmp_path, "C")},
    )
    assert code == 7
    err = capfd.readouterr().err
    assert "site B exited with code 7" in err and "site A" not in err


def test_site_killed_by_signal(tmp_path, capfd):
    code = run((1, 1), {"A": sleeper(tmp_path, "A"), "B": ["sh", "-c", "sleep 0.2; kill -SEGV $$"]})
    assert code == 128 + signal.SIGSEGV
    err = capfd.readouterr().err
    assert "isthmus: site B was killed by SIGSEGV (exit code 139); stopping the other sites" in err


def test_all_sites_succeed(capfd):
    code = run((2, 1), {"A": ["sh", "-c", "echo out-A; exit 0"], "B": ["sh", "-c", "echo out-B >&2; exit 0"]})
    assert code == 0
    out, err = capfd.readouterr()
    assert out == "out-A\n"  # passed through untouched
    assert err == "out-B\n"


def test_timeout(tmp_path, capfd):
    start = time.monotonic()
    code = run((1, 1), {"A": sleeper(tmp_path, "A"), "B": sleeper(tmp_path, "B")}, timeout=0.5)
    assert code == 124
    assert time.monotonic() - start < 15.0  # the ranks' own 30 s, had nobody stopped them
    assert "isthmus: the job exceeded --timeout 0.5s; stopping all sites" in capfd.readouterr().err
    for name in "AB":
        assert not any(alive(p) for p in read_pids(tmp_path, name, 2))


def test_sigkill_after_grace(tmp_path, capfd):
    start = time.monotonic()
    code = run(
        (1, 1),
        {"A": sleeper(tmp_path, "A", ignore_term=True), "B": ["sh", "-c", "sleep 0.3; exit 2"]},
        grace=1.0,
    )
    elapsed = time.monotonic() - start
    assert code == 2
    # the 1 s grace, then SIGKILL: about 1.3 s; not the ranks' own 30 s
    assert 1.0 <= elapsed < 15.0
    for pid in read_pids(tmp_path, "A", 2):
        assert not alive(pid)


def test_launcher_that_cannot_start(tmp_path):
    with pytest.raises(IsthmusError, match="site B: cannot start /nonexistent/mpirun"):
        run((1, 1), {"A": sleeper(tmp_path, "A"), "B": ["/nonexistent/mpirun"]})
    # Site A may be stopped before its shell even wrote its pids (B fails at once, and
    # under load A's shell can lose that race); whatever A did start must be gone.
    if (tmp_path / "A.pids").exists():
        for pid in read_pids(tmp_path, "A", 2):
            assert wait_for(lambda pid=pid: not alive(pid))


def test_stray_process_of_the_job_is_swept(tmp_path):
    """A rank that escaped its launcher's process group (setsid) is still killed."""
    escape = ["sh", "-c", f"setsid sh -c 'echo $$ > {tmp_path}/esc.pids; exec sleep 30' & sleep 0.3; exit 4"]
    code = run((1, 1), {"A": ["sleep", "30"], "B": escape})
    assert code == 4
    pids = [int(p) for p in (tmp_path / "esc.pids").read_text().split()]
    assert pids and wait_for(lambda: not any(alive(p) for p in pids), 3)


def test_launch_environment_and_secret_file(tmp_path, capfd):
    dump = "env > {out}; cat \"$ISTHMUS_SECRET_FILE\" > {out}.secret; stat -c %a \"$ISTHMUS_SECRET_FILE\" > {out}.mode"
    cmds = {n: ["sh", "-c", dump.format(out=tmp_path / f"{n}.env")] for n in "AB"}
    code = run((2, 1), cmds, stats=True)
    assert code == 0
    envs = {}
    for n in "AB":
        lines = (tmp_path / f"{n}.env").read_text().splitlines()
        envs[n] = dict(line.split("=", 1) for line in lines if "=" in line)
        assert (tmp_path / f"{n}.env.mode").read_text().strip() == "600"
    assert envs["A"]["ISTHMUS_SITE"] == "0" and envs["B"]["ISTHMUS_SITE"] == "1"
    assert envs["A"]["ISTHMUS_JOB"] == envs["B"]["ISTHMUS_JOB"]
    assert envs["A"]["ISTHMUS_STATS"] == "1"
    secret_path = envs["A"]["ISTHMUS_SECRET_FILE"]
    assert not os.path.exists(secret_path)  # removed after the job
    secret = (tmp_path / "A.env.secret").read_text().strip()
    assert len(secret) == 64 and secret == (tmp_path / "B.env.secret").read_text().strip()
    out, err = capfd.readouterr()
    assert secret not in out + err


SIGNAL_DRIVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from isthmus.launch.job import run_job
    from isthmus.launch.layout import embedded_layout
    from isthmus.paths import Prefix
    tmp = sys.argv[1]
    cmds = {n: ["sh", "-c", f"sleep 30 & echo $$ $! > {tmp}/{n}.pids; wait"] for n in "AB"}
    code = run_job(embedded_layout(2, mpi="openmpi"), "prog", (), prefix=Prefix(Path("/x")),
                   command_builder=lambda l: cmds[l.site.name], vendor_resolver=lambda r: r)
    sys.exit(code)
    """
)


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_to_isthmus_stops_all_sites(tmp_path, sig, code):
    proc = subprocess.Popen([PY, "-c", SIGNAL_DRIVER, str(tmp_path)], stderr=subprocess.PIPE, text=True)
    try:
        pids = read_pids(tmp_path, "A", 2) + read_pids(tmp_path, "B", 2)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code
    assert f"received {signal.Signals(sig).name}; stopping all sites" in err
    assert wait_for(lambda: not any(alive(p) for p in pids), 3)


def test_launchers_die_with_isthmus_even_on_sigkill(tmp_path):
    driver = SIGNAL_DRIVER.replace('f"sleep 30 & echo $$ $! > {tmp}/{n}.pids; wait"', 'f"echo $$ > {tmp}/{n}.pids; exec sleep 30"')
    proc = subprocess.Popen([PY, "-c", driver, str(tmp_path)])
    try:
        pids = read_pids(tmp_path, "A") + read_pids(tmp_path, "B")
        proc.kill()
        proc.wait(timeout=5)
        assert wait_for(lambda: not any(alive(p) for p in pids), 3)
    finally:
        if proc.poll() is None:
            proc.kill()
