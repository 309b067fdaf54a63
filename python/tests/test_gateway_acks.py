# tests/test_gateway_acks.py: a gateway sends an ACK frame only when it has something new
# to acknowledge. Its receive path used to queue one ACK frame for every frame read past
# GW_ACK_EVERY in one batch while the first still waited to be written, 18-41 at once:
# about 200 ACK frames beside 300 data frames per direction in the naive aggregate's
# timed steps, each taking bytes and a segment of the connection's window
# (native/src/gateway/session.c, control_waiting; bench/notebook/whatif.md, run 7). The
# check reads a trace of a burst of small messages across an emulated link: between two
# ACK frames a gateway sends on a link, it has received a numbered frame on that link.
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.native, pytest.mark.netadmin]
REPO = Path(__file__).resolve().parents[2]
ACK = 12  # ISM_F_ACK (native/src/contract/frame.h)


def test_no_ack_frame_repeats_the_one_before(netadmin, prefix, tmp_path):
    from isthmus.trace import records as R
    from isthmus.trace.reader import load
    exe = tmp_path / "aggregate"
    subprocess.run([str(prefix.cc), "-O2", "-o", str(exe), str(REPO / "examples" / "aggregate.c"),
                    "-listhmus-patterns"], check=True)
    trace = tmp_path / "tr"
    r = subprocess.run([sys.executable, "-m", "isthmus", "run", "-n", "2", "--sites", "2",
                        "--wan", "delay=10ms,rate=100mbit", "--timeout", "120", "--trace",
                        str(trace), "--", str(exe), "naive", "3", "400", "16"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "aggregate: ok" in r.stdout, (r.stdout + r.stderr)[-3000:]
    t = load(trace)
    gws = t.gateways.values() if isinstance(t.gateways, dict) else t.gateways
    acks = repeats = received = 0
    for g in gws:
        last: dict[int, str] = {}
        for f in sorted(g.frames):
            if f[1] == R.GW_RECEIVED and f[5]:           # a numbered frame received
                last[f[3]] = "frame"
                received += 1
            elif f[1] == R.GW_SENT and f[2] == ACK:
                acks += 1
                repeats += last.get(f[3]) == "ack"
                last[f[3]] = "ack"
    assert received > 500, received                        # the burst crossed the link
    assert acks > 0
    assert repeats == 0, f"{repeats} of {acks} ACK frames acknowledged nothing new"
