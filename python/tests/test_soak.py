# tests/test_soak.py: the soak of issue 23 §6, short: 2 emulated sites x 4 ranks run
# tests/mpi/soak.c (all-to-all and allreduce, every byte checked) for 60 s over a link
# that loses 1 %, reorders 5 % and duplicates 1 % of its packets, while site A's link is
# cut for 10 s. The job must end with exit 0 and nothing wrong, the emulator must have
# done what was asked (losses, reorderings, duplicates), and the gateways must have
# reconnected. The 10-minute version with two 20 s cuts is bench/soak.py (BENCHMARKS.md).
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jobprocs import Job, cut_link, links_up

pytestmark = pytest.mark.native
REPO = Path(__file__).resolve().parents[2]
LINK = re.compile(r"isthmus stats: link (\w) -> (\w): (\d+) packets in, (\d+) delivered, (\d+) "
                  r"lost by the loss model, .* (\d+) duplicated, (\d+) reordered")


@pytest.mark.parametrize("transport", ["tcp", "udp"])
def test_soak_under_loss_reorder_duplication_and_a_cut(netadmin, tmp_path, transport):
    exe = tmp_path / "soak"
    subprocess.run([str(netadmin.cc), "-O2", "-o", str(exe), str(REPO / "tests/mpi/soak.c")],
                   check=True, capture_output=True)
    cmd = [sys.executable, "-m", "isthmus", "run", "-n", "8", "--ranks-per-site", "4,4",
           "--mpi", "openmpi", "--transport", transport, "--timeout", "240", "--stats",
           "--wan", "delay=5ms,rate=200mbit,loss=1%,reorder=5%,dup=1%", "--", str(exe), "60"]
    p = Job(cmd, env=dict(os.environ))
    log = []
    # counted from the links being up: 10 s into the 60 s of soak however long the start
    t = cut_link(p.pid, "A", after=10, seconds=10, log=log, ready=links_up(p, 2))
    out, err = p.communicate(timeout=300)
    t.join(timeout=5)
    assert [e for e, _ in log] == ["down", "up"], (log, err[-3000:])
    assert p.returncode == 0 and "soak: OK" in out, (out + err)[-5000:]
    m = re.search(r"soak: (\d+) rounds .*; (\d+) messages, (\d+) bytes handed to MPI; (\d+) wrong",
                  out)
    assert m and int(m.group(1)) > 10 and int(m.group(4)) == 0, out
    links = LINK.findall(err)
    assert len(links) == 2, err[-3000:]
    for _, _, pin, _, lost, dup, reordered in links:
        assert int(lost) > 0 and int(dup) > 0 and int(reordered) > 0, links
        assert 0.02 < int(reordered) / int(pin) < 0.08, links
    reconnects = [int(x) for x in re.findall(r"(\d+) reconnects", err)]
    assert reconnects and min(reconnects) >= 1, err[-3000:]
