# isthmus/linkprobe/watch.py: `isthmus link watch`: a long-running link monitor, the
# operations side of seed 002. Every --interval it measures the RTT (a short TCP
# ping-pong), every --tput-every a short throughput burst (receiver goodput and the TCP
# retransmission ratio, the loss TCP saw); it exposes the latest values as Prometheus
# metrics (on loopback unless told otherwise: --listen) and appends every measurement to a
# JSON-lines log. A failed probe is logged and counted, and the link is reported down,
# never skipped.
from __future__ import annotations

import json
import time
from typing import Callable

from ..errors import IsthmusError
from .endpoints import Endpoints

MSS = 1448
DEFAULT_LISTEN = "127.0.0.1:9464"


def parse_listen(text: str) -> tuple[str, int]:
    """ADDR:PORT where the metrics are served: '127.0.0.1:9464', '[::1]:9464', or
    ':9464' for every IPv4 address (as Prometheus exporters write it); port 0: any free."""
    t = text.strip()
    if t.startswith("["):
        host, sep, rest = t[1:].partition("]")
        port = rest[1:] if sep and rest.startswith(":") else ""
    else:
        host, sep, port = t.rpartition(":")
        if ":" in host:
            sep = ""  # an IPv6 address needs its brackets
    if not sep or not port.isdigit() or int(port) > 65535:
        raise IsthmusError(f"--listen {text}: expected ADDR:PORT, e.g. 127.0.0.1:9464, "
                           "[::1]:9464, or :9464 for every address (port 0: any free one)")
    return host or "0.0.0.0", int(port)


class Metrics:
    """The Prometheus gauges and counters of one watched link, served on `listen`
    (host, port; None: not served). The link's label may be set after the server is
    up (self.link), so a busy port stops the command before anything else starts."""

    def __init__(self, link: str, listen: tuple[str, int] | None):
        from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

        self.registry = CollectorRegistry()
        lab = ["link"]
        self.up = Gauge("isthmus_link_up", "1 if the last probe succeeded", lab, registry=self.registry)
        self.rtt = Gauge("isthmus_link_rtt_seconds", "TCP ping-pong round trip", lab + ["stat"],
                         registry=self.registry)
        self.tput = Gauge("isthmus_link_throughput_bits_per_second",
                          "receiver goodput of the last throughput probe", lab, registry=self.registry)
        self.retrans = Gauge("isthmus_link_retransmit_ratio",
                             "TCP retransmitted segments per segment sent in the last throughput probe",
                             lab, registry=self.registry)
        self.probes = Counter("isthmus_link_probes", "probes run", lab + ["kind"], registry=self.registry)
        self.failures = Counter("isthmus_link_probe_failures", "probes that failed", lab + ["kind"],
                                registry=self.registry)
        self.link = link
        self.port, self.url, self.address = None, None, None
        if listen is not None:
            host, port = listen
            try:
                server, _thread = start_http_server(port, addr=host, registry=self.registry)
            except OSError as e:
                raise IsthmusError(f"--listen {host}:{port}: {e.strerror or e}") from None
            self.port = server.server_port
            self.address = server.server_address[:2]
            shown = f"[{host}]" if ":" in host else host
            self.url = f"http://{shown}:{self.port}/metrics"

    def record(self, rec: dict) -> None:
        kind, lab = rec["kind"], self.link
        self.probes.labels(lab, kind).inc()
        if not rec["ok"]:
            self.failures.labels(lab, kind).inc()
            self.up.labels(lab).set(0)
            return
        self.up.labels(lab).set(1)
        if kind == "rtt":
            for stat in ("min", "median", "p99", "max"):
                self.rtt.labels(lab, stat).set(rec[f"{stat}_us"] / 1e6)
        else:
            self.tput.labels(lab).set(rec["mbit_s"] * 1e6)
            self.retrans.labels(lab).set(rec["retrans_ratio"])


def watch(ep: Endpoints, metrics: Metrics, log_path, *, interval: float, tput_every: float,
          tput_duration: float, rounds: int | None, show: Callable[[dict], None]) -> int:
    """Probe until `rounds` RTT probes were made (None: until interrupted). Returns the
    number of failed probes."""
    failures, n = 0, 0
    next_tput = time.monotonic()
    with open(log_path, "a") as log:
        while rounds is None or n < rounds:
            t0 = time.monotonic()
            todo = [("rtt", ["--count", "20", "--warmup", "2"], 60)]
            if tput_every > 0 and t0 >= next_tput:
                todo.append(("tput", ["--duration", str(tput_duration)], tput_duration + 60))
                next_tput = t0 + tput_every
            for kind, args, timeout in todo:
                rec = {"time": time.time(), "kind": kind, "link": metrics.link}
                try:
                    rec.update(ep.run(kind, args, timeout=timeout), ok=True)
                    if kind == "tput":
                        segs = max(1.0, rec["bytes"] / MSS)
                        rec["retrans_ratio"] = rec["retrans"] / segs
                except IsthmusError as e:
                    rec.update(ok=False, error=str(e))
                    failures += 1
                metrics.record(rec)
                log.write(json.dumps(rec, sort_keys=True) + "\n")
                log.flush()
                show(rec)
            n += 1
            if rounds is not None and n >= rounds:
                break
            time.sleep(max(0.0, interval - (time.monotonic() - t0)))
    return failures
