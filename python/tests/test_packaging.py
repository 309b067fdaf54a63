# tests/test_packaging.py: the modulefile that `cmake --install` writes, loaded with Lmod
# (Debian lmod, installed by scripts/bootstrap.sh) from an install tree: the environment it
# sets, isthmus-cc and pkg-config found through it, and a clean unload; and the Spack
# recipe (packaging/spack/package.py) read against stand-ins for Spack's directives (no
# Spack here): its variants, dependencies and the CMake arguments each variant gives.
from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build"
LMOD_INIT = Path("/usr/share/lmod/lmod/init/bash")


def _need(condition: bool, why: str) -> None:
    if not condition:
        if os.environ.get("ISTHMUS_REQUIRE_NATIVE"):
            pytest.fail(why)
        pytest.skip(why)


@pytest.mark.native
def test_modulefile_with_lmod(tmp_path):
    _need((BUILD / "CMakeCache.txt").exists(), f"no build tree at {BUILD}")
    _need(LMOD_INIT.exists(), "Lmod is missing (apt install lmod; scripts/bootstrap.sh does)")
    prefix = tmp_path / "isthmus"
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)], check=True,
                   capture_output=True)
    # the prefix is written into the modulefile at configure time: rewrite it for this tree
    modfile = prefix / "share" / "isthmus" / "modulefiles" / "isthmus" / "0.1.0"
    text = modfile.read_text()
    assert "set prefix " in text
    modfile.write_text("\n".join(f"set prefix {prefix}" if line.startswith("set prefix ") else line
                                 for line in text.splitlines()) + "\n")
    (tmp_path / "p.c").write_text("#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); "
                                  "MPI_Finalize(); return 0; }\n")
    script = f"""
        source {LMOD_INIT}
        module use {prefix}/share/isthmus/modulefiles
        module load isthmus || exit 3
        echo "prefix=$ISTHMUS_PREFIX"
        echo "cc=$(command -v isthmus-cc)"
        echo "pc=$(pkg-config --cflags isthmus)"
        isthmus-cc -o {tmp_path}/p {tmp_path}/p.c || exit 4
        module unload isthmus
        echo "after=$ISTHMUS_PREFIX|$(command -v isthmus-cc)"
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ISTHMUS_", "LMOD", "MODULE"))}
    env["PATH"] = "/usr/bin:/bin"
    r = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    assert lines["prefix"] == str(prefix)
    assert lines["cc"] == f"{prefix}/bin/isthmus-cc"
    assert f"-I{prefix}/lib/pkgconfig/../../include" in lines["pc"]
    assert (tmp_path / "p").is_file()
    assert lines["after"] == "|"


class _Recorder:
    """Stand-ins for the names `from spack.package import *` brings."""

    def __init__(self):
        self.variants, self.depends, self.conflicts, self.versions = {}, [], [], {}

    def module(self) -> types.ModuleType:
        m = types.ModuleType("spack.package")

        class CMakePackage:
            def define(self, name, value):
                return f"-D{name}={value}"

        m.CMakePackage = CMakePackage
        m.version = lambda v, **kw: self.versions.__setitem__(v, kw)
        m.variant = lambda name, **kw: self.variants.__setitem__(name, kw)
        m.depends_on = lambda spec, **kw: self.depends.append((spec, kw.get("when"), kw.get("type")))
        m.conflicts = lambda spec, **kw: self.conflicts.append(spec)
        m.run_after = lambda phase: (lambda f: f)
        m.__all__ = ["CMakePackage", "version", "variant", "depends_on", "conflicts", "run_after"]
        return m


class _Spec:
    def __init__(self, on):
        self.on = set(on)

    def satisfies(self, s):
        return s.lstrip("+") in self.on


def test_spack_recipe_variants_and_cmake_args(monkeypatch):
    rec = _Recorder()
    spack = types.ModuleType("spack")
    monkeypatch.setitem(sys.modules, "spack", spack)
    monkeypatch.setitem(sys.modules, "spack.package", rec.module())
    ns: dict = {}
    exec(compile((REPO / "packaging" / "spack" / "package.py").read_text(), "package.py", "exec"), ns)
    cls = ns["Isthmus"]
    assert set(rec.variants) == {"openmpi", "mpich", "transport"}
    assert rec.variants["transport"]["values"] == ("tcp", "udp")
    assert ("openmpi", "+openmpi", None) in rec.depends and ("mpich", "+mpich", None) in rec.depends
    assert "~openmpi~mpich" in rec.conflicts
    pkg = cls()
    for on, want in ((["openmpi"], "openmpi"), (["mpich"], "mpich"), (["openmpi", "mpich"], "openmpi;mpich")):
        pkg.spec = _Spec(on)
        assert pkg.cmake_args() == [f"-DISM_WITH_VENDORS={want}"]
    # the names the recipe hands to CMake are the ones native/CMakeLists.txt reads
    assert "ISM_WITH_VENDORS" in (REPO / "native" / "CMakeLists.txt").read_text()
    assert "ISTHMUS_WAN_TRANSPORT" in (REPO / "python" / "isthmus" / "commands" / "run.py").read_text()
