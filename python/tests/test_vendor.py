# tests/test_vendor.py: vendor detection, --mpi resolution messages, the per-site MPMD
# command lines, and the ssh wrapper.
import os
import shlex
from pathlib import Path

import pytest

from isthmus.errors import IsthmusError
from isthmus.launch import vendor
from isthmus.launch.job import SiteLaunch, default_command
from isthmus.launch.layout import Layout, Site
from isthmus.launch.ssh import ssh_command
from isthmus.paths import Prefix


@pytest.fixture
def bindir(tmp_path):
    d = tmp_path / "bin"
    d.mkdir()

    def add(*names):
        for n in names:
            p = d / n
            p.write_text("#!/bin/sh\n")
            p.chmod(0o755)
        return str(d)

    return add


def test_detect_needs_launcher_and_backend(fake_prefix, bindir, tmp_path):
    path = bindir("mpirun.openmpi", "mpiexec.mpich")
    assert vendor.detect(fake_prefix, path) == ["openmpi", "mpich"]
    fake_prefix.backend("openmpi").unlink()
    assert vendor.detect(fake_prefix, path) == ["mpich"]
    assert vendor.detect(fake_prefix, str(tmp_path / "empty")) == []


def test_auto_prefers_openmpi_then_mpich(fake_prefix, bindir):
    assert vendor.resolve("auto", fake_prefix, bindir("mpirun.openmpi", "mpiexec.mpich")) == "openmpi"


def test_auto_falls_back_to_mpich(fake_prefix, bindir):
    assert vendor.resolve("auto", fake_prefix, bindir("mpiexec.mpich")) == "mpich"


def test_auto_with_nothing(fake_prefix, tmp_path):
    with pytest.raises(IsthmusError, match="no usable MPI found"):
        vendor.resolve("auto", fake_prefix, str(tmp_path))


def test_missing_mpich_message(fake_prefix, bindir):
    with pytest.raises(IsthmusError) as exc:
        vendor.resolve("mpich", fake_prefix, bindir("mpirun.openmpi"))
    assert str(exc.value) == (
        "--mpi mpich requested but mpiexec.mpich was not found; install the Debian package "
        "mpich, or use --mpi openmpi"
    )


def test_missing_openmpi_message(fake_prefix, bindir):
    with pytest.raises(IsthmusError) as exc:
        vendor.resolve("openmpi", fake_prefix, bindir("mpiexec.mpich"))
    assert str(exc.value) == (
        "--mpi openmpi requested but mpirun.openmpi was not found; install the Debian package "
        "openmpi-bin, or use --mpi mpich"
    )


def test_missing_backend_message(fake_prefix, bindir):
    fake_prefix.backend("mpich").unlink()
    with pytest.raises(IsthmusError, match="isthmus-backend-mpich.so is missing"):
        vendor.resolve("mpich", fake_prefix, bindir("mpiexec.mpich"))


def test_openmpi_command(monkeypatch):
    monkeypatch.delenv("OMPI_MCA_op", raising=False)
    argv = vendor.build_command("openmpi", 3, 2, "./ring", ["-v", "x y"], "/p/bin/isthmus-gateway")
    assert argv == [
        "mpirun.openmpi", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1",
        "--mca", "op", "^avx", "-np", "3", "./ring", "-v", "x y", ":", "-np", "2", "/p/bin/isthmus-gateway",
    ]


def test_openmpi_command_exports_and_extra_args(monkeypatch):
    monkeypatch.delenv("OMPI_MCA_op", raising=False)
    argv = vendor.build_command(
        "openmpi", 1, 1, "./ring", [], "/gw", export_names=["ISTHMUS_JOB"], extra_args=["--bind-to", "none"]
    )
    assert argv == [
        "mpirun.openmpi", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1", "--mca", "op",
        "^avx", "--bind-to", "none",
        "-x", "ISTHMUS_JOB", "-np", "1", "./ring", ":", "-x", "ISTHMUS_JOB", "-np", "1", "/gw",
    ]


def test_openmpi_op_components_left_to_a_user_who_chose_them(monkeypatch):
    """op/avx is turned off (its saturating 8/16-bit sums) unless the user set the op
    components, in the environment or among the site's mpirun arguments."""
    monkeypatch.setenv("OMPI_MCA_op", "avx")
    assert "^avx" not in vendor.build_command("openmpi", 1, 1, "./a", [], "/gw")
    monkeypatch.delenv("OMPI_MCA_op")
    argv = vendor.build_command("openmpi", 1, 1, "./a", [], "/gw", extra_args=["--mca", "op", "avx"])
    assert argv.count("op") == 1 and "^avx" not in argv


def test_mpich_command():
    argv = vendor.build_command("mpich", 2, 1, "./ring", [], "/gw", export_names=["ISTHMUS_JOB"], extra_args=["-v"])
    assert argv == ["mpiexec.mpich", "-v", "-np", "2", "./ring", ":", "-np", "1", "/gw"]


def test_lone_colon_argument_rejected():
    with pytest.raises(IsthmusError, match="lone ':'"):
        vendor.build_command("mpich", 2, 1, "./ring", ["a", ":", "b"], "/gw")


def test_root_env_for_openmpi_only():
    if os.geteuid() == 0:
        assert vendor.launcher_env("openmpi") == vendor.OPENMPI_ROOT_ENV
    else:
        assert vendor.launcher_env("openmpi") == {}
    assert vendor.launcher_env("mpich") == {}


def test_default_command_local_and_ssh():
    layout = Layout(sites=(
        Site("A", 2, port=41000, mpi="openmpi"),
        Site("B", 2, host="gw.b", port=42000, launcher="ssh", ssh_host="login.b", mpi="mpich"),
    ))
    prefix = Prefix(Path("/opt/isthmus"))
    env = {"ISTHMUS_JOB": "j" * 32, "ISTHMUS_SECRET_FILE": "/tmp/local/secret", "ISTHMUS_SITE": "1"}
    local = default_command(SiteLaunch(layout, 0, "openmpi", "./ring", (), prefix, env, "/work"))
    assert local[0] == "mpirun.openmpi" and local[-1] == "/opt/isthmus/bin/isthmus-gateway"
    assert "--tag-output" not in local  # local sites keep their output as it is
    remote = default_command(SiteLaunch(layout, 1, "mpich", "./ring", ("x",), prefix, env, "/work dir"))
    assert remote[:3] == ["ssh", "-o", "BatchMode=yes"] and remote[-2] == "login.b"
    assert "ServerAliveInterval=5" in remote
    assert remote[-1].startswith("exec /bin/sh -c ")
    script = shlex.split(remote[-1])[-1]
    assert "cd '/work dir' ||" in script
    assert 'ISTHMUS_SECRET_FILE="$d/secret"' in script and "/tmp/local/secret" not in script
    assert "mpiexec.mpich -prepend-rank -np 2 ./ring x : -np 1 /opt/isthmus/bin/isthmus-gateway" in script


def test_openmpi_session_root_is_made_before_the_sites_start(tmp_path, monkeypatch):
    # two sites' mpirun creating <tmp>/ompi.<host>.<uid> at the same instant failed one of
    # them: the launcher makes it first, where Open MPI looks (TMPDIR here)
    monkeypatch.setattr(vendor.socket, "gethostname", lambda: "node7.example.org")
    env = {"TMPDIR": str(tmp_path)}
    root = vendor.openmpi_session_root(env)
    assert root == tmp_path / f"ompi.node7.{os.getuid()}"
    vendor.prepare_openmpi_sessions(env)
    assert root.is_dir() and (root.stat().st_mode & 0o777) == 0o700
    vendor.prepare_openmpi_sessions(env)  # already there: fine
    assert vendor.openmpi_session_root({"OMPI_MCA_orte_tmpdir_base": "/x", "TMPDIR": "/y"}) \
        == Path("/x") / f"ompi.node7.{os.getuid()}"
    # an address keeps its dots; a base that cannot be made is left to mpirun
    monkeypatch.setattr(vendor.socket, "gethostname", lambda: "10.0.0.5")
    assert vendor.openmpi_session_root(env).name == f"ompi.10.0.0.5.{os.getuid()}"
    vendor.prepare_openmpi_sessions({"TMPDIR": "/proc/no/such"})
