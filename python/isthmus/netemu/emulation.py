# isthmus/netemu/emulation.py: one emulated WAN: a network namespace per site
# (ism-<job>-<site>), the isthmus-linkemu process joining them, and the processes run in
# the sites. Emulation is a context manager that undoes everything on every exit path:
#
#   with Emulation(sites=2, link="delay=10ms,rate=100mbit") as emu:
#       emu.exec("B", ["python3", "-m", "http.server"])   # or emu.popen(...)
#
# The emulator's TUN devices vanish with its process (they are not persistent), and the
# emulator dies with the Python process that started it (PR_SET_PDEATHSIG), so even a
# SIGKILL of the CLI leaves only namespaces behind, which `isthmus link cleanup` removes.
from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from ..errors import IsthmusError
from ..paths import find_prefix
from .matrix import LinkMatrix, uniform
from .spec import LinkSpec, parse_link_spec

LINKEMU = "isthmus-linkemu"
NETNS_DIR = Path("/var/run/netns")
NS_PREFIX = "ism-"
SUBNET = "10.77.0"
NAT_SUFFIX = "-in"           # the inner namespace of a site behind NAT
NAT_ROUTER = "192.168.77.1"  # the site's namespace, routing and masquerading for it
NAT_INSIDE = "192.168.77.2"  # where the site's processes are
IFNAME = "ism0"
READY_TIMEOUT = 10.0
CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21
_JOB_RE = re.compile(r"[A-Za-z0-9_.]{1,24}")


def _cap_eff() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


def check_privileges() -> None:
    """Raise IsthmusError unless this process may create namespaces and TUN devices."""
    caps = _cap_eff()
    if os.geteuid() != 0 and not (caps >> CAP_NET_ADMIN & 1 and caps >> CAP_SYS_ADMIN & 1):
        raise IsthmusError(
            "link emulation needs root or CAP_NET_ADMIN (with CAP_SYS_ADMIN for network "
            "namespaces); run it with sudo"
        )
    if not Path("/dev/net/tun").exists():
        raise IsthmusError("/dev/net/tun is missing: load the tun module (modprobe tun) or, in a "
                           "container, pass the device in (--device /dev/net/tun)")
    if shutil.which("ip") is None:
        raise IsthmusError("the ip command is missing: apt install iproute2")


def find_linkemu() -> Path:
    binary = find_prefix().root / "bin" / LINKEMU
    if not binary.is_file():
        raise IsthmusError(f"{binary} is missing; run scripts/bootstrap.sh to build it")
    return binary


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def list_namespaces(job: str | None = None) -> list[str]:
    """Namespaces made by isthmus (all jobs, or one job)."""
    if not NETNS_DIR.is_dir():
        return []
    head = f"{NS_PREFIX}{job}-" if job else NS_PREFIX
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(head))


def remove_namespace(name: str) -> list[str]:
    """Kill what still runs in namespace `name`, then delete it. Returns problems found."""
    problems = []
    pids = _ip("netns", "pids", name).stdout.split()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        live = []
        for pid in pids:
            try:
                os.kill(int(pid), sig)
                live.append(pid)
            except (ProcessLookupError, ValueError):
                pass
        deadline = time.monotonic() + 2.0
        while live and time.monotonic() < deadline:
            live = [p for p in live if Path(f"/proc/{p}").exists() and not _zombie(p)]
            time.sleep(0.02)
        pids = live
        if not pids:
            break
    r = _ip("netns", "del", name)
    if r.returncode != 0 and (NETNS_DIR / name).exists():
        problems.append(f"ip netns del {name}: {r.stderr.strip()}")
    return problems


def _zombie(pid: str) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


class Emulation:
    """Namespaces joined by isthmus-linkemu. Give sites + link (one spec for every
    direction) or a LinkMatrix. Sites are named A, B, ... unless the matrix names them."""

    def __init__(self, sites: int | None = None, link: str | LinkSpec | None = None,
                 matrix: LinkMatrix | None = None, job: str | None = None, seed: int = 1,
                 spin_us: int | None = None, rt_prio: int = 10, spin_mode: str | None = None,
                 binary: Path | None = None, progress: Callable[[str], None] | None = None,
                 nat: Sequence[int | str] = ()):
        if matrix is None:
            spec = parse_link_spec(link) if isinstance(link, str) else (link or LinkSpec())
            matrix = uniform(sites if sites is not None else 2, spec)
        elif sites is not None and sites != matrix.count:
            raise IsthmusError(f"sites={sites} disagrees with the link matrix ({matrix.count} sites)")
        self.matrix = matrix
        self.job = job or f"{os.getpid()}"
        if not _JOB_RE.fullmatch(self.job):
            raise IsthmusError(f"job name {self.job!r}: use 1-24 letters, digits, '_' or '.'")
        self.seed = seed
        self.spin_us = spin_us
        self.spin_mode = spin_mode
        self.rt_prio = rt_prio
        self._binary = binary
        self._say = progress or (lambda msg: None)
        self._proc: subprocess.Popen | None = None
        self._children: list[subprocess.Popen] = []
        self._made: list[str] = []
        self._lines: queue.Queue[str] = queue.Queue(maxsize=64)
        self._replies: queue.Queue[str] = queue.Queue(maxsize=64)
        self._ctl_lock = threading.Lock()
        self._stderr = None
        self.final_stats: dict | None = None
        # sites behind NAT: their processes run in an inner namespace whose only way out
        # is masquerading through the site's namespace (nat_inside); nothing reaches them
        self.nat = tuple(sorted({self.index(s) for s in nat}))

    # ---- names ----
    @property
    def names(self) -> tuple[str, ...]:
        return self.matrix.names

    def index(self, site: int | str) -> int:
        if isinstance(site, int):
            if not 0 <= site < self.matrix.count:
                raise IsthmusError(f"site {site} does not exist (0-{self.matrix.count - 1})")
            return site
        if site not in self.names:
            raise IsthmusError(f"site {site!r} does not exist (sites: {', '.join(self.names)})")
        return self.names.index(site)

    def namespace(self, site: int | str) -> str:
        return f"{NS_PREFIX}{self.job}-{self.names[self.index(site)]}"

    def address(self, site: int | str) -> str:
        """Where the site's processes are: its address on the emulated network, or behind
        NAT its inner address (which nobody outside can reach)."""
        if self.index(site) in self.nat:
            return NAT_INSIDE
        return f"{SUBNET}.{self.index(site) + 1}"

    def runs_in(self, site: int | str) -> str:
        """The namespace the site's processes run in."""
        ns = self.namespace(site)
        return ns + NAT_SUFFIX if self.index(site) in self.nat else ns

    # ---- lifetime ----
    def __enter__(self) -> "Emulation":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        check_privileges()
        binary = self._binary or find_linkemu()
        try:
            self._make_namespaces()
            self._start_emulator(binary)
            for i in self.nat:
                self._make_nat(i)
        except BaseException:
            self.close()
            raise

    def _make_namespaces(self) -> None:
        self._say(f"creating {self.matrix.count} network namespaces ({self.namespace(0)}, ...)")
        for i in range(self.matrix.count):
            name = self.namespace(i)
            if (NETNS_DIR / name).exists():
                raise IsthmusError(
                    f"namespace {name} already exists (left by an earlier run?): remove it with "
                    f"`isthmus link cleanup --job {self.job}` or choose another --job")
            r = _ip("netns", "add", name)
            if r.returncode != 0:
                raise IsthmusError(f"ip netns add {name} failed: {r.stderr.strip()}")
            self._made.append(name)

    def _make_nat(self, index: int) -> None:
        """An inner namespace for site `index` behind masquerading (iptables) in the site's
        namespace: the inner one reaches everything through the site's address, and nothing
        can reach it, as behind a home router or a site firewall that grants no port."""
        outer = self.namespace(index)
        inner = outer + NAT_SUFFIX
        self._say(f"site {self.names[index]}: behind NAT in {inner} ({NAT_INSIDE})")
        r = _ip("netns", "add", inner)
        if r.returncode != 0:
            raise IsthmusError(f"ip netns add {inner} failed: {r.stderr.strip()}")
        self._made.append(inner)
        steps = [
            ["ip", "link", "add", "natout", "netns", outer, "type", "veth", "peer", "name",
             "natin", "netns", inner],
            ["ip", "-n", outer, "addr", "add", f"{NAT_ROUTER}/24", "dev", "natout"],
            ["ip", "-n", outer, "link", "set", "natout", "up"],
            ["ip", "-n", inner, "addr", "add", f"{NAT_INSIDE}/24", "dev", "natin"],
            ["ip", "-n", inner, "link", "set", "natin", "up"],
            ["ip", "-n", inner, "link", "set", "lo", "up"],
            ["ip", "-n", inner, "route", "add", "default", "via", NAT_ROUTER],
            ["ip", "netns", "exec", outer, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"],
            ["ip", "netns", "exec", outer, "iptables", "-t", "nat", "-A", "POSTROUTING", "-s",
             f"{NAT_INSIDE}/24", "-j", "MASQUERADE"],
        ]
        for cmd in steps:
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                hint = " (install iptables)" if cmd[-5:-4] == ["iptables"] or "iptables" in cmd else ""
                raise IsthmusError(f"{' '.join(cmd)} failed{hint}: {r.stderr.strip()}")

    def _start_emulator(self, binary: Path) -> None:
        argv = [str(binary), "--seed", str(self.seed), "--subnet", SUBNET, "--ifname", IFNAME,
                "--rt-prio", str(self.rt_prio)]
        if self.spin_us is not None:
            argv += ["--spin-us", str(self.spin_us)]
        if self.spin_mode is not None:
            argv += ["--spin-mode", self.spin_mode]
        for i in range(self.matrix.count):
            argv += ["--ns", self.namespace(i)]
        argv += self.matrix.native_args()
        self._say(f"starting {LINKEMU} ({self.matrix.count * (self.matrix.count - 1)} link directions)")
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._stderr, text=True)
        threading.Thread(target=self._read_stdout, args=(self._proc.stdout,), daemon=True).start()
        try:
            line = self._lines.get(timeout=READY_TIMEOUT)
        except queue.Empty:
            line = ""
        if line != "ready":
            raise IsthmusError(f"{LINKEMU} did not start: {self._emulator_error() or 'no ready signal after 10 s'}")
        # Warnings printed during setup (e.g. real-time priority refused) reach the user.
        self._stderr.seek(0)
        for warning in self._stderr.read(4000).splitlines():
            self._say(warning)
        self._stderr.seek(0, os.SEEK_END)

    def _read_stdout(self, stream) -> None:
        for line in stream:
            line = line.strip()
            if line.startswith(("ok link", "error link")):
                try:
                    self._replies.put_nowait(line)
                except queue.Full:
                    pass
                continue
            if line.startswith("{"):
                try:
                    self.final_stats = json.loads(line)
                except ValueError:
                    continue
            try:
                self._lines.put_nowait(line)
            except queue.Full:
                pass
        try:
            self._lines.put_nowait("")
        except queue.Full:
            pass

    def _emulator_error(self) -> str:
        if self._proc is not None and self._proc.poll() is None:
            return ""
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        text = self._stderr.read(4000).strip()
        code = self._proc.returncode if self._proc else None
        return text or f"{LINKEMU} exited with code {code}"

    @property
    def pid(self) -> int | None:
        """The emulator's process id (for CPU accounting), None when not running."""
        return self._proc.pid if self._proc is not None else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def check_alive(self) -> None:
        if not self.alive():
            raise IsthmusError(f"{LINKEMU} stopped: {self._emulator_error()}")

    def stats(self, timeout: float = 5.0) -> dict:
        """Per-link counters (see fwd.c): {"links": [{"from", "to", "in", "delivered", ...}]}."""
        self.check_alive()
        while not self._lines.empty():
            self._lines.get_nowait()
        self._proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line.startswith("{"):
                return json.loads(line)
        raise IsthmusError(f"{LINKEMU} did not report statistics within {timeout:g} s")

    def set_link(self, a: int | str, b: int | str, spec: str | LinkSpec, timeout: float = 5.0) -> LinkSpec:
        """Change direction a -> b while the emulation runs (a route change: packets already
        on the link keep their delays). spec replaces that direction's settings. Returns
        the new settings; also kept in self.matrix."""
        i, j = self.index(a), self.index(b)
        if i == j:
            raise IsthmusError(f"site {self.names[i]} has no link to itself")
        new = parse_link_spec(spec) if isinstance(spec, str) else spec
        self.check_alive()
        with self._ctl_lock:
            while not self._replies.empty():
                self._replies.get_nowait()
            try:
                self._proc.stdin.write(f"link {i}:{j}:{new.native()}\n")
                self._proc.stdin.flush()
            except (BrokenPipeError, OSError) as e:
                raise IsthmusError(f"{LINKEMU} does not take commands: {e}") from None
            try:
                reply = self._replies.get(timeout=timeout)
            except queue.Empty:
                raise IsthmusError(f"{LINKEMU} did not answer a link change within {timeout:g} s") from None
        if not reply.startswith("ok"):
            raise IsthmusError(f"{LINKEMU} refused the new settings of {self.names[i]} -> {self.names[j]}: {reply}")
        self.matrix = self.matrix.with_link(i, j, new)
        return new

    def link_stats(self, a: int | str, b: int | str, stats: dict | None = None) -> dict:
        i, j = self.index(a), self.index(b)
        for entry in (stats or self.stats())["links"]:
            if entry["from"] == i and entry["to"] == j:
                return entry
        raise IsthmusError(f"no statistics for link {i}->{j}")

    def close(self) -> None:
        """Stop the site processes and the emulator, delete the namespaces. Idempotent."""
        problems: list[str] = []
        for child in self._children:
            _stop(child)
        self._children.clear()
        if self._proc is not None:
            _stop(self._proc, grace=5.0)
            self._proc = None
        for name in reversed(self._made):
            problems += remove_namespace(name)
        self._made.clear()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if problems:
            raise IsthmusError("cleanup incomplete: " + "; ".join(problems))

    # ---- running things in sites ----
    def command(self, site: int | str, argv: Sequence[str]) -> list[str]:
        """argv run inside the site's namespace (behind NAT: the inner one)."""
        return ["ip", "netns", "exec", self.runs_in(site), *argv]

    def popen(self, site: int | str, argv: Sequence[str], **kwargs) -> subprocess.Popen:
        """Start argv in the site's namespace; it is stopped at close() if still running."""
        self.check_alive()
        p = subprocess.Popen(self.command(site, argv), **kwargs)
        self._children.append(p)
        return p

    def exec(self, site: int | str, argv: Sequence[str], timeout: float | None = None,
             **kwargs) -> subprocess.CompletedProcess:
        """Run argv in the site's namespace to completion (subprocess.run semantics)."""
        self.check_alive()
        return subprocess.run(self.command(site, argv), timeout=timeout, **kwargs)

    def environment(self) -> dict[str, str]:
        """Variables describing the emulation, for a command run alongside it."""
        env = {"ISTHMUS_LINK_JOB": self.job, "ISTHMUS_LINK_SITES": " ".join(self.names)}
        for i, n in enumerate(self.names):
            env[f"ISTHMUS_LINK_NETNS_{n}"] = self.namespace(i)
            env[f"ISTHMUS_LINK_ADDR_{n}"] = self.address(i)
        return env


def _stop(p: subprocess.Popen, grace: float = 2.0) -> None:
    if p.poll() is not None:
        return
    p.terminate()
    try:
        p.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
