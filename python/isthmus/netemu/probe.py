# isthmus/netemu/probe.py: small network probes run inside emulated sites by the tests
# and benchmarks (python -m isthmus.netemu.probe ...): a UDP echo server and an RTT
# client, a TCP sink and source for throughput, and a UDP counter and blaster for loss.
# Servers print "listening" once bound; every result is one JSON line on stdout.
from __future__ import annotations

import json
import socket
import statistics
import struct
import time

import click

BUF = 1 << 16
PAD = b"x"  # udp-blast's padding byte; udp-count reports datagrams where it changed


def _emit(**fields) -> None:
    click.echo(json.dumps(fields), nl=True)


def _listening() -> None:
    click.echo("listening")


@click.group()
def main() -> None:
    """Network probes for link emulation tests (one JSON line of results each)."""


@main.command("echo-server")
@click.option("--port", type=int, required=True)
@click.option("--seconds", type=float, default=60.0, help="Exit after this long.")
def echo_server(port: int, seconds: float) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    s.settimeout(0.5)
    _listening()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            data, addr = s.recvfrom(BUF)
        except socket.timeout:
            continue
        s.sendto(data, addr)


@main.command("rtt")
@click.option("--target", "targets", multiple=True, required=True, metavar="HOST:PORT",
              help="Echo server; several are pinged in turn, so they see the same machine load.")
@click.option("--count", type=int, default=50, help="Pings per target.")
@click.option("--interval", type=float, default=0.01, help="Seconds between pings.")
@click.option("--size", type=int, default=64)
@click.option("--timeout", type=float, default=2.0)
def rtt(targets: tuple[str, ...], count: int, interval: float, size: int, timeout: float) -> None:
    """UDP ping-pong, one packet in flight at a time. Reports per target."""
    socks = []
    for t in targets:
        host, _, port = t.rpartition(":")
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.connect((host, int(port)))
        s.settimeout(timeout)
        socks.append(s)
    pad = b"x" * max(0, size - 12)
    rtts: list[list[float]] = [[] for _ in targets]
    lost = [0] * len(targets)
    for seq in range(count):
        for k, s in enumerate(socks):
            t0 = time.perf_counter_ns()
            s.send(struct.pack("!IQ", seq, t0) + pad)
            while True:
                try:
                    data = s.recv(BUF)
                except socket.timeout:
                    lost[k] += 1
                    break
                if struct.unpack("!I", data[:4])[0] == seq:
                    rtts[k].append((time.perf_counter_ns() - t0) / 1e9)
                    break
            time.sleep(interval)
    _emit(results=[{"target": t, "sent": count, "lost": lost[k], "rtts": rtts[k],
                    "median": statistics.median(rtts[k]) if rtts[k] else None,
                    "min": min(rtts[k]) if rtts[k] else None}
                   for k, t in enumerate(targets)])


@main.command("tcp-sink")
@click.option("--port", type=int, required=True)
@click.option("--timeout", type=float, default=60.0)
@click.option("--omit", type=click.FloatRange(min=0.0), default=0.0,
              help="Seconds after the first byte left out of the rate.")
def tcp_sink(port: int, timeout: float, omit: float) -> None:
    """Accept one connection, read to EOF, report bytes and the time from first to last
    byte, leaving out what arrived in the first --omit seconds after the first byte (slow
    start and its first loss, as iperf3 -O does)."""
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    ls.settimeout(timeout)
    _listening()
    conn, _ = ls.accept()
    conn.settimeout(timeout)
    buf = bytearray(1 << 20)
    total, first, last, t0 = 0, None, None, None
    while True:
        n = conn.recv_into(buf)
        if n == 0:
            break
        last = time.perf_counter()
        if t0 is None:
            t0 = last
        if last - t0 < omit:
            continue
        if first is None:
            first = last  # this read's bytes arrived before the span starts
            continue
        total += n
    span = (last - first) if first is not None and last > first else 0.0
    _emit(bytes=total, seconds=span, rate_Bps=total / span if span else 0.0)


@main.command("tcp-source")
@click.option("--host", required=True)
@click.option("--port", type=int, required=True)
@click.option("--seconds", type=float, default=3.0)
@click.option("--cc", default=None, help="TCP congestion control (e.g. cubic, bbr).")
def tcp_source(host: str, port: int, seconds: float, cc: str | None) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if cc:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    s.connect((host, port))
    chunk = b"\0" * (1 << 18)
    end = time.monotonic() + seconds
    sent = 0
    while time.monotonic() < end:
        sent += s.send(chunk)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)
    s.close()
    _emit(bytes=sent)


@main.command("udp-count")
@click.option("--port", type=int, required=True)
@click.option("--idle", type=float, default=1.0, help="Stop after this long without packets.")
@click.option("--timeout", type=float, default=30.0)
def udp_count(port: int, idle: float, timeout: float) -> None:
    """Count distinct sequence numbers received; duplicates and late (reordered) arrivals
    are counted apart, and so are datagrams whose padding is not udp-blast's (altered on
    the way: the emulator's corrupt= keeps the checksum valid, so the kernel delivers them)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("0.0.0.0", port))
    _listening()
    seen: set[int] = set()
    dups, reordered, altered, highest, got_any = 0, 0, 0, -1, False
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        s.settimeout(idle if got_any else max(0.01, end - time.monotonic()))
        try:
            data = s.recv(BUF)
        except socket.timeout:
            break
        got_any = True
        if data[4:].strip(PAD):
            altered += 1
        seq = struct.unpack("!I", data[:4])[0]
        if seq in seen:
            dups += 1
        elif seq < highest:
            reordered += 1  # arrived after a later packet
        highest = max(highest, seq)
        seen.add(seq)
    # Loss runs: maximal stretches of missing sequence numbers below the highest seen.
    runs, missing, prev = 0, 0, -1
    for seq in sorted(seen):
        if seq > prev + 1:
            runs += 1
            missing += seq - prev - 1
        prev = seq
    _emit(received=len(seen), dups=dups, reordered=reordered, altered=altered, highest=prev,
          loss_runs=runs, missing=missing)


@main.command("udp-blast")
@click.option("--host", required=True)
@click.option("--port", type=int, required=True)
@click.option("--count", type=int, default=10000)
@click.option("--pps", type=float, default=20000.0, help="Packets per second (paced).")
@click.option("--size", type=int, default=200)
def udp_blast(host: str, port: int, count: int, pps: float, size: int) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((host, port))
    pad = PAD * max(0, size - 4)
    start = time.perf_counter()
    for seq in range(count):
        due = start + seq / pps
        while time.perf_counter() < due:
            pass
        s.send(struct.pack("!I", seq) + pad)
    _emit(sent=count, seconds=time.perf_counter() - start)


if __name__ == "__main__":
    main()
