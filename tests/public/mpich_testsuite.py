#!/usr/bin/env python3
# tests/public/mpich_testsuite.py: the MPICH test suite (test/mpi of MPICH 4.0.2, a public
# suite isthmus was not written against) built with isthmus-cc and run across sites with
# `isthmus run`, next to the same tests built with each vendor's mpicc and run by the vendor
# alone. Owns: download + sha256 check, extraction, the one source patch, configure and build
# per target, reading the suite's testlist files, running, and the comparison table.
#
#   tests/public/mpich_testsuite.py run                       # everything in scope, 2 sites
#   tests/public/mpich_testsuite.py run --sites 3 --only coll/allred,pt2pt/anyall
#   tests/public/mpich_testsuite.py run --list tests/public/mpich_curated.txt
#   tests/public/mpich_testsuite.py list                      # what would run
#
# A test passes as the suite's own runtests says: the job exits 0 and prints a line
# " No Errors" (tests marked resultTest=TestStatus/TestErrFatal must exit non-zero instead).
# Results go to <work>/results/<target>.jsonl; the table compares isthmus-<vendor> with the
# vendor alone, and annotates every failure listed in mpich_known_failures.txt.
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table


sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite_common import (SuiteError, Target, compiler, default_workdir,  # noqa: E402
                          parse_targets, sha256_of, stop_group)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VERSION = "4.0.2"
URL = f"http://deb.debian.org/debian/pool/main/m/mpich/mpich_{VERSION}.orig.tar.xz"
SHA256 = "b27039f964afeb6b8a3e009c56b441cbe368c26d6d6476ad3bb7190996875860"
TARBALL = f"mpich_{VERSION}.orig.tar.xz"
SUITE = Path(f"mpich-{VERSION}") / "test" / "mpi"

# In scope: everything but one-sided (rma), dynamic processes (spawn), the tools interface
# (mpi_t), MPI-4 partitioned communication (part), threads and C++; the Fortran directories
# (mpif.h, use mpi, use mpi_f08) leave out the same parts. I/O (io) is built in a tree of
# its own configured with MPI-IO (the others keep --disable-romio, as they were measured).
FORTRAN = ["f77", "f90", "f08"]
CATEGORIES = ["attr", "basic", "coll", "comm", "datatype", "errhan", "group", "info", "init",
              "pt2pt", "topo", "io", "rma", *FORTRAN]
CONFIGURE_ARGS = ["--disable-fortran", "--disable-cxx", "--disable-rma", "--disable-spawn",
                  "--disable-romio", "--disable-part", "--disable-ft-tests", "--disable-perftest",
                  "--enable-threads=single", "--disable-checkpointing"]
# basic/ has programs but no testlist (MPICH comments it out) and they print no " No Errors":
# they pass when they exit 0.
BASIC_TESTS = [("simple", 2), ("self", 1), ("sendrecv", 2), ("srtest", 2), ("wtime", 1)]
# Source patches, applied (once) to every build:
# - dtpools: MPI-1 calls removed in MPI-3.0, used by the suite's own datatype generator;
#   replaced by their MPI-2 forms (same arguments), so the dtpools tests can build at all.
# - configure: the f08 directory is built only inside an MPICH build tree (FROM_MPICH;
#   its FIXME says a test build of an mpi_f08 program should decide instead); enabled for
#   every Fortran build, whose mpifort (or isthmus-fc) has the module.
PATCHES = [("dtpools/src/dtpools_custom.c",
            [("MPI_Type_hvector(", "MPI_Type_create_hvector("),
             ("MPI_Type_hindexed(", "MPI_Type_create_hindexed(")]),
           ("configure",
            [('if test "$enable_f08" = "yes" -a "$FROM_MPICH" = "yes" ; then',
              'if test "$enable_f08" = "yes" ; then')])]
DEFAULT_TIMEOUT = 120

console = Console(stderr=True, highlight=False)


# ---- fetch, verify, extract, patch -------------------------------------------------------

def fetch(work: Path, timeout: float = 60) -> Path:
    """The verified tarball in `work`, downloaded if missing. Raises urllib.error.URLError
    (or OSError) when the network is unreachable, SuiteError on a checksum mismatch."""
    work.mkdir(parents=True, exist_ok=True)
    dest = work / TARBALL
    if dest.exists() and sha256_of(dest) == SHA256:
        return dest
    part = dest.with_suffix(".part")
    console.print(f"[bold]mpich-testsuite[/]: downloading {URL}")
    with urllib.request.urlopen(URL, timeout=timeout) as r, open(part, "wb") as f:
        total = int(r.headers.get("Content-Length") or 0) or None
        with _progress() as p:
            task = p.add_task("download", total=total)
            while block := r.read(1 << 16):
                f.write(block)
                p.advance(task, len(block))
    got = sha256_of(part)
    if got != SHA256:
        part.unlink()
        raise SuiteError(f"{URL}: sha256 {got}, expected {SHA256}; refusing to use it")
    part.rename(dest)
    return dest


def extract(work: Path, tarball: Path) -> Path:
    """Extract test/mpi only once, and patch it; returns the suite's source directory."""
    src = work / SUITE
    stamp = work / ".extracted"
    if stamp.exists() and src.is_dir():
        patch(src)
        return src
    console.print(f"[bold]mpich-testsuite[/]: extracting {SUITE}")
    prefix = str(SUITE) + "/"
    with tarfile.open(tarball) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
        # the "tar" filter (no absolute paths, no links out of the tree) where Python has it
        extra = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
        for m in members:
            if m.name.startswith("/") or ".." in Path(m.name).parts:
                raise SuiteError(f"{tarball}: unsafe member {m.name!r}")
        tar.extractall(work, members=members, **extra)
    patch(src)
    stamp.touch()
    return src


def patch(src: Path) -> None:
    """Apply PATCHES where not applied yet (a tree extracted before a patch was added
    gets it too)."""
    for rel, subs in PATCHES:
        f = src / rel
        text = f.read_text()
        new_text = text
        for old, new in subs:
            if old in new_text:
                new_text = new_text.replace(old, new)
            elif new not in new_text:
                raise SuiteError(f"patch: {old!r} not found in {f}")
        if new_text != text:
            mode = f.stat().st_mode
            f.write_text(new_text)
            f.chmod(mode)


# ---- targets: how to build and how to launch ----------------------------------------------

def tree(build: str, test: "Test") -> str:
    """The build tree a test is built in: the Fortran directories get one configured with
    Fortran (and their own compiler), io and rma one each with MPI-IO or one-sided
    communication enabled, so the C trees stay as they were."""
    top = test.dir.split("/")[0]
    if top in FORTRAN:
        return f"{build}-fortran"
    return f"{build}-{top}" if top in ("io", "rma") else build


def configure(work: Path, src: Path, name: str) -> Path:
    """Configure the build tree `name` (a build, or <build>-fortran) once."""
    build = name.removesuffix("-fortran").removesuffix("-io").removesuffix("-rma")
    fortran = name.endswith("-fortran")
    bdir = work / f"build-{name}"
    if (bdir / "config.status").exists():
        return bdir
    bdir.mkdir(parents=True, exist_ok=True)
    cc = compiler(build)
    args = [f"CC={cc}", f"MPICC={cc}", *CONFIGURE_ARGS]
    if name.endswith("-io"):
        args.remove("--disable-romio")  # the io directory and its MPI-IO configuration
    if name.endswith("-rma"):
        args.remove("--disable-rma")  # the one-sided directory
    if fortran:
        fc = compiler(build, fortran=True)
        # the f77 tests pass buffers of several types to one routine, which gfortran 10
        # and later refuse without this (MPICH's own mpifort adds it)
        flags = "-fallow-argument-mismatch"
        args = [a for a in args if a != "--disable-fortran"] + [
            "--enable-fortran=all", f"F77={fc}", f"FC={fc}", f"MPIF77={fc}", f"MPIFC={fc}",
            f"FFLAGS={flags}", f"FCFLAGS={flags}"]
    console.print(f"[bold]mpich-testsuite[/]: configuring {name} (CC={cc}, ~30 s)")
    log = bdir / "configure.log"
    with open(log, "w") as out:
        r = subprocess.run([str(src / "configure"), *args], cwd=bdir, stdout=out,
                           stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise SuiteError(f"configure of {name} failed; see {log}")
    return bdir


def build_programs(bdir: Path, tests: list["Test"], label: str) -> None:
    """`make` the programs `tests` need (make -k: a program that does not build is reported
    as a build failure of its tests, not an error of the run)."""
    for lib in ("util", "dtpools"):
        r = subprocess.run(["make", "-j2", "-C", lib], cwd=bdir, capture_output=True, text=True)
        if r.returncode != 0:
            raise SuiteError(f"building {lib} for {label} failed:\n{r.stdout[-2000:]}"
                             f"{r.stderr[-2000:]}")
    by_dir: dict[str, set[str]] = {}
    for t in tests:
        by_dir.setdefault(t.dir, set()).add(t.prog)
    with _progress() as p:
        task = p.add_task(f"build {label}", total=len(by_dir))
        for d, progs in sorted(by_dir.items()):
            missing = sorted(x for x in progs if not (bdir / d / x).exists())
            if missing:
                with open(bdir / d / "make.log", "a") as log:
                    subprocess.run(["make", "-k", "-j2", *missing], cwd=bdir / d, stdout=log,
                                   stderr=subprocess.STDOUT)
            p.advance(task)


def prepare(work: Path, builds: set[str], tests: list["Test"]) -> dict[str, Path]:
    """The build trees the tests need for each build, configured and with their programs
    built; keyed by tree()."""
    src = extract(work, fetch(work))
    dirs = {}
    for b in sorted(builds):
        for name in sorted({tree(b, t) for t in tests}):
            mine = [t for t in tests if tree(b, t) == name]
            dirs[name] = configure(work, src, name)
            build_programs(dirs[name], mine, name)
    return dirs


# ---- the test list ------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Test:
    dir: str               # relative to test/mpi, e.g. "coll" or "impls/mpich"
    prog: str
    np: int
    args: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    time_limit: int | None = None
    result: str = ""       # TestStatus, TestErrFatal: expects a non-zero exit; exit0: exit 0

    @property
    def id(self) -> str:
        s = f"{self.dir}/{self.prog} {self.np}"
        if self.args:
            s += " " + " ".join(self.args)
        if self.env:
            s += " " + " ".join(f"env:{e}" for e in self.env)
        return s


def parse_testlist(src: Path, rel: str, out: list[Test]) -> None:
    """Read <rel>/testlist (or testlist.in, with its @...@ lines dropped as configure would
    for disabled parts), recursing into subdirectory entries."""
    d = src / rel
    path = d / "testlist" if (d / "testlist").exists() else d / "testlist.in"
    if not path.exists():
        return
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "@" in line.split()[0]:
            continue
        words = line.split()
        if len(words) == 1 and (d / words[0]).is_dir():
            parse_testlist(src, f"{rel}/{words[0]}", out)
            continue
        if len(words) < 2 or not words[1].isdigit():
            continue
        args, env, limit, result, skip = [], [], None, "", False
        for w in words[2:]:
            key, _, val = w.partition("=")
            if key == "arg":
                args.append(val)
            elif key == "env":
                env.append(val)
            elif key == "timeLimit":
                limit = int(val)
            elif key == "resultTest":
                result = val
            elif key == "mem" and float(val) > 4:
                skip = True   # needs more memory than the suite's default allows
            elif key in ("xfail", "strict", "mem", "lock"):
                pass
            elif not _:      # a bare word, e.g. a path in sendself's line: not an argument
                pass
        if not skip:
            out.append(Test(rel, words[0], int(words[1]), tuple(args), tuple(env), limit, result))


def all_tests(src: Path, categories: list[str]) -> list[Test]:
    tests: list[Test] = []
    for cat in categories:
        if cat == "basic":
            tests += [Test("basic", p, n, result="exit0") for p, n in BASIC_TESTS]
        else:
            parse_testlist(src, cat, tests)
    return tests


def parse_list_file(path: Path) -> list[str]:
    """Test ids (or dir/prog prefixes), one a line; '#' starts a comment."""
    ids = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            ids.append(" ".join(line.split()))
    return ids


def select(tests: list[Test], only: list[str], max_np: int) -> list[Test]:
    def wanted(t: Test) -> bool:
        if not only:
            return True
        return any(t.id == o or f"{t.dir}/{t.prog}" == o or t.dir == o for o in only)

    return [t for t in tests if wanted(t) and t.np <= max_np]


def read_known(path: Path) -> dict[str, list[tuple[str, str, str]]]:
    """mpich_known_failures.txt: `<test id> | <targets or *> | <class> | <reason>`."""
    known: dict[str, list[tuple[str, str, str]]] = {}
    if not path.exists():
        return known
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|")]
        if len(parts) != 4:
            raise SuiteError(f"{path}: bad line (want 'id | targets | class | reason'): {line}")
        known.setdefault(" ".join(parts[0].split()), []).append((parts[1], parts[2], parts[3]))
    return known


def known_reason(known, test: Test, target: str) -> tuple[str, str] | None:
    """The (class, reason) of a listed failure: by test id, dir/prog, or a prefix ending
    in '*' (e.g. coll/p_*)."""
    keys = [test.id, f"{test.dir}/{test.prog}"]
    keys += [k for k in known if k.endswith("*") and f"{test.dir}/{test.prog}".startswith(k[:-1])]
    for key in keys:
        for targets, cls, reason in known.get(key, []):
            if targets == "*" or target in [x.strip() for x in targets.split(",")]:
                return cls, reason
    return None


# ---- running ------------------------------------------------------------------------------

def split_ranks(np: int, sites: int) -> list[int]:
    sites = max(1, min(sites, np))
    return [np // sites + (1 if i < np % sites else 0) for i in range(sites)]


def command(target: Target, test: Test, exe: Path, sites: int, timeout: int) -> tuple[list, dict]:
    env = dict(os.environ)
    for e in test.env:
        k, _, v = e.partition("=")
        env[k] = v
    if target.via_isthmus:
        per_site = split_ranks(test.np, sites)
        # this checkout's CLI first: another isthmus on PATH may be another build's
        own = REPO / ".venv" / "bin" / "isthmus"
        isthmus = str(own) if own.exists() else shutil.which("isthmus") or str(own)
        cmd = [isthmus, "run", "-n", str(test.np), "--sites", str(len(per_site)),
               "--ranks-per-site", ",".join(map(str, per_site)), "--mpi", target.vendor,
               "--timeout", str(timeout), "--", str(exe), *test.args]
        return cmd, env
    if target.vendor == "openmpi":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_mpi_yield_when_idle="1")
        return ["mpirun.openmpi", "--oversubscribe", "-np", str(test.np), str(exe),
                *test.args], env
    return ["mpiexec.mpich", "-n", str(test.np), str(exe), *test.args], env


NO_ERRORS = re.compile(r"^\s*No [Ee]rrors\s*$", re.M)


def run_one(target: Target, test: Test, bdir: Path, sites: int, default_timeout: int,
            cap: int = 0) -> dict:
    exe = bdir / test.dir / test.prog
    res = {"id": test.id, "target": target.name, "sites": sites if target.via_isthmus else 0}
    if not exe.exists():
        return dict(res, status="build", secs=0.0, detail="did not build (see make.log)")
    timeout = max(test.time_limit or 0, default_timeout)
    if cap:
        timeout = min(timeout, cap)
    cmd, env = command(target, test, exe, sites, timeout)
    t0 = time.monotonic()
    # own session, so that a test that hangs is stopped with every process it started
    proc = subprocess.Popen(cmd, cwd=exe.parent, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        raw, _ = proc.communicate(timeout=timeout + 30)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        raw, rc = stop_group(proc), 124
    out = raw.decode(errors="replace")
    secs = round(time.monotonic() - t0, 1)
    if rc == 124 and secs >= timeout - 1:
        status = "timeout"
    elif test.result == "exit0":
        status = "pass" if rc == 0 else "fail"
    elif test.result:   # the test must make the job fail
        status = "pass" if rc != 0 else "fail"
    else:
        status = "pass" if rc == 0 and NO_ERRORS.search(out) else "fail"
    detail = "" if status == "pass" else f"exit {rc}: " + " | ".join(out.strip().splitlines()[-6:])
    return dict(res, status=status, secs=secs, rc=rc, detail=detail[:1500],
                output=out[-6000:] if status != "pass" else "")


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=True)


def run_all(targets: list[Target], tests: list[Test], dirs: dict[str, Path], sites: int,
            timeout: int, results_dir: Path, known, cap: int = 0) -> dict[str, dict[str, dict]]:
    results_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, dict]] = {}
    total = len(targets) * len(tests)
    with _progress() as p:
        task = p.add_task("tests", total=total)
        for target in targets:
            tag = f"{target.name}-{sites}sites" if target.via_isthmus else target.name
            results[target.name] = {}
            with open(results_dir / f"{tag}.jsonl", "a") as log:
                for test in tests:
                    p.update(task, description=f"{target.name}: {test.id}")
                    r = run_one(target, test, dirs[tree(target.build, test)], sites, timeout,
                                cap)
                    log.write(json.dumps(r) + "\n")
                    log.flush()
                    results[target.name][test.id] = r
                    if r["status"] != "pass":
                        kr = known_reason(known, test, target.name)
                        note = f"[dim](known: {kr[0]}: {kr[1]})[/]" if kr else "[red]NEW[/]"
                        p.console.print(f"{r['status'].upper():7} {target.name:15} {test.id} "
                                        f"{r['secs']}s {note}")
                    p.advance(task)
    return results


def report(targets: list[Target], tests: list[Test], results, known) -> int:
    """Print the per-category table and the differences; return the number of failures that
    mpich_known_failures.txt does not explain."""
    table = Table(title="MPICH test suite: passed / run")
    table.add_column("category")
    for t in targets:
        table.add_column(t.name, justify="right")
    cats = sorted({t.dir.split("/")[0] for t in tests})
    sums = {t.name: [0, 0] for t in targets}
    for cat in cats:
        row = [cat]
        for t in targets:
            rs = [results[t.name][x.id] for x in tests if x.dir.split("/")[0] == cat]
            ok = sum(r["status"] == "pass" for r in rs)
            sums[t.name][0] += ok
            sums[t.name][1] += len(rs)
            row.append(f"{ok}/{len(rs)}")
        table.add_row(*row)
    table.add_row("[bold]total[/]", *[f"[bold]{a}/{b}[/]" for a, b in sums.values()])
    Console(highlight=False).print(table)
    unexplained = 0
    for t in targets:
        if not t.via_isthmus:
            continue
        base = results.get(t.vendor)
        for x in tests:
            r = results[t.name][x.id]
            if r["status"] == "pass":
                continue
            kr = known_reason(known, x, t.name)
            vendor_ok = base is not None and base[x.id]["status"] == "pass"
            if kr is None:
                unexplained += 1
            flag = ("passes under the vendor alone" if vendor_ok else
                    "fails under the vendor alone too" if base else "")
            print(f"{t.name}: {x.id}: {r['status']}"
                  f"{' (' + flag + ')' if flag else ''}"
                  f"{' -- known, ' + kr[0] + ': ' + kr[1] if kr else ' -- NOT in the known list'}")
        if base is not None:
            better = [x.id for x in tests if results[t.name][x.id]["status"] == "pass"
                      and base[x.id]["status"] != "pass"]
            if better:
                print(f"{t.name}: pass under isthmus, fail under {t.vendor} alone: "
                      + ", ".join(better))
    return unexplained


# ---- CLI ----------------------------------------------------------------------------------

@click.group()
def cli() -> None:
    """The MPICH test suite under isthmus and under the vendor MPIs alone."""


def _common(f):
    f = click.option("--work", type=click.Path(path_type=Path), default=default_workdir,
                     show_default="build/public-tests", help="Download, build and result dir.")(f)
    f = click.option("--only", default="", help="Comma-separated test ids, dir/prog or dirs.")(f)
    f = click.option("--list", "list_file", type=click.Path(exists=True, path_type=Path),
                     help="File of test ids (one a line) to run.")(f)
    f = click.option("--categories", default=",".join(CATEGORIES), show_default=True)(f)
    f = click.option("--max-np", type=int, default=12, show_default=True,
                     help="Skip tests that need more ranks.")(f)
    return f


def _tests(work: Path, only: str, list_file: Path | None, categories: str, max_np: int):
    src = extract(work, fetch(work))
    tests = all_tests(src, [c for c in categories.split(",") if c])
    wanted = [o.strip() for o in only.split(",") if o.strip()]
    if list_file:
        wanted += parse_list_file(list_file)
    chosen = select(tests, wanted, max_np)
    if wanted:
        ids = {t.id for t in chosen} | {f"{t.dir}/{t.prog}" for t in chosen} | \
              {t.dir for t in chosen}
        unknown = [w for w in wanted if w not in ids]
        if unknown:
            raise SuiteError(f"no such test (or over --max-np): {', '.join(unknown)}")
    return chosen


@cli.command("list")
@_common
def list_cmd(work, only, list_file, categories, max_np) -> None:
    """Print the ids of the tests that would run."""
    for t in _tests(work, only, list_file, categories, max_np):
        print(t.id)


@cli.command()
@_common
@click.option("--targets", default="isthmus-openmpi,openmpi,isthmus-mpich,mpich",
              show_default=True, help="Which builds and launchers to run.")
@click.option("--sites", type=int, default=2, show_default=True,
              help="Sites for the isthmus targets (a test with fewer ranks uses fewer sites).")
@click.option("--timeout", type=int, default=DEFAULT_TIMEOUT, show_default=True,
              help="Seconds per test (or the test's own timeLimit if larger).")
@click.option("--cap", type=int, default=0,
              help="At most this many seconds per test, even if its timeLimit is larger.")
@click.option("--known", type=click.Path(path_type=Path),
              default=HERE / "mpich_known_failures.txt", show_default=True)
def run(work, only, list_file, categories, max_np, targets, sites, timeout, cap, known) -> None:
    """Build what is needed and run the selected tests on each target; print the table."""
    tgts = parse_targets(targets)
    tests = _tests(work, only, list_file, categories, max_np)
    known_map = read_known(known)
    dirs = prepare(work, {t.build for t in tgts}, tests)
    results = run_all(tgts, tests, dirs, sites, timeout, work / "results", known_map, cap)
    unexplained = report(tgts, tests, results, known_map)
    sys.exit(1 if unexplained else 0)


def load_results(results_dir: Path, sites: int) -> dict[str, dict[str, dict]]:
    """The last result of each test per target from <work>/results/*.jsonl."""
    out: dict[str, dict[str, dict]] = {}
    for f in sorted(results_dir.glob("*.jsonl")):
        tag = f.stem
        if tag.startswith("isthmus-") and not tag.endswith(f"-{sites}sites"):
            continue
        name = tag.rsplit("-", 1)[0] if tag.startswith("isthmus-") else tag
        for line in f.read_text().splitlines():
            r = json.loads(line)
            out.setdefault(name, {})[r["id"]] = r
    return out


@cli.command("report")
@_common
@click.option("--targets", default="isthmus-openmpi,openmpi,isthmus-mpich,mpich",
              show_default=True)
@click.option("--sites", type=int, default=2, show_default=True)
@click.option("--known", type=click.Path(path_type=Path),
              default=HERE / "mpich_known_failures.txt", show_default=True)
@click.option("--markdown", is_flag=True, help="Print the table as Markdown (for the docs).")
def report_cmd(work, only, list_file, categories, max_np, targets, sites, known,
               markdown) -> None:
    """The table and the comparison from the results of earlier runs (tests run on every
    listed target only)."""
    tgts = parse_targets(targets)
    res = load_results(work / "results", sites)
    missing = [t.name for t in tgts if t.name not in res]
    if missing:
        raise SuiteError(f"no results for {', '.join(missing)} in {work / 'results'}")
    tests = [t for t in _tests(work, only, list_file, categories, max_np)
             if all(t.id in res[x.name] for x in tgts)]
    known_map = read_known(known)
    if markdown:
        print("| category | " + " | ".join(t.name for t in tgts) + " |")
        print("|---|" + "---:|" * len(tgts))
        sums = {t.name: [0, 0] for t in tgts}
        for cat in sorted({t.dir.split("/")[0] for t in tests}):
            cells = []
            for t in tgts:
                rs = [res[t.name][x.id] for x in tests if x.dir.split("/")[0] == cat]
                ok = sum(r["status"] == "pass" for r in rs)
                sums[t.name][0] += ok
                sums[t.name][1] += len(rs)
                cells.append(f"{ok}/{len(rs)}")
            print(f"| {cat} | " + " | ".join(cells) + " |")
        print("| **total** | " + " | ".join(f"**{a}/{b}**" for a, b in sums.values()) + " |")
        return
    sys.exit(1 if report(tgts, tests, res, known_map) else 0)


def main() -> None:
    try:
        cli()
    except (SuiteError, urllib.error.URLError, OSError) as e:
        console.print(f"[red]mpich-testsuite: {e}[/]")
        sys.exit(1)


if __name__ == "__main__":
    main()
