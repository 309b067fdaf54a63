# isthmus/launch/binary_check.py: checks the program before anything is launched: it exists,
# is executable, and (for an ELF) was built with isthmus-cc or isthmus-fc, i.e. links
# libisthmus.so (or libisthmus_fortran.so, which links it) and not a vendor's libmpi
# directly. #! scripts pass unchecked.
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from ..errors import IsthmusError

_VENDOR_MPI_RE = re.compile(r"^lib(mpi|mpich)\.so(\.|$)")
# the vendors' Fortran bindings: MPICH's libmpichfort, Open MPI's libmpi_mpifh/_usempi*
_VENDOR_FORTRAN_RE = re.compile(r"^lib(mpichfort|mpi_mpifh|mpi_usempi\w*)\.so(\.|$)")
_ISTHMUS_RE = re.compile(r"^libisthmus(_fortran)?\.so(\.|$)")


@dataclass(frozen=True)
class CheckedProgram:
    path: Path  # the file that will run
    kind: str  # "elf" or "script"
    needed: tuple[str, ...] = ()


def resolve_program(program: str, path_env: str | None = None) -> Path:
    """Where `program` is, the way the launcher will look for it (a name without '/' is
    searched on PATH)."""
    if "/" in program:
        return Path(program)
    found = shutil.which(program, mode=os.F_OK, path=path_env)
    if found:
        return Path(found)
    hint = f" (did you mean ./{program}?)" if Path(program).exists() else ""
    raise IsthmusError(f"{program}: no such file (not found on PATH){hint}")


def dt_needed(path: Path) -> tuple[str, ...] | None:
    """DT_NEEDED entries of an ELF file, or None if it is not an ELF file."""
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            needed = []
            for section in elf.iter_sections():
                if isinstance(section, DynamicSection):
                    for tag in section.iter_tags():
                        if tag.entry.d_tag == "DT_NEEDED":
                            needed.append(tag.needed)
            return tuple(needed)
    except (ELFError, Exception):  # pyelftools raises assorted errors on malformed files
        return None


def check_program(program: str, path_env: str | None = None) -> CheckedProgram:
    """Raise IsthmusError with a fix-it message unless `program` can run under isthmus."""
    path = resolve_program(program, path_env)
    if not path.exists():
        raise IsthmusError(f"{program}: no such file")
    if path.is_dir():
        raise IsthmusError(f"{program}: is a directory, not a program")
    if not os.access(path, os.X_OK):
        raise IsthmusError(f"{program}: not executable (chmod +x {program}?)")
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise IsthmusError(f"{program}: cannot read it ({e.strerror})") from None
    if head[:2] == b"#!":
        return CheckedProgram(path, "script")
    if head != b"\x7fELF":
        raise IsthmusError(f"{program}: is neither an ELF executable nor a #! script")
    needed = dt_needed(path)
    if needed is None:
        raise IsthmusError(f"{program}: is not a valid ELF file")
    if any(_ISTHMUS_RE.match(n) for n in needed):
        return CheckedProgram(path, "elf", needed)
    base = path.name
    fortran = [n for n in needed if _VENDOR_FORTRAN_RE.match(n)]
    if fortran:
        raise IsthmusError(
            f"{program} was built with the vendor's mpifort (it links {fortran[0]}), not with "
            f"isthmus-fc. Rebuild it: isthmus-fc -o {base} {base}.f90"
        )
    vendor = [n for n in needed if _VENDOR_MPI_RE.match(n)]
    if vendor:
        raise IsthmusError(
            f"{program} was built with the vendor's mpicc (it links {vendor[0]}), not with "
            f"isthmus-cc. Rebuild it: isthmus-cc -o {base} {base}.c"
        )
    raise IsthmusError(
        f"{program} does not link libisthmus.so; build it with isthmus-cc "
        f"(isthmus-cc -o {base} {base}.c) or, for Fortran, isthmus-fc"
    )
