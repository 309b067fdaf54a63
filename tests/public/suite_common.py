# tests/public/suite_common.py: what the public-suite runners share (mpich_testsuite.py,
# mpi4py_testsuite.py): where they work and find isthmus, their error, the sha256 of a
# download, the compiler of each build, the targets (isthmus-<vendor> or a vendor alone),
# and stopping a launcher's whole process group.
from __future__ import annotations

import dataclasses
import hashlib
import os
import signal
import subprocess
from pathlib import Path

import click

REPO = Path(__file__).resolve().parents[2]
VENDORS = ("openmpi", "mpich")


class SuiteError(Exception):
    pass


def default_workdir() -> Path:
    return Path(os.environ.get("ISTHMUS_PUBLIC_TESTS_DIR", REPO / "build" / "public-tests"))


def isthmus_prefix() -> Path:
    return Path(os.environ.get("ISTHMUS_PREFIX", REPO / "_install"))


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def compiler(build: str, fortran: bool = False) -> str:
    """isthmus-cc (isthmus-fc) for the isthmus build, mpicc.<vendor> (mpifort.<vendor>) for
    a vendor's."""
    if build == "isthmus":
        cc = isthmus_prefix() / "bin" / ("isthmus-fc" if fortran else "isthmus-cc")
        if not cc.exists():
            raise SuiteError(f"{cc} is missing: run scripts/bootstrap.sh (with gfortran "
                             "installed, for isthmus-fc)")
        return str(cc)
    return f"mpifort.{build}" if fortran else f"mpicc.{build}"


@dataclasses.dataclass(frozen=True)
class Target:
    name: str       # isthmus-openmpi, isthmus-mpich, openmpi, mpich
    build: str      # build tree: isthmus, openmpi, mpich
    vendor: str

    @property
    def via_isthmus(self) -> bool:
        return self.build == "isthmus"


def parse_targets(spec: str) -> list[Target]:
    out = []
    for name in (x.strip() for x in spec.split(",") if x.strip()):
        if name in VENDORS:
            out.append(Target(name, name, name))
        elif name.startswith("isthmus-") and name[8:] in VENDORS:
            out.append(Target(name, "isthmus", name[8:]))
        else:
            raise click.BadParameter(f"unknown target {name!r} (isthmus-openmpi, isthmus-mpich, "
                                     "openmpi, mpich)")
    return out


def stop_group(proc: subprocess.Popen) -> bytes:
    """SIGTERM, then SIGKILL after 5 s, to the process group of a launcher that timed out."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            return proc.communicate(timeout=5)[0] or b""
        except subprocess.TimeoutExpired:
            continue
    return b""
