# tests/test_sitefile.py: site files: a valid file gives the right layout; every kind of bad
# file gives a message naming the file, the site and the field.
import os
import re
import textwrap

import pytest

from isthmus.errors import IsthmusError
from isthmus.launch.secret import Secret
from isthmus.launch.sitefile import load_site_file

SECRET_HEX = "ab" * 32

VALID = """
[job]
secret_file = "job.secret"
transport = "tcp"

[[site]]
name = "A"
ranks = 2
gateways = 1
mpi = "openmpi"
gateway = "127.0.0.1:41000"
launch = "local"
mpirun_args = ["--bind-to", "none"]

[[site]]
name = "B"
ranks = 3
gateways = 2
mpi = "mpich"
gateway = "login.cluster-b:42000"
launch = "ssh"
ssh_host = "login.cluster-b"
"""


def write(tmp_path, text, name="job.toml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def write_secret(path, text=SECRET_HEX + "\n"):
    """A secret file as a user should make it: readable by its owner only."""
    path.write_text(text)
    path.chmod(0o600)
    return path


def load_error(path) -> str:
    with pytest.raises(IsthmusError) as exc:
        load_site_file(path)
    return str(exc.value)


def test_valid_file(tmp_path):
    write_secret(tmp_path / "job.secret")
    sf = load_site_file(write(tmp_path, VALID))
    a, b = sf.layout.sites
    assert (a.name, a.ranks, a.gateways, a.mpi, a.host, a.port, a.launcher) == (
        "A", 2, 1, "openmpi", "127.0.0.1", 41000, "local",
    )
    assert a.mpirun_args == ("--bind-to", "none")
    assert (b.name, b.ranks, b.gateways, b.mpi, b.host, b.port, b.launcher, b.ssh_host) == (
        "B", 3, 2, "mpich", "login.cluster-b", 42000, "ssh", "login.cluster-b",
    )
    assert sf.layout.total_ranks == 5
    assert sf.layout.transport == "tcp"
    assert sf.secret == Secret(SECRET_HEX)


def test_minimal_file_defaults(tmp_path):
    sf = load_site_file(write(tmp_path, "[[site]]\nranks = 2\n[[site]]\nranks = 1\n"))
    assert [s.name for s in sf.layout.sites] == ["A", "B"]
    assert [s.port for s in sf.layout.sites] == [None, None]
    assert all(s.gateways == 1 and s.mpi == "auto" and s.launcher == "local" for s in sf.layout.sites)
    assert sf.secret is None


def test_default_mpi_applies_to_sites_without_mpi(tmp_path):
    sf = load_site_file(write(tmp_path, '[[site]]\nranks = 1\n[[site]]\nranks = 1\nmpi = "openmpi"\n'), default_mpi="mpich")
    assert [s.mpi for s in sf.layout.sites] == ["mpich", "openmpi"]


def test_inline_secret_is_taken_with_a_warning(tmp_path):
    path = write(tmp_path, f'[job]\nsecret = "{SECRET_HEX}"\n[[site]]\nranks = 1\n')
    path.chmod(0o644)
    sf = load_site_file(path)
    assert sf.secret == Secret(SECRET_HEX)
    assert len(sf.warnings) == 1 and SECRET_HEX not in sf.warnings[0]
    assert "[job]: 'secret' is written in the site file itself" in sf.warnings[0]
    assert "mode 0644: group/other users too" in sf.warnings[0]
    assert "secret_file" in sf.warnings[0]
    path.chmod(0o600)
    assert "or a copy of it" in load_site_file(path).warnings[0]


def test_secret_file_gives_no_warning(tmp_path):
    write_secret(tmp_path / "job.secret")
    sf = load_site_file(write(tmp_path, '[job]\nsecret_file = "job.secret"\n[[site]]\nranks = 1\n'))
    assert sf.secret == Secret(SECRET_HEX) and sf.warnings == ()


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_secret_file_others_may_read_is_refused(tmp_path, mode):
    """The check the gateways make (native/src/wan/auth.c), before anything starts, with
    its words."""
    write_secret(tmp_path / "job.secret").chmod(mode)
    msg = load_error(write(tmp_path, '[job]\nsecret_file = "job.secret"\n[[site]]\nranks = 1\n'))
    assert (f"job.toml: [job]: 'secret_file': refusing job secret file {tmp_path}/job.secret: "
            f"its permissions {mode:04o} let group/other users access it; run 'chmod 600 "
            f"{tmp_path}/job.secret'") in msg
    assert SECRET_HEX not in msg


def test_ipv6_gateway(tmp_path):
    sf = load_site_file(write(tmp_path, '[[site]]\nranks = 1\ngateway = "[::1]:5000"\n'))
    assert (sf.layout.sites[0].host, sf.layout.sites[0].port) == ("::1", 5000)


SITE_B = '[[site]]\nname = "A"\nranks = 1\n[[site]]\nname = "B"\n'


@pytest.mark.parametrize(
    "text,expected",
    [
        (SITE_B + "ranks = -2\n", "job.toml: site 'B': 'ranks' must be a positive integer, got -2"),
        (SITE_B + "gateways = 1\n", "job.toml: site 'B': 'ranks' is missing"),
        (SITE_B + 'ranks = "2"\n', "job.toml: site 'B': 'ranks' must be a positive integer, got '2'"),
        (SITE_B + "ranks = true\n", "job.toml: site 'B': 'ranks' must be a positive integer, got true"),
        (SITE_B + "ranks = 1\ngateways = 0\n", "job.toml: site 'B': 'gateways' must be a positive integer, got 0"),
        (SITE_B + "ranks = 2\ngateways = 3\n", "job.toml: site 'B': 'gateways' (3) is more than 'ranks' (2)"),
        (SITE_B + "ranks = 16777217\n", "job.toml: site 'B': 'ranks' must be at most 16777216, got 16777217"),
        ('[[site]]\nranks = 16777216\n[[site]]\nranks = 1\n', "job.toml: 16777217 ranks over all sites is more than isthmus runs (16777216 in a job)"),
        (SITE_B + 'ranks = 1\ngateway = "127.0.0.1:99999"\n', "job.toml: site 'B': 'gateway' port must be an integer 1-65535, got '99999'"),
        (SITE_B + 'ranks = 1\ngateway = "127.0.0.1:http"\n', "job.toml: site 'B': 'gateway' port must be an integer 1-65535, got 'http'"),
        (SITE_B + 'ranks = 1\ngateway = "127.0.0.1"\n', "job.toml: site 'B': 'gateway' must look like \"host:port\""),
        (SITE_B + 'ranks = 1\ngateway = ":4000"\n', "job.toml: site 'B': 'gateway' has no host"),
        (SITE_B + "ranks = 1\ngateway = 4000\n", "job.toml: site 'B': 'gateway' must be a \"host:port\" string"),
        (SITE_B + "ranks = 1\nrank = 2\n", "job.toml: site 'B': unknown key 'rank'"),
        (SITE_B + 'ranks = 1\nmpi = "intel"\n', "job.toml: site 'B': 'mpi' must be one of auto, openmpi, mpich, got 'intel'"),
        (SITE_B + 'ranks = 1\nlaunch = "pbs"\n', "job.toml: site 'B': 'launch' must be one of local, ssh, slurm, got 'pbs'"),
        (SITE_B + 'ranks = 1\nlaunch = "ssh"\ngateway = "h:1"\n', "job.toml: site 'B': 'ssh_host' is required"),
        (SITE_B + 'ranks = 1\nlaunch = "ssh"\nssh_host = "h"\n', "job.toml: site 'B': 'gateway' (\"host:port\") is required for an ssh site"),
        (SITE_B + 'ranks = 1\nssh_host = "h"\n', "job.toml: site 'B': 'ssh_host' is only allowed with launch = \"ssh\" or \"slurm\""),
        (SITE_B + 'ranks = 1\nmpirun_args = "--bind-to none"\n', "job.toml: site 'B': 'mpirun_args' must be a list of strings"),
        ('[[site]]\nname = "A"\nranks = 1\n[[site]]\nname = "A"\nranks = 2\n', "job.toml: site 'A': the name is used twice (sites #1 and #2)"),
        ('[[site]]\nranks = 1\n[[site]]\nname = ""\nranks = 1\n', "job.toml: site #2: 'name' must be a non-empty string"),
        ('[[site]]\nname = "A,B"\nranks = 1\n', "job.toml: site 'A,B': 'name' may only use"),
        ("[[site]]\nranks = 1\ngateway = \"h:1\"\n[[site]]\nranks = 1\ngateway = \"h:1\"\n", "job.toml: sites 'A' and 'B' both use gateway ports on h"),
        ("[[site]\nranks = 1\n", "job.toml: invalid TOML:"),
        ("ranks = 1\n", "job.toml: unknown top-level key 'ranks'"),
        ("[job]\n", "job.toml: no [[site]] tables"),
        ("[site]\nranks = 1\n", "job.toml: 'site' must be an array of tables: write [[site]], not [site]"),
        ('[job]\nsecrets = "x"\n[[site]]\nranks = 1\n', "job.toml: [job]: unknown key 'secrets'"),
        ('[job]\ntransport = "quic"\n[[site]]\nranks = 1\n', "job.toml: [job]: 'transport' must be one of tcp, udp, got 'quic'"),
        (f'[job]\nsecret = "{SECRET_HEX}"\nsecret_file = "x"\n[[site]]\nranks = 1\n', "job.toml: [job]: give either 'secret' or 'secret_file', not both"),
        ('[job]\nsecret = "abcd"\n[[site]]\nranks = 1\n', "job.toml: [job]: 'secret': the secret is too short"),
    ],
)
def test_bad_files(tmp_path, monkeypatch, text, expected):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, text)
    assert expected in load_error("job.toml")


def test_bad_toml_names_line(tmp_path):
    msg = load_error(write(tmp_path, "[[site]]\nranks = = 1\n"))
    assert "invalid TOML" in msg and "line 2" in msg


def test_missing_file(tmp_path):
    msg = load_error(tmp_path / "nope.toml")
    assert "nope.toml: cannot read site file" in msg


def test_secret_file_missing(tmp_path):
    msg = load_error(write(tmp_path, '[job]\nsecret_file = "missing.secret"\n[[site]]\nranks = 1\n'))
    assert "job.toml: [job]: 'secret_file': cannot read" in msg
    assert "missing.secret" in msg


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a mode 000 file")
def test_secret_file_unreadable_permissions(tmp_path):
    s = tmp_path / "job.secret"
    s.write_text(SECRET_HEX)
    s.chmod(0)
    msg = load_error(write(tmp_path, '[job]\nsecret_file = "job.secret"\n[[site]]\nranks = 1\n'))
    assert "'secret_file': cannot read" in msg


def test_secret_file_is_a_directory(tmp_path):
    (tmp_path / "job.secret").mkdir()
    msg = load_error(write(tmp_path, '[job]\nsecret_file = "job.secret"\n[[site]]\nranks = 1\n'))
    assert "job.toml: [job]: 'secret_file': cannot read" in msg and "not a regular file" in msg


def test_bad_secret_content_is_not_echoed(tmp_path):
    bad = "zz-not-hex-" * 4
    write_secret(tmp_path / "job.secret", bad)
    msg = load_error(write(tmp_path, '[job]\nsecret_file = "job.secret"\n[[site]]\nranks = 1\n'))
    assert "must be hex digits" in msg
    assert bad not in msg


def test_secret_file_relative_to_site_file(tmp_path, monkeypatch):
    sub = tmp_path / "conf"
    sub.mkdir()
    write_secret(sub / "job.secret", SECRET_HEX)
    write(sub, '[job]\nsecret_file = "job.secret"\n[[site]]\nranks = 1\n')
    monkeypatch.chdir(tmp_path)
    assert load_site_file("conf/job.toml").secret == Secret(SECRET_HEX)


def test_multi_node_site(tmp_path):
    p = write(tmp_path, """
        [[site]]
        name = "A"
        ranks = 4
        launch = "ssh"
        ssh_host = "n1.a"
        ssh_jump = "me@login.a:2222"
        ssh_options = ["-p", "2200"]
        nodes = ["n0.a:2", "n1.a:2"]
        gateway_node = "n0.a"
        gateway = "198.51.100.7:41000"
        [[site]]
        name = "B"
        ranks = 3
        nodes = ["b0", "b1"]
    """)
    a, b = load_site_file(p).layout.sites
    assert (a.ssh_jump, a.ssh_options, a.gateway_node) == ("me@login.a:2222", ("-p", "2200"), "n0.a")
    assert a.node_ranks() == [("n0.a", 2), ("n1.a", 2)]
    assert b.gateway_node == "b0" and b.node_ranks() == [("b0", 2), ("b1", 1)]


@pytest.mark.parametrize("body,msg", [
    ('nodes = ["a", "b"]\nhostfile = "h"', "either 'nodes' or 'hostfile'"),
    ('hostfile = "h"', "name the node of the gateway"),
    ('nodes = ["a", "b"]\ngateway_node = "c"', "'gateway_node' 'c' is not one of 'nodes'"),
    ('gateway_node = "a"', "'gateway_node' needs 'nodes' or 'hostfile'"),
    ('nodes = ["a:1", "b"]', "for every node or for none"),
    ('nodes = ["a:1", "b:1"]', "give 2 slots for 4 ranks"),
    ('nodes = ["a", "a"]', "names 'a' twice"),
    ('nodes = ["a:0"]', "slots must be a positive integer"),
    ('nodes = []', "non-empty list"),
    ('nodes = ["-oProxyCommand=x"]', "must be a host name"),
    ('ssh_jump = "login"', "only allowed with launch = \"ssh\""),
])
def test_multi_node_site_errors(tmp_path, body, msg):
    p = write(tmp_path, '[[site]]\nname = "A"\nranks = 4\n' + body + "\n")
    with pytest.raises(IsthmusError, match=re.escape(msg)):
        load_site_file(p)
