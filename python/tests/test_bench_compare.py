# tests/test_bench_compare.py: compare (matching, ratios, speed-ups, geometric means,
# selectors and their mistakes), plots and the self-contained HTML report, on synthetic
# results with known ratios.
from __future__ import annotations

import pytest
from rich.console import Console

from isthmus.bench import campaign as campaign_mod
from isthmus.bench.compare import compare, parse_selector
from isthmus.bench.plan import load_plan
from isthmus.bench.report import write_report
from isthmus.bench.results import load
from isthmus.bench import plot
from isthmus.errors import IsthmusError

from bench_fakes import fake_plan, fake_result

PLAN = fake_plan("cmp", runs=3, extra='[[benchmark]]\nname = "coll"\nops = ["allreduce"]\n')


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cmp")
    (tmp / "plan.toml").write_text(PLAN)
    plan = load_plan(tmp / "plan.toml", check_launchable=False)
    seeds = iter(range(1000))
    mp = pytest.MonkeyPatch()
    # isthmus takes twice the time (half the bandwidth) of the vendor
    mp.setattr(campaign_mod, "run_launch",
               lambda l: fake_result(l, factor=2.0 if l.library.startswith("isthmus") else 1.0, seed=next(seeds)))
    campaign_mod.run_campaign(plan, tmp / "res", Console(file=open("/dev/null", "w")))
    mp.undo()
    return tmp / "res"


def test_compare_finds_known_ratios(results_dir):
    cmp = compare(parse_selector(f"{results_dir}@library=openmpi"),
                  parse_selector(f"{results_dir}@library=isthmus-openmpi"))
    assert len(cmp.points) == 9 and cmp.only_a == cmp.only_b == 0
    for p in cmp.points:
        expect = 0.5 if p.metric == "bandwidth" else 2.0
        assert p.ratio.value == pytest.approx(expect, rel=0.1)
        assert p.ratio.low <= p.ratio.value <= p.ratio.high
        assert p.speedup == pytest.approx(0.5, rel=0.1)   # B is slower on every metric
        assert p.a_runs == p.b_runs == 3
    summary = {name: (n, g) for name, n, g, lo, hi in cmp.summary()}
    assert summary["all points"][0] == 9
    assert summary["all points"][1] == pytest.approx(0.5, rel=0.05)
    assert summary["bw (bandwidth)"][1] == pytest.approx(0.5, rel=0.05)


def test_selector_mistakes(results_dir):
    with pytest.raises(IsthmusError, match="filter 'colour=red' must be key=value"):
        parse_selector(f"{results_dir}@colour=red")
    with pytest.raises(IsthmusError, match="selects no successful measurements"):
        compare(parse_selector(f"{results_dir}@library=mpich"), parse_selector(str(results_dir)))
    with pytest.raises(IsthmusError, match="no results here"):
        compare(parse_selector("/nonexistent/res"), parse_selector(str(results_dir)))
    with pytest.raises(IsthmusError, match="no point in common"):
        compare(parse_selector(f"{results_dir}@library=openmpi,benchmark=bw"),
                parse_selector(f"{results_dir}@library=isthmus-openmpi,benchmark=latency"))


def test_plots_are_written(results_dir, tmp_path):
    res = load([results_dir])
    cmp = compare(parse_selector(f"{results_dir}@library=openmpi"),
                  parse_selector(f"{results_dir}@library=isthmus-openmpi"))
    made = plot.curves(res.points, tmp_path, "png") + plot.speedup_bars(cmp, tmp_path, "svg") + \
        plot.heatmap(cmp, tmp_path, "svg")
    names = sorted(p.name for p in made)
    assert names == sorted(["curve-latency.png", "curve-bw.png", "curve-coll-allreduce.png",
                            "speedup.svg", "heatmap.svg"])
    for p in made:
        head = p.read_bytes()[:8]
        assert head.startswith(b"\x89PNG") if p.suffix == ".png" else b"<" in head


def test_report_is_self_contained(results_dir, tmp_path):
    res = load([results_dir])
    cmp = compare(parse_selector(f"{results_dir}@library=openmpi"),
                  parse_selector(f"{results_dir}@library=isthmus-openmpi"))
    out = write_report(res, [cmp], tmp_path / "r.html", "test report")
    html = out.read_text()
    assert html.count("data:image/png;base64,") >= 5
    assert "fake-cmd latency" in html             # exact commands
    assert "[campaign]" in html                   # the plan
    assert "speed-up" in html and "0.5" in html
    assert "src=\"http" not in html and "href=\"http" not in html
