# tests/test_mpi4py_testsuite.py: a short part of mpi4py's own test suite (mpi4py 4.1.2 from
# PyPI, a real MPI client nobody here wrote), built with MPICC=isthmus-cc and started the
# way its users start it, `isthmus run -n 4 -- python3 ...`, across 2 sites (2+2) under Open
# MPI and under MPICH. The modules are tests/public/mpi4py_curated.txt; every test in them
# must pass on every rank (a skip only where mpi4py skips it itself), except the ones
# tests/public/mpi4py_known_failures.txt lists for isthmus. The full comparison
# with the vendors alone is tests/public/mpi4py_testsuite.py (docs/public-testsuites.md).
# mpi4py's sdist is fetched with pip and built on first use (a few minutes); without
# network this skips, except under ISTHMUS_REQUIRE_NATIVE (CI), where it fails.
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PUBLIC = REPO / "tests" / "public"


def _load_runner():
    spec = importlib.util.spec_from_file_location("mpi4py_testsuite",
                                                  PUBLIC / "mpi4py_testsuite.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mpi4py_testsuite"] = mod
    spec.loader.exec_module(mod)
    return mod


suite = _load_runner()
CURATED = [m for m in (line.split("#", 1)[0].strip() for line in
                       (PUBLIC / "mpi4py_curated.txt").read_text().splitlines()) if m]
VENDORS = ["openmpi", "mpich"]
# mpi4py compiled without optimisation: its one large C file builds in about a quarter of
# the time (the suite checks the bindings' behaviour, not their speed)
QUICK_CFLAGS = "-O0 -g0"


def test_known_failures_file_reads_and_matches():
    known = suite.read_known(suite.KNOWN)
    assert known, "tests/public/mpi4py_known_failures.txt lists the remaining failures"
    for pattern, targets, cls, reason in known:
        assert reason and cls in ("unsupported", "isthmus", "vendor", "test", "hang"), pattern
    pattern = known[0][0]
    probe = pattern[:-1] + "x" if pattern.endswith("*") else pattern
    target = next(iter(known[0][1] - {"*"}), "isthmus-openmpi")
    assert suite.known_reason(known, probe, target) is not None


def test_merging_ranks(tmp_path):
    rows = {0: ['{"id": "t.A.a", "outcome": "pass", "detail": ""}',
                '{"id": "t.A.b", "outcome": "pass", "detail": ""}',
                '{"id": "t.A.c", "outcome": "skip", "detail": "no"}'],
            1: ['{"id": "t.A.a", "outcome": "pass", "detail": ""}',
                '{"id": "t.A.b", "outcome": "fail", "detail": "boom"}']}
    for r, lines in rows.items():
        (tmp_path / f"rank{r}.jsonl").write_text("\n".join(lines) + "\n")
    got = suite.merge_ranks(tmp_path, 2)
    assert got["t.A.a"]["status"] == "pass"
    assert got["t.A.b"]["status"] == "fail" and "rank 1: boom" in got["t.A.b"]["detail"]
    assert got["t.A.c"]["status"] == "incomplete"  # rank 1 never reported it


@pytest.fixture(scope="session")
def mpi4py_isthmus(prefix):
    """mpi4py built with isthmus-cc (site directory) and its test/ directory."""
    work = suite.default_workdir()
    try:
        sdist = suite.fetch(work)
    except suite.SuiteError as e:
        if os.environ.get("ISTHMUS_REQUIRE_NATIVE"):
            pytest.fail(f"cannot fetch mpi4py {suite.VERSION} from PyPI: {e}")
        pytest.skip(f"mpi4py {suite.VERSION} could not be fetched here ({e})")
    tests = suite.suite_dir(work, sdist)
    missing = [m for m in CURATED if m not in suite.modules(tests)]
    assert not missing, f"curated modules not in mpi4py's test/: {missing}"
    return suite.build(work, sdist, "isthmus", cflags=QUICK_CFLAGS), tests, work


@pytest.mark.native
@pytest.mark.parametrize("mpi", VENDORS)
@pytest.mark.parametrize("module", CURATED)
def test_mpi4py_suite_across_two_sites(mpi4py_isthmus, mpi, module):
    site, tests, work = mpi4py_isthmus
    target = suite.Target(f"isthmus-{mpi}", "isthmus", mpi)
    known = suite.read_known(suite.KNOWN)
    r = suite.run_module(target, module, [2, 2], tests, site, work, timeout=180, exclude=[],
                         runs="runs-pytest")
    # a test isthmus does not support yet (mpi4py_known_failures.txt) may fail; nothing else
    bad = {t: x for t, x in r["tests"].items() if x["status"] not in ("pass", "skip", "xfail")
           and suite.known_reason(known, t, target.name) is None}
    assert r["rc"] in (0, 1) and r["tests"] and not bad, (
        f"{module} on 2 sites with {mpi}: exit {r['rc']}, {len(bad)} of {len(r['tests'])} "
        f"not passed\n" + "\n".join(f"{t}: {x['status']}: {x['detail'][-800:]}"
                                    for t, x in list(bad.items())[:5]) + r["output"][-3000:])


# An application library built on mpi4py (mpi4py-fft from PyPI): a distributed 3-d FFT,
# slabs on 2 sites and pencils on 3, compared on every rank with numpy's FFT of the same
# global array (tests/public/mpi4py_fft_app.py).
@pytest.mark.native
@pytest.mark.parametrize("layout,mpi,args", [([2, 2], "openmpi", ["slab"]),
                                             ([1, 2, 2], "mpich", ["32", "24", "20", "pencil"])],
                         ids=["2sites-openmpi-slab", "3sites-mpich-pencil"])
def test_mpi4py_fft_across_sites(mpi4py_isthmus, layout, mpi, args):
    site, _, work = mpi4py_isthmus
    try:
        fft_site = suite.build_fft(work)
    except suite.SuiteError as e:
        if os.environ.get("ISTHMUS_REQUIRE_NATIVE"):
            pytest.fail(str(e))
        pytest.skip(str(e))
    r = suite.run_fft(layout, mpi, site, fft_site, args, timeout=240)
    assert r.returncode == 0 and "mpi4py-fft: ok" in r.stdout, (r.stdout + r.stderr)[-4000:]


def test_comparison_counts_only_unexplained_differences():
    t_iso, t_ven = suite.parse_targets("isthmus-mpich,mpich")
    known = [("m.A.known", {"isthmus-mpich"}, "unsupported", "not implemented")]
    results = {
        "mpich": {"m.A.ok": {"status": "pass"}, "m.A.known": {"status": "pass"},
                  "m.A.new": {"status": "pass"}, "m.A.both": {"status": "fail"},
                  "m.A.gone": {"status": "pass"}, "x.B.t": {"status": "pass"}},
        "isthmus-mpich": {"m.A.ok": {"status": "pass"}, "m.A.known": {"status": "fail"},
                          "m.A.new": {"status": "fail"}, "m.A.both": {"status": "fail"},
                          "unittest.loader._FailedTest.x": {"status": "fail"}},
    }
    lines = []
    # new (fails here, passes alone), gone (never ran here); x.B.t is covered by its
    # module's load failure, which itself passes nowhere alone and is not in the list
    assert suite.compare([t_iso, t_ven], results, known, echo=lines.append) == 3
    text = "\n".join(lines)
    assert "m.A.known: fail (passes under the vendor alone) -- known" in text
    assert "m.A.new: fail (passes under the vendor alone) -- NOT in the known list" in text
    assert "m.A.gone: did not run" in text and "x.B.t" not in text
