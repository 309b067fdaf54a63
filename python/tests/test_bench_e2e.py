# tests/test_bench_e2e.py: real short runs of isthmus-bench through `isthmus bench`: under
# each vendor MPI alone, under isthmus on 2 sites, a plain-mpicc build, the CLI's messages
# for bad input, a failing launch recorded as failed, and (root) a small campaign of the
# vendor alone against isthmus across 2 emulated sites, with its report.
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


pytestmark = pytest.mark.native
REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "isthmus", "bench"]


def bench(*args, timeout=240, cwd=None):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def records(out: str) -> list[dict]:
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


@pytest.mark.parametrize("library", ["openmpi", "mpich"])
def test_vendor_alone_latency_and_collective(prefix, library):
    r = bench("run", "latency", "-n", "2", "--library", library, "-m", "8,4k", "-r", "3", "-i", "20", "--json")
    assert r.returncode == 0, r.stderr
    recs = records(r.stdout)
    assert [x["size"] for x in recs] == [8, 4096]
    for x in recs:
        assert x["status"] == "ok" and x["reps"] == 3 and len(x["samples"]) == 3
        assert 0 < x["min"] <= x["median"] <= x["p99"] <= x["max"]
        assert x["config"]["ranks"] == 2 and x["library"] == library
        assert ("Open MPI" if library == "openmpi" else "MPICH") in x["config"]["library_version"]
    r = bench("run", "coll", "-n", "2", "--library", library, "--op", "allreduce,bcast,neighbor_alltoallw", "-m",
              "64", "-r", "2", "-i", "5", "--nonblocking")
    assert r.returncode == 0, r.stderr
    assert "iallreduce" in r.stdout and "ibcast" in r.stdout and "Time(us)" in r.stdout
    assert "ineighbor_alltoallw" in r.stdout


def test_isthmus_two_sites_neighborhood_collectives(prefix):
    ops = ["neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv",
           "neighbor_alltoallw"]
    r = bench("run", "coll", "-n", "4", "--library", "isthmus-mpich", "--op", ",".join(ops), "-m", "8,4k", "-r",
              "2", "-i", "3", "--json")
    assert r.returncode == 0, r.stderr
    recs = records(r.stdout)
    assert [(x["op"], x["size"]) for x in recs] == [(op, m) for op in ops for m in (8, 4096)]
    for x in recs:
        assert x["status"] == "ok" and x["topology"] == "cart 2x2 periodic", x
        assert x["config"]["sites"] == ["A", "B"] and 0 < x["min"] <= x["max"]


def test_isthmus_two_sites_placement_and_fraction(prefix):
    r = bench("run", "placement", "-n", "4", "--library", "isthmus-openmpi", "-r", "2", "-i", "10", "--json")
    assert r.returncode == 0, r.stderr
    recs = records(r.stdout)
    assert [(x["peer"], x["distance"]) for x in recs] == [(1, "same-node"), (2, "other-site"), (3, "other-site")]
    assert recs[0]["config"]["sites"] == ["A", "B"]
    assert recs[0]["config"]["library"].startswith("isthmus")
    r = bench("run", "a2a-fraction", "-n", "4", "--library", "isthmus-mpich", "-m", "256", "-r", "2", "-i", "3",
              "--json")
    assert r.returncode == 0, r.stderr
    recs = records(r.stdout)
    assert [(x["fraction"], x["active"], x["status"]) for x in recs] == [
        (100, 4, "ok"), (50, 2, "ok"), (25, 1, "skipped"), (12.5, 0, "skipped")]
    assert "start at least 8 ranks" in recs[2]["reason"]
    r = bench("run", "one2many", "-n", "4", "--library", "isthmus-openmpi", "-m", "64", "-r", "2", "-i", "5",
              "--json")
    assert r.returncode == 0, r.stderr
    recs = records(r.stdout)
    # partners spread evenly: 1 partner is rank 1 (site A), 2 partners are ranks 1 and 2
    assert [(x["partners"], x["remote_partners"]) for x in recs] == [(1, 0), (2, 1)]


def test_builds_with_plain_mpicc(tmp_path):
    exe = tmp_path / "isthmus-bench"
    # the command native/tools/bench/CMakeLists.txt gives for any other MPI
    src = sorted(str(p) for p in (REPO / "native" / "tools" / "bench").glob("*.c"))
    src += [str(REPO / "native/src/common/units.c"), str(REPO / "native/tools/noise/timercheck.c")]
    r = subprocess.run(["mpicc.mpich", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra", "-Werror",
                        "-O2", "-I", str(REPO / "native/tools/noise"), "-o", str(exe), *src, "-lm"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(["mpiexec.mpich", "-n", "2", str(exe), "bibw", "-m", "1k", "-r", "2", "-i", "5", "-W", "4"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "Bandwidth(MB/s)" in r.stdout and "MPICH" in r.stdout


@pytest.mark.parametrize("args,message", [
    (["run", "pingpong"], "unknown benchmark 'pingpong'; known: latency"),
    (["run", "msgrate", "-n", "3"], "msgrate pairs rank i with i+n/2 and needs an even rank count; got 3"),
    (["run", "latency", "-n", "2", "--peer", "2"], "latency needs at least 3 ranks"),
    (["run", "latency", "--library", "lam"], "unknown MPI library 'lam'"),
    (["campaign", "/nonexistent/plan.toml"], "cannot read plan /nonexistent/plan.toml"),
])
def test_cli_refuses_bad_input(prefix, args, message):
    r = bench(*args, timeout=60)
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr


def test_failed_launch_is_recorded_as_failed(prefix, tmp_path):
    plan = tmp_path / "fail.toml"
    plan.write_text('[campaign]\nname = "fail"\ntimeout = 60\n[env]\nOMPI_MCA_btl = "nosuchbtl"\n'
                    '[matrix]\nranks = [2]\nlibraries = ["openmpi", "mpich"]\n'
                    '[[benchmark]]\nname = "latency"\nsizes = [8]\niters = 5\nreps = 2\n')
    r = bench("campaign", str(plan), "--results", str(tmp_path / "res"))
    assert r.returncode == 1, r.stderr
    lines = [json.loads(l) for l in (tmp_path / "res" / "results.jsonl").read_text().splitlines()]
    launches = {l["library"]: l for l in lines if l["kind"] == "launch"}
    assert launches["openmpi"]["status"] == "failed" and "exit code" in launches["openmpi"]["error"]
    assert launches["mpich"]["status"] == "ok"
    html = (tmp_path / "res" / "report.html").read_text()
    assert "Failed launches (1)" in html and "nosuchbtl" in html


@pytest.mark.netadmin
def test_wan_campaign_vendor_against_isthmus(netadmin, prefix, tmp_path):
    plan = tmp_path / "wan.toml"
    plan.write_text('[campaign]\nname = "wan"\ntimeout = 120\n[matrix]\nranks = [2]\n'
                    'libraries = ["openmpi", "isthmus-openmpi"]\nprofiles = ["wan"]\n'
                    '[profiles.wan]\nlink = "delay=3ms"\nsites = 2\n'
                    '[[benchmark]]\nname = "latency"\nsizes = [8, 1024]\niters = 5\nreps = 3\n')
    r = bench("campaign", str(plan), "--results", str(tmp_path / "res"), timeout=400)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(l) for l in (tmp_path / "res" / "results.jsonl").read_text().splitlines()]
    pts = [l for l in lines if l["kind"] == "point"]
    assert {(p["library"], p["size"]) for p in pts} == {(l, s) for l in ("openmpi", "isthmus-openmpi")
                                                         for s in (8, 1024)}
    for p in pts:
        assert p["config"]["sites"] == ["A", "B"] and p["config"]["link"] == "delay=3ms"
        # one way crosses the 3 ms link: at least 3 ms, whatever the library
        assert p["min"] >= 3000, p
    assert "ip netns exec" in next(p["command"] for p in pts if p["library"] == "openmpi")
    html = (tmp_path / "res" / "report.html").read_text()
    assert "data:image/png;base64," in html and "isthmus-openmpi" in html
    r = bench("compare", f"{tmp_path / 'res'}@library=openmpi", f"{tmp_path / 'res'}@library=isthmus-openmpi")
    assert r.returncode == 0 and "all points" in r.stderr


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_coll_algorithms_take_turns_in_one_launch(prefix, mpi):
    """`isthmus-bench coll --algs`: one record per algorithm and size, each algorithm the
    one libisthmus ran (its call counts), on 2 ranks of one site as `model tune --measure`
    uses it; an algorithm the collective does not have is refused by name"""
    import re

    from isthmus.bench.launchers import Launch, Profile, run_launch

    prof = Profile("intra", None, 1, gateway=False)
    algs = ["binomial", "chain::8192", "vendor"]
    res = run_launch(Launch("coll", ["--op", "bcast", "-m", "8,64k", "-r", "4", "-i", "5", "-x", "2",
                                     "--algs", ",".join(algs)], f"isthmus-{mpi}", prof, 2,
                            timeout=120, env={"ISTHMUS_COLL_STATS": "1"}))
    assert res.ok, res.stderr_tail
    got = [(x["alg"], x["size"]) for x in res.records]
    assert got == [(a, m) for m in (8, 65536) for a in algs], got
    for x in res.records:
        assert x["status"] == "ok" and x["reps"] == 4 and x["op"] == "bcast" and x["min"] > 0
        assert x["closing_barrier_us"] > 0
    # per rank and algorithm: 2 sizes x (2 warm-up + 4 x 5 timed) calls
    for a in ("binomial", "chain", "vendor"):
        counts = re.findall(rf"bcast intra {a}: (\d+) calls", res.stderr_tail)
        assert counts and all(int(c) == 2 * (2 + 4 * 5) for c in counts), (a, res.stderr_tail)
    bad = run_launch(Launch("coll", ["--op", "allreduce", "-m", "8", "-r", "3", "--algs",
                                     "ring,binomial"], f"isthmus-{mpi}", prof, 2, timeout=60))
    assert not bad.ok and "hint isthmus_coll_allreduce=binomial refused" in bad.stderr_tail
