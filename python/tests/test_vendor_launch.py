# tests/test_vendor_launch.py: `isthmus run` through the real vendor launchers
# (mpirun.openmpi, mpiexec.mpich) with shell scripts standing in for the program and for
# isthmus-gateway: every process gets its site's environment, exit codes come through, and
# a failing site stops the others. Skipped for a vendor that is not installed.
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

VENDORS = [
    pytest.param("openmpi", marks=pytest.mark.skipif(shutil.which("mpirun.openmpi") is None, reason="mpirun.openmpi not installed")),
    pytest.param("mpich", marks=pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="mpiexec.mpich not installed")),
]

REPORT = """#!/bin/sh
r=${OMPI_COMM_WORLD_RANK:-$PMI_RANK}
echo "$1 site=$ISTHMUS_SITE vrank=$r mpi=$ISTHMUS_MPI job=$ISTHMUS_JOB names=$ISTHMUS_SITE_NAMES ranks=$ISTHMUS_SITE_RANKS gws=$ISTHMUS_SITE_GATEWAYS secret=$(wc -c < "$ISTHMUS_SECRET_FILE")"
"""


def isthmus(*args, env, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "isthmus", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def env(fake_prefix):
    e = dict(os.environ)
    e["ISTHMUS_PREFIX"] = str(fake_prefix.root)
    gw = fake_prefix.gateway
    gw.write_text(REPORT.replace('"$1 ', '"gateway '))
    return e


@pytest.mark.parametrize("mpi", VENDORS)
def test_every_process_gets_its_site_env(mpi, env, script):
    prog = script("report.sh", REPORT.split("\n", 1)[1])
    r = isthmus("run", "-n", "3", "--gateways", "2", "--mpi", mpi, str(prog), "app", env=env)
    assert r.returncode == 0, r.stderr
    lines = sorted(l for l in r.stdout.splitlines() if "site=" in l)
    apps = [l for l in lines if l.startswith("app ")]
    gws = [l for l in lines if l.startswith("gateway ")]
    assert len(apps) == 3 and len(gws) == 4
    jobs = {l.split("job=")[1].split()[0] for l in lines}
    assert len(jobs) == 1 and len(jobs.pop()) == 32
    for l in lines:
        assert f"mpi={mpi}" in l and "names=A,B" in l and "ranks=2,1" in l and "gws=2,2" in l
        assert "secret=65" in l
    # vendor ranks: app ranks first, gateways after them
    assert sorted(l.split()[1] + " " + l.split()[2] for l in apps) == ["site=0 vrank=0", "site=0 vrank=1", "site=1 vrank=0"]
    assert sorted(l.split()[1] + " " + l.split()[2] for l in gws) == [
        "site=0 vrank=2", "site=0 vrank=3", "site=1 vrank=1", "site=1 vrank=2"]


@pytest.mark.parametrize("mpi", VENDORS)
def test_failing_site_stops_the_other_vendor_job(mpi, env, script, tmp_path):
    prog = script(
        "fail.sh",
        f'if [ "$ISTHMUS_SITE" = 1 ]; then sleep 0.5; exit 3; fi\necho $$ >> {tmp_path}/pids; exec sleep 60\n',
    )
    start = time.monotonic()
    r = isthmus("run", "-n", "4", "--mpi", mpi, str(prog), env=env)
    assert r.returncode != 0
    assert "isthmus: site B exited with code" in r.stderr
    assert time.monotonic() - start < 30
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 2
    for pid in pids:
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
