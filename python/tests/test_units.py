# tests/test_units.py: one parser of sizes (k = 1024) and one of rates (k = 1000) in the
# CLI (isthmus/units.py), the same grammar as the native side's (native/src/common/units.c),
# checked on a corpus against it; the commands that took sizes their own way now agree.
from __future__ import annotations

import json
import subprocess

import pytest

from isthmus import units

SIZES = ["0", "8", "65536", "64k", "64K", "64KiB", "64kB", "64kib", "64ki", "64b", "1m", "1M",
         "1MiB", "1.5m", "0.5k", "1.25k", "2g", "1t", "8388607t", "9223372036854775807",
         # refused
         "", "abc", "-1", "+1", " 1", "1 ", "1x", "1kk", "1.3k", "0x10", "1e3", ".5k", "5.",
         "1kbit", "1.k", "inf", "nan", "1ik", "8388608t", "9999999999999999999",
         "99999999999999999999", "1bk", "1.0000000000000000001"]
RATES = ["1000", "0", "10e9", "1.5e6", "1E3", "1e-3", "100mbit", "1gbit", "1Gbit", "10mbps",
         "10Mbps", "125MB/s", "1kB/s", "1KiB/s", "1kibit", "2tbit", "56kbit", "1.5GB/s", "1MiB/s",
         # refused
         "", "fast", "1g", "100m", "-1", "1e999", "inf", "nan", "1 gbit", "1gbits", "1b/s",
         "1mb", "0x10", "1.", "1e", "1kb/s", "1iB/s", "1ibit", "1Bit/s"]


@pytest.mark.native
@pytest.mark.parametrize("kind,corpus,parse", [("size", SIZES, units.parse_size),
                                               ("rate", RATES, units.parse_rate)])
def test_python_and_native_parsers_agree(prefix, kind, corpus, parse):
    out = subprocess.run([str(prefix.root / "bin" / "isthmus-knobs"), "--parse", kind, *corpus],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(out) == len(corpus)
    for text, native in zip(corpus, out):
        try:
            mine = parse(text)
        except ValueError:
            mine = "error"
        if native == "error" or mine == "error":
            assert native == mine, f"{kind} {text!r}: native {native}, python {mine}"
        else:
            assert float(native) == float(mine), f"{kind} {text!r}: native {native}, python {mine}"


def test_sizes_count_1024_and_rates_1000():
    assert units.parse_size("64k") == units.parse_size("64kB") == units.parse_size("64KiB") == 65536
    assert units.parse_rate("1gbit") == 1e9 and units.parse_rate("1MB/s") == 8e6
    assert units.parse_rate("1MiB/s") == 8 * 2**20
    with pytest.raises(ValueError, match="whole number of bytes"):
        units.parse_size("1.3k")


def test_model_predict_and_tune_read_64k_alike(tmp_path):
    """--size 64k of `model predict` was 64000 bytes, --sizes 64k of `model tune` 65536."""
    from click.testing import CliRunner

    from isthmus.cli import main
    from isthmus.model.loggp import LogGP

    lv = LogGP(L=5e-6, o_s=1e-6, o_r=1e-6, g=1e-6, G=1e-10).as_dict()
    params = tmp_path / "p.json"
    params.write_text(json.dumps({"levels": {"intra": lv}}))
    r = CliRunner().invoke(main, ["model", "predict", "--params", str(params), "--coll",
                                  "allreduce", "-n", "4", "--size", "64k", "--json"])
    assert r.exit_code == 0, r.output
    predicted = json.loads(r.stdout)["size"]
    report = tmp_path / "report.json"
    r = CliRunner().invoke(main, ["model", "tune", "--params", str(params), "--ranks", "4",
                                  "--sites", "2", "--sizes", "64k", "--coll", "allreduce",
                                  "--out", str(tmp_path / "t.json"), "--report", str(report)])
    assert r.exit_code == 0, r.output
    tuned = {row["size"] for row in json.loads(report.read_text())["rows"]}
    assert predicted == 65536 and tuned == {65536}
