# tests/test_bench_nbc_overlap.py: bench/nbc_overlap.py runs end to end (one vendor, one
# repetition, a short link) and saves one JSON record per case with the program's fields;
# and its bound is the arithmetic its docstring states. No timing is asserted: the run is
# a benchmark on a shared machine.
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from isthmus.netemu.spec import parse_link_spec

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load():
    spec = importlib.util.spec_from_file_location("bench_nbc_overlap", BENCH / "nbc_overlap.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


nbc = _load()


def test_bound_is_one_delay_plus_the_bytes_at_the_link_rate():
    link = parse_link_spec("delay=10ms,rate=100mbit")
    assert nbc.bound_ms(8 * 128 * 1024, link) == pytest.approx(10 + 2**20 * 8 / 100e6 * 1e3)
    assert nbc.bound_ms(8 * 128 * 1024, parse_link_spec("delay=10ms")) is None


@pytest.mark.native
@pytest.mark.netadmin
def test_driver_runs_every_case_and_saves_its_records(netadmin, tmp_path):
    out = tmp_path / "nbc.jsonl"
    cmd = [sys.executable, str(BENCH / "nbc_overlap.py"), "--reps", "1", "--vendors", "openmpi",
           "--wan", "delay=2ms,rate=100mbit", "--timeout", "60", "--json", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=90,
                       env=dict(os.environ, ISTHMUS_PREFIX=str(netadmin.root)))
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [x["case"] for x in recs] == list(nbc.CASES)
    for x in recs:
        assert x["vendor"] == "openmpi" and x["ranks"] == 4 and x["reps"] == 1
        assert len(x["all_ms"]) == 1 and x["best_ms"] == x["median_ms"] == x["all_ms"][0] > 0
        # all ranks on this machine share one clock, so the skew-free figures are there
        assert len(x["skew_all_ms"]) == 1 and x["skew_all_ms"][0] >= 0
        assert x["from_last_start_all_ms"] == [x["from_last_start_best_ms"]]
    sizes = {x["case"]: (x["bytes"], x["n"]) for x in recs}
    assert sizes == {"one": (8, 1), "eight": (8, 8), "eight_128k": (131072, 8),
                     "blocking": (8, 1)}
    assert r.stdout.count("| eight_128k |") == 2  # both tables
