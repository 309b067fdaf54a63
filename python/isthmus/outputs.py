# isthmus/outputs.py: the files and folders a command will write, checked while its
# command line is read, before any work starts: a measurement that ran for minutes must
# not end in a traceback because the folder of its --output does not exist. Options use
# the click types OutputFile and OutputDir; arguments a command writes into use
# check_writable_dir. Each problem is one line naming the option, the path and the cause.
from __future__ import annotations

import os
from pathlib import Path

import click

from .errors import IsthmusError


def _writable_dir(d: Path) -> bool:
    return os.access(d, os.W_OK | os.X_OK)


def check_output_file(path: Path, what: str) -> Path:
    """`path` can be created or replaced (or appended to): its folder exists and may be
    written, and the path is not a folder."""
    parent = path.parent
    if path.is_dir():
        raise IsthmusError(f"{what} {path}: is a folder; give a file name")
    if not parent.exists():
        raise IsthmusError(f"{what} {path}: the folder {parent} does not exist; create it first")
    if not parent.is_dir():
        raise IsthmusError(f"{what} {path}: {parent} is not a folder")
    if path.exists() and not os.access(path, os.W_OK):
        raise IsthmusError(f"{what} {path}: the file exists and may not be written")
    if not path.exists() and not _writable_dir(parent):
        raise IsthmusError(f"{what} {path}: the folder {parent} may not be written")
    return path


def check_writable_dir(path: Path, what: str, create: bool = False) -> Path:
    """A folder files will be written into: it exists (or, with create, can be made:
    the nearest existing folder above it may be written) and may be written."""
    if path.exists():
        if not path.is_dir():
            raise IsthmusError(f"{what} {path}: is not a folder")
        if not _writable_dir(path):
            raise IsthmusError(f"{what} {path}: the folder may not be written")
        return path
    if not create:
        raise IsthmusError(f"{what} {path}: the folder does not exist")
    above = path.parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        raise IsthmusError(f"{what} {path}: {above} is not a folder")
    if not _writable_dir(above):
        raise IsthmusError(f"{what} {path}: cannot create it, {above} may not be written")
    return path


def _option_name(param: click.Parameter | None) -> str:
    if param is None:
        return "output"
    opts = getattr(param, "opts", None) or [param.name or "output"]
    return max(opts, key=len)


class OutputFile(click.ParamType):
    """A file the command writes: its folder must exist and may be written."""

    name = "file"

    def convert(self, value, param, ctx):
        if isinstance(value, Path):
            path = value
        else:
            path = Path(os.path.expanduser(str(value)))
        return check_output_file(path, _option_name(param))


class OutputDir(click.ParamType):
    """A folder the command writes into, made (with its parents) if it is missing."""

    name = "folder"

    def convert(self, value, param, ctx):
        path = value if isinstance(value, Path) else Path(os.path.expanduser(str(value)))
        return check_writable_dir(path, _option_name(param), create=True)
