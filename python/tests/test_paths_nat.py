# tests/test_paths_nat.py: sites that cannot be reached, and sites reachable more than one
# way (issue 26 §3, §4), with real network namespaces (root).
#
# - A site behind NAT (`isthmus run --wan ... --wan-nat C`: its processes sit behind
#   masquerading, nothing can connect to them): 3 sites, every link the NAT'd site has is
#   carried over connections it opened, over TCP and UDP, with every byte checked.
# - Backup paths: site B's gateway is reachable at two addresses (a site file's `gateway`
#   list). The primary is taken away during a transfer: the link moves to the backup
#   within the outage budget, nothing is lost, and --stats and the log say which path
#   carried what; when the primary comes back the link returns to it.
# - Two sites that only dial out cannot be joined: refused before anything starts.
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from jobprocs import LINK_UP, Job

pytestmark = pytest.mark.native
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def stress(prefix, tmp_path_factory):
    exe = tmp_path_factory.mktemp("paths") / "wan_stress"
    subprocess.run([str(prefix.cc), "-O2", "-o", str(exe), str(REPO / "tests/mpi/wan_stress.c")],
                   check=True, capture_output=True)
    return exe


def isthmus_cmd(args, netns=None):
    cmd = [sys.executable, "-m", "isthmus", "run", *args]
    return ["ip", "netns", "exec", netns, *cmd] if netns else cmd


def isthmus(args, env=None, timeout=240, netns=None):
    return subprocess.run(isthmus_cmd(args, netns), capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("transport", ["tcp", "udp"])
def test_a_site_behind_nat_takes_part(netadmin, stress, transport):
    r = isthmus(["-n", "3", "--sites", "3", "--mpi", "openmpi", "--transport", transport,
                 "--wan", "delay=2ms,rate=200mbit", "--wan-nat", "C", "--stats", "--",
                 str(stress), "0", "3"])
    assert r.returncode == 0 and "wan_stress: OK" in r.stdout, (r.stdout + r.stderr)[-4000:]
    assert "behind NAT" in r.stdout + r.stderr
    # both of C's links came up (C dialed them: nobody could have dialed C)
    ups = re.findall(r"site (\w) gateway 0 -> site (\w) gateway 0: sent \d+ msgs", r.stderr)
    assert {("A", "C"), ("C", "A"), ("B", "C"), ("C", "B")} <= set(ups), ups


def test_two_sites_that_only_dial_out_are_refused(prefix, stress, tmp_path):
    sf = tmp_path / "job.toml"
    sf.write_text('[[site]]\nname = "A"\nranks = 1\ndial_out = true\n\n'
                  '[[site]]\nname = "B"\nranks = 1\ndial_out = true\n')
    r = isthmus(["--site-file", str(sf), "--", str(stress)], timeout=60)
    assert r.returncode == 2 and "both only dial out" in r.stderr, r.stderr


class TwoPaths:
    """A network namespace with a device (one end of a veth pair: no dummy module here)
    holding site B's two addresses."""

    PRIMARY, BACKUP = "10.9.0.1", "10.9.0.2"

    def __init__(self):
        self.ns = f"ism-paths-{uuid.uuid4().hex[:8]}"
        for cmd in (["ip", "netns", "add", self.ns],
                    ["ip", "-n", self.ns, "link", "set", "lo", "up"],
                    ["ip", "-n", self.ns, "link", "add", "wan0", "type", "veth", "peer", "name",
                     "wan1"],
                    ["ip", "-n", self.ns, "link", "set", "wan0", "up"],
                    ["ip", "-n", self.ns, "link", "set", "wan1", "up"],
                    ["ip", "-n", self.ns, "addr", "add", f"{self.BACKUP}/24", "dev", "wan0"]):
            subprocess.run(cmd, check=True, capture_output=True)
        self.primary(True)

    def primary(self, up: bool):
        subprocess.run(["ip", "-n", self.ns, "addr", "add" if up else "del",
                        f"{self.PRIMARY}/24", "dev", "wan0"], check=True, capture_output=True)

    def close(self):
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)


@pytest.fixture
def two_paths(netadmin):
    t = TwoPaths()
    yield t
    t.close()


@pytest.mark.parametrize("transport", ["tcp", "udp"])
def test_the_link_moves_to_the_backup_path_and_back(stress, two_paths, tmp_path, transport):
    sf = tmp_path / "job.toml"
    sf.write_text(f'[job]\ntransport = "{transport}"\n\n'
                  f'[[site]]\nname = "A"\nranks = 1\ngateway = "127.0.0.1:43100"\n\n'
                  f'[[site]]\nname = "B"\nranks = 1\n'
                  f'gateway = ["{TwoPaths.PRIMARY}:43200", "{TwoPaths.BACKUP}:43200"]\n')
    log = []
    job = Job(isthmus_cmd(["--site-file", str(sf), "--mpi", "openmpi", "--stats", "--",
                           str(stress), "30", "3"], two_paths.ns),
              env={**os.environ, "ISTHMUS_PATH_RETURN_S": "3", "ISTHMUS_LINK_DEAD_MS": "2000"})

    def outage():
        # timed from both links being up (a fixed 6 s from the start took the primary
        # away before the link was up on a job slower to start than that)
        if not job.wait_for(LINK_UP, 2):
            return
        time.sleep(5)
        two_paths.primary(False)
        log.append(("primary down", time.monotonic()))
        time.sleep(12)
        two_paths.primary(True)
        log.append(("primary back", time.monotonic()))

    t = threading.Thread(target=outage, daemon=True)
    t.start()
    out, err = job.communicate(timeout=240)
    t.join(timeout=30)
    assert [e for e, _ in log] == ["primary down", "primary back"], (log, err[-3000:])
    assert job.returncode == 0 and "wan_stress: OK" in out, (out + err)[-5000:]
    assert re.search(r"cannot reach it over this path; from path 1 \(10\.9\.0\.1:43200\) to "
                     r"path 2 \(10\.9\.0\.2:43200\)", err), err[-4000:]
    assert "the primary path answers again" in err, err[-4000:]
    m = re.search(r"site A gateway 0 -> site B gateway 0: paths: now path 1, (\d+) moves; path 1 "
                  r"\S+ sent (\d+) bytes, received (\d+); path 2 \S+ sent (\d+) bytes", err)
    assert m, err[-3000:]
    moves, p1_sent, _, p2_sent = (int(x) for x in m.groups())
    assert moves >= 2 and p1_sent > 0 and p2_sent > 0, m.group(0)
