# tests/test_demo_cmd.py: `isthmus demo` flow with a fake isthmus-cc and a fake vendor
# launcher: compiles into a temp dir, shows the layout panel, runs 2 sites x 2 ranks,
# passes the exit code through and says "demo failed" on failure.
import os

import pytest
from click.testing import CliRunner

from isthmus.cli import main

FAKE_MPIRUN = """#!/bin/sh
# fake launcher: skip options up to -np, run the program once with its args
while [ "$1" != "-np" ]; do shift; done; shift 2
exec "$@"
"""


@pytest.fixture
def demo_env(fake_prefix, tmp_path, monkeypatch):
    d = tmp_path / "launchers"
    d.mkdir()
    (d / "mpirun.openmpi").write_text(FAKE_MPIRUN.replace('exec "$@"', 'prog=$1; exec "$prog"'))
    (d / "mpirun.openmpi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{d}{os.pathsep}{os.environ['PATH']}")
    return fake_prefix


def fake_cc(prefix, program_body, cc_exit=0):
    cc = prefix.cc
    cc.write_text(
        "#!/bin/sh\n"
        f"[ {cc_exit} = 0 ] || {{ echo 'demo.c:1: error: boom'; exit {cc_exit}; }}\n"
        'while [ "$1" != "-o" ]; do shift; done\n'
        f"printf '#!/bin/sh\\n{program_body}\\n' > \"$2\"; chmod +x \"$2\"\n"
    )
    cc.chmod(0o755)


def test_demo_success(demo_env, capfd):
    fake_cc(demo_env, 'echo site $ISTHMUS_SITE: all results correct')
    r = CliRunner().invoke(main, ["demo", "--mpi", "openmpi"])
    assert r.exit_code == 0, r.output
    assert "2 sites × 2 ranks: site A = ranks 0-1, site B = ranks 2-3," in r.stderr
    assert "gateways A 127.0.0.1:" in r.stderr
    assert "demo failed" not in r.stderr
    out = capfd.readouterr().out
    assert "site 0: all results correct" in out and "site 1: all results correct" in out


def test_demo_failure(demo_env):
    fake_cc(demo_env, 'exit 1')
    r = CliRunner().invoke(main, ["demo", "--mpi", "openmpi"])
    assert r.exit_code == 1
    assert "demo failed" in r.stderr


def test_demo_compile_error(demo_env):
    fake_cc(demo_env, "exit 0", cc_exit=1)
    r = CliRunner().invoke(main, ["demo", "--mpi", "openmpi"])
    assert r.exit_code == 2
    assert "demo.c:1: error: boom" in r.stderr
    assert "isthmus: compiling" in r.stderr and "failed (isthmus-cc exited with code 1)" in r.stderr


def test_demo_keep(demo_env):
    fake_cc(demo_env, "exit 0")
    r = CliRunner().invoke(main, ["demo", "--mpi", "openmpi", "--keep"])
    assert r.exit_code == 0
    kept = [l for l in r.stderr.splitlines() if l.startswith("kept ")]
    assert kept and os.path.isfile(os.path.join(kept[0][5:], "demo"))


def test_demo_uses_repo_source_when_prefix_has_none(demo_env):
    from isthmus.commands.demo import demo_source
    from isthmus.paths import repo_demo_source

    assert demo_source(demo_env) == repo_demo_source()
    assert repo_demo_source().is_file()
