# isthmus/noise/tracefs.py: recording irq, softirq, timer-interrupt and sched_switch
# tracepoints during a probe run in a private tracefs instance (so nothing else using
# tracefs is disturbed), and parsing the text trace into per-cpu busy intervals.
# The instance's trace clock is x86-tsc where offered, so trace times are the probes'
# own ticks; otherwise mono_raw, converted with the probe's (tick, ns) reference pair.
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

TRACEFS_ROOTS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))

# tracepoints recorded: (subsystem, event)
EVENTS = [
    ("irq", "irq_handler_entry"), ("irq", "irq_handler_exit"),
    ("irq", "softirq_entry"), ("irq", "softirq_exit"),
    ("sched", "sched_switch"),
]
# every irq_vectors:*_entry/_exit pair (local timer, IPIs, irq work) the kernel offers
VECTOR_SUBSYS = "irq_vectors"


def find_tracefs() -> tuple[Path | None, str]:
    """The mounted tracefs, or None and the reason. Tries to mount it when missing."""
    for root in TRACEFS_ROOTS:
        if (root / "trace").exists():
            return root, ""
    root = TRACEFS_ROOTS[0]
    if root.is_dir() and os.geteuid() == 0:
        rc = os.system(f"mount -t tracefs nodev {root} >/dev/null 2>&1")
        if rc == 0 and (root / "trace").exists():
            return root, ""
    if os.geteuid() != 0:
        return None, "tracefs needs root"
    return None, f"tracefs is not mounted at {root} and mounting it failed"


@dataclass
class TraceSession:
    """A private tracefs instance recording the noise tracepoints on some cpus."""

    root: Path
    cpus: list[int]
    buffer_kb: int = 32768
    inst: Path = field(init=False)
    clock: str = field(init=False, default="")

    def __post_init__(self) -> None:
        self.inst = self.root / "instances" / f"isthmus-noise-{os.getpid()}"

    def _w(self, rel: str, value: str) -> None:
        (self.inst / rel).write_text(value)

    def start(self) -> None:
        self.inst.mkdir()
        clocks = (self.inst / "trace_clock").read_text().replace("[", "").replace("]", "").split()
        self.clock = "x86-tsc" if "x86-tsc" in clocks else "mono_raw" if "mono_raw" in clocks else "mono"
        self._w("trace_clock", self.clock)
        self._w("buffer_size_kb", str(self.buffer_kb))
        mask = 0
        for c in self.cpus:
            mask |= 1 << c
        self._w("tracing_cpumask", format(mask, "x"))
        for sub, ev in EVENTS:
            p = self.inst / "events" / sub / ev / "enable"
            if p.exists():
                p.write_text("1")
        vec = self.inst / "events" / VECTOR_SUBSYS
        if vec.is_dir():
            for d in vec.iterdir():
                if d.name.endswith("_entry") or d.name.endswith("_exit"):
                    (d / "enable").write_text("1")
        self._w("tracing_on", "1")

    def stop(self, out: Path) -> dict:
        """Stop, copy the trace to `out`, return facts (clock, overruns per cpu)."""
        self._w("tracing_on", "0")
        overrun = {}
        for c in self.cpus:
            stats = (self.inst / "per_cpu" / f"cpu{c}" / "stats").read_text()
            m = re.search(r"^overrun: (\d+)", stats, re.M)
            d = re.search(r"^dropped events: (\d+)", stats, re.M)
            overrun[c] = int(m.group(1)) + (int(d.group(1)) if d else 0) if m else 0
        with open(self.inst / "trace") as src, open(out, "w") as dst:
            for line in src:
                dst.write(line)
        return {"clock": self.clock, "lost_events": overrun, "file": out.name}

    def close(self) -> None:
        if self.inst.exists():
            try:
                self._w("tracing_on", "0")
            except OSError:
                pass
            self.inst.rmdir()


@dataclass
class Interval:
    """Something that held a cpu from t0 to t1 (ticks): an irq, softirq, vector, or task."""

    cpu: int
    t0: int
    t1: int
    kind: str   # "irq", "softirq", "vector", "task"
    name: str   # e.g. "irq 11 virtio0", "softirq TIMER", "local_timer", "task isthmus-inject[123]"
    pid: int = 0


def parse_trace(path: Path, to_tick, probe_tids: dict[int, int]) -> list[Interval]:
    """Per-cpu intervals from a text trace. to_tick converts a timestamp string to probe
    ticks. probe_tids maps cpu -> probe thread id: on those cpus the tasks that ran
    while the probe was switched out become "task" intervals."""
    out: list[Interval] = []
    open_irq: dict[tuple[int, str], tuple[int, str]] = {}
    off_since: dict[int, int] = {}        # cpu -> tick when the probe was switched out
    running: dict[int, tuple[int, str, int]] = {}  # cpu -> (since, name, pid) of the task on cpu
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("#"):
                continue
            # "<task>-<pid> [cpu] <flags> <timestamp>: <event>: <fields>"; task names may hold spaces
            close = line.find("] ")
            opn = line.rfind("[", 0, close)
            if close < 0 or opn < 0:
                continue
            parts = line[close + 2:].split(None, 3)
            if len(parts) < 3:
                continue
            try:
                cpu = int(line[opn + 1:close])
                t = to_tick(parts[1].rstrip(":"))
            except ValueError:
                continue
            ev = parts[2].rstrip(":")
            rest = parts[3] if len(parts) > 3 else ""
            if ev == "sched_switch":
                probe = probe_tids.get(cpu)
                if probe is None:
                    continue
                sw = _SWITCH.search(rest)
                if not sw:
                    continue
                prev_pid, next_comm, next_pid = int(sw.group(1)), sw.group(2), int(sw.group(3))
                if cpu in running:
                    since, name, pid = running.pop(cpu)
                    out.append(Interval(cpu, since, t, "task", name, pid))
                if prev_pid == probe:
                    off_since[cpu] = t
                if next_pid == probe:
                    off_since.pop(cpu, None)
                elif cpu in off_since:
                    name = "idle" if next_pid == 0 else f"task {next_comm}[{next_pid}]"
                    running[cpu] = (t, name, next_pid)
                continue
            base, _, edge = ev.rpartition("_")
            if edge not in ("entry", "exit"):
                continue
            if base == "irq_handler":
                irq = _field(rest, "irq=")
                key, kind = "irq " + irq, "irq"
                name = f"irq {irq} {_field(rest, 'name=')}".strip() if edge == "entry" else key
            elif base == "softirq":
                a = rest.find("action=")
                key = name = "softirq " + (rest[a + 7:].strip().rstrip("]") if a >= 0 else "?")
                kind = "softirq"
            else:
                key = name = base
                kind = "vector"
            if edge == "entry":
                open_irq[(cpu, key)] = (t, name)
            else:
                st = open_irq.pop((cpu, key), None)
                if st is not None:
                    out.append(Interval(cpu, st[0], t, kind, st[1]))
    out.sort(key=lambda i: (i.cpu, i.t0))
    return out


_SWITCH = re.compile(r"prev_pid=(\d+) .*==> next_comm=(.*) next_pid=(\d+)")


def _field(rest: str, key: str) -> str:
    i = rest.find(key)
    if i < 0:
        return "?"
    j = rest.find(" ", i + len(key))
    return rest[i + len(key):j if j >= 0 else len(rest)]


def make_converter(clock: str, hz: float, ref_tick: int, ref_ns: int):
    """Trace timestamp text -> probe ticks."""
    if clock in ("x86-tsc", "counter"):
        return lambda s: int(s)
    # mono_raw / mono: seconds with a fraction
    def conv(s: str) -> int:
        ns = float(s) * 1e9
        return int(ref_tick + (ns - ref_ns) * hz / 1e9)
    return conv
