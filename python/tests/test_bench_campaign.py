# tests/test_bench_campaign.py: campaigns with a stand-in launcher: every point recorded,
# failed points recorded as failed (never dropped), resume after an interruption runs
# only what is missing, --retry-failed reruns failures, a torn last line is tolerated.
from __future__ import annotations

import json

import pytest
from rich.console import Console

from isthmus.bench import campaign as campaign_mod
from isthmus.bench.plan import load_plan
from isthmus.bench.results import load

from bench_fakes import fake_plan, fake_result

PLAN = fake_plan("fake", runs=2)


@pytest.fixture
def plan(tmp_path):
    p = tmp_path / "plan.toml"
    p.write_text(PLAN)
    return load_plan(p, check_launchable=False)


def console():
    return Console(file=open("/dev/null", "w"), force_terminal=False)


def test_campaign_records_every_point(plan, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(campaign_mod, "run_launch", lambda l: calls.append(l) or fake_result(l))
    out = campaign_mod.run_campaign(plan, tmp_path / "res", console())
    assert (out.total, out.ran, out.skipped, out.failed) == (8, 8, 0, [])
    res = load([tmp_path / "res"])
    assert len(res.launches) == 8 and len(res.ok_points) == 24
    rec = res.ok_points[0]
    assert rec["library"] == "openmpi" and rec["command"] == "fake-cmd latency" and rec["run"] == 0
    meta = json.loads((tmp_path / "res" / "campaign.json").read_text())
    assert meta["plan"] == PLAN and meta["sessions"][0]["launched"] == 8
    assert (tmp_path / "res" / "plan.toml").read_text() == PLAN


def test_interrupted_campaign_resumes_where_it_stopped(plan, tmp_path, monkeypatch):
    calls = []

    def interrupt_third(launch):
        calls.append(launch)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return fake_result(launch)

    monkeypatch.setattr(campaign_mod, "run_launch", interrupt_third)
    out = campaign_mod.run_campaign(plan, tmp_path / "res", console())
    assert out.interrupted and out.ran == 2
    assert len(load([tmp_path / "res"]).launches) == 2

    again = []
    monkeypatch.setattr(campaign_mod, "run_launch", lambda l: again.append(l) or fake_result(l))
    out = campaign_mod.run_campaign(plan, tmp_path / "res", console())
    assert (out.ran, out.skipped, out.interrupted) == (6, 2, False)
    # the two finished launches were not repeated; the interrupted one was
    assert [(l.benchmark, l.library) for l in again[:1]] == [(calls[2].benchmark, calls[2].library)]
    res = load([tmp_path / "res"])
    assert len(res.launches) == 8 and len(res.ok_points) == 24
    assert len(json.loads((tmp_path / "res" / "campaign.json").read_text())["sessions"]) == 2


def test_failed_point_is_recorded_and_retried_only_on_request(plan, tmp_path, monkeypatch):
    monkeypatch.setattr(campaign_mod, "run_launch",
                        lambda l: fake_result(l, fail=(l.benchmark == "bw" and l.library == "openmpi")))
    out = campaign_mod.run_campaign(plan, tmp_path / "res", console())
    assert len(out.failed) == 2
    res = load([tmp_path / "res"])
    failed = res.failed
    assert {f["benchmark"] for f in failed} == {"bw"}
    assert failed[0]["error"] == "exit code 1: boom: rank 1 died"
    assert failed[0]["command"] == "fake-cmd bw"
    # what a failed launch measured before dying is kept, marked by its failed launch
    assert len(res.ok_points) == 6 * 3 + 2 * 1

    ran = []
    monkeypatch.setattr(campaign_mod, "run_launch", lambda l: ran.append(l) or fake_result(l))
    assert campaign_mod.run_campaign(plan, tmp_path / "res", console()).ran == 0
    out = campaign_mod.run_campaign(plan, tmp_path / "res", console(), retry_failed=True)
    assert out.ran == 2 and not out.failed
    res = load([tmp_path / "res"])
    assert not res.failed and len(res.ok_points) == 24  # the retry replaced the partial points


def test_torn_last_line_is_skipped_with_a_warning(plan, tmp_path, monkeypatch):
    monkeypatch.setattr(campaign_mod, "run_launch", fake_result)
    campaign_mod.run_campaign(plan, tmp_path / "res", console())
    with open(tmp_path / "res" / "results.jsonl", "a") as f:
        f.write('{"kind":"point","benchmark":"lat')
    res = load([tmp_path / "res"])
    assert len(res.launches) == 8
    assert any("interrupted write" in w for w in res.warnings)
