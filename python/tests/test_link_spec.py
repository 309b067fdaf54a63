# tests/test_link_spec.py: the link spec language, the TOML link matrix, and the
# `isthmus link emulate` errors that come before any privilege is needed (no root here).
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from isthmus.cli import main
from isthmus.errors import IsthmusError
from isthmus.netemu.matrix import load_matrix, uniform
from isthmus.netemu.spec import LinkSpec, parse_link_spec, parse_rate, parse_size, parse_time


@pytest.mark.parametrize("text,seconds", [("20ms", 0.02), ("1.5s", 1.5), ("250us", 250e-6),
                                          ("100ns", 1e-7), ("0ms", 0.0)])
def test_times(text, seconds):
    assert parse_time(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text,Bps", [("1gbit", 1.25e8), ("100mbit", 12.5e6), ("800kbit", 1e5),
                                      ("10Mbps", 1.25e6), ("808kB/s", 808e3), ("71kB/s", 71e3),
                                      ("1MiB/s", 1048576), ("1.5GB/s", 1.5e9)])
def test_rates(text, Bps):
    assert parse_rate(text) == pytest.approx(Bps)


# sizes count k = 1024 with or without the i, as everywhere in isthmus (isthmus/units.py)
@pytest.mark.parametrize("text,n", [("256kB", 262144), ("64KiB", 65536), ("1MiB", 1048576),
                                    ("1500", 1500), ("2MB", 2097152)])
def test_sizes(text, n):
    assert parse_size(text) == n


def test_full_spec_and_native_form():
    s = parse_link_spec("delay=20ms,jitter=1ms,rate=1gbit,loss=0.1%,queue=256kB,mtu=9000,"
                        "dup=0.5%,reorder=on,bucket=18kB")
    assert (s.delay, s.jitter, s.rate, s.loss, s.queue, s.mtu, s.dup, s.reorder, s.bucket) == (
        pytest.approx(0.02), pytest.approx(0.001), 1.25e8, pytest.approx(0.001), 262144, 9000,
        pytest.approx(0.005), True, 18432)
    native = dict(kv.split("=") for kv in s.native().split(","))
    assert native["delay"] == "20000000" and native["jitter"] == "1000000"
    assert float(native["rate"]) == 1.25e8 and native["queue"] == "262144"
    assert native["mtu"] == "9000" and native["reorder"] == "1" and native["burst"] == "18432"
    assert float(native["loss"]) == pytest.approx(0.001) and "ge" not in native


def test_defaults():
    s = parse_link_spec("delay=10ms,rate=100mbit")
    # about one round trip of data at the rate, at least 64 KiB
    assert s.queue_bytes() == int(12.5e6 * 0.02)
    assert parse_link_spec("delay=1ms,rate=1mbit").queue_bytes() == 65536
    assert s.bucket_bytes() == 1500 and s.mtu == 1500 and s.loss == 0 and not s.reorder


def test_lossburst_becomes_gilbert():
    s = parse_link_spec("loss=2%,lossburst=4")
    p, r, bad, good = s.ge_params()
    assert r == pytest.approx(0.25) and (bad, good) == (1.0, 0.0)
    assert p / (p + r) == pytest.approx(0.02)  # the mean loss asked for
    assert "ge=" in s.native() and "loss=" not in s.native()
    g = parse_link_spec("ge=1%/25%/100%/0%")
    assert g.mean_loss() == pytest.approx(0.01 / 0.26)


def test_base_spec_is_extended():
    base = parse_link_spec("delay=5ms,rate=10mbit")
    s = parse_link_spec("loss=1%", base)
    assert s.delay == pytest.approx(0.005) and s.rate == 1.25e6 and s.loss == pytest.approx(0.01)


@pytest.mark.parametrize("spec,words", [
    ("delay=20", "give a unit"),
    ("delay=fast", "not a time"),
    ("rate=1gb", "not a rate"),
    ("loss=120%", "between 0 and 100%"),
    ("colour=red", "unknown key 'colour'"),
    ("delay", "not key=value"),
    ("delay=1ms,delay=2ms", "given twice"),
    ("mtu=20", "MTU between 68"),
    ("queue=1000", "cannot hold one packet"),
    ("lossburst=4", "needs loss"),
    ("loss=1%,lossburst=0.5", "at least 1 packet"),
    ("ge=1%/2%", "P/R/LOSS_BAD/LOSS_GOOD"),
    ("", "empty"),
    ("rate=10bit", "below 1 kbit/s"),
])
def test_bad_specs_say_what_and_how(spec, words):
    with pytest.raises(IsthmusError) as e:
        parse_link_spec(spec)
    msg = str(e.value)
    assert words in msg and "example: delay=" in msg


def test_matrix_pairs_directions_and_default(tmp_path):
    f = tmp_path / "links.toml"
    f.write_text('sites = 3\ndefault = "delay=1ms,rate=100mbit"\n[links]\n'
                 '"A-B" = "delay=27ms,rate=808kB/s"\n"B>C" = "delay=84ms"\n')
    m = load_matrix(f)
    assert m.names == ("A", "B", "C")
    assert m.get(0, 1).delay == pytest.approx(0.027) and m.get(1, 0).rate == 808e3
    assert m.get(1, 2).delay == pytest.approx(0.084) and m.get(1, 2).rate == 12.5e6  # default kept
    assert m.get(2, 1).delay == pytest.approx(0.001)  # one direction only
    assert m.get(0, 2) == m.get(2, 0) == parse_link_spec("delay=1ms,rate=100mbit")
    args = m.native_args()
    assert len(args) == 2 * 6 and args[1].startswith("0:1:delay=27000000")


def test_matrix_named_sites_and_base(tmp_path):
    f = tmp_path / "m.toml"
    f.write_text('sites = ["east", "west"]\n[links]\n"east>west" = "loss=1%"\n')
    m = load_matrix(f, base=parse_link_spec("delay=3ms,mtu=9000"))
    assert m.names == ("east", "west") and m.get(0, 1).loss == pytest.approx(0.01)
    assert m.get(1, 0).delay == pytest.approx(0.003) and m.site_mtu(0) == 9000


@pytest.mark.parametrize("body,words", [
    ('sites = 3\n[links]\n"A-D" = "delay=1ms"\n', "names site 'D'"),
    ('sites = 1\n', "2 to 64 sites"),
    ('sites = ["A", "A"]\n', "appears twice"),
    ('sites = ["a-b", "c"]\n', "not valid"),
    ('sites = 2\n[links]\n"A+B" = "delay=1ms"\n', '"A-B" (both directions)'),
    ('sites = 2\n[links]\n"A-A" = "delay=1ms"\n', "to itself"),
    ('sites = 2\n[links]\n"A-B" = 5\n', "must be a string"),
    ('sites = 2\nfoo = 1\n', "unknown key"),
    ('sites = 2\n[links]\n"A-B" = "delay=soon"\n', "bad link spec"),
    ('sites = [\n', "not valid TOML"),
])
def test_matrix_errors(tmp_path, body, words):
    f = tmp_path / "bad.toml"
    f.write_text(body)
    with pytest.raises(IsthmusError, match=None) as e:
        load_matrix(f)
    assert words in str(e.value)


def test_matrix_sites_must_agree(tmp_path):
    f = tmp_path / "m.toml"
    f.write_text("sites = 3\n")
    with pytest.raises(IsthmusError, match="--sites 2 disagrees"):
        load_matrix(f, sites=2)


def test_uniform_matrix_covers_every_direction():
    m = uniform(4, LinkSpec(delay=0.001))
    assert len(m.links) == 12 and all(s.delay == 0.001 for s in m.links.values())


def test_cli_bad_spec_exits_2_with_message():
    r = CliRunner().invoke(main, ["link", "emulate", "--link", "delay=20,rate=1gbit"])
    assert r.exit_code == 2
    assert "isthmus: bad link spec 'delay=20,rate=1gbit'" in r.output and "give a unit" in r.output


def test_cli_bad_matrix_file_exits_2(tmp_path):
    r = CliRunner().invoke(main, ["link", "emulate", "--matrix", str(tmp_path / "none.toml")])
    assert r.exit_code == 2 and "cannot read link matrix" in r.output


def test_cli_unknown_site_exits_2():
    r = CliRunner().invoke(main, ["link", "emulate", "--site", "Q", "--", "true"])
    assert r.exit_code == 2 and "--site Q: no such site" in r.output


def _unprivileged_argv(argv):
    """argv run without privileges: as is when not root, else as nobody via setpriv."""
    if os.geteuid() != 0:
        return argv
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is needed to drop root for this test")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", *argv]


def test_cli_without_privileges_says_needs_root(tmp_path):
    argv = _unprivileged_argv([sys.executable, "-m", "isthmus", "link", "emulate", "--sites", "2",
                               "--link", "delay=1ms", "--", "true"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("ISTHMUS_")}
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       cwd=tmp_path, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "needs root or CAP_NET_ADMIN" in r.stderr and "sudo" in r.stderr


@pytest.mark.parametrize("args,words", [
    (["-n", "2", "--wan", "delay=1", "--", "true"], "bad link spec 'delay=1'"),
    (["--site-file", "x.toml", "--wan", "delay=1ms", "--", "true"], "--wan cannot be combined with --site-file"),
    (["-n", "2", "--host", "10.0.0.1", "--wan", "delay=1ms", "--", "true"], "--wan cannot be combined with --host"),
    (["-n", "2", "--dry-run", "--wan", "delay=1ms", "--", "true"], "--wan cannot be combined with --dry-run"),
])
def test_run_wan_option_errors(args, words):
    r = CliRunner().invoke(main, ["run", *args])
    assert r.exit_code == 2 and words in r.output, r.output


def test_run_wan_matrix_needs_default_site_names(tmp_path):
    f = tmp_path / "m.toml"
    f.write_text('sites = ["east", "west"]\n')
    r = CliRunner().invoke(main, ["run", "-n", "2", "--wan-matrix", str(f), "--", "true"])
    assert r.exit_code == 2 and "sites are named A, B" in r.output, r.output


def test_reorder_share_is_a_percentage_and_reaches_the_emulator():
    """reorder=5%: a share of packets that skip the delay (netem's reorder), next to the
    on/off switch that lets jitter reorder; both reach the emulator's plain-number form."""
    from isthmus.netemu.spec import parse_link_spec

    s = parse_link_spec("delay=5ms,reorder=5%")
    assert s.reorder_share == 0.05 and not s.reorder
    assert "reorderp=0.05" in s.native() and "reorder 5%" in s.describe()
    s = parse_link_spec("delay=5ms,jitter=1ms,reorder=on")
    assert s.reorder and s.reorder_share == 0 and "reorder=1" in s.native()
    with pytest.raises(Exception, match="reorder"):
        parse_link_spec("delay=5ms,reorder=150%")
