# tests/test_cli.py: the click interface: --help documents every option, --dry-run shows the
# per-site commands and environment (never the secret), option errors are clear.
import os
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from isthmus.cli import main
from isthmus.launch import ports

RUN_OPTIONS = [
    "-n, --np", "--sites", "--ranks-per-site", "--gateways", "--mpi", "--transport",
    "--site-file", "--host", "--port", "--stats", "--timeout", "--dry-run", "--site-cpu",
]


@pytest.fixture
def fake_launchers(tmp_path, monkeypatch):
    """mpirun.openmpi / mpiexec.mpich stand-ins first on PATH (they are never run here)."""
    d = tmp_path / "launchers"
    d.mkdir()
    for n in ("mpirun.openmpi", "mpiexec.mpich"):
        (d / n).write_text("#!/bin/sh\nexit 99\n")
        (d / n).chmod(0o755)
    monkeypatch.setenv("PATH", f"{d}{os.pathsep}{os.environ['PATH']}")
    return d


def invoke(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env)


def test_group_help_lists_commands():
    r = invoke("--help")
    assert r.exit_code == 0
    assert re.search(r"^\s+run\s", r.output, re.M) and re.search(r"^\s+demo\s", r.output, re.M)


def test_run_help_documents_every_option():
    r = invoke("run", "--help")
    assert r.exit_code == 0
    for opt in RUN_OPTIONS:
        assert opt in r.output, opt
    # every option carries a sentence of help
    import click

    for param in main.get_command(None, "run").params:
        if isinstance(param, click.Option):
            assert param.help and param.help.endswith(".") and len(param.help.split()) >= 4, param.name


def test_command_table_matches_what_the_modules_register():
    """commands.COMMANDS (which lets `isthmus run` import only run's modules) names every
    registered top-level command, and each entry's modules define it."""
    import importlib
    import subprocess

    from isthmus.commands import COMMANDS, load_all, load_command

    registered = {c.name for c in load_all()}
    assert registered == set(COMMANDS)
    for name in COMMANDS:
        assert load_command(name).name == name
    pkg = Path(importlib.import_module("isthmus.commands").__file__).parent
    modules = {p.stem for p in pkg.glob("*.py") if not p.stem.startswith("_")}
    assert modules == {m for ms in COMMANDS.values() for m in ms}
    # a fresh interpreter starting `isthmus run` does not import numpy or another command
    code = ("import sys; from isthmus.cli import main; main.get_command(None, 'run'); "
            "print(sorted(m for m in sys.modules if m == 'numpy' or "
            "m.startswith('isthmus.commands.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(pkg.parents[1])})
    assert out.stdout.strip() == "['isthmus.commands.run']"


def test_demo_help():
    r = invoke("demo", "--help")
    assert r.exit_code == 0 and "--mpi" in r.output and "--keep" in r.output


def test_version():
    assert invoke("--version").exit_code == 0


def free_ports(count):
    """A block of ports free now: `run` refuses explicit ports that are in use, and a fixed
    number in the ephemeral range can be held by any connection of an earlier test (TIME_WAIT
    included)."""
    return ports.free_port_block("127.0.0.1", count)


def test_dry_run(fake_prefix, fake_launchers, script):
    prog = script("ring.sh", "exit 0\n")
    base = free_ports(4)
    r = invoke("run", "-n", "5", "--port", str(base), "--gateways", "2", "--stats", "--dry-run", "--", str(prog), "-x", "a b")
    assert r.exit_code == 0, r.output
    err = r.stderr
    assert "5 ranks on 2 sites" in err
    assert "site A command:" in err and "site B command:" in err
    gw = fake_prefix.gateway
    assert ("mpirun.openmpi --oversubscribe --mca mpi_yield_when_idle 1") in err
    assert f"-np 3 {prog} -x 'a b' : " in err and f"-np 2 {prog} -x 'a b' : " in err
    assert f"-np 2 {gw}" in err
    assert "ISTHMUS_SITE=0" in err and "ISTHMUS_SITE=1" in err
    assert "ISTHMUS_SITE_NAMES=A,B" in err
    assert "ISTHMUS_SITE_RANKS=3,2" in err
    assert "ISTHMUS_SITE_GATEWAYS=2,2" in err
    assert f"ISTHMUS_GATEWAY_ADDRS=127.0.0.1:{base},127.0.0.1:{base + 2}" in err
    assert "ISTHMUS_SECRET_FILE=<private 0600 file, created at launch>" in err
    assert "ISTHMUS_MPI=openmpi" in err and "ISTHMUS_TRANSPORT=tcp" in err
    assert f"ISTHMUS_PREFIX={fake_prefix.root}" in err
    assert "ISTHMUS_STATS=1" in err
    assert re.search(r"ISTHMUS_JOB=[0-9a-f]{32}", err)
    assert r.stdout == ""  # stdout belongs to the job


def test_dry_run_mpich_and_ranks_per_site(fake_prefix, fake_launchers, script):
    prog = script("ring.sh", "exit 0\n")
    r = invoke("run", "-n", "4", "--sites", "3", "--ranks-per-site", "2,1,1", "--mpi", "mpich", "--dry-run", str(prog))
    assert r.exit_code == 0, r.output
    assert "mpiexec.mpich -np 2" in r.stderr and "ISTHMUS_SITE_NAMES=A,B,C" in r.stderr
    assert "ISTHMUS_MPI=mpich" in r.stderr and "ISTHMUS_SITE=2" in r.stderr


def test_dry_run_warns_about_program(fake_prefix, fake_launchers, tmp_path):
    r = invoke("run", "-n", "2", "--dry-run", str(tmp_path / "nope"))
    assert r.exit_code == 0
    assert "no such file" in r.stderr and "a real run would stop here" in r.stderr


def test_dry_run_site_file(fake_prefix, fake_launchers, script, tmp_path):
    prog = script("ring.sh", "exit 0\n")
    f = tmp_path / "job.toml"
    port = free_ports(1)
    f.write_text(f'[[site]]\nname = "east"\nranks = 1\ngateway = "127.0.0.1:{port}"\nmpirun_args = ["--bind-to", "none"]\n'
                 '[[site]]\nname = "west"\nranks = 2\nmpi = "mpich"\n')
    r = invoke("run", "--site-file", str(f), "--dry-run", str(prog))
    assert r.exit_code == 0, r.output
    assert "ISTHMUS_SITE_NAMES=east,west" in r.stderr
    assert "--bind-to none" in r.stderr and "mpiexec.mpich -np 2" in r.stderr
    assert f"ISTHMUS_GATEWAY_ADDRS=127.0.0.1:{port},127.0.0.1:" in r.stderr


def test_run_without_np(fake_prefix):
    r = invoke("run", "./prog")
    assert r.exit_code == 2 and "-n/--np" in r.output


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["-n", "1", "--sites", "2"], "isthmus: -n 1 is less than the number of sites (2)"),
        (["-n", "4", "--ranks-per-site", "1,1,2"], "--ranks-per-site has 3 entries but there are 2 sites"),
        (["-n", "4", "--gateways", "0"], "--gateways must be at least 1"),
    ],
)
def test_layout_errors(fake_prefix, args, fragment):
    r = invoke("run", *args, "./prog")
    assert r.exit_code == 2
    assert fragment in r.stderr


def test_site_file_conflicts(fake_prefix, tmp_path):
    f = tmp_path / "job.toml"
    f.write_text("[[site]]\nranks = 1\n[[site]]\nranks = 1\n")
    r = invoke("run", "--site-file", str(f), "--sites", "3", "./prog")
    assert r.exit_code == 2 and "--sites cannot be combined with --site-file" in r.stderr
    r = invoke("run", "--site-file", str(f), "-n", "3", "./prog")
    assert r.exit_code == 2 and "-n 3 does not match" in r.stderr


def test_transport_choice_reaches_every_site(fake_prefix, fake_launchers, script, tmp_path):
    """--transport, ISTHMUS_WAN_TRANSPORT and the site file's [job] transport end up as
    ISTHMUS_TRANSPORT for every process; a site file that names one wins over neither."""
    prog = script("ring.sh", "exit 0\n")
    r = invoke("run", "-n", "2", "--transport", "udp", "--dry-run", str(prog))
    assert r.exit_code == 0 and r.stderr.count("ISTHMUS_TRANSPORT=udp") == 2, r.output
    r = invoke("run", "-n", "2", "--dry-run", str(prog), env={"ISTHMUS_WAN_TRANSPORT": "udp"})
    assert r.exit_code == 0 and r.stderr.count("ISTHMUS_TRANSPORT=udp") == 2, r.output
    plain, named = tmp_path / "plain.toml", tmp_path / "named.toml"
    plain.write_text("[[site]]\nranks = 1\n[[site]]\nranks = 1\n")
    named.write_text('[job]\ntransport = "tcp"\n[[site]]\nranks = 1\n[[site]]\nranks = 1\n')
    r = invoke("run", "--site-file", str(plain), "--transport", "udp", "--dry-run", str(prog))
    assert r.exit_code == 0 and "ISTHMUS_TRANSPORT=udp" in r.stderr, r.output
    r = invoke("run", "--site-file", str(named), "--dry-run", str(prog),
               env={"ISTHMUS_WAN_TRANSPORT": "udp"})
    assert r.exit_code == 2
    assert "ISTHMUS_WAN_TRANSPORT=udp differs from transport 'tcp' in" in r.stderr
    named.write_text('[job]\ntransport = "udp"\n[[site]]\nranks = 1\n[[site]]\nranks = 1\n')
    r = invoke("run", "--site-file", str(named), "--dry-run", str(prog))
    assert r.exit_code == 0 and "ISTHMUS_TRANSPORT=udp" in r.stderr, r.output


@pytest.mark.parametrize("opts,msg", [
    (["--wan-streams", "3"], "the udp transport carries each link in one flow"),
    (["--wan-cc", "cubic"], "the udp transport's congestion control is bbr or reno"),
])
def test_udp_transport_refuses_tcp_options(fake_prefix, opts, msg):
    r = invoke("run", "-n", "2", "--transport", "udp", *opts, "./prog")
    assert r.exit_code == 2 and msg in r.stderr, r.output


def test_site_file_error_names_file(fake_prefix, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.toml").write_text('[[site]]\nname = "A"\nranks = 1\n[[site]]\nname = "B"\nranks = -2\n')
    r = invoke("run", "--site-file", "job.toml", "./prog")
    assert r.exit_code == 2
    assert "isthmus: job.toml: site 'B': 'ranks' must be a positive integer, got -2" in r.stderr


def test_missing_program_is_reported_before_launch(fake_prefix, fake_launchers, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke("run", "-n", "2", "./ring")
    assert r.exit_code == 2 and "isthmus: ./ring: no such file" in r.stderr


def test_missing_native_build(tmp_path, monkeypatch):
    monkeypatch.setenv("ISTHMUS_PREFIX", str(tmp_path))
    r = invoke("run", "-n", "2", "./ring")
    assert r.exit_code == 2
    assert "isthmus: native build not found" in r.stderr and "ISTHMUS_PREFIX" in r.stderr


def test_run_fake_job_exit_code(fake_prefix, script, tmp_path, monkeypatch):
    """A real (non dry-run) `isthmus run` through fake vendor launchers: the job's exit code
    and output come through."""
    d = tmp_path / "launchers"
    d.mkdir()
    # fake mpirun: run the program once (args after -np K up to ':'), exit with its code
    (d / "mpirun.openmpi").write_text(
        '#!/bin/sh\nwhile [ "$1" != "-np" ]; do shift; done; shift 2\n'
        'prog=$1; shift; "$prog" "$1"\n'
    )
    (d / "mpirun.openmpi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{d}{os.pathsep}{os.environ['PATH']}")
    prog = script("prog.sh", 'echo "site $ISTHMUS_SITE arg $1"; [ "$ISTHMUS_SITE" = 1 ] && exit 9; exit 0\n')
    r = invoke("run", "-n", "2", "--mpi", "openmpi", str(prog), "hello")
    assert r.exit_code == 9


def test_starting_the_cli_loads_no_numerical_library():
    """`isthmus run` starts once per job, and the suite starts it hundreds of times: the
    command modules must load scipy and matplotlib (1.5-2 s on this machine) only inside
    the commands that use them. A fresh interpreter, so other tests' imports do not count."""
    import subprocess
    import sys
    code = ("import sys, isthmus.cli; "
            "print(' '.join(m for m in ('scipy', 'matplotlib') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"importing isthmus.cli loaded: {r.stdout.strip()}"


def test_inline_secret_in_a_site_file_is_warned_about(fake_prefix, fake_launchers, script,
                                                       tmp_path):
    prog = script("ring.sh", "exit 0\n")
    f = tmp_path / "job.toml"
    f.write_text(f'[job]\nsecret = "{"ab" * 32}"\n[[site]]\nranks = 1\n[[site]]\nranks = 1\n')
    f.chmod(0o644)
    r = invoke("run", "--site-file", str(f), "--dry-run", str(prog))
    assert r.exit_code == 0, r.output
    warning = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert len(warning) == 1 and "ab" * 32 not in r.stderr
    assert warning[0].startswith(f"isthmus: warning: {f}: [job]: 'secret' is written in the "
                                 "site file itself: anyone who can read it (mode 0644")
