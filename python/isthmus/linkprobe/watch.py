# isthmus/linkprobe/watch.py: `isthmus link watch`: a long-running link monitor, the
# operations side of seed 002. Every --interval it measures the RTT (a short TCP
# ping-pong), every --tput-every a short throughput burst (receiver goodput and the TCP
# retransmission ratio, the loss TCP saw); it exposes the latest values as Prometheus
# metrics and appends every measurement to a JSON-lines log. A failed probe is logged
# and counted, and the link is reported down, never skipped.
from __future__ import annotations

import json
import time
from typing import Callable

from ..errors import IsthmusError
from .endpoints import Endpoints

MSS = 1448


class Metrics:
    """The Prometheus gauges and counters of one watched link."""

    def __init__(self, link: str, port: int | None):
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
        self.port = None
        if port is not None:
            try:
                server, _thread = start_http_server(port, registry=self.registry)
            except OSError as e:
                raise IsthmusError(f"--metrics-port {port}: {e.strerror}") from None
            self.port = server.server_port

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
