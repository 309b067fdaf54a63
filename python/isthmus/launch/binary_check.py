# isthmus/launch/binary_check.py: checks the program before anything is launched: it exists,
# is executable, and (for an ELF) reaches libisthmus.so (or libisthmus_fortran.so, which links
# it) and no vendor libmpi or vendor Fortran binding, itself or through the libraries it needs
# (followed as the dynamic loader would find them), or is an interpreter: a program that loads
# libraries at run time (python3 importing mpi4py built with isthmus-cc), which the check
# cannot follow. #! scripts pass unchecked.
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from ..errors import IsthmusError

_VENDOR_MPI_RE = re.compile(r"^lib(mpi|mpich)\.so(\.|$)")
# the vendors' Fortran bindings: MPICH's libmpichfort, Open MPI's libmpi_mpifh/_usempi*
_VENDOR_FORTRAN_RE = re.compile(r"^lib(mpichfort|mpi_mpifh|mpi_usempi\w*)\.so(\.|$)")
_ISTHMUS_RE = re.compile(r"^libisthmus(_fortran)?\.so(\.|$)")


_DLOPEN = {"dlopen", "dlmopen"}
# the C runtime itself, whose own dlopen (NSS, iconv) says nothing about the program
_RUNTIME_RE = re.compile(r"^(libc|libdl|libm|libpthread|ld-linux.*|libgcc_s|libstdc\+\+)\.so")
_DEFAULT_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib")


@dataclass(frozen=True)
class CheckedProgram:
    path: Path  # the file that will run
    kind: str  # "elf", "interpreter" or "script"
    needed: tuple[str, ...] = ()  # every library it needs, directly or not, by name


@dataclass(frozen=True)
class _Elf:
    needed: tuple[str, ...]
    search: tuple[str, ...]  # DT_RPATH/DT_RUNPATH entries, $ORIGIN expanded


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


def _read_elf(path: Path) -> _Elf | None:
    """The dynamic section's needs and search path (the symbol table is not read: that
    is the slow part, and only the interpreter case needs it, see _imports_dlopen)."""
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            needed, search = [], []
            origin = str(Path(path).resolve().parent)
            for section in elf.iter_sections():
                if isinstance(section, DynamicSection):
                    for tag in section.iter_tags():
                        if tag.entry.d_tag == "DT_NEEDED":
                            needed.append(tag.needed)
                        elif tag.entry.d_tag in ("DT_RPATH", "DT_RUNPATH"):
                            value = tag.rpath if tag.entry.d_tag == "DT_RPATH" else tag.runpath
                            for d in value.split(":"):
                                search.append(d.replace("$ORIGIN", origin)
                                              .replace("${ORIGIN}", origin))
            return _Elf(tuple(needed), tuple(search))
    except (ELFError, Exception):  # pyelftools raises assorted errors on malformed files
        return None


@lru_cache(maxsize=64)
def _imports_dlopen(path: Path) -> bool:
    """Whether the ELF file imports dlopen/dlmopen (an undefined dynamic symbol). Reading
    every symbol with pyelftools takes about 0.3 s for libc, so it is asked only when the
    program does not reach libisthmus (is it an interpreter?), never on the common path."""
    try:
        with open(path, "rb") as f:
            dynsym = ELFFile(f).get_section_by_name(".dynsym")
            return dynsym is not None and any(
                sym.name.split("@")[0] in _DLOPEN and sym["st_shndx"] == "SHN_UNDEF"
                for sym in dynsym.iter_symbols())
    except (ELFError, Exception):  # pyelftools raises assorted errors on malformed files
        return False


@lru_cache(maxsize=1)
def _ld_cache() -> dict[str, str]:
    """name -> path from the dynamic loader's cache (ldconfig -p)."""
    out: dict[str, str] = {}
    try:
        text = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True,
                              timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return out
    for line in text.splitlines()[1:]:
        m = re.match(r"\s*(\S+) \((.*?)\) => (\S+)", line)
        if m:  # the first entry of a name is the loader's choice
            out.setdefault(m.group(1), m.group(3))
    return out


def _find_library(name: str, search: tuple[str, ...], env: dict[str, str]) -> Path | None:
    if "/" in name:
        return Path(name) if Path(name).exists() else None
    dirs = [*env.get("LD_LIBRARY_PATH", "").split(":"), *search]
    for d in dirs:
        if d and (Path(d) / name).exists():
            return Path(d) / name
    cached = _ld_cache().get(name)
    if cached:
        return Path(cached)
    for d in _DEFAULT_DIRS:
        if (Path(d) / name).exists():
            return Path(d) / name
    return None


def _closure(path: Path, top: _Elf, env: dict[str, str]) -> list[tuple[str, str, Path | None]]:
    """(library, the library that needs it or "" for the program, where it was found) for
    every library the program needs, breadth first; libraries that cannot be found are
    listed with no further needs (the loader would fail on them later, with its own
    message)."""
    out: list[tuple[str, str, Path | None]] = []
    seen: set[str] = set()
    queue = [(n, "", top.search) for n in top.needed]
    while queue:
        name, via, search = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        found = _find_library(name, search, env)
        info = _read_elf(found) if found else None
        out.append((name, via, found if info else None))
        if info:
            queue += [(n, name if not via else via, info.search) for n in info.needed]
    return out


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
    top = _read_elf(path)
    if top is None:
        raise IsthmusError(f"{program}: is not a valid ELF file")
    libs = _closure(path, top, dict(os.environ))
    names = tuple(n for n, _, _ in libs)
    base = path.name
    fortran = [n for n in names if _VENDOR_FORTRAN_RE.match(n)]
    if fortran:
        raise IsthmusError(
            f"{program} was built with the vendor's mpifort (it links {fortran[0]}), not with "
            f"isthmus-fc. Rebuild it: isthmus-fc -o {base} {base}.f90"
        )
    vendor = [(n, via) for n, via, _ in libs if _VENDOR_MPI_RE.match(n)]
    if vendor:
        lib, via = vendor[0]
        through = f" through {via}" if via else ""
        raise IsthmusError(
            f"{program} was built with the vendor's mpicc (it links {lib}{through}), not with "
            f"isthmus-cc. Rebuild it: isthmus-cc -o {base} {base}.c"
        )
    if any(_ISTHMUS_RE.match(n) for n in names):
        return CheckedProgram(path, "elf", names)
    if _imports_dlopen(path) or any(_imports_dlopen(found) for n, via, found in libs
                                    if found and not via and not _RUNTIME_RE.match(n)):
        return CheckedProgram(path, "interpreter", names)
    raise IsthmusError(
        f"{program} does not link libisthmus.so; build it with isthmus-cc "
        f"(isthmus-cc -o {base} {base}.c) or, for Fortran, isthmus-fc"
    )
