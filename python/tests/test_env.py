# tests/test_env.py: the environment contract with the C side, for a 3-site layout: each
# site gets exactly the documented ISTHMUS_* variables with the right values, plus the
# user's own ISTHMUS_* variables passed through.
from pathlib import Path

import pytest

from isthmus.launch.env import CONTRACT_VARS, site_env
from isthmus.launch.job import plan_job
from isthmus.launch.layout import Layout, Site
from isthmus.paths import Prefix

JOB = "0123456789abcdef0123456789abcdef"
LAYOUT = Layout(
    sites=(
        Site("A", ranks=2, gateways=1, port=41000, mpi="openmpi"),
        Site("B", ranks=3, gateways=2, host="10.1.2.3", port=42000, mpi="mpich"),
        Site("C", ranks=1, gateways=1, host="::1", port=43000, mpi="openmpi"),
    )
)
PREFIX = Prefix(Path("/opt/isthmus"))


def expected(index, vendor):
    return {
        "ISTHMUS_JOB": JOB,
        "ISTHMUS_SITE": str(index),
        "ISTHMUS_SITE_NAMES": "A,B,C",
        "ISTHMUS_SITE_RANKS": "2,3,1",
        "ISTHMUS_SITE_GATEWAYS": "1,2,1",
        "ISTHMUS_GATEWAY_ADDRS": "127.0.0.1:41000,10.1.2.3:42000,[::1]:43000",
        "ISTHMUS_SITE_DIALOUT": "0,0,0",
        "ISTHMUS_SECRET_FILE": "/tmp/isthmus-x/secret",
        "ISTHMUS_MPI": vendor,
        "ISTHMUS_PREFIX": "/opt/isthmus",
        "ISTHMUS_TRANSPORT": "tcp",
    }


def test_contract_variable_names():
    assert CONTRACT_VARS == (
        "ISTHMUS_JOB", "ISTHMUS_SITE", "ISTHMUS_SITE_NAMES", "ISTHMUS_SITE_RANKS",
        "ISTHMUS_SITE_GATEWAYS", "ISTHMUS_GATEWAY_ADDRS", "ISTHMUS_SITE_DIALOUT",
        "ISTHMUS_SECRET_FILE", "ISTHMUS_MPI",
        "ISTHMUS_PREFIX", "ISTHMUS_TRANSPORT",
    )


@pytest.mark.parametrize("index,vendor", [(0, "openmpi"), (1, "mpich"), (2, "openmpi")])
def test_site_env_exact(index, vendor):
    env = site_env(LAYOUT, index, job_id=JOB, secret_path="/tmp/isthmus-x/secret", vendor=vendor, prefix="/opt/isthmus")
    assert env == expected(index, vendor)


def test_plan_env_per_site(monkeypatch):
    monkeypatch.setattr("isthmus.launch.idle.cpus", lambda: 64)  # not oversubscribed here
    base = {
        "PATH": "/usr/bin", "HOME": "/root",
        "ISTHMUS_STATS": "1", "ISTHMUS_TIMEOUT": "30",
        "ISTHMUS_SITE": "7",  # stale value from an outer job: overridden
    }
    plan = plan_job(
        LAYOUT, "./ring", ("-v",), prefix=PREFIX, secret_path="/tmp/isthmus-x/secret",
        job_id=JOB, base_env=base, vendor_resolver=lambda r: r,
        command_builder=lambda launch: ["true"],
    )
    assert plan.job_id == JOB
    for i, (site, vendor) in enumerate(zip(plan.sites, ("openmpi", "mpich", "openmpi"))):
        want = expected(i, vendor)
        isthmus_vars = {k: v for k, v in site.env.items() if k.startswith("ISTHMUS_")}
        assert isthmus_vars == {**want, "ISTHMUS_STATS": "1", "ISTHMUS_TIMEOUT": "30"}
        assert site.isthmus_env == isthmus_vars
        assert site.env["PATH"] == "/usr/bin" and site.env["HOME"] == "/root"
        assert site.vendor == vendor


def test_stats_flag_sets_isthmus_stats():
    plan = plan_job(
        LAYOUT, "./ring", (), prefix=PREFIX, secret_path="/s", job_id=JOB, base_env={},
        stats=True, vendor_resolver=lambda r: r, command_builder=lambda launch: ["true"],
    )
    assert all(s.env["ISTHMUS_STATS"] == "1" for s in plan.sites)


def test_generated_job_id_shared_by_all_sites():
    plan = plan_job(
        LAYOUT, "./ring", (), prefix=PREFIX, secret_path="/s", base_env={},
        vendor_resolver=lambda r: r, command_builder=lambda launch: ["true"],
    )
    ids = {s.env["ISTHMUS_JOB"] for s in plan.sites}
    assert len(ids) == 1 and len(ids.pop()) == 32


def test_command_builder_sees_site_and_env():
    seen = []
    plan_job(
        LAYOUT, "./ring", ("a", "b"), prefix=PREFIX, secret_path="/s", job_id=JOB, base_env={},
        vendor_resolver=lambda r: r, command_builder=lambda launch: seen.append(launch) or ["true"],
    )
    assert [l.site.name for l in seen] == ["A", "B", "C"]
    assert seen[1].vendor == "mpich" and seen[1].args == ("a", "b") and seen[1].program == "./ring"
    assert seen[1].env["ISTHMUS_SITE"] == "1"


def test_stdin_goes_to_site_zero_only():
    plan = plan_job(
        LAYOUT, "./ring", (), prefix=PREFIX, secret_path="/s", job_id=JOB, base_env={},
        vendor_resolver=lambda r: r, command_builder=lambda launch: ["true"],
    )
    assert [s.stdin for s in plan.sites] == ["inherit", "null", "null"]


# How long waiting ranks yield before they nap (launch/idle.py): short when every site runs
# here and the job has more busy processes than the machine has CPUs; left to the library
# otherwise, and never over the user's own value.
def test_idle_budget_is_short_only_when_this_machine_is_oversubscribed():
    from isthmus.launch.idle import VAR, idle_env, processes_here

    two = Layout(sites=(Site("A", ranks=2), Site("B", ranks=2)))
    assert processes_here(two) == 6  # 4 ranks and 2 gateways
    assert idle_env(two, {}, ncpu=2) == {VAR: "50"}
    assert idle_env(two, {}, ncpu=6) == {}
    assert idle_env(two, {VAR: "700"}, ncpu=2) == {}  # the user's value stands
    # a lone site's gateway has nobody to talk to: 2 ranks fit 2 CPUs
    assert idle_env(Layout(sites=(Site("A", ranks=2),)), {}, ncpu=2) == {}
    # sites started elsewhere, or placed by their own mpirun arguments, are not counted
    away = Layout(sites=(Site("A", ranks=1), Site("B", ranks=8, launcher="ssh", ssh_host="b"),
                         Site("C", ranks=8, mpirun_args=("--host", "n1,n2"))))
    assert processes_here(away) == 2
    assert idle_env(away, {}, ncpu=2) == {}


def test_plan_passes_the_idle_budget_to_every_site(monkeypatch):
    monkeypatch.setattr("isthmus.launch.idle.cpus", lambda: 2)
    plan = plan_job(
        LAYOUT, "./ring", (), prefix=PREFIX, secret_path="/s", job_id=JOB, base_env={},
        vendor_resolver=lambda r: r, command_builder=lambda launch: ["true"],
    )
    assert all(s.env["ISTHMUS_IDLE_YIELD_US"] == "50" for s in plan.sites)
    assert all(s.isthmus_env["ISTHMUS_IDLE_YIELD_US"] == "50" for s in plan.sites)
