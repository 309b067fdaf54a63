# tests/test_udp_pmtu.py: path-MTU discovery of the reliable-UDP transport (pmtu.c)
# between two emulated sites. The link emulator drops packets above a link's MTU and
# sends no ICMP, as a black-holing path does. One transfer of 13 s, every byte checked
# at the receiver: the link carries 9000 bytes and the sender finds 9000; at 4 s the data
# direction's MTU falls to 1500 (set_link, mid-transfer), the sender must detect the black
# hole, fall back, resend what was lost in the smaller size and settle at 1500; at 8 s the
# MTU is 9000 again and the raise timer (2 s here, 600 s by default) must find it.
# Seen: the black hole found within 0.4 s of the change, 1490 settled 0.3 s later, 9000
# again 1.3 s after the link grew back.
from __future__ import annotations

import re
import subprocess
import time

import pytest

from isthmus.linkprobe.endpoints import Credentials
from isthmus.linkprobe.udpperf import PORT, udpperf_binary
from isthmus.netemu import Emulation

pytestmark = [pytest.mark.native, pytest.mark.netadmin]

LINK = "delay=5ms,rate=200mbit,mtu={}"
TRACE = re.compile(r"^trace ([\d.]+) s: .* plpmtu (\d+) black_holes (\d+)$")


def _json(text: str) -> dict:
    import json

    lines = [x for x in text.splitlines() if x.startswith("{")]
    assert lines, text
    return json.loads(lines[-1])


def test_path_mtu_found_lost_and_found_again(netadmin):
    exe = udpperf_binary(netadmin)
    creds = Credentials()
    try:
        with Emulation(sites=2, link=LINK.format(9000), job="tUdpPmtu", seed=5) as emu:
            common = ["--transport", "udp", *creds.args(), "--pmtud", "--mtu", "9000",
                      "--pmtu-raise-ms", "2000"]
            recv = emu.popen("B", [exe, "recv", "--listen", f"{emu.address('B')}:{PORT}",
                                   *common], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
            snd = None
            try:
                line = recv.stderr.readline()
                assert "listening" in line, line
                snd = emu.popen("A", [exe, "send", "--connect", f"{emu.address('B')}:{PORT}",
                                      "--duration", "13", "--trace", *common],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                # the trace's times count from the connection, not from this Popen: the
                # link changes at the sender's 4 and 8 s, however long it took to start
                # (a slow start moved the changes early against the checks' windows)
                head = []
                while not (head and (not head[-1] or TRACE.match(head[-1]))):
                    head.append(snd.stderr.readline())
                first = TRACE.match(head[-1])
                t0 = time.monotonic() - (float(first.group(1)) if first else 0.0)
                time.sleep(max(0.0, 4 - (time.monotonic() - t0)))
                emu.set_link("A", "B", LINK.format(1500))
                time.sleep(max(0.0, 8 - (time.monotonic() - t0)))
                emu.set_link("A", "B", LINK.format(9000))
                out, err = snd.communicate(timeout=60)
                err = "".join(head) + err
                rout, rerr = recv.communicate(timeout=30)
            finally:
                for p in (recv, snd):
                    if p is not None and p.poll() is None:
                        p.kill()
            link = emu.link_stats("A", "B")
    finally:
        creds.close()
    send, got = _json(out), _json(rout)
    assert send["ok"] and got["ok"], (send, got, err[-2000:], rerr[-2000:])
    assert got["verified"] and got["bytes"] == send["bytes"] > 0, (send, got)
    trace = [(float(m[1]), int(m[2]), int(m[3])) for m in map(TRACE.match, err.splitlines()) if m]
    assert trace, err[-2000:]
    # found: the link's 9000 before the change
    assert any(t < 4 and mtu == 9000 for t, mtu, _ in trace), trace[:40]
    # lost: a black hole seen and the size at most the new 1500 well before it rises again
    assert any(4 < t < 8 and mtu <= 1500 and bh >= 1 for t, mtu, bh in trace), trace
    # found again by the raise timer, within the search's 16-byte step (a raise whose
    # first probe, at the ceiling, went out while the link was still at 1500 bisects)
    u = send["udp"]
    assert any(t > 8 and mtu >= 9000 - 16 for t, mtu, _ in trace), trace[-60:]
    assert u["plpmtu"] >= 9000 - 16 and u["pmtu_black_holes"] >= 1, u
    assert u["pmtu_ceiling"] == 9000 and u["pmtu_probes_lost"] > 0, u
    assert link["drop_mtu"] > 0, link
