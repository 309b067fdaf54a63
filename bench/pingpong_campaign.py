#!/usr/bin/env python3
"""Ping-pong campaign: vendor MPI alone vs isthmus in one site vs isthmus across sites.

For each vendor MPI (Open MPI, MPICH) it measures, in ONE run, three configurations:

  a  vendor alone      bench/pingpong.c built with mpicc.<vendor>, started with the
                       vendor launcher (mpirun.openmpi --oversubscribe -np 2 /
                       mpiexec.mpich -np 2)
  b  isthmus, 1 site   the same source built with isthmus-cc, started with the same
                       vendor launcher and ISTHMUS_MPI=<vendor> (no ISTHMUS_SITE: one
                       site, no gateway)
  c  isthmus, 2 sites  the isthmus-cc binary started with
                       `isthmus run -n 2 --sites 2 --mpi <vendor>` (loopback TCP through
                       one gateway per site)

and two metrics: 8-byte one-way latency and 16 MiB bandwidth (window of 64 sends).

Runs are interleaved round-robin: every repetition runs every (metric, vendor,
configuration) once, so slow drift of the machine hits all configurations alike.
Within a repetition the order of a/b/c is rotated so no configuration always runs
first. Ratios b/a and c/a are computed per repetition (same vendor, same metric,
adjacent in time) and summarised by their median.

OMPI_MCA_mpi_yield_when_idle=0 is set for the a/b runs (2 ranks on 2 cores, not
oversubscribed, so busy polling is what a real user gets); `isthmus run` chooses its
own setting for c (it passes --mca mpi_yield_when_idle 1 to Open MPI because the site jobs are
oversubscribed by the gateways).

Output: JSON lines (one per run, plus meta and summary records) in
bench/results/pingpong-<timestamp>.jsonl, a Markdown section on stdout, progress on
stderr. Standard library, and isthmus's own size parser (python/isthmus/units.py).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
from isthmus import units  # noqa: E402

SOURCE = HERE / "pingpong.c"
DEFAULT_PREFIX = Path("/work/main/_install")
DEFAULT_CLI = Path("/work/main/.venv/bin/isthmus")

VENDORS = {
    "openmpi": {
        "label": "Open MPI",
        "cc": "mpicc.openmpi",
        "launch": ["mpirun.openmpi", "--oversubscribe", "-np", "2"],
    },
    "mpich": {
        "label": "MPICH",
        "cc": "mpicc.mpich",
        "launch": ["mpiexec.mpich", "-np", "2"],
    },
}
CONFIGS = {
    "a": "vendor alone",
    "b": "isthmus, 1 site",
    "c": "isthmus, 2 sites (loopback TCP)",
}
METRICS = {
    "lat": {"title": "8-byte one-way latency", "unit": "us"},
    "bw": {"title": "bandwidth", "unit": "MB/s"},
}
RESULT_RE = re.compile(
    r"^pingpong size=(\d+) mode=(lat|bw) value=([0-9.eE+-]+) unit=(\S+) iters=(\d+)\s*$",
    re.M,
)
# environment that would make an isthmus binary believe it is part of a multi-site job
ISTHMUS_JOB_VARS = (
    "ISTHMUS_SITE",
    "ISTHMUS_SITE_NAMES",
    "ISTHMUS_SITE_RANKS",
    "ISTHMUS_SITE_GATEWAYS",
    "ISTHMUS_GATEWAY_ADDRS",
    "ISTHMUS_JOB",
    "ISTHMUS_SECRET_FILE",
    "ISTHMUS_TRANSPORT",
    "ISTHMUS_STATS",
)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_size(text: str) -> int:
    try:
        return units.parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def positive(text: str) -> int:
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return v


def nonneg(text: str) -> int:
    v = int(text)
    if v < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return v


def human_size(n: int) -> str:
    for unit, f in (("MiB", 1 << 20), ("KiB", 1024)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


def capture(cmd: list[str]) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return (p.stdout + p.stderr).strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"<{cmd[0]} failed: {e}>"


def run_cmd(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float) -> dict:
    """Run one benchmark command; never raises. Kills only its own process group."""
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            cmd,
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except OSError as e:
        return {"ok": False, "rc": None, "error": f"cannot start: {e}", "wall_s": 0.0,
                "stdout": "", "stderr": ""}
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            out, err = proc.communicate(timeout=10)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, err = proc.communicate()
    wall = time.monotonic() - t0
    res = {"rc": proc.returncode, "wall_s": round(wall, 3), "stdout": out, "stderr": err}
    matches = RESULT_RE.findall(out)
    if timed_out:
        res.update(ok=False, error=f"timed out after {timeout:.0f} s")
    elif proc.returncode != 0:
        res.update(ok=False, error=f"exit status {proc.returncode}")
    elif len(matches) != 1:
        res.update(ok=False, error=f"expected 1 result line, found {len(matches)}")
    else:
        size, mode, value, unit, iters = matches[0]
        res.update(ok=True, error=None, size=int(size), mode=mode, value=float(value),
                   unit=unit, iters=int(iters))
    return res


def tail(text: str, n: int = 15) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[-n:])


def quartiles(xs: list[float]) -> tuple[float, float]:
    if len(xs) < 2:
        return xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[2]


def describe(xs: list[float]) -> dict | None:
    if not xs:
        return None
    med = statistics.median(xs)
    q1, q3 = quartiles(xs)
    return {
        "n": len(xs),
        "median": med,
        "min": min(xs),
        "max": max(xs),
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "range_rel": (max(xs) - min(xs)) / med if med else float("nan"),
    }


def fmt(v: float, metric: str) -> str:
    if metric == "bw":
        return f"{v:.0f}"
    if v >= 100:
        return f"{v:.1f}"
    return f"{v:.3f}"


def install_fingerprint(prefix: Path) -> str:
    """sha256 of the installed libisthmus.so (to notice a reinstall during the run)."""
    for d in [prefix / "lib", prefix / "lib64", *sorted(prefix.glob("lib/*-linux-gnu"))]:
        lib = d / "libisthmus.so"
        if lib.exists():
            return hashlib.sha256(lib.read_bytes()).hexdigest()[:16]
    return "missing"


def main() -> int:
    ap = argparse.ArgumentParser(
        description="Interleaved ping-pong campaign: vendor MPI alone (a), isthmus in one "
        "site (b), isthmus across 2 sites on loopback (c), for Open MPI and MPICH.")
    ap.add_argument("--reps", type=positive, default=7, help="repetitions (default 7)")
    ap.add_argument("--vendors", default="openmpi,mpich",
                    help="comma-separated subset of openmpi,mpich (default both)")
    ap.add_argument("--configs", default="a,b,c", help="subset of a,b,c (default all)")
    ap.add_argument("--lat-size", type=parse_size, default=8, help="latency message size (8)")
    ap.add_argument("--lat-iters", type=positive, default=20000, help="latency iters, a/b")
    ap.add_argument("--lat-warmup", type=nonneg, default=2000, help="latency warm-up, a/b")
    ap.add_argument("--lat-iters-c", type=positive, default=2000, help="latency iters, c")
    ap.add_argument("--lat-warmup-c", type=nonneg, default=200, help="latency warm-up, c")
    ap.add_argument("--bw-size", type=parse_size, default=16 << 20, help="bw size (16M)")
    ap.add_argument("--bw-iters", type=positive, default=10, help="bw windows timed, a/b")
    ap.add_argument("--bw-warmup", type=nonneg, default=2, help="bw warm-up windows, a/b")
    ap.add_argument("--bw-iters-c", type=positive, default=5, help="bw windows timed, c")
    ap.add_argument("--bw-warmup-c", type=nonneg, default=1, help="bw warm-up windows, c")
    ap.add_argument("--timeout", type=float, default=300.0, help="per-run timeout, s")
    ap.add_argument("--prefix", type=Path,
                    default=Path(os.environ.get("ISTHMUS_PREFIX", DEFAULT_PREFIX)),
                    help="isthmus install prefix (default $ISTHMUS_PREFIX or "
                    f"{DEFAULT_PREFIX})")
    ap.add_argument("--isthmus", type=Path, default=DEFAULT_CLI, help="isthmus CLI")
    ap.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = ap.parse_args()

    vendors = [v.strip() for v in args.vendors.split(",") if v.strip()]
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    for v in vendors:
        if v not in VENDORS:
            ap.error(f"unknown vendor {v!r}")
    for c in configs:
        if c not in CONFIGS:
            ap.error(f"unknown configuration {c!r}")
    prefix = args.prefix.resolve()
    isthmus_cc = prefix / "bin" / "isthmus-cc"

    started = _dt.datetime.now().astimezone()
    stamp = started.strftime("%Y%m%dT%H%M%S")
    args.results_dir.mkdir(parents=True, exist_ok=True)
    gi = args.results_dir / ".gitignore"
    if not gi.exists():
        gi.write_text("# campaign output, not committed\n*.jsonl\n")
    jsonl_path = args.results_dir / f"pingpong-{stamp}.jsonl"
    jf = jsonl_path.open("w")

    def emit(rec: dict) -> None:
        jf.write(json.dumps(rec, sort_keys=True) + "\n")
        jf.flush()

    workdir = Path(tempfile.mkdtemp(prefix="isthmus-pingpong-"))
    command_line = "python3 bench/pingpong_campaign.py " + " ".join(
        shlex.quote(a) for a in sys.argv[1:])

    # ---- build -------------------------------------------------------------------
    binaries: dict[str, Path] = {}
    build_errors: dict[str, str] = {}
    builds = {v: [VENDORS[v]["cc"]] for v in vendors if "a" in configs}
    if "b" in configs or "c" in configs:
        builds["isthmus"] = [str(isthmus_cc)]
    build_cmds = {}
    for name, cc in builds.items():
        exe = workdir / f"pingpong-{name}"
        cmd = cc + ["-O2", "-o", str(exe), str(SOURCE)]
        build_cmds[name] = " ".join(cmd)
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            ok = p.returncode == 0
            msg = tail(p.stdout + p.stderr)
        except (OSError, subprocess.SubprocessError) as e:
            ok, msg = False, str(e)
        if ok:
            binaries[name] = exe
        else:
            build_errors[name] = msg or "compiler failed"
            log(f"build {name} FAILED: {msg}")

    meta = {
        "type": "meta",
        "started": started.isoformat(timespec="seconds"),
        "command": command_line,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "host": platform.node(),
        "kernel": platform.release(),
        "nproc": os.cpu_count(),
        "openmpi_version": capture(["mpirun.openmpi", "--version"]).splitlines()[0:1],
        "mpich_version": [ln for ln in capture(["mpichversion"]).splitlines()
                          if ln.startswith(("MPICH Version", "MPICH Device"))],
        "isthmus_version": capture([str(args.isthmus), "--version"]),
        "build_commands": build_cmds,
        "build_errors": build_errors,
        "loadavg_start": os.getloadavg(),
        "libisthmus_sha256": install_fingerprint(prefix),
    }
    emit(meta)

    # ---- environment and commands -------------------------------------------------
    base_env = dict(os.environ)
    base_env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    base_env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    for k in ISTHMUS_JOB_VARS:
        base_env.pop(k, None)
    base_env.pop("ISTHMUS_MPI", None)
    base_env.pop("OMPI_MCA_mpi_yield_when_idle", None)

    def bench_args(metric: str, config: str) -> list[str]:
        c = config == "c"
        if metric == "lat":
            return ["-s", str(args.lat_size),
                    "-i", str(args.lat_iters_c if c else args.lat_iters),
                    "-x", str(args.lat_warmup_c if c else args.lat_warmup)]
        return ["-s", str(args.bw_size), "--bw",
                "-i", str(args.bw_iters_c if c else args.bw_iters),
                "-x", str(args.bw_warmup_c if c else args.bw_warmup)]

    def plan(vendor: str, config: str, metric: str):
        """Return (cmd, env, shown_env) or (None, error) if the binary is missing."""
        env = dict(base_env)
        if config == "a":
            exe = binaries.get(vendor)
            if exe is None:
                return None, f"build with {VENDORS[vendor]['cc']} failed: {build_errors.get(vendor)}"
            env["OMPI_MCA_mpi_yield_when_idle"] = "0"
            shown = {"OMPI_MCA_mpi_yield_when_idle": "0"}
            cmd = VENDORS[vendor]["launch"] + [str(exe)] + bench_args(metric, config)
        else:
            exe = binaries.get("isthmus")
            if exe is None:
                return None, f"build with isthmus-cc failed: {build_errors.get('isthmus')}"
            if config == "b":
                env["OMPI_MCA_mpi_yield_when_idle"] = "0"
                env["ISTHMUS_MPI"] = vendor
                shown = {"OMPI_MCA_mpi_yield_when_idle": "0", "ISTHMUS_MPI": vendor}
                cmd = VENDORS[vendor]["launch"] + [str(exe)] + bench_args(metric, config)
            else:
                env["ISTHMUS_PREFIX"] = str(prefix)
                shown = {"ISTHMUS_PREFIX": str(prefix)}
                cmd = [str(args.isthmus), "run", "-n", "2", "--sites", "2", "--mpi", vendor,
                       "--timeout", str(int(args.timeout)), "--", str(exe)] + bench_args(
                    metric, config)
        return (cmd, env, shown), None

    # ---- the interleaved campaign ------------------------------------------------
    results: dict[tuple[str, str, str], list[float | None]] = {
        (m, v, c): [None] * args.reps for m in METRICS for v in vendors for c in configs}
    failures: dict[tuple[str, str, str], list[str]] = {k: [] for k in results}
    shown_cmds: dict[tuple[str, str, str], str] = {}
    loads: list[float] = []
    t_start = time.monotonic()
    for rep in range(args.reps):
        rot = rep % len(configs)
        order = configs[rot:] + configs[:rot]
        for metric in METRICS:
            for vendor in vendors:
                for config in order:
                    key = (metric, vendor, config)
                    planned, perr = plan(vendor, config, metric)
                    rec = {"type": "run", "rep": rep + 1, "metric": metric, "vendor": vendor,
                           "config": config, "time": _dt.datetime.now().astimezone()
                           .isoformat(timespec="seconds")}
                    if planned is None:
                        rec.update(ok=False, error=perr)
                        failures[key].append(perr)
                        emit(rec)
                        log(f"rep {rep + 1}/{args.reps}: {vendor} {config} {metric} "
                            f"SKIPPED ({perr.splitlines()[0]})")
                        continue
                    cmd, env, shown = planned
                    shown_cmds[key] = " ".join(
                        [f"{k}={v}" for k, v in shown.items()] + [shlex.quote(x) for x in cmd])
                    r = run_cmd(cmd, env, workdir, args.timeout + 30)
                    load1 = os.getloadavg()[0]
                    loads.append(load1)
                    rec.update(cmd=cmd, env=shown, ok=r["ok"], rc=r["rc"], wall_s=r["wall_s"],
                               loadavg=load1)
                    if r["ok"]:
                        rec.update(value=r["value"], unit=r["unit"], size=r["size"],
                                   iters=r["iters"])
                        results[key][rep] = r["value"]
                        log(f"rep {rep + 1}/{args.reps}: {vendor} {config} {metric} "
                            f"{fmt(r['value'], metric)} {r['unit']} ({r['wall_s']:.1f} s)")
                    else:
                        err = r["error"] + (": " + tail(r["stderr"] + r["stdout"], 8)
                                            if (r["stderr"] + r["stdout"]).strip() else "")
                        rec.update(error=r["error"], stdout_tail=tail(r["stdout"]),
                                   stderr_tail=tail(r["stderr"]))
                        failures[key].append(err)
                        log(f"rep {rep + 1}/{args.reps}: {vendor} {config} {metric} FAILED "
                            f"({r['error']}, {r['wall_s']:.1f} s)\n{tail(r['stderr'], 5)}")
                    emit(rec)
    total_s = time.monotonic() - t_start

    # ---- summary -------------------------------------------------------------------
    def vals(key):
        return [x for x in results[key] if x is not None]

    summary_stats = {}
    for key in results:
        d = describe(vals(key))
        summary_stats[key] = d
        emit({"type": "summary", "metric": key[0], "vendor": key[1], "config": key[2],
              "stats": d, "failures": len(failures[key]), "values": results[key]})

    ratio_stats = {}
    for metric in METRICS:
        for vendor in vendors:
            if "a" not in configs:
                continue
            base = results[(metric, vendor, "a")]
            for config in configs:
                if config == "a":
                    continue
                other = results[(metric, vendor, config)]
                ratios = [o / b for o, b in zip(other, base)
                          if o is not None and b is not None and b > 0]
                rec = {"type": "ratio", "metric": metric, "vendor": vendor,
                       "ratio": f"{config}/a", "per_rep": ratios, "stats": describe(ratios)}
                if metric == "lat" and config == "b":
                    diffs = [(o - b) * 1000.0 for o, b in zip(other, base)
                             if o is not None and b is not None]
                    rec["diff_ns_per_rep"] = diffs
                    rec["diff_ns_stats"] = describe(diffs)
                ratio_stats[(metric, vendor, config)] = rec
                emit(rec)
    fp_end = install_fingerprint(prefix)
    install_changed = fp_end != meta["libisthmus_sha256"]
    if install_changed:
        log(f"WARNING: libisthmus.so changed during the campaign "
            f"({meta['libisthmus_sha256']} -> {fp_end}); rerun")
    emit({"type": "end", "total_s": round(total_s, 1), "loadavg_end": os.getloadavg(),
          "libisthmus_sha256_end": fp_end, "install_changed": install_changed})
    jf.close()
    shutil.rmtree(workdir, ignore_errors=True)

    # ---- Markdown --------------------------------------------------------------------
    out: list[str] = []
    w = out.append
    w("### Point-to-point: vendor alone vs isthmus in one site vs across sites (loopback)")
    w("")
    w(f"Measured {started.strftime('%Y-%m-%d %H:%M %Z')} on `{platform.node()}` "
      f"({os.cpu_count()} CPUs), {args.reps} interleaved repetitions, "
      f"campaign wall time {total_s / 60:.1f} min; `{meta['isthmus_version']!s}`, "
      f"libisthmus.so sha256 {meta['libisthmus_sha256']}…"
      + (" **(changed during the run: results mix two builds)**" if install_changed else "")
      + ".")
    w("")
    w("```")
    w(command_line)
    w("```")
    w("")
    w("Configurations (per vendor):")
    w("")
    for name, cmd in build_cmds.items():
        w(f"- build `{name}`: `{cmd.replace(str(workdir) + '/', '')}`")
    for vendor in vendors:
        for config in configs:
            k = ("lat", vendor, config)
            if k in shown_cmds:
                w(f"- ({config}) {VENDORS[vendor]['label']}, {CONFIGS[config]}: "
                  f"`{shown_cmds[k].replace(str(workdir) + '/', '')}`")
    groups: dict[str, list[str]] = {}
    for config in configs:
        groups.setdefault(" ".join(bench_args("bw", config)), []).append(f"({config})")
    w("- bandwidth runs use the same commands with the pingpong arguments replaced by "
      + "; ".join(f"`{a}` for {'/'.join(cs)}" for a, cs in groups.items()))
    w("")
    if loads:
        w(f"1-minute load average sampled after each run: median {statistics.median(loads):.1f}, "
          f"min {min(loads):.1f}, max {max(loads):.1f} (machine has {os.cpu_count()} CPUs; "
          "load above the benchmark's own processes comes from other jobs on the machine).")
        w("")
    w("`OMPI_MCA_mpi_yield_when_idle=0` is set for (a) and (b): 2 ranks on 2 cores are "
      "not oversubscribed, so the vendor busy-polls as it would for a user. "
      "(c) uses whatever `isthmus run` chooses (it passes `--mca mpi_yield_when_idle 1` "
      "for Open MPI, since each site runs an app rank plus a gateway).")
    w("")
    for metric, mi in METRICS.items():
        size = args.lat_size if metric == "lat" else args.bw_size
        title = f"{mi['title']} ({human_size(size)})" if metric == "bw" else mi["title"]
        w(f"#### {title[0].upper() + title[1:]}, {mi['unit']}"
          + (" (lower is better)" if metric == "lat" else " (higher is better)"))
        w("")
        w("| vendor | config | n ok | median | min | max | IQR | (max-min)/median |")
        w("|---|---|---:|---:|---:|---:|---:|---:|")
        for vendor in vendors:
            for config in configs:
                key = (metric, vendor, config)
                d = summary_stats[key]
                nf = len(failures[key])
                label = f"({config}) {CONFIGS[config]}"
                if d is None:
                    w(f"| {VENDORS[vendor]['label']} | {label} | 0/{args.reps} | failed | | | | |")
                    continue
                w(f"| {VENDORS[vendor]['label']} | {label} | {d['n']}/{args.reps} | "
                  f"{fmt(d['median'], metric)} | {fmt(d['min'], metric)} | "
                  f"{fmt(d['max'], metric)} | {fmt(d['iqr'], metric)} | "
                  f"{100 * d['range_rel']:.1f} % |")
                del nf
        w("")
        if "a" in configs and len(configs) > 1:
            w("Ratios against (a), same vendor, computed per repetition then summarised:")
            w("")
            extra = metric == "lat" and "b" in configs
            w("| vendor | ratio | n | median | min | max |"
              + (" (b)-(a) median, ns | (b)-(a) min..max, ns |" if extra else ""))
            w("|---|---|---:|---:|---:|---:|" + ("---:|---:|" if extra else ""))
            for vendor in vendors:
                for config in configs:
                    if config == "a":
                        continue
                    rec = ratio_stats[(metric, vendor, config)]
                    d = rec["stats"]
                    row = f"| {VENDORS[vendor]['label']} | {config}/a | "
                    if d is None:
                        row += "0 | n/a | | |"
                    else:
                        row += (f"{d['n']} | {d['median']:.3f} | {d['min']:.3f} | "
                                f"{d['max']:.3f} |")
                    if extra:
                        dd = rec.get("diff_ns_stats")
                        if dd is None:
                            row += " | |" if config != "b" else " n/a | |"
                        else:
                            row += (f" {dd['median']:+.0f} | {dd['min']:+.0f}..{dd['max']:+.0f} |")
                    w(row)
            w("")
    any_fail = [(k, f) for k, f in failures.items() if f]
    if any_fail:
        w("Failures:")
        w("")
        for (metric, vendor, config), errs in any_fail:
            first = errs[0].replace("\n", " / ")
            w(f"- {VENDORS[vendor]['label']} ({config}) {metric}: {len(errs)} of "
              f"{args.reps} runs failed; first error: `{first[:600]}`")
        w("")
    w(f"Raw data: `{jsonl_path.relative_to(HERE.parent) if jsonl_path.is_relative_to(HERE.parent) else jsonl_path}` "
      f"(one JSON record per run).")
    print("\n".join(out))
    log(f"done in {total_s / 60:.1f} min; raw data in {jsonl_path}")
    return 0 if not any_fail else 1


if __name__ == "__main__":
    sys.exit(main())
