# tests/test_knobs.py: the ISTHMUS_* settings are read strictly, in one place, with one
# text: `isthmus run` refuses a bad value of every kind before anything starts, with the
# line libisthmus (at MPI_Init) and isthmus-gateway print for it; docs/knobs.md is the
# table the code reads.
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from isthmus.paths import REPO_ROOT

ISTHMUS = [sys.executable, "-m", "isthmus"]

# (variable, bad value, the one line isthmus prints): one of each kind, garbage and out
# of range
SIZE = "a size in bytes (e.g. 65536, 64k, 1m)"
BAD = [
    ("ISTHMUS_EAGER", "abc", f"ISTHMUS_EAGER=abc: expected {SIZE} from 0 to 1m"),
    ("ISTHMUS_CHUNK", "0", f"ISTHMUS_CHUNK=0: expected {SIZE} from 4k to 1m"),
    ("ISTHMUS_EARLY", "1g", f"ISTHMUS_EARLY=1g: expected {SIZE} from 0 to 64m"),
    ("ISTHMUS_WINDOW", "8k", "ISTHMUS_WINDOW=8k: expected a whole number from 2 to 1024"),
    ("ISTHMUS_WINDOW", "1", "ISTHMUS_WINDOW=1: expected a whole number from 2 to 1024"),
    ("ISTHMUS_STATS", "yes", "ISTHMUS_STATS=yes: expected 0 or 1"),
    ("ISTHMUS_UDP_PLACE", "no", "ISTHMUS_UDP_PLACE=no: expected 0 or 1"),
    ("ISTHMUS_LINK_OUTAGE", "soon", "ISTHMUS_LINK_OUTAGE=soon: expected a duration in s (a "
     "number, or with a unit: ns, us, ms, s) from 1 to 86400 s"),
    ("ISTHMUS_IDLE_YIELD_US", "20s", "ISTHMUS_IDLE_YIELD_US=20s: expected a duration in us (a "
     "number, or with a unit: ns, us, ms, s) from 0 to 10000000 us"),
    ("ISTHMUS_WAN_RATE", "fast", "ISTHMUS_WAN_RATE=fast: expected a rate in bits/s (e.g. "
     "10e9, 100mbit, 1gbit, 125MB/s) from 0 to 1e+15"),
    ("ISTHMUS_WAN_LOSS", "2", "ISTHMUS_WAN_LOSS=2: expected a number (e.g. 0.5 or 50%) from 0 "
     "to 1"),
    ("ISTHMUS_WAN_TRANSPORT", "quic", "ISTHMUS_WAN_TRANSPORT=quic: expected one of tcp, udp"),
    ("ISTHMUS_WAN_CC", "BBR", "ISTHMUS_WAN_CC=BBR: expected a name of 1 to 15 lowercase "
     "letters, digits or _"),
    ("ISTHMUS_COLL_ALLREDUCE", "bogus", "ISTHMUS_COLL_ALLREDUCE: unknown allreduce algorithm "
     "\"bogus\" at level intra; known: "),
    ("ISTHMUS_COLL_TABLE", "/nonexistent/table.json", "collective selection table "
     "/nonexistent/table.json: cannot open it (ISTHMUS_COLL_TABLE)"),
]


def _env(prefix, **settings):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ISTHMUS_")}
    env.update(ISTHMUS_PREFIX=str(prefix.root), **settings)
    return env


@pytest.fixture
def marker_program(tmp_path):
    """A program that leaves a file behind if anything ever runs it."""
    marker = tmp_path / "started"
    prog = tmp_path / "prog"
    prog.write_text(f"#!/bin/sh\ntouch {marker}\n")
    prog.chmod(0o755)
    return prog, marker


@pytest.mark.native
@pytest.mark.parametrize("name,value,line", BAD, ids=[f"{n}={v}" for n, v, _ in BAD])
def test_run_refuses_a_bad_setting_before_anything_starts(prefix, marker_program, name, value,
                                                          line):
    prog, marker = marker_program
    for extra in ([], ["--dry-run"]) if name == "ISTHMUS_CHUNK" else ([],):
        r = subprocess.run(ISTHMUS + ["run", "-n", "2", *extra, "--", str(prog)],
                           env=_env(prefix, **{name: value}), capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 2, r.stderr
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"isthmus: {line}"), r.stderr
        assert not marker.exists() and not r.stdout


@pytest.mark.native
def test_run_names_every_bad_setting_one_line_each(prefix, marker_program):
    prog, marker = marker_program
    r = subprocess.run(ISTHMUS + ["run", "-n", "2", "--", str(prog)],
                       env=_env(prefix, ISTHMUS_EAGER="abc", ISTHMUS_GW_BUFFERS="4"),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and not marker.exists()
    assert r.stderr.splitlines() == [
        f"isthmus: ISTHMUS_EAGER=abc: expected {SIZE} from 0 to 1m",
        "isthmus: ISTHMUS_GW_BUFFERS=4: expected a whole number from 8 to 65536"]


@pytest.mark.native
def test_good_settings_of_every_kind_pass(prefix):
    env = _env(prefix, ISTHMUS_EAGER="32KiB", ISTHMUS_CHUNK="1m", ISTHMUS_EARLY="0",
               ISTHMUS_WINDOW="16", ISTHMUS_STATS="1", ISTHMUS_LINK_OUTAGE="90s",
               ISTHMUS_WAN_RATE="1gbit", ISTHMUS_WAN_RTT_MS="20.5", ISTHMUS_WAN_LOSS="0.1%",
               ISTHMUS_WAN_TRANSPORT="udp", ISTHMUS_WAN_CC="bbr",
               ISTHMUS_COLL_ALLREDUCE="ring::64k", ISTHMUS_IDLE_YIELD_US="")
    r = subprocess.run([str(prefix.root / "bin" / "isthmus-knobs"), "--check"], env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and not r.stderr, r.stderr


@pytest.mark.native
def test_the_library_refuses_a_bad_setting_at_mpi_init_in_one_line(prefix, tmp_path):
    """A program started without `isthmus run` (here a singleton) stops in MPI_Init with
    the same line, before the vendor MPI starts: no backtrace, no vendor messages."""
    exe = tmp_path / "ring"
    subprocess.run([str(prefix.cc), "-O2", "-o", str(exe), str(REPO_ROOT / "examples" / "ring.c")],
                   check=True, timeout=120)
    r = subprocess.run([str(exe)], env=_env(prefix, ISTHMUS_EAGER="abc"), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and not r.stdout
    assert r.stderr.splitlines() == [f"isthmus: ISTHMUS_EAGER=abc: expected {SIZE} from 0 to 1m"]
    # ISTHMUS_EAGER=abc used to be 0: every message took the rendezvous; a good value runs
    r = subprocess.run([str(exe), "3", "0"], env=_env(prefix, ISTHMUS_EAGER="16k"),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ring: ok: 1 ranks" in r.stdout, r.stderr


@pytest.mark.native
@pytest.mark.parametrize("name,value,line", [
    ("ISTHMUS_CHUNK", "0", f"ISTHMUS_CHUNK=0: expected {SIZE} from 4k to 1m"),
    # read by the udp transport, through the same parser since it stopped reading getenv
    ("ISTHMUS_WAN_PMTUD", "yes", "ISTHMUS_WAN_PMTUD=yes: expected 0 or 1"),
], ids=["chunk", "pmtud"])
def test_the_gateway_refuses_a_bad_setting_in_one_line(prefix, name, value, line):
    r = subprocess.run([str(prefix.gateway)], env=_env(prefix, **{name: value}),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [f"isthmus: {line}"]


@pytest.mark.native
def test_docs_list_every_setting_as_the_code_reads_them(prefix):
    """docs/knobs.md's table is `isthmus-knobs --markdown`, from native/src/common/knobs.def."""
    table = subprocess.run([str(prefix.root / "bin" / "isthmus-knobs"), "--markdown"],
                           capture_output=True, text=True, check=True).stdout
    doc = (REPO_ROOT / "docs" / "knobs.md").read_text()
    start = doc.index("-->\n", doc.index("<!-- knobs table")) + 4
    end = doc.index("<!-- end of knobs table -->")
    assert doc[start:end] == table, "docs/knobs.md is stale: paste `isthmus-knobs --markdown`"
