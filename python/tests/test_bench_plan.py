# tests/test_bench_plan.py: campaign plans: expansion into points (runs interleaved,
# libraries back to back), stable keys, and a clear message for every kind of mistake.
from __future__ import annotations

import pytest

from isthmus.bench.catalog import check_ranks, to_args
from isthmus.bench.plan import load_plan
from isthmus.errors import IsthmusError

GOOD = """
[campaign]
name = "t"
runs = 2
timeout = 60
[matrix]
ranks = [2, 4]
libraries = ["openmpi", "isthmus-openmpi"]
profiles = ["loopback", "wan"]
[profiles.wan]
link = "delay=2ms,rate=1gbit"
sites = 2
[defaults]
reps = 3
[[benchmark]]
name = "latency"
sizes = [8, "1k"]
iters = 10
[[benchmark]]
name = "interference"
background = ["none", "alltoall"]
ranks = [4]
"""


def write(tmp_path, text, name="plan.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_plan_expands_into_interleaved_points(tmp_path):
    plan = load_plan(write(tmp_path, GOOD), check_launchable=False)
    # latency: 2 ranks x 2 profiles x 2 libs = 8; interference: 2 backgrounds x 1 x 2 x 2 = 8
    assert len(plan.points) == 2 * 16
    assert [p.run for p in plan.points] == [0] * 16 + [1] * 16
    first = plan.points[:2]
    assert [p.library for p in first] == ["openmpi", "isthmus-openmpi"]
    assert first[0].args == ("-r", "3", "-m", "8,1k", "-i", "10")
    keys = [p.key for p in plan.points]
    assert len(set(keys)) == len(keys)
    assert load_plan(write(tmp_path, GOOD), check_launchable=False).points[5].key == keys[5]
    bgs = {dict(p.options).get("background") for p in plan.points if p.benchmark == "interference"}
    assert bgs == {"none", "alltoall"}
    # a vendor alone on loopback is one job on this host: 1 site
    assert {(p.library, p.profile.name, p.sites) for p in plan.points if p.ranks == 2} == {
        ("openmpi", "loopback", 1), ("isthmus-openmpi", "loopback", 2),
        ("openmpi", "wan", 2), ("isthmus-openmpi", "wan", 2)}


@pytest.mark.parametrize("text,message", [
    ("[[benchmark]]\nname = 'pingpong'\n", "unknown benchmark 'pingpong'"),
    ("[[benchmark]]\nname = 'msgrate'\n[matrix]\nranks = [3]\n", "needs an even rank count; got 3"),
    ("[[benchmark]]\nname = 'interference'\nbackground = 'pairs'\n[matrix]\nranks = [3]\n",
     "interference needs at least 4 ranks (2 measured ranks plus at least 2"),
    ("[[benchmark]]\nname = 'latency'\npeer = 5\n[matrix]\nranks = [4]\n", "latency needs at least 6 ranks"),
    ("[[benchmark]]\nname = 'latency'\n[matrix]\nlibraries = ['intelmpi']\n", "unknown MPI library 'intelmpi'"),
    ("[[benchmark]]\nname = 'latency'\n[matrix]\nprofiles = ['wan']\n", "no profile 'wan'"),
    ("[[benchmark]]\nname = 'latency'\nsizes = ['8x']\n", "is not a size"),
    ("[[benchmark]]\nname = 'coll'\nops = ['allreduse']\n", "unknown collective 'allreduse'"),
    ("[[benchmark]]\nname = 'latency'\nwarp = 9\n", "unknown option 'warp'"),
    ("[campaign]\nruns = 0\n[[benchmark]]\nname = 'latency'\n", "runs must be an integer >= 1"),
    ("[campagne]\n", "unknown key 'campagne'"),
    ("[campaign]\nname = 'x'\n", "no [[benchmark]] entries"),
    ("[[benchmark]]\nsizes = [8]\n", "needs a name"),
    ("[[benchmark]]\nname = 'latency'\n[profiles.w]\nlink = 'delay=2ms'\nsites = 1\n",
     "an emulated link needs at least 2 sites"),
    ("[[benchmark]]\nname = 'latency'\n[matrix]\nranks = [4]\n[profiles.big]\nsites = 8\n"
     "[matrix.x]\n", "unknown key 'x'"),
    ("[[benchmark\nname = 'latency'\n", "not valid TOML"),
])
def test_plan_mistakes_are_named(tmp_path, text, message):
    with pytest.raises(IsthmusError) as e:
        load_plan(write(tmp_path, text), check_launchable=False)
    assert message in str(e.value)
    assert "plan.toml" in str(e.value)


def test_ranks_must_fill_the_sites(tmp_path):
    text = ("[[benchmark]]\nname = 'coll'\n[matrix]\nranks = [2]\nlibraries = ['isthmus-openmpi']\n"
            "profiles = ['three']\n[profiles.three]\nsites = 3\n")
    with pytest.raises(IsthmusError, match="2 ranks cannot fill 3 sites"):
        load_plan(write(tmp_path, text), check_launchable=False)


def test_unreadable_plan(tmp_path):
    with pytest.raises(IsthmusError, match="cannot read plan .*missing.toml"):
        load_plan(tmp_path / "missing.toml")


def test_options_become_bench_arguments():
    assert to_args({"sizes": "1:1M", "ops": ["bcast"], "nonblocking": True, "fractions": [50, 12.5]}) == [
        "-m", "1:1M", "--op", "bcast", "--nonblocking", "--fractions", "50,12.5"]
    with pytest.raises(IsthmusError, match="expected a non-negative integer"):
        to_args({"iters": "ten"})


def test_rank_checks():
    check_ranks("coll", {}, 1)
    check_ranks("one2many", {"partners": [1, 3]}, 4)
    with pytest.raises(IsthmusError, match="one2many needs at least 5 ranks"):
        check_ranks("one2many", {"partners": [4]}, 4)
