#!/usr/bin/env python3
# tests/public/mpi4py_testsuite.py: mpi4py (a real MPI client nobody here wrote), built from
# its PyPI sdist with MPICC=isthmus-cc, running its own test suite (test/ of the sdist)
# across sites with `isthmus run -- python3 ...`, next to the same suite built with each
# vendor's mpicc and run by the vendor alone. Owns: the sdist download (pip, sha256 pinned),
# the three builds (pip wheel with MPICC set; installed into their own directories), one
# job per test module and layout, the per-test comparison and the known-failure list.
#
#   tests/public/mpi4py_testsuite.py run                                  # 2+2, 4 targets
#   tests/public/mpi4py_testsuite.py run --layout 1,3 --targets isthmus-mpich,mpich
#   tests/public/mpi4py_testsuite.py run --layout 1,1,2 --only test_cco_buf,test_comm
#   tests/public/mpi4py_testsuite.py report --layout 2,2
#   tests/public/mpi4py_testsuite.py list
#   tests/public/mpi4py_testsuite.py fft --layout 1,2,2 --mpi mpich 32 24 20 pencil
#
# Each rank records every test's outcome (mpi4py_rank.py); a test passes on a target when it
# passed on every rank. A module whose job hangs or dies counts each of its tests as
# "timeout"/"crash" for that target. Results go to <work>/mpi4py/results/<target>-<layout>.jsonl.
from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table


sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite_common import (VENDORS, SuiteError, Target, compiler, default_workdir,  # noqa: E402
                          parse_targets, sha256_of, stop_group)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VERSION = "4.1.2"
SDIST = f"mpi4py-{VERSION}.tar.gz"
SHA256 = "56860286dc45f20e8821e93cb06669e30462348bf866f685553fa4b712d58d02"
# dynamic processes: isthmus has none (a job's sites and ranks are fixed at launch), and
# the vendor-alone runs leave them out too (they spawn under mpirun only)
EXCLUDED_MODULES = ("test_dynproc", "test_spawn")
DEFAULT_TIMEOUT = 300
KNOWN = HERE / "mpi4py_known_failures.txt"

console = Console(stderr=True, highlight=False)


def python() -> str:
    """The interpreter that runs the suite: this one (the project's venv has numpy)."""
    return sys.executable


# ---- fetch, build ------------------------------------------------------------------------

def fetch(work: Path) -> Path:
    """The sha256-checked sdist in <work>/mpi4py, fetched from PyPI with pip if missing.
    Raises SuiteError when pip cannot get it (no network) or the checksum differs."""
    base = work / "mpi4py"
    base.mkdir(parents=True, exist_ok=True)
    dest = base / SDIST
    if not (dest.exists() and sha256_of(dest) == SHA256):
        console.print(f"[bold]mpi4py-testsuite[/]: pip download mpi4py=={VERSION} (sdist)")
        r = subprocess.run([python(), "-m", "pip", "download", "-q", "--no-deps",
                            "--no-binary", ":all:", "-d", str(base), f"mpi4py=={VERSION}"],
                           capture_output=True, text=True)
        if r.returncode != 0 or not dest.exists():
            raise SuiteError(f"pip could not download mpi4py=={VERSION}:\n{r.stderr[-1500:]}")
        got = sha256_of(dest)
        if got != SHA256:
            dest.unlink()
            raise SuiteError(f"{SDIST}: sha256 {got}, expected {SHA256}; refusing to use it")
    return dest


def suite_dir(work: Path, sdist: Path) -> Path:
    """The sdist's test/ directory, extracted once."""
    src = work / "mpi4py" / f"mpi4py-{VERSION}"
    if not (src / "test" / "main.py").exists():
        with tarfile.open(sdist) as tar:
            for m in tar.getmembers():
                if m.name.startswith("/") or ".." in Path(m.name).parts:
                    raise SuiteError(f"{sdist}: unsafe member {m.name!r}")
            extra = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
            tar.extractall(work / "mpi4py", **extra)
    return src / "test"


def build(work: Path, sdist: Path, which: str, cflags: str = "") -> Path:
    """mpi4py built with `which`'s compiler (pip wheel, as a user would with MPICC set),
    installed into <work>/mpi4py/site-<which>; returns that directory (for PYTHONPATH).
    Built once: the module links libisthmus.so by its ABI, so a rebuilt libisthmus needs
    no new build. `cflags` are appended to the compiler's flags (the test suite passes
    "-O0 -g0": mpi4py's one large C file then builds in about a quarter of the time, and
    what the suite checks is the bindings' behaviour, not their speed); a build made with
    other flags is rebuilt."""
    site = work / "mpi4py" / f"site-{which}"
    stamp = site / ".built"
    if stamp.exists() and stamp.read_text() == cflags:
        return site
    wheels = work / "mpi4py" / f"wheels-{which}"
    shutil.rmtree(wheels, ignore_errors=True)
    cc = compiler(which)
    console.print(f"[bold]mpi4py-testsuite[/]: building mpi4py with MPICC={cc} (a few minutes)")
    log = work / "mpi4py" / f"build-{which}.log"
    with open(log, "w") as out:
        r = subprocess.run([python(), "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(wheels),
                            str(sdist)], env=_build_env(cc, cflags), stdout=out,
                           stderr=subprocess.STDOUT)
    whl = sorted(wheels.glob("mpi4py-*.whl"))
    if r.returncode != 0 or not whl:
        raise SuiteError(f"building mpi4py with {cc} failed; see {log}")
    shutil.rmtree(site, ignore_errors=True)
    r = subprocess.run([python(), "-m", "pip", "install", "-q", "--no-deps", "--target",
                        str(site), str(whl[-1])], capture_output=True, text=True)
    if r.returncode != 0:
        raise SuiteError(f"installing {whl[-1]} failed:\n{r.stderr[-1500:]}")
    stamp.write_text(cflags)
    return site


def _build_env(cc: str, cflags: str) -> dict[str, str]:
    env = dict(os.environ, MPICC=cc)
    if cflags:
        env["CFLAGS"] = f"{env.get('CFLAGS', '')} {cflags}".strip()
    return env


FFT_VERSION = "2.0.6"


def build_fft(work: Path) -> Path:
    """mpi4py-fft (PyPI, the application library run across sites; its C part wraps FFTW,
    Debian libfftw3-dev, installed by scripts/bootstrap.sh) in <work>/mpi4py-fft/site,
    without dependencies: it runs on the mpi4py built here and the project's numpy."""
    site = work / "mpi4py-fft" / "site"
    stamp = site / ".built"
    if stamp.exists():
        return site
    site.parent.mkdir(parents=True, exist_ok=True)
    console.print(f"[bold]mpi4py-testsuite[/]: pip install mpi4py-fft=={FFT_VERSION}")
    log = site.parent / "build.log"
    with open(log, "w") as out:
        r = subprocess.run([python(), "-m", "pip", "install", "--no-deps", "--target", str(site),
                            f"mpi4py-fft=={FFT_VERSION}"], stdout=out, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise SuiteError(f"installing mpi4py-fft=={FFT_VERSION} failed (FFTW headers: Debian "
                         f"libfftw3-dev); see {log}")
    stamp.touch()
    return site


def run_fft(layout: list[int], vendor: str, mpi4py_site: Path, fft_site: Path,
            args: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    """tests/public/mpi4py_fft_app.py across sites with `isthmus run -- python3`."""
    isthmus = shutil.which("isthmus") or str(REPO / ".venv" / "bin" / "isthmus")
    env = dict(os.environ, PYTHONPATH=f"{mpi4py_site}{os.pathsep}{fft_site}",
               PYTHONDONTWRITEBYTECODE="1")
    cmd = [isthmus, "run", "-n", str(sum(layout)), "--sites", str(len(layout)),
           "--ranks-per-site", ",".join(map(str, layout)), "--mpi", vendor, "--timeout",
           str(timeout), "--", python(), str(HERE / "mpi4py_fft_app.py"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30, env=env,
                          stdin=subprocess.DEVNULL)


# ---- what runs, and how ------------------------------------------------------------------

def parse_layout(spec: str) -> list[int]:
    try:
        ranks = [int(x) for x in spec.split(",")]
    except ValueError:
        raise click.BadParameter(f"--layout {spec!r}: ranks per site, e.g. 2,2 or 1,3") from None
    if not ranks or any(r < 1 for r in ranks):
        raise click.BadParameter(f"--layout {spec!r}: every site needs at least one rank")
    return ranks


def modules(tests: Path) -> list[str]:
    return sorted(p.stem for p in tests.glob("test_*.py") if p.stem not in EXCLUDED_MODULES)


def command(target: Target, module: str, layout: list[int], tests: Path, site: Path,
            outdir: Path, timeout: int, exclude: list[str]) -> tuple[list[str], dict]:
    env = dict(os.environ, PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    prog = [python(), str(HERE / "mpi4py_rank.py"), "--suite", str(tests), "--outdir",
            str(outdir), "--no-builddir", "-i", f"^{module}\\.py$"]
    for x in exclude:
        prog += ["-x", x]
    n = sum(layout)
    if target.via_isthmus:
        isthmus = shutil.which("isthmus") or str(REPO / ".venv" / "bin" / "isthmus")
        return [isthmus, "run", "-n", str(n), "--sites", str(len(layout)), "--ranks-per-site",
                ",".join(map(str, layout)), "--mpi", target.vendor, "--timeout", str(timeout),
                "--", *prog], env
    if target.vendor == "openmpi":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_mpi_yield_when_idle="1")
        return ["mpirun.openmpi", "--oversubscribe", "-np", str(n), *prog], env
    return ["mpiexec.mpich", "-n", str(n), *prog], env


def merge_ranks(outdir: Path, nranks: int) -> dict[str, dict]:
    """test id -> {"status", "detail"} over all ranks: fail/error anywhere is a failure
    (the first rank's detail), else a skip anywhere is a skip, else xfail, else pass."""
    per: dict[str, list[dict]] = {}
    for r in range(nranks):
        f = outdir / f"rank{r}.jsonl"
        for line in (f.read_text().splitlines() if f.exists() else []):
            rec = json.loads(line)
            per.setdefault(rec["id"], []).append(dict(rec, rank=r))
    out = {}
    order = ("error", "fail", "xpass", "skip", "xfail", "pass")
    for tid, recs in per.items():
        worst = min(recs, key=lambda x: order.index(x["outcome"]))
        status = {"error": "fail", "fail": "fail", "xpass": "fail"}.get(worst["outcome"],
                                                                        worst["outcome"])
        if len({x["rank"] for x in recs}) < nranks and status != "fail":
            status, worst = "incomplete", dict(worst, detail="not finished on every rank")
        out[tid] = {"status": status,
                    "detail": "" if status == "pass" else
                    f"rank {worst['rank']}: {worst['detail']}"[-1500:]}
    return out


def run_module(target: Target, module: str, layout: list[int], tests: Path, site: Path,
               work: Path, timeout: int, exclude: list[str], runs: str = "runs") -> dict:
    """One job: the module on every rank. Returns {"module", "rc", "secs", "tests": {id:
    {"status", "detail"}}, "output"} (output: the job's last lines, when it failed)."""
    tag = f"{target.name}-{'-'.join(map(str, layout))}"
    outdir = work / "mpi4py" / runs / tag / module  # runs: one folder per concurrent user
    shutil.rmtree(outdir, ignore_errors=True)
    outdir.mkdir(parents=True)
    cmd, env = command(target, module, layout, tests, site, outdir, timeout, exclude)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=outdir, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        raw, _ = proc.communicate(timeout=timeout + 30)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        raw, rc = stop_group(proc), 124
    secs = round(time.monotonic() - t0, 1)
    out = raw.decode(errors="replace")
    (outdir / "job.log").write_text(out)
    got = merge_ranks(outdir, sum(layout))
    # mpi4py's runner exits 1 when a test failed; anything else (or no result at all) is a
    # job that hung or died, and what had not finished on every rank went with it
    why = "timeout" if rc == 124 else "crash"
    last = " | ".join(out.strip().splitlines()[-4:])
    for tid, r in got.items():
        if r["status"] == "incomplete":
            got[tid] = {"status": "fail" if rc in (0, 1) else why, "detail": last[-1500:]}
    if rc not in (0, 1) or not got:
        got[f"{module} (job)"] = {"status": why, "detail": f"exit {rc}: {last}"[-1500:]}
    return {"module": module, "rc": rc, "secs": secs, "tests": got,
            "output": out[-4000:] if rc else ""}


# ---- known failures and the comparison ---------------------------------------------------

def read_known(path: Path) -> list[tuple[str, set[str], str, str]]:
    """mpi4py_known_failures.txt: `<test id, or a pattern with *> | <targets or *> |
    <class> | <reason>`; class is unsupported, isthmus, vendor, test, or hang (a test that
    never ends on those targets: left out of their runs with mpi4py's -x, reported as
    "excluded")."""
    out = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|")]
        if len(parts) != 4 or parts[2] not in ("unsupported", "isthmus", "vendor", "test",
                                               "hang"):
            raise SuiteError(f"{path}: bad line (want 'id | targets | class | reason'): {line}")
        targets = {"*"} if parts[1] == "*" else {t.strip() for t in parts[1].split(",")}
        out.append((parts[0], targets, parts[2], parts[3]))
    return out


def known_reason(known, test_id: str, target: str) -> tuple[str, str] | None:
    for pattern, targets, cls, reason in known:
        hit = fnmatch.fnmatchcase(test_id, pattern)
        if hit and ("*" in targets or target in targets):
            return cls, reason
    return None


def results_file(work: Path, target: Target, layout: list[int]) -> Path:
    return work / "mpi4py" / "results" / f"{target.name}-{'-'.join(map(str, layout))}.jsonl"


def load(work: Path, target: Target, layout: list[int]) -> dict[str, dict]:
    """test id -> its result in the last run of its module on target and layout (for a
    vendor alone, which has no sites: a run of as many ranks under any layout)."""
    f = results_file(work, target, layout)
    if not f.exists() and not target.via_isthmus:
        for g in sorted(f.parent.glob(f"{target.name}-*.jsonl")):
            parts = g.stem[len(target.name) + 1:].split("-")
            if all(x.isdigit() for x in parts) and sum(map(int, parts)) == sum(layout):
                f = g
                break
    by_module: dict[str, dict] = {}
    for line in (f.read_text().splitlines() if f.exists() else []):
        rec = json.loads(line)
        by_module[rec["module"]] = rec["tests"]  # a module's last run replaces the earlier
    return {tid: r for tests in by_module.values() for tid, r in tests.items()}


def compare(targets: list[Target], results: dict[str, dict[str, dict]], known,
            echo=print) -> int:
    """Print each isthmus target's tests that do not pass while the vendor alone passes them
    (or that have no vendor result), with their known reason; return how many are
    unexplained."""
    unexplained = 0
    for t in targets:
        if not t.via_isthmus:
            continue
        base = results.get(t.vendor)
        skipped: dict[str, int] = {}
        for tid, r in sorted(results[t.name].items()):
            if r["status"] in ("pass", "xfail"):
                continue
            vendor = base.get(tid, {}).get("status") if base is not None else None
            if r["status"] == "skip":
                # mpi4py itself skipped it here (its reason says why: a feature isthmus
                # reports MPI_ERR_UNSUPPORTED_OPERATION for); counted, not unexplained
                if vendor not in (None, "skip"):
                    why = r.get("detail", "").split(": ", 1)[-1]
                    skipped[why] = skipped.get(why, 0) + 1
                continue
            kr = known_reason(known, tid, t.name)
            if kr is None and not (vendor is not None and vendor not in ("pass", "xfail")):
                unexplained += 1
            flag = {None: "", "pass": " (passes under the vendor alone)"}.get(
                vendor, f" ({vendor} under the vendor alone)")
            echo(f"{t.name}: {tid}: {r['status']}{flag}"
                 + (f" -- known, {kr[0]}: {kr[1]}" if kr else
                    " -- NOT in the known list" if vendor in (None, "pass", "xfail") else ""))
        # what passed under the vendor alone and never ran here: its module failed to
        # load (that failure is listed above) or the job ended before it
        for tid, r in sorted((base or {}).items()):
            if tid in results[t.name] or r["status"] not in ("pass", "xfail"):
                continue
            module = tid.split(".")[0]
            if f"unittest.loader._FailedTest.{module}" in results[t.name]:
                continue
            unexplained += 1
            echo(f"{t.name}: {tid}: did not run (passes under the vendor alone) -- NOT in the "
                 "known list")
        for why, n in sorted(skipped.items(), key=lambda x: -x[1]):
            echo(f"{t.name}: {n} tests skipped by mpi4py that pass under the vendor alone: "
                 f"{why}")
    return unexplained


def table(targets: list[Target], results: dict[str, dict[str, dict]], title: str) -> Table:
    tab = Table(title=title)
    tab.add_column("target")
    for col in ("pass", "skip", "xfail", "fail", "timeout", "crash", "excluded", "total"):
        tab.add_column(col, justify="right")
    for t in targets:
        rs = results[t.name].values()
        counts = [sum(r["status"] == c for r in rs)
                  for c in ("pass", "skip", "xfail", "fail", "timeout", "crash", "excluded")]
        tab.add_row(t.name, *map(str, counts), str(len(rs)))
    return tab


# ---- CLI ---------------------------------------------------------------------------------

@click.group()
def cli() -> None:
    """mpi4py's own test suite under isthmus and under the vendor MPIs alone."""


def _common(f):
    f = click.option("--work", type=click.Path(path_type=Path), default=default_workdir,
                     show_default="build/public-tests")(f)
    f = click.option("--only", default="", help="Comma-separated test modules.")(f)
    f = click.option("--layout", default="2,2", show_default=True,
                     help="Ranks per site (the vendor alone runs their sum).")(f)
    return f


def _modules(tests: Path, only: str) -> list[str]:
    every = modules(tests)
    wanted = [m.strip() for m in only.split(",") if m.strip()]
    unknown = [m for m in wanted if m not in every]
    if unknown:
        raise SuiteError(f"no such test module: {', '.join(unknown)}")
    return wanted or every


@cli.command("list")
@_common
def list_cmd(work, only, layout) -> None:
    """The test modules that would run (one job each)."""
    for m in _modules(suite_dir(work, fetch(work)), only):
        print(m)


@cli.command()
@_common
@click.option("--targets", default="isthmus-openmpi,openmpi,isthmus-mpich,mpich",
              show_default=True)
@click.option("--timeout", type=int, default=DEFAULT_TIMEOUT, show_default=True,
              help="Seconds per module job.")
@click.option("-x", "exclude", multiple=True,
              help="Test name pattern to leave out (mpi4py's -x), for every target.")
def run(work, only, layout, targets, timeout, exclude) -> None:
    """Build what is needed, run every module on each target, print the comparison."""
    tgts = parse_targets(targets)
    ranks = parse_layout(layout)
    sdist = fetch(work)
    tests = suite_dir(work, sdist)
    mods = _modules(tests, only)
    sites = {b: build(work, sdist, b) for b in sorted({t.build for t in tgts})}
    known = read_known(KNOWN)
    results: dict[str, dict[str, dict]] = {}
    for t in tgts:
        f = results_file(work, t, ranks)
        f.parent.mkdir(parents=True, exist_ok=True)
        results[t.name] = {}
        hangs = [k[0] for k in known if k[2] == "hang" and ("*" in k[1] or t.name in k[1])]
        with open(f, "a") as log:
            for m in mods:
                mine = [h for h in hangs if h.split(".")[0] == m]
                r = run_module(t, m, ranks, tests, sites[t.build], work, timeout,
                               list(exclude) + [h.rstrip("*") for h in mine])
                for h in mine:
                    r["tests"][h] = {"status": "excluded", "detail": "known to hang here"}
                log.write(json.dumps(r) + "\n")
                log.flush()
                results[t.name].update(r["tests"])
                bad = sum(x["status"] in ("fail", "timeout", "crash") for x in r["tests"].values())
                console.print(f"{t.name:15} {layout:7} {m:24} {r['secs']:6.1f}s "
                              f"{len(r['tests']):4} tests" + (f", [red]{bad} not passed[/]"
                                                             if bad else ""))
    Console(highlight=False).print(table(tgts, results, f"mpi4py {VERSION} suite, layout {layout}"))
    sys.exit(1 if compare(tgts, results, known) else 0)


@cli.command("fft")
@click.option("--work", type=click.Path(path_type=Path), default=default_workdir,
              show_default="build/public-tests")
@click.option("--layout", default="2,2", show_default=True)
@click.option("--mpi", "vendor", type=click.Choice(VENDORS), default="openmpi",
              show_default=True)
@click.argument("args", nargs=-1)
def fft_cmd(work, layout, vendor, args) -> None:
    """mpi4py-fft's distributed FFT across sites, checked against numpy's (ARGS: N0 N1 N2
    and slab or pencil)."""
    site = build(work, fetch(work), "isthmus")
    r = run_fft(parse_layout(layout), vendor, site, build_fft(work), list(args))
    print(r.stdout, end="")
    if r.returncode:
        print(r.stderr[-4000:], end="", file=sys.stderr)
    sys.exit(r.returncode)


@cli.command("report")
@_common
@click.option("--targets", default="isthmus-openmpi,openmpi,isthmus-mpich,mpich",
              show_default=True)
@click.option("--markdown", is_flag=True, help="Only the counts, as a Markdown table.")
def report_cmd(work, only, layout, targets, markdown) -> None:
    """The table and the comparison from earlier runs."""
    tgts = parse_targets(targets)
    ranks = parse_layout(layout)
    results = {t.name: load(work, t, ranks) for t in tgts}
    wanted = [m.strip() for m in only.split(",") if m.strip()]
    if wanted:
        results = {k: {i: r for i, r in v.items() if i.split(".")[0].split(" ")[0] in wanted}
                   for k, v in results.items()}
    missing = [t.name for t in tgts if not results[t.name]]
    if missing:
        raise SuiteError(f"no results for {', '.join(missing)} with layout {layout}")
    if markdown:
        cols = ("pass", "skip", "xfail", "fail", "timeout", "crash", "excluded")
        print(f"| target ({layout}) | " + " | ".join(cols) + " | total |")
        print("|---|" + "---:|" * (len(cols) + 1))
        for t in tgts:
            rs = results[t.name].values()
            print(f"| {t.name} | " + " | ".join(str(sum(r["status"] == c for r in rs))
                                                for c in cols) + f" | {len(rs)} |")
        return
    Console(highlight=False).print(table(tgts, results, f"mpi4py {VERSION} suite, layout {layout}"))
    sys.exit(1 if compare(tgts, results, read_known(KNOWN)) else 0)


def main() -> None:
    try:
        cli()
    except (SuiteError, OSError) as e:
        console.print(f"[red]mpi4py-testsuite: {e}[/]")
        sys.exit(1)


if __name__ == "__main__":
    main()
