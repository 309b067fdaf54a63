# tests/test_outputs.py: every file or folder a command writes is checked while its command
# line is read, before any work: a missing folder or one that may not be written is one
# line naming the option and the path, exit status 2 (`bench run --output res/a.jsonl`
# used to end in a traceback after the measurement). And no option names a path to write
# without that check.
from __future__ import annotations

import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from isthmus.cli import main
from isthmus.outputs import OutputDir, OutputFile

# Path options and arguments that are read, not written (reviewed): everything else that
# names a path must be an OutputFile or an OutputDir.
INPUTS = {
    "run --site-file", "run --wan-matrix", "link emulate --matrix", "link probe --matrix",
    "link probe --secret-file", "link serve --secret-file", "link watch --matrix",
    "link watch --secret-file", "copy files --secret-file", "copy serve --secret-file",
    "copy serve DIRECTORY", "model predict --params", "model tune --params",
    "bench campaign PLAN_FILE", "bench plot RESULTS", "bench report RESULTS",
    "noise report RUN_DIR", "noise report --inject-log", "noise scale RUN_DIR",
    "noise scale --validate", "submit SITE_FILE", "copy files --files-from",
    "whatif --platform",
}


def _walk(group: click.Group, prefix: str = ""):
    for name in group.list_commands(None):  # isthmus's own group imports on demand
        cmd = group.get_command(None, name)
        if isinstance(cmd, click.Group):
            yield from _walk(cmd, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", cmd


def _label(where: str, p: click.Parameter) -> str:
    return f"{where} {max(p.opts, key=len) if isinstance(p, click.Option) else p.name.upper()}"


def test_every_path_a_command_writes_is_checked():
    paths, unchecked = set(), []
    for where, cmd in _walk(main):
        for p in cmd.params:
            label = _label(where, p)
            if isinstance(p.type, (OutputFile, OutputDir)):
                continue
            if isinstance(p.type, click.Path):
                paths.add(label)
                if label not in INPUTS:
                    unchecked.append(label)
    assert not unchecked, f"paths neither reviewed as inputs nor checked as outputs: {unchecked}"
    assert not INPUTS - paths, f"INPUTS names paths no command has: {INPUTS - paths}"


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _one_line(r, *parts):
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and all(x in lines[0] for x in parts), r.stderr
    assert lines[0].startswith("isthmus: ")


# (command line with {out} where the output goes, the option's name); none of these gets
# far enough to need root, a vendor MPI or a peer
FILES = [
    (["bench", "run", "latency", "--output", "{out}"], "--output"),
    (["bench", "compare", "a", "b", "--json", "{out}"], "--json"),
    (["bench", "report", "res", "--out", "{out}"], "--out"),
    (["link", "probe", "--link", "delay=1ms", "--json", "{out}"], "--json"),
    (["link", "probe", "--link", "delay=1ms", "--plot", "{out}"], "--plot"),
    (["link", "watch", "--link", "delay=1ms", "--log", "{out}"], "--log"),
    (["model", "calibrate", "--out", "{out}"], "--out"),
    (["model", "tune", "--params", "p.json", "--out", "{out}"], "--out"),
    (["model", "tune", "--params", "p.json", "--report", "{out}"], "--report"),
    (["noise", "inject", "--period", "10ms", "--duration", "1ms", "--log", "{out}"], "--log"),
    (["noise", "scale", "{tmp}", "--plot", "{out}"], "--plot"),
    (["copy", "--job", "j", "--secret-file", "s", "host:1:remote.dat", "{out}"], "target"),
]
DIRS = [
    (["bench", "plot", "res", "--out", "{out}"], "--out"),
    (["bench", "campaign", "plan.toml", "--results", "{out}"], "--results"),
    (["noise", "run", "--out", "{out}"], "--out"),
]


def _argv(argv, tmp, out):
    return [a.replace("{out}", str(out)).replace("{tmp}", str(tmp)) for a in argv]


def _unwritable(tmp_path: Path) -> Path:
    """A folder this process may not create files in: for root, whom no mode bits stop,
    /proc/sys; for anyone else a folder of mode 0500."""
    if os.geteuid() == 0:
        return Path("/proc/sys")
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    return d


@pytest.mark.parametrize("argv,opt", FILES, ids=[" ".join(a[:2]) + " " + o for a, o in FILES])
def test_an_output_file_in_a_missing_folder_is_one_line(tmp_path, argv, opt):
    out = tmp_path / "res" / "a.jsonl"
    _one_line(_run(*_argv(argv, tmp_path, out)), f"{opt} {out}",
              f"the folder {tmp_path / 'res'} does not exist")
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize("argv,opt", FILES, ids=[" ".join(a[:2]) + " " + o for a, o in FILES])
def test_an_output_file_in_a_folder_that_may_not_be_written_is_one_line(tmp_path, argv, opt):
    d = _unwritable(tmp_path)
    out = d / "a.jsonl"
    _one_line(_run(*_argv(argv, tmp_path, out)), f"{opt} {out}", f"the folder {d} may not be written")


@pytest.mark.parametrize("argv,opt", FILES[:3], ids=[o for _, o in FILES[:3]])
def test_an_output_file_that_is_a_folder_is_one_line(tmp_path, argv, opt):
    _one_line(_run(*_argv(argv, tmp_path, tmp_path)), f"{opt} {tmp_path}", "is a folder")


@pytest.mark.parametrize("argv,opt", DIRS, ids=[" ".join(a[:2]) for a, _ in DIRS])
def test_an_output_folder_that_cannot_be_made_is_one_line(tmp_path, argv, opt):
    d = _unwritable(tmp_path)
    _one_line(_run(*_argv(argv, tmp_path, d / "new" / "deeper")), f"{opt} {d}/new/deeper",
              f"cannot create it, {d} may not be written")
    f = tmp_path / "file"
    f.write_text("")
    _one_line(_run(*_argv(argv, tmp_path, f / "sub")), f"{opt} {f}/sub", f"{f} is not a folder")


@pytest.mark.parametrize("cmd", ["report", "scale"])
def test_a_run_folder_that_may_not_be_written_is_one_line(tmp_path, cmd):
    d = _unwritable(tmp_path)
    _one_line(_run("noise", cmd, d), f"RUN_DIR {d}: the folder may not be written")


def test_bench_run_output_is_checked_before_the_measurement(tmp_path, monkeypatch):
    """The case of the issue: nothing is measured when --output cannot be written."""
    import isthmus.bench.launchers as launchers

    def measured(*a, **k):
        raise AssertionError("the measurement ran")

    monkeypatch.setattr(launchers, "run_launch", measured)
    monkeypatch.chdir(tmp_path)
    r = _run("bench", "run", "latency", "-n", "2", "--library", "openmpi", "-m", "8",
             "--output", "res/a.jsonl")
    _one_line(r, "--output res/a.jsonl: the folder res does not exist")
