# tests/test_gateway_small_frames.py: a burst of small messages crosses a link in a few
# round trips, not one round trip per 32 of them. Every frame used to hold one of the
# gateway's 32 outgoing pool buffers (a whole chunk) until the other gateway acknowledged
# it, so 1000 sends of 8 bytes took 32 round trips whatever the link's rate; small frames
# now wait in copies of their own (gateway/loop.c, GW_COPY_MAX). bench/msg_rate.c is the
# program; the bound is in round trips measured in the same job, and wide (12 against
# the 32 of before and about 2 now), so a loaded host cannot fail it.
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.native, pytest.mark.netadmin]
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_a_burst_of_small_sends_takes_a_few_round_trips(netadmin, prefix, tmp_path, mpi):
    exe = tmp_path / "msg_rate"
    subprocess.run([str(prefix.cc), "-O2", "-o", str(exe), str(REPO / "bench" / "msg_rate.c")],
                   check=True)
    r = subprocess.run([sys.executable, "-m", "isthmus", "run", "-n", "2", "--sites", "2", "--mpi",
                        mpi, "--wan", "delay=25ms,rate=100mbit", "--timeout", "120", "--", str(exe),
                        "1000", "8", "3"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    rtt = float(re.search(r"rtt_ms ([\d.]+)", r.stdout).group(1))
    bursts = [float(x) for x in re.findall(r"burst_ms ([\d.]+)", r.stdout)]
    assert rtt >= 50 and len(bursts) == 3, r.stdout  # the link's delay is there
    assert min(bursts) < 12 * rtt, f"1000 x 8 B took {min(bursts):.1f} ms, rtt {rtt:.1f} ms"
