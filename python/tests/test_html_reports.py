# tests/test_html_reports.py: every HTML report isthmus writes (`bench report`, `noise
# report`, `trace summary`) opened in a real headless browser (tests/browser.py): it
# renders every plot (images that decode) and its tables, with no error in the console;
# a screenshot of each is kept with the test's output.
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from browser import render
from isthmus.cli import main

REPO = Path(__file__).resolve().parents[2]


def _ok(result: dict, min_images: int, min_tables: int) -> None:
    assert result["errors"] == [], result
    assert result["images"] + result["svgs"] >= min_images and result["broken"] == 0, result
    assert result["tables"] >= min_tables and result["rows"] > min_tables, result


def test_bench_report_renders(tmp_path):
    from bench_fakes import fake_plan, fake_result
    from isthmus.bench import campaign as campaign_mod
    from isthmus.bench.compare import compare, parse_selector
    from isthmus.bench.plan import load_plan
    from isthmus.bench.report import write_report
    from isthmus.bench.results import load

    (tmp_path / "plan.toml").write_text(fake_plan("html", runs=2))
    plan = load_plan(tmp_path / "plan.toml", check_launchable=False)
    seeds = iter(range(1000))
    mp = pytest.MonkeyPatch()
    mp.setattr(campaign_mod, "run_launch",
               lambda l: fake_result(l, factor=2.0 if l.library.startswith("isthmus") else 1.0,
                                     seed=next(seeds)))
    with open("/dev/null", "w") as null:
        campaign_mod.run_campaign(plan, tmp_path / "res", Console(file=null))
    mp.undo()
    res = load([tmp_path / "res"])
    cmp = compare(parse_selector(f"{tmp_path / 'res'}@library=openmpi"),
                  parse_selector(f"{tmp_path / 'res'}@library=isthmus-openmpi"))
    page = write_report(res, [cmp], tmp_path / "report.html", "bench report")
    _ok(render(page, "bench-report", tmp_path), min_images=3, min_tables=2)


def test_noise_report_renders(tmp_path):
    from test_noise_analysis import _traced_run

    d = _traced_run(tmp_path)
    r = CliRunner().invoke(main, ["noise", "report", str(d)])
    assert r.exit_code == 0, r.output
    _ok(render(d / "report" / "index.html", "noise-report", tmp_path), min_images=2,
        min_tables=1)


@pytest.mark.native
def test_trace_summary_renders(prefix, tmp_path):
    from trace_helpers import traced_run

    exe = tmp_path / "ring"
    r = subprocess.run([str(prefix.cc), "-O2", "-o", str(exe), str(REPO / "examples" / "ring.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    trace = tmp_path / "trace"
    r = traced_run(exe, trace, 4, "2,2", args=(3, 65536))
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
    s = subprocess.run([sys.executable, "-m", "isthmus", "trace", "summary", str(trace)],
                       capture_output=True, text=True)
    assert s.returncode == 0, s.stderr
    _ok(render(trace / "summary.html", "trace-summary", tmp_path), min_images=3, min_tables=5)
