# Sites started over ssh, without an sshd: the remote script run by sh (secret on stdin, its
# file under $HOME, the launcher stopped when stdin ends), ssh options, the placement of a
# multi-node site's ranks and gateways, and the site/rank prefixes of its output. The same
# paths against real sshds on emulated clusters: test_clusters.py.
import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from isthmus.errors import IsthmusError
from isthmus.launch import vendor
from isthmus.launch.layout import Site
from isthmus.launch.output import site_tagger
from isthmus.launch.ssh import ssh_command


def _remote_sh(argv):
    return shlex.split(argv[-1])[-1]  # the script, as sh -c receives it on the site


def test_ssh_jump_and_options():
    argv = ssh_command("n1", ["true"], {}, "/w", jump="login.example", options=["-p", "2222"])
    assert argv[-6:-1] == ["-J", "login.example", "-p", "2222", "n1"]


def test_ssh_script_runs_and_stores_secret(tmp_path):
    """The secret arrives on stdin and is kept, 0600, under $HOME/.isthmus/run (shared by
    the nodes of a cluster, unlike /tmp), and removed at the end."""
    argv = ssh_command("h", ["sh", "-c", 'cat "$ISTHMUS_SECRET_FILE"; stat -c %a "$ISTHMUS_SECRET_FILE"; '
                             'echo "$ISTHMUS_SITE"; echo "$ISTHMUS_SECRET_FILE"'],
                       {"ISTHMUS_SECRET_FILE": "x", "ISTHMUS_SITE": "1"}, str(tmp_path))
    # stdin stays open as ssh keeps it: its end would stop the launcher
    p = subprocess.Popen(["sh", "-c", _remote_sh(argv)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, env={**os.environ, "HOME": str(tmp_path)})
    p.stdin.write("ab" * 32 + "\n")
    p.stdin.flush()
    words = p.stdout.read().split()
    assert p.wait(timeout=10) == 0
    p.stdin.close()
    assert words[:3] == ["ab" * 32, "600", "1"]
    assert words[3].startswith(f"{tmp_path}/.isthmus/run/job-")
    assert not Path(words[3]).exists()


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_ssh_script_stops_launcher_when_stdin_ends(tmp_path):
    """The end of stdin (isthmus stopped the site, or the connection is gone) stops the
    remote launcher's whole process group, its children too."""
    pidfile = tmp_path / "pids"
    launcher = ["sh", "-c", f"sleep 300 & echo $! > {pidfile}; echo $$ >> {pidfile}; wait"]
    argv = ssh_command("h", launcher, {"ISTHMUS_SECRET_FILE": "x"}, str(tmp_path))
    p = subprocess.Popen(["sh", "-c", _remote_sh(argv)], stdin=subprocess.PIPE,
                         env={**os.environ, "HOME": str(tmp_path)}, start_new_session=True)
    try:
        p.stdin.write(b"cd" * 32 + b"\n")
        p.stdin.flush()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (not pidfile.exists() or len(pidfile.read_text().split()) < 2):
            time.sleep(0.05)
        pids = [int(x) for x in pidfile.read_text().split()]
        time.sleep(0.3)
        assert p.poll() is None, "the launcher stopped while stdin was still open"
        p.stdin.close()
        assert p.wait(timeout=10) != 0
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not all(_gone(pid) for pid in pids):
            time.sleep(0.05)
        assert all(_gone(pid) for pid in pids), f"still running after stdin ended: {pids}"
    finally:
        if p.poll() is None:
            os.killpg(p.pid, 9)
            p.wait()


def test_placement_openmpi_and_mpich():
    pl = vendor.Placement(app_hosts=(("n0", 2), ("n1", 2)), gateway_node="n0")
    ompi = vendor.build_command("openmpi", 4, 1, "./app", (), "/gw", placement=pl, tag_output=True)
    assert "--tag-output" in ompi
    apps = " ".join(ompi[ompi.index("--tag-output") + 1:])
    assert apps == "--host n0:2 -np 2 ./app : --host n1:2 -np 2 ./app : --host n0:1 -np 1 /gw"
    mpich = vendor.build_command("mpich", 4, 2, "./app", ("a",), "/gw", placement=pl, tag_output=True)
    assert mpich == ["mpiexec.mpich", "-prepend-rank", "-hosts", "n0:2,n1:2,n0:2", "-np", "4", "./app",
                     "a", ":", "-np", "2", "/gw"]
    with pytest.raises(IsthmusError, match="list the site's nodes"):
        vendor.build_command("mpich", 4, 1, "./app", (), "/gw",
                             placement=vendor.Placement(hostfile="/h", gateway_node="n0"))
    hf = vendor.build_command("openmpi", 4, 1, "./app", (), "/gw",
                              placement=vendor.Placement(hostfile="/h", gateway_node="n3"))
    assert hf[hf.index("--hostfile") + 1] == "/h" and hf[-5:] == ["--host", "n3:1", "-np", "1", "/gw"]


def test_node_ranks_split():
    assert Site("A", 5, nodes=("a", "b")).node_ranks() == [("a", 3), ("b", 2)]
    assert Site("A", 3, nodes=("a:2", "b:4")).node_ranks() == [("a", 2), ("b", 1)]
    assert Site("A", 1, nodes=("a", "b")).node_ranks() == [("a", 1)]


def test_output_tags():
    t = site_tagger("B", "openmpi", first_rank=4, ranks=2)
    assert t("[1,1]<stdout>:hello") == "[B:5] hello"
    assert t("[1,2]<stderr>:gw says") == "[B:gw0] gw says"
    assert t("mpirun noticed") == "[B] mpirun noticed"
    m = site_tagger("A", "mpich", first_rank=0, ranks=4)
    assert m("[3] x y") == "[A:3] x y" and m("[4] gw") == "[A:gw0] gw"
