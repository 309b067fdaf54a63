# isthmus/netemu/clusters.py: emulated clusters on one machine, to rehearse a deployment.
# Each site is a cluster of nodes; each node is a network namespace with its own host name
# (UTS namespace), its own /dev/shm, an address on its site's network and a real sshd
# (Debian openssh-server) with keys made here. Node 0 of a site is its login and gateway
# node: it also holds the site's outside address on the emulated WAN (emulation.py), and
# the site's network is a bridge in it. One more namespace, the workstation ("ws"), sits
# on the WAN like a user's machine: `isthmus run --site-file` is run from there and
# reaches the sites over ssh, as it would in a real deployment.
#
#   with Clusters(sites=2, nodes_per_site=2, link="delay=10ms,rate=100mbit") as bed:
#       bed.workstation(["isthmus", "run", "--site-file", bed.site_file(...), "./app"])
#
# Per-node files (/etc/hosts, /etc/ssh) come from /etc/netns/<namespace>/, which
# `ip netns exec` binds over /etc for everything started in that namespace, so plain
# `ssh a1-<job>` works on every node and the vendors' launchers need no options.
# Everything is undone on every exit path; `isthmus link cleanup` removes what a SIGKILL
# of the Python process leaves behind.
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..errors import IsthmusError
from .emulation import NETNS_DIR, NS_PREFIX, Emulation, _ip, _stop, remove_namespace
from .matrix import LinkMatrix, uniform
from .spec import LinkSpec, parse_link_spec

ETC_NETNS = Path("/etc/netns")
SITE_NET = "10.78"  # site i's network: 10.78.i.0/24, node k at 10.78.i.(k+1)
WORKSTATION = "ws"
BRIDGE = "isb0"
SSHD_READY_TIMEOUT = 10.0
MAX_NODES = 32


@dataclass(frozen=True)
class Node:
    site: str
    index: int  # 0: the login and gateway node
    namespace: str
    hostname: str
    address: str  # on the site's network
    wan_address: str | None  # node 0 only


def sshd_path() -> str:
    for p in ("/usr/sbin/sshd", shutil.which("sshd") or ""):
        if p and Path(p).is_file():
            return p
    raise IsthmusError("sshd is missing: the emulated clusters run a real sshd on every node; "
                       "apt install openssh-server (scripts/bootstrap.sh does)")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def _run(argv: Sequence[str], what: str) -> None:
    r = subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise IsthmusError(f"{what}: {' '.join(argv)} failed: {r.stderr.strip()}")


class Clusters:
    """Sites of `nodes_per_site` nodes each, joined by the link emulator; see the top of
    this file. Give `link` (every WAN direction) or a LinkMatrix of the sites; the links to
    and from the workstation are plain (no delay, no rate limit) unless `ws_link` says."""

    def __init__(self, sites: int | None = None, nodes_per_site: int = 2,
                 link: str | LinkSpec | None = None, matrix: LinkMatrix | None = None,
                 job: str | None = None, ws_link: str | LinkSpec | None = None,
                 private_shm: bool = True, seed: int = 1, rt_prio: int = 10,
                 progress: Callable[[str], None] | None = None, etc_dirs: Sequence[str] = ()):
        if not 1 <= nodes_per_site <= MAX_NODES:
            raise IsthmusError(f"--nodes-per-site must be 1-{MAX_NODES}, got {nodes_per_site}")
        if matrix is None:
            spec = parse_link_spec(link) if isinstance(link, str) else (link or LinkSpec())
            matrix = uniform(sites if sites is not None else 2, spec)
        elif sites is not None and sites != matrix.count:
            raise IsthmusError(f"sites={sites} disagrees with the link matrix ({matrix.count} sites)")
        if WORKSTATION in matrix.names:
            raise IsthmusError(f"site name {WORKSTATION!r} is taken by the workstation; rename the site")
        ws_spec = parse_link_spec(ws_link) if isinstance(ws_link, str) else (ws_link or LinkSpec())
        n = matrix.count
        links = dict(matrix.links)
        for i in range(n):
            links[(i, n)] = links[(n, i)] = ws_spec
        self.sites = matrix.names
        self.nodes_per_site = nodes_per_site
        self.private_shm = private_shm
        # more /etc directories of every node (e.g. "slurm"), made empty before the sshds
        # start so that their sessions see what is written there later
        self.etc_dirs = tuple(etc_dirs)
        self.emu = Emulation(matrix=LinkMatrix(matrix.names + (WORKSTATION,), links), job=job,
                             seed=seed, rt_prio=rt_prio, progress=progress)
        self.job = self.emu.job
        self._say = progress or (lambda msg: None)
        self._tag = _slug(self.job)
        self.nodes: dict[str, list[Node]] = {}
        self.dir: Path | None = None
        self._made_ns: list[str] = []
        self._etc: list[Path] = []
        self._sshd: dict[str, subprocess.Popen] = {}

    # ---- names ----
    def node(self, site: str, index: int) -> Node:
        return self.nodes[site][index]

    def all_nodes(self) -> list[Node]:
        return [n for s in self.sites for n in self.nodes[s]]

    @property
    def ws_namespace(self) -> str:
        return self.emu.namespace(WORKSTATION)

    # ---- lifetime ----
    def __enter__(self) -> "Clusters":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        binary = sshd_path()
        try:
            self.emu.start()
            self.dir = Path(tempfile.mkdtemp(prefix=f"isthmus-clusters-{self._tag}-"))
            self._plan_nodes()
            self._make_nodes()
            self._write_keys()
            for node in self.all_nodes():
                self._write_etc(node)
            self._write_etc_ws()
            for node in self.all_nodes():
                self._start_sshd(node, binary)
            for node in self.all_nodes():
                self._wait_sshd(node)
        except BaseException:
            self.close()
            raise

    def _plan_nodes(self) -> None:
        for i, site in enumerate(self.sites):
            nodes = []
            for k in range(self.nodes_per_site):
                ns = self.emu.namespace(i) if k == 0 else f"{NS_PREFIX}{self.job}-{site}-n{k}"
                nodes.append(Node(site=site, index=k, namespace=ns,
                                  hostname=f"{_slug(site)}{k}-{self._tag}",
                                  address=f"{SITE_NET}.{i}.{k + 1}",
                                  wan_address=self.emu.address(i) if k == 0 else None))
            self.nodes[site] = nodes

    def _make_nodes(self) -> None:
        self._say(f"creating {len(self.sites)} clusters of {self.nodes_per_site} nodes "
                  f"({self.node(self.sites[0], 0).hostname}, ...)")
        for site in self.sites:
            head = self.nodes[site][0]
            ns0 = head.namespace
            _run(["ip", "-n", ns0, "link", "add", BRIDGE, "type", "bridge"], f"site {site}")
            _run(["ip", "-n", ns0, "addr", "add", f"{head.address}/24", "dev", BRIDGE], f"site {site}")
            _run(["ip", "-n", ns0, "link", "set", BRIDGE, "up"], f"site {site}")
            for node in self.nodes[site][1:]:
                if (NETNS_DIR / node.namespace).exists():
                    raise IsthmusError(f"namespace {node.namespace} already exists (left by an "
                                       f"earlier run?): remove it with `isthmus link cleanup "
                                       f"--job {self.job}` or choose another --job")
                _run(["ip", "netns", "add", node.namespace], f"node {node.hostname}")
                self._made_ns.append(node.namespace)
                veth = f"isv{node.index}"
                _run(["ip", "link", "add", veth, "netns", ns0, "type", "veth", "peer", "name",
                      "eth0", "netns", node.namespace], f"node {node.hostname}")
                _run(["ip", "-n", ns0, "link", "set", veth, "master", BRIDGE, "up"], f"node {node.hostname}")
                _run(["ip", "-n", node.namespace, "addr", "add", f"{node.address}/24", "dev", "eth0"],
                     f"node {node.hostname}")
                _run(["ip", "-n", node.namespace, "link", "set", "eth0", "up"], f"node {node.hostname}")
            for node in self.nodes[site]:
                _run(["ip", "-n", node.namespace, "link", "set", "lo", "up"], f"node {node.hostname}")

    def _write_keys(self) -> None:
        assert self.dir is not None
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"isthmus-clusters-{self.job}",
              "-f", str(self.dir / "id_ed25519")], "the clusters' user key")
        lines = []
        for node in self.all_nodes():
            keydir = self.dir / "hostkeys" / node.hostname
            keydir.mkdir(parents=True)
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", node.hostname,
                  "-f", str(keydir / "ssh_host_ed25519_key")], f"node {node.hostname}")
            pub = (keydir / "ssh_host_ed25519_key.pub").read_text().split()[:2]
            names = [node.hostname, node.address] + ([node.wan_address] if node.wan_address else [])
            lines.append(f"{','.join(names)} {' '.join(pub)}")
        (self.dir / "known_hosts").write_text("\n".join(lines) + "\n")
        (self.dir / "ssh_config").write_text(self.ssh_config())

    def ssh_config(self) -> str:
        """The ssh client settings every node and the workstation use."""
        assert self.dir is not None
        return (
            "# written by isthmus link emulate --nodes-per-site: the emulated clusters' key\n"
            "Host *\n"
            f"  IdentityFile {self.dir / 'id_ed25519'}\n"
            "  IdentitiesOnly yes\n"
            f"  GlobalKnownHostsFile {self.dir / 'known_hosts'}\n"
            "  UserKnownHostsFile /dev/null\n"
            "  StrictHostKeyChecking yes\n"
            "  BatchMode yes\n"
            "  LogLevel ERROR\n"
        )

    def _etc_dir(self, namespace: str) -> Path:
        d = ETC_NETNS / namespace
        if d.exists():
            raise IsthmusError(f"{d} already exists (left by an earlier run?): remove it with "
                               f"`isthmus link cleanup --job {self.job}`")
        (d / "ssh").mkdir(parents=True)
        self._etc.append(d)
        return d

    def _write_etc(self, node: Node) -> None:
        assert self.dir is not None
        d = self._etc_dir(node.namespace)
        for name in self.etc_dirs:
            (d / name).mkdir()
        hosts = ["127.0.0.1 localhost"] + [f"{n.address} {n.hostname}" for n in self.nodes[node.site]]
        (d / "hosts").write_text("\n".join(hosts) + "\n")
        ssh = d / "ssh"
        for f in ("ssh_host_ed25519_key", "ssh_host_ed25519_key.pub"):
            shutil.copy2(self.dir / "hostkeys" / node.hostname / f, ssh / f)
        shutil.copy2(self.dir / "id_ed25519.pub", ssh / "authorized_keys")
        (ssh / "ssh_config").write_text(self.ssh_config())
        (ssh / "sshd_config").write_text(
            "# the sshd of an emulated node (isthmus/netemu/clusters.py)\n"
            "Port 22\n"
            "HostKey /etc/ssh/ssh_host_ed25519_key\n"
            "AuthorizedKeysFile /etc/ssh/authorized_keys\n"
            "PermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            "UsePAM no\n"
            "UseDNS no\n"
            "PidFile none\n"
            "StrictModes no\n"
            "PrintMotd no\n"
            "MaxStartups 64:30:128\n"
            "MaxSessions 64\n")

    def _write_etc_ws(self) -> None:
        d = self._etc_dir(self.ws_namespace)
        hosts = ["127.0.0.1 localhost"] + [f"{self.node(s, 0).wan_address} {self.node(s, 0).hostname}"
                                           for s in self.sites]
        (d / "hosts").write_text("\n".join(hosts) + "\n")
        (d / "ssh" / "ssh_config").write_text(self.ssh_config())

    def _start_sshd(self, node: Node, binary: str) -> None:
        assert self.dir is not None
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation dir
        shm = "mount -t tmpfs -o mode=1777 isthmus-shm /dev/shm && " if self.private_shm else ""
        script = f'hostname "$1" && {shm}exec "$2" -D -e -f /etc/ssh/sshd_config'
        log = open(self.dir / f"sshd-{node.hostname}.log", "w")
        try:
            self._sshd[node.hostname] = subprocess.Popen(
                ["ip", "netns", "exec", node.namespace, "unshare", "--uts", "sh", "-c", script,
                 "sh", node.hostname, binary],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        finally:
            log.close()

    def _wait_sshd(self, node: Node) -> None:
        assert self.dir is not None
        log = self.dir / f"sshd-{node.hostname}.log"
        deadline = time.monotonic() + SSHD_READY_TIMEOUT
        while time.monotonic() < deadline:
            if "Server listening" in log.read_text(errors="replace"):
                return
            if self._sshd[node.hostname].poll() is not None:
                break
            time.sleep(0.02)
        raise IsthmusError(f"node {node.hostname}: sshd did not start: "
                           f"{log.read_text(errors='replace').strip()[-600:] or 'no output'}")

    def close(self) -> None:
        """Stop every process on every node and the emulator, delete the namespaces and the
        per-node files. Idempotent."""
        problems: list[str] = []
        for p in self._sshd.values():
            _stop(p)
        self._sshd.clear()
        for name in reversed(self._made_ns):
            problems += remove_namespace(name)
        self._made_ns.clear()
        try:
            self.emu.close()
        except IsthmusError as e:
            problems.append(str(e))
        for d in self._etc:
            shutil.rmtree(d, ignore_errors=True)
        self._etc.clear()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        if problems:
            raise IsthmusError("cleanup incomplete: " + "; ".join(problems))

    # ---- running things ----
    def command(self, node: Node | None, argv: Sequence[str]) -> list[str]:
        """argv on `node` (None: the workstation), with the node's host name."""
        if node is None:
            return ["ip", "netns", "exec", self.ws_namespace, *argv]
        return ["ip", "netns", "exec", node.namespace, "unshare", "--uts", "sh", "-c",
                'hostname "$1" && shift && exec "$@"', "sh", node.hostname, *argv]

    def workstation(self, argv: Sequence[str], **kwargs) -> subprocess.CompletedProcess:
        """Run argv on the workstation to completion (subprocess.run semantics)."""
        return subprocess.run(self.command(None, argv), **kwargs)

    def ssh(self, node: Node, remote: str, **kwargs) -> subprocess.CompletedProcess:
        """Run a shell command on `node` over ssh from the workstation (through the site's
        login node unless it is one)."""
        jump = [] if node.index == 0 else ["-J", self.node(node.site, 0).hostname]
        return self.workstation(["ssh", *jump, node.hostname, remote], **kwargs)

    def processes(self, node: Node) -> list[tuple[int, str]]:
        """(pid, command line) of what runs on `node`, without its sshd listener."""
        keep = self._sshd.get(node.hostname)
        skip = {keep.pid} if keep is not None else set()
        return [(pid, cmd) for pid, cmd in _ns_processes(node.namespace)
                if pid not in skip and not _is_listener(cmd)]

    def leftovers(self, wait: float = 10.0) -> dict[str, list[tuple[int, str]]]:
        """What still runs on any node after `wait` seconds (sessions that just closed need
        a moment): {hostname: [(pid, command)]}, empty when every node is clean."""
        deadline = time.monotonic() + wait
        while True:
            found = {n.hostname: p for n in self.all_nodes() if (p := self.processes(n))}
            ws = [(pid, cmd) for pid, cmd in _ns_processes(self.ws_namespace)]
            if ws:
                found[WORKSTATION] = ws
            if not found or time.monotonic() > deadline:
                return found
            time.sleep(0.2)

    def kill_all(self) -> None:
        """SIGKILL everything on the nodes and the workstation except the sshd listeners."""
        for node in self.all_nodes():
            for pid, _ in self.processes(node):
                _kill(pid)
        for pid, _ in _ns_processes(self.ws_namespace):
            _kill(pid)

    # ---- what a user needs ----
    def site_file(self, path: Path, *, ranks_per_node: int = 1, mpi: str | Sequence[str] = "auto",
                  jump: bool = False, port: int = 41000, transport: str | None = None,
                  mpirun_args: Sequence[str] = ()) -> Path:
        """Write a site file that runs every site over ssh on all its nodes: the launcher
        starts on node 0 (with jump: on node 1, through node 0 as the login node), the
        gateway runs on node 0 at its WAN address."""
        mpis = [mpi] * len(self.sites) if isinstance(mpi, str) else list(mpi)
        out = ["# written by isthmus link emulate --nodes-per-site (emulated clusters)"]
        if transport:
            out += ["[job]", f'transport = "{transport}"', ""]
        for i, site in enumerate(self.sites):
            nodes = self.nodes[site]
            head = nodes[0]
            launch_node = nodes[1] if jump and len(nodes) > 1 else head
            args = list(mpirun_args) + vendor_net_args(mpis[i], f"{SITE_NET}.{i}.0/24")
            out += ["[[site]]", f'name = "{site}"', f"ranks = {ranks_per_node * len(nodes)}",
                    f'mpi = "{mpis[i]}"', 'launch = "ssh"', f'ssh_host = "{launch_node.hostname}"']
            if launch_node is not head:
                out.append(f'ssh_jump = "{head.hostname}"')
            out += [f"nodes = {json.dumps([f'{n.hostname}:{ranks_per_node}' for n in nodes])}",
                    f'gateway_node = "{head.hostname}"', f'gateway = "{head.wan_address}:{port}"']
            if args:
                out.append(f"mpirun_args = {json.dumps(args)}")
            out.append("")
        path.write_text("\n".join(out))
        return path


def vendor_net_args(mpi: str, subnet: str) -> list[str]:
    """Keep Open MPI's daemons and TCP transport on the site's network: node 0 also has the
    WAN address, which the other nodes cannot reach (field notes: btl_tcp_if_include)."""
    if mpi == "openmpi":
        return ["--mca", "btl_tcp_if_include", subnet, "--mca", "oob_tcp_if_include", subnet]
    return []


def _is_listener(cmd: str) -> bool:
    # the node's sshd after exec (the unshare/sh wrapper exec'd into it) and its re-exec
    return cmd.startswith(("/usr/sbin/sshd -D", "sshd: /usr/sbin/sshd -D", "sshd -D"))


def _ns_processes(namespace: str) -> list[tuple[int, str]]:
    out = []
    for pid in _ip("netns", "pids", namespace).stdout.split():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            out.append((int(pid), cmd))
    return out


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def remove_etc_netns(job: str | None = None) -> list[str]:
    """Per-node /etc/netns/ism-* directories of emulated clusters (all jobs, or one)."""
    head = f"{NS_PREFIX}{job}-" if job else NS_PREFIX
    removed = []
    if ETC_NETNS.is_dir():
        for d in ETC_NETNS.iterdir():
            if d.name.startswith(head):
                shutil.rmtree(d, ignore_errors=True)
                removed.append(d.name)
    return removed
