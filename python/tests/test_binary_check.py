# tests/test_binary_check.py: the pre-launch program check on real ELF files built with gcc
# (plain, linking a fake libisthmus.so, built with the vendor's mpicc) and on scripts.
import os
import shutil
import subprocess
import sys

import pytest

from isthmus.errors import IsthmusError
from isthmus.launch.binary_check import check_program, dt_needed

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")

MAIN_C = "int main(void) { return 0; }\n"
MPI_C = "#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n"


def error(program) -> str:
    with pytest.raises(IsthmusError) as exc:
        check_program(str(program))
    return str(exc.value)


@pytest.fixture
def built(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def build(cc, name, source, *extra):
        src = tmp_path / f"{name}.c"
        src.write_text(source)
        subprocess.run([cc, "-o", name, src.name, *extra], check=True, cwd=tmp_path)
        return f"./{name}"

    return build


@needs_gcc
def test_plain_elf_is_rejected(built):
    prog = built("gcc", "plain", MAIN_C)
    assert error(prog) == (f"{prog} does not link libisthmus.so; build it with isthmus-cc "
                           "(isthmus-cc -o plain plain.c) or, for Fortran, isthmus-fc")


@needs_gcc
def test_elf_linking_libisthmus_is_accepted(built, tmp_path):
    (tmp_path / "fake.c").write_text("int isthmus_fake(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", "libisthmus.so", "fake.c"], check=True, cwd=tmp_path)
    prog = built("gcc", "ring", "int isthmus_fake(void);\nint main(void) { return isthmus_fake() - 1; }\n",
                 "-L.", "-listhmus", "-Wl,--no-as-needed")
    assert "libisthmus.so" in dt_needed(tmp_path / "ring")
    checked = check_program(prog)
    assert checked.kind == "elf" and "libisthmus.so" in checked.needed


@needs_gcc
def test_elf_linking_only_the_fortran_bindings_is_accepted(built, tmp_path):
    """isthmus-fc links libisthmus_fortran.so, which links libisthmus.so: with --as-needed
    the program itself names only the first."""
    (tmp_path / "fake.c").write_text("int isthmus_fake(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", "libisthmus_fortran.so", "fake.c"],
                   check=True, cwd=tmp_path)
    prog = built("gcc", "ring", "int isthmus_fake(void);\nint main(void) { return isthmus_fake() - 1; }\n",
                 "-L.", "-listhmus_fortran")
    checked = check_program(prog)
    assert checked.kind == "elf" and "libisthmus_fortran.so" in checked.needed
    assert set(dt_needed(tmp_path / "ring")) <= set(checked.needed)


@pytest.mark.skipif(shutil.which("mpifort.mpich") is None, reason="mpifort.mpich not installed")
def test_vendor_mpifort_binary_gets_rebuild_message(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ring.f90").write_text("program ring\n  use mpi\n  integer :: ierr\n"
                                       "  call MPI_Init(ierr)\n  call MPI_Finalize(ierr)\nend program\n")
    subprocess.run(["mpifort.mpich", "-o", "ring", "ring.f90"], check=True, cwd=tmp_path)
    assert error("./ring") == (
        "./ring was built with the vendor's mpifort (it links libmpichfort.so.12), not with "
        "isthmus-fc. Rebuild it: isthmus-fc -o ring ring.f90")


@pytest.mark.skipif(shutil.which("mpicc.openmpi") is None, reason="mpicc.openmpi not installed")
def test_vendor_mpicc_binary_gets_rebuild_message(built):
    prog = built("mpicc.openmpi", "ring", MPI_C)
    assert error(prog) == (
        "./ring was built with the vendor's mpicc (it links libmpi.so.40), not with isthmus-cc. "
        "Rebuild it: isthmus-cc -o ring ring.c"
    )


@pytest.mark.skipif(shutil.which("mpicc.mpich") is None, reason="mpicc.mpich not installed")
def test_mpich_mpicc_binary_gets_rebuild_message(built):
    prog = built("mpicc.mpich", "ring", MPI_C)
    msg = error(prog)
    assert "was built with the vendor's mpicc (it links libmpi" in msg
    assert "Rebuild it: isthmus-cc -o ring ring.c" in msg


def test_missing_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert error("./ring") == "./ring: no such file"


def test_name_not_on_path_hints_dot_slash(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ring").write_text("#!/bin/sh\n")
    (tmp_path / "ring").chmod(0o755)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert error("ring") == "ring: no such file (not found on PATH) (did you mean ./ring?)"


def test_not_executable(tmp_path):
    p = tmp_path / "prog"
    p.write_text("#!/bin/sh\n")
    p.chmod(0o644)
    assert "not executable" in error(p)


def test_directory(tmp_path):
    assert "is a directory" in error(tmp_path)


def test_script_passes(script):
    checked = check_program(str(script("run.sh", "echo hi\n")))
    assert checked.kind == "script"


def test_random_file_rejected(tmp_path):
    p = tmp_path / "blob"
    p.write_bytes(b"\x00\x01junk")
    p.chmod(0o755)
    assert "neither an ELF executable nor a #! script" in error(p)


def test_truncated_elf_rejected(tmp_path):
    p = tmp_path / "bad"
    p.write_bytes(b"\x7fELF\x02\x01\x01")
    p.chmod(0o755)
    assert "not a valid ELF file" in error(p)


# Interpreters and programs that reach libisthmus through another library (issue 24): the
# check follows the libraries a program needs, and takes a program that loads libraries at
# run time (python3 importing mpi4py) as an interpreter.
def test_python_interpreter_is_accepted():
    checked = check_program(os.path.realpath(sys.executable))
    assert checked.kind == "interpreter"


@needs_gcc
def test_program_that_dlopens_is_an_interpreter(built):
    prog = built("gcc", "loader", "#include <dlfcn.h>\nint main(int c, char **v) "
                 "{ return dlopen(v[1], RTLD_NOW) == 0; }\n")
    assert check_program(prog).kind == "interpreter"


@needs_gcc
def test_libisthmus_through_another_library_is_accepted(built, tmp_path):
    (tmp_path / "fake.c").write_text("int isthmus_fake(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", "libisthmus.so", "fake.c"], check=True,
                   cwd=tmp_path)
    (tmp_path / "app.c").write_text("int isthmus_fake(void);\nint app(void) { return isthmus_fake(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", "libapp.so", "app.c", "-L.", "-listhmus",
                    "-Wl,--no-as-needed", "-Wl,-rpath,$ORIGIN"], check=True, cwd=tmp_path)
    prog = built("gcc", "main", "int app(void);\nint main(void) { return app() - 1; }\n",
                 "-L.", "-lapp", "-Wl,-rpath,$ORIGIN")
    assert "libisthmus.so" not in dt_needed(tmp_path / "main")
    checked = check_program(prog)
    assert checked.kind == "elf" and "libisthmus.so" in checked.needed


@pytest.mark.skipif(shutil.which("mpicc.openmpi") is None, reason="mpicc.openmpi not installed")
def test_vendor_mpi_through_another_library_is_refused(built, tmp_path):
    (tmp_path / "app.c").write_text(MPI_C.replace("int main(int c, char **v)",
                                                  "int app(int c, char **v)"))
    subprocess.run(["mpicc.openmpi", "-shared", "-fPIC", "-o", "libapp.so", "app.c"],
                   check=True, cwd=tmp_path)
    prog = built("gcc", "ring", "int app(int, char **);\nint main(int c, char **v) "
                 "{ return app(c, v); }\n", "-L.", "-lapp", "-Wl,-rpath,$ORIGIN")
    assert error(prog) == (
        "./ring was built with the vendor's mpicc (it links libmpi.so.40 through libapp.so), "
        "not with isthmus-cc. Rebuild it: isthmus-cc -o ring ring.c"
    )
