# tests/test_secret.py: job id / secret generation, the 0600 secret file, and that the
# secret never shows up in output, reprs or error messages.
import os
import stat
import subprocess
import sys

import pytest

from isthmus.errors import IsthmusError
from isthmus.launch.secret import Secret, SecretFile, new_job_id


def test_job_id_is_32_hex():
    a, b = new_job_id(), new_job_id()
    assert len(a) == 32 and int(a, 16) >= 0 and a != b


def test_generated_secret_is_64_hex_and_hidden():
    s = Secret.generate()
    value = s.reveal()
    assert len(value) == 64 and int(value, 16) >= 0
    assert value not in repr(s) and value not in str(s) and value not in f"{s}"
    assert value not in repr([s]) and value not in repr({"secret": s})


def test_secret_file_mode_and_cleanup():
    s = Secret.generate()
    with SecretFile(s) as f:
        path = f.path
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert path.read_text() == s.reveal() + "\n"
        assert s.reveal() not in repr(f)
    assert not path.exists() and not path.parent.exists()


def test_secret_file_removed_at_interpreter_exit(tmp_path):
    code = (
        "from isthmus.launch.secret import Secret, SecretFile\n"
        "f = SecretFile(Secret.generate())\n"
        "print(f.path)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    path = out.stdout.strip()
    assert path and not os.path.exists(path) and not os.path.exists(os.path.dirname(path))


@pytest.mark.parametrize(
    "text,fragment",
    [("", "empty"), ("xyz" * 20, "hex digits"), ("abc" * 11, "even number"), ("ab" * 8, "too short")],
)
def test_parse_rejects_without_echoing(text, fragment):
    with pytest.raises(IsthmusError) as exc:
        Secret.parse(text, "where")
    msg = str(exc.value)
    assert fragment in msg and msg.startswith("where: ")
    if text:
        assert text not in msg


def test_parse_strips_and_lowercases():
    assert Secret.parse("  " + "AB" * 16 + "\n", "x").reveal() == "ab" * 16


def test_secret_not_in_dry_run_or_errors(tmp_path, fake_prefix, script):
    """A site-file secret never reaches isthmus's output, even when the run fails."""
    from click.testing import CliRunner

    from isthmus.cli import main

    secret = "c0ffee" * 11 + "ab"
    (tmp_path / "job.toml").write_text(f'[job]\nsecret = "{secret}"\n[[site]]\nranks = 1\nmpi = "openmpi"\n[[site]]\nranks = 1\nmpi = "openmpi"\n')
    prog = script("prog.sh", "exit 0\n")
    runner = CliRunner()
    for extra in (["--dry-run"], ["-n", "3"], ["--sites", "3"]):
        r = runner.invoke(main, ["run", "--site-file", str(tmp_path / "job.toml"), *extra, str(prog)])
        assert secret not in r.output and secret not in (r.stderr or "")
        if r.exception and not isinstance(r.exception, SystemExit):
            assert secret not in repr(r.exception)
