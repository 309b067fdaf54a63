# tests/test_mpich_testsuite.py: a curated, fast part of the MPICH test suite (test/mpi of
# MPICH 4.0.2, which isthmus was not written against), built with isthmus-cc and run across
# 2 sites under Open MPI and under MPICH. The list is tests/public/mpich_curated.txt; the
# full comparison with the vendors alone is tests/public/mpich_testsuite.py (docs/
# public-testsuites.md). The suite's source is downloaded on first use (sha256-checked);
# without network this skips, except under ISTHMUS_REQUIRE_NATIVE (CI), where it fails.
from __future__ import annotations

import importlib.util
import os
import sys
import urllib.error
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PUBLIC = REPO / "tests" / "public"


def _load_runner():
    spec = importlib.util.spec_from_file_location("mpich_testsuite",
                                                  PUBLIC / "mpich_testsuite.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mpich_testsuite"] = mod
    spec.loader.exec_module(mod)
    return mod


suite = _load_runner()
CURATED = suite.parse_list_file(PUBLIC / "mpich_curated.txt")
VENDORS = ["openmpi", "mpich"]


def test_curated_list_and_known_failures_are_consistent():
    known = suite.read_known(PUBLIC / "mpich_known_failures.txt")
    assert len(CURATED) >= 20
    assert suite.known_reason(known, suite.Test("coll", "p_bcast", 4), "openmpi")
    assert len(set(CURATED)) == len(CURATED), "a test is listed twice"
    for key, entries in known.items():
        for targets, cls, reason in entries:
            assert cls in ("isthmus", "vendor", "test", "scope", "unsupported"), (key, cls)
            assert reason, key
    # nothing curated is a known failure of an isthmus target
    for test_id in CURATED:
        d, prog = test_id.split()[0].rsplit("/", 1)
        t = suite.Test(d, prog, int(test_id.split()[1]))
        for target in ("isthmus-openmpi", "isthmus-mpich"):
            assert suite.known_reason(known, t, target) is None, (test_id, target)


def test_fortran_directories_build_in_their_own_tree():
    assert suite.tree("isthmus", suite.Test("f08/subarray", "test1", 2)) == "isthmus-fortran"
    assert suite.tree("mpich", suite.Test("f77", "x", 1)) == "mpich-fortran"
    assert suite.tree("openmpi", suite.Test("coll", "allred", 4)) == "openmpi"
    assert set(suite.FORTRAN) <= set(suite.CATEGORIES)


def test_patches_apply_once(tmp_path, monkeypatch):
    (tmp_path / "configure").write_text("a\nif test x = y -a z ; then\nb\n")
    monkeypatch.setattr(suite, "PATCHES", [("configure", [("x = y -a z", "x = y")])])
    suite.patch(tmp_path)
    once = (tmp_path / "configure").read_text()
    assert once == "a\nif test x = y ; then\nb\n"
    suite.patch(tmp_path)   # already applied: unchanged, no error
    assert (tmp_path / "configure").read_text() == once
    (tmp_path / "configure").write_text("something else\n")
    with pytest.raises(suite.SuiteError):
        suite.patch(tmp_path)


def test_split_ranks_over_sites():
    assert suite.split_ranks(5, 2) == [3, 2]
    assert suite.split_ranks(1, 2) == [1]
    assert suite.split_ranks(7, 3) == [3, 2, 2]


def test_testlist_parsing(tmp_path):
    d = tmp_path / "coll"
    d.mkdir()
    (d / "testlist").write_text("# comment\nallred 4 arg=-count=10 timeLimit=30\n"
                                "@largetest@big 8\nexitst 2 resultTest=TestStatus\n"
                                "huge 2 mem=9.5\nprobe 2 env=A=1 xfail=ticket1\n")
    out = []
    suite.parse_testlist(tmp_path, "coll", out)
    assert [t.id for t in out] == ["coll/allred 4 -count=10", "coll/exitst 2",
                                   "coll/probe 2 env:A=1"]
    assert out[0].time_limit == 30 and out[1].result == "TestStatus"



@pytest.fixture(scope="session")
def mpich_suite(prefix):
    """The suite configured for isthmus-cc (and, for the Fortran directories, isthmus-fc),
    with the curated programs built; the build trees by suite.tree()."""
    work = suite.default_workdir()
    try:
        tarball = suite.fetch(work)
    except (urllib.error.URLError, OSError) as e:
        if os.environ.get("ISTHMUS_REQUIRE_NATIVE"):
            pytest.fail(f"cannot download the MPICH test suite ({suite.URL}): {e}")
        pytest.skip(f"the MPICH test suite could not be downloaded here ({e}); "
                    f"it comes from {suite.URL}")
    src = suite.extract(work, tarball)
    tests = suite.select(suite.all_tests(src, suite.CATEGORIES), CURATED, 64)
    missing = set(CURATED) - {t.id for t in tests}
    assert not missing, f"curated tests not in the suite's testlists: {sorted(missing)}"
    dirs = {}
    for name in sorted({suite.tree("isthmus", t) for t in tests}):
        dirs[name] = suite.configure(work, src, name)
        suite.build_programs(dirs[name], [t for t in tests if suite.tree("isthmus", t) == name],
                             name)
    return dirs, {t.id: t for t in tests}


@pytest.mark.native
@pytest.mark.parametrize("mpi", VENDORS)
@pytest.mark.parametrize("test_id", CURATED)
def test_mpich_suite_across_two_sites(mpich_suite, mpi, test_id):
    dirs, tests = mpich_suite
    test = tests[test_id]
    target = suite.Target(f"isthmus-{mpi}", "isthmus", mpi)
    r = suite.run_one(target, test, dirs[suite.tree("isthmus", test)], sites=2,
                      default_timeout=90)
    assert r["status"] == "pass", (
        f"{test_id} on 2 sites with {mpi}: {r['status']} ({r['secs']} s)\n{r.get('output', '')}")
