# isthmus/linkprobe/udpperf.py: one verified bulk transfer with isthmus-udpperf between
# two sites of a link emulation, over the reliable-UDP transport or TCP: the receiver
# listens in site B, the sender connects from site A, both print one JSON line (bytes,
# seconds, goodput, CPU seconds, transport counters). Used by the UDP transport's tests
# and by bench/udp_transport.py.
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import Sequence

from ..errors import IsthmusError
from ..paths import Prefix

PORT = 41997


def udpperf_binary(prefix: Prefix) -> str:
    exe = prefix.root / "bin" / "isthmus-udpperf"
    if not exe.is_file():
        raise IsthmusError(f"{exe} is missing; run scripts/bootstrap.sh")
    return str(exe)


@dataclass
class Transfer:
    send: dict
    recv: dict

    @property
    def ok(self) -> bool:
        return bool(self.send.get("ok") and self.recv.get("ok"))


def _json_line(text: str, who: str) -> dict:
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise IsthmusError(f"isthmus-udpperf {who} printed no result")


def transfer(emu, exe: str, creds, *, transport: str = "udp", cc: str | None = None,
             nbytes: int | None = None, duration: float | None = None, window: int | None = None,
             omit: float = 0.0, extra: Sequence[str] = (), timeout: float = 120.0,
             src: str = "A", dst: str = "B", port: int = PORT) -> Transfer:
    """Move nbytes (or duration seconds of data) from site src to site dst and return both
    sides' JSON results. Raises IsthmusError if a side hangs past timeout."""
    common = ["--transport", transport, *creds.args(), *extra]
    if cc:
        common += ["--cc", cc]
    if window:
        common += ["--window", str(window)]
    recv = emu.popen(dst, [exe, "recv", "--listen", f"{emu.address(dst)}:{port}", "--omit",
                           str(omit), *common], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True)
    try:
        line = recv.stderr.readline()
        if "listening" not in line:
            recv.wait(5)
            raise IsthmusError(f"isthmus-udpperf recv did not start: {line}{recv.stderr.read()}")
        what = ["--bytes", str(nbytes)] if nbytes else ["--duration", str(duration)]
        snd = emu.exec(src, [exe, "send", "--connect", f"{emu.address(dst)}:{port}", *what,
                             *common], capture_output=True, text=True, timeout=timeout)
        out, err = recv.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as e:
        recv.kill()
        raise IsthmusError(f"isthmus-udpperf ({transport}) did not finish within {timeout:.0f} s") from e
    return Transfer(send=_json_line(snd.stdout, "send") if snd.stdout else
                    {"ok": False, "error": snd.stderr.strip()},
                    recv=_json_line(out, "recv") if out else {"ok": False, "error": err.strip()})
