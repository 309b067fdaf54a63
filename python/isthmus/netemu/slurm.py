# isthmus/netemu/slurm.py: a real Slurm cluster at each site of the emulated clusters
# (clusters.py), to rehearse batch jobs: Debian's munged, slurmctld and slurmd (22.05),
# one independent cluster per site. The site's login node (node 0) runs its munged and
# slurmctld; every node of the site runs a slurmd with the node's host name. Each site's
# slurm.conf goes to /etc/netns/<namespace>/slurm/ of its nodes, which `ip netns exec` binds
# over /etc/slurm, so sbatch, squeue and srun run on a node (or over ssh to it) find their
# own site's cluster without any option, as on a real login node.
#
# Everything runs as root with proctrack/linuxproc and task/none (no cgroups here); the
# state, spool and log directories live in the clusters' temporary directory, and every
# daemon is stopped on every exit path (close()).
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..errors import IsthmusError
from .clusters import ETC_NETNS, SITE_NET, Clusters, Node, vendor_net_args
from .emulation import _stop

DAEMONS = ("munged", "slurmctld", "slurmd")
READY_TIMEOUT = 20.0  # for a daemon to start
# for every node to be idle: a slurmd whose first registration failed (seen once on a
# loaded machine: munged "Unauthorized credential") is asked again by slurmctld's pings
IDLE_TIMEOUT = 60.0
CPUS_PER_NODE = 4  # what each emulated node offers Slurm (SlurmdParameters=config_overrides)


@dataclass(frozen=True)
class Partition:
    name: str
    max_time: str = "01:00:00"  # Slurm's time format; "UNLIMITED" allowed
    default: bool = False
    nodes: str = "ALL"


@dataclass
class SiteSlurm:
    """One site's cluster: where its files are and the daemons it runs."""

    site: str
    dir: Path
    conf: str
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)


def daemon_paths() -> dict[str, str]:
    found = {}
    for name in DAEMONS:
        p = shutil.which(name, path="/usr/sbin:/usr/bin:" + os.environ.get("PATH", ""))
        if p is None:
            pkg = {"munged": "munge"}.get(name, name)
            raise IsthmusError(f"{name} is missing: the Slurm test bed runs real daemons; apt "
                               f"install {pkg} (scripts/bootstrap.sh does)")
        found[name] = p
    return found


class SlurmClusters:
    """Emulated clusters (clusters.py; `bed`) with a Slurm cluster at each site; the
    keyword arguments not named here go to Clusters. `partitions` per site (default: one
    partition "batch" of every node, 1 hour), `features` per node host name."""

    def __init__(self, partitions: dict[str, Sequence[Partition]] | None = None,
                 features: dict[str, Sequence[str]] | None = None, cpus: int = CPUS_PER_NODE,
                 **clusters):
        self.bed = Clusters(etc_dirs=("slurm",), **clusters)
        self.partitions = partitions or {}
        self.features = features or {}
        self.cpus = cpus
        self.sites: dict[str, SiteSlurm] = {}

    def __enter__(self) -> "SlurmClusters":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- configuration ----
    def _conf(self, site: str, d: Path) -> str:
        nodes = self.bed.nodes[site]
        head = nodes[0]
        parts = self.partitions.get(site) or [Partition("batch", default=True)]
        lines = [
            f"# slurm.conf of emulated site {site} (isthmus/netemu/slurm.py)",
            f"ClusterName={site.lower()}",
            f"SlurmctldHost={head.hostname}({head.address})",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"AuthType=auth/munge",
            f"AuthInfo=socket={d / 'munge.socket'}",
            "CredType=cred/munge",
            f"StateSaveLocation={d / 'state'}",
            f"SlurmdSpoolDir={d / 'spool-%n'}",
            f"SlurmctldPidFile={d / 'slurmctld.pid'}",
            f"SlurmdPidFile={d / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={d / 'slurmctld.log'}",
            f"SlurmdLogFile={d / 'slurmd-%n.log'}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SwitchType=switch/none",
            "MpiDefault=none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=bf_interval=1,sched_min_interval=100000",
            "SlurmdParameters=config_overrides",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "ReturnToService=2",
            "KillWait=2",
            "MinJobAge=60",
            "InactiveLimit=0",
            "MessageTimeout=10",
            "SlurmdTimeout=60",
        ]
        for n in nodes:
            feats = self.features.get(n.hostname, ())
            lines.append(f"NodeName={n.hostname} NodeAddr={n.address} CPUs={self.cpus} "
                         f"RealMemory=1000" + (f" Features={','.join(feats)}" if feats else "")
                         + " State=UNKNOWN")
        for p in parts:
            lines.append(f"PartitionName={p.name} Nodes={p.nodes} MaxTime={p.max_time} "
                         f"Default={'YES' if p.default else 'NO'} State=UP")
        return "\n".join(lines) + "\n"

    def start(self) -> None:
        paths = daemon_paths()
        try:
            self.bed.start()
            for site in self.bed.sites:
                self._start_site(site, paths)
            for site in self.bed.sites:
                self._wait_ready(site)
        except BaseException:
            self.close()
            raise

    def _start_site(self, site: str, paths: dict[str, str]) -> None:
        assert self.bed.dir is not None
        d = self.bed.dir / f"slurm-{site}"
        (d / "state").mkdir(parents=True)
        (d / "cgroup").mkdir()
        os.chmod(d, 0o755)
        conf = self._conf(site, d)
        s = self.sites[site] = SiteSlurm(site=site, dir=d, conf=conf)
        for node in self.bed.nodes[site]:
            etc = ETC_NETNS / node.namespace / "slurm"  # made by the bed, bound over /etc/slurm
            (etc / "slurm.conf").write_text(conf)
            # proctrack/linuxproc and task/none use no cgroup, but slurmd loads the cgroup
            # plugin anyway; v1 with an empty mount point is content with that
            (etc / "cgroup.conf").write_text(f"CgroupPlugin=cgroup/v1\nCgroupMountpoint={d / 'cgroup'}\n")
            (d / f"spool-{node.hostname}").mkdir()
        key = d / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        head = self.bed.node(site, 0)
        s.procs["munged"] = self._spawn(head, [
            paths["munged"], "-F", "--force", f"--socket={d / 'munge.socket'}",
            f"--key-file={key}", f"--pid-file={d / 'munged.pid'}",
            f"--log-file={d / 'munged.log'}", f"--seed-file={d / 'munged.seed'}"], d / "munged.out")
        self._wait_file(d / "munge.socket", f"site {site}: munged", d / "munged.log")
        s.procs["slurmctld"] = self._spawn(head, [paths["slurmctld"], "-D", "-i"], d / "slurmctld.out")
        for node in self.bed.nodes[site]:
            s.procs[f"slurmd:{node.hostname}"] = self._spawn(
                node, [paths["slurmd"], "-D", "-N", node.hostname], d / f"slurmd-{node.hostname}.out")

    def _spawn(self, node: Node, argv: list[str], out: Path) -> subprocess.Popen:
        with open(out, "w") as f:
            return subprocess.Popen(self.bed.command(node, argv), stdin=subprocess.DEVNULL,
                                    stdout=f, stderr=f, start_new_session=True)

    @staticmethod
    def _wait_file(path: Path, what: str, log: Path) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while not path.exists():
            if time.monotonic() > deadline:
                text = log.read_text(errors="replace")[-600:] if log.exists() else "no log"
                raise IsthmusError(f"{what} did not start within {READY_TIMEOUT:g} s: {text}")
            time.sleep(0.05)

    def run(self, site: str, argv: Sequence[str], node: int = 0, **kwargs) -> subprocess.CompletedProcess:
        """argv on a node of `site` (its login node by default), e.g. sinfo or sbatch."""
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("text", True)
        kwargs.setdefault("timeout", 30)
        return subprocess.run(self.bed.command(self.bed.node(site, node), argv), **kwargs)

    def _wait_ready(self, site: str) -> None:
        """Every node of the site idle in sinfo."""
        s = self.sites[site]
        want = {n.hostname for n in self.bed.nodes[site]}
        deadline = time.monotonic() + IDLE_TIMEOUT
        last = ""
        while time.monotonic() < deadline:
            for name, p in s.procs.items():
                if p.poll() is not None:
                    raise IsthmusError(f"site {site}: {name} exited with code {p.returncode}: "
                                       f"{self._logs(site)}")
            r = self.run(site, ["sinfo", "-h", "-N", "-o", "%N %t"], timeout=10)
            last = (r.stdout + r.stderr).strip()
            idle = {line.split()[0] for line in r.stdout.splitlines()
                    if len(line.split()) == 2 and line.split()[1] == "idle"}
            if want <= idle:
                return
            time.sleep(0.2)
        raise IsthmusError(f"site {site}: Slurm nodes not idle within {IDLE_TIMEOUT:g} s "
                           f"(sinfo: {last!r}): {self._logs(site)}")

    def site_file(self, path: Path, *, mpi: str | Sequence[str] = "auto", ranks_per_node: int = 2,
                  slurm: dict[str, dict] | None = None, port: int = 41000,
                  launch: Sequence[str] | None = None, keys: dict[str, dict] | None = None) -> Path:
        """A site file for `isthmus submit` from the workstation: every site (or those
        `launch` says, the others over ssh) asks its Slurm for all its nodes through its
        login node, the gateway on node 0 (the one with the WAN address). `slurm` adds
        [site.slurm] keys per site, `keys` more site keys (e.g. staging)."""
        bed = self.bed
        mpis = [mpi] * len(bed.sites) if isinstance(mpi, str) else list(mpi)
        how = list(launch) if launch else ["slurm"] * len(bed.sites)
        out = ["# written by isthmus/netemu/slurm.py (emulated clusters with Slurm)"]
        for i, site in enumerate(bed.sites):
            nodes = bed.nodes[site]
            head = nodes[0]
            args = vendor_net_args(mpis[i], f"{SITE_NET}.{i}.0/24")
            out += ["[[site]]", f'name = "{site}"', f"ranks = {ranks_per_node * len(nodes)}",
                    f'mpi = "{mpis[i]}"', f'launch = "{how[i]}"', f'ssh_host = "{head.hostname}"',
                    f'gateway_node = "{head.hostname}"', f'gateway = "{head.wan_address}:{port}"']
            if how[i] == "ssh":
                out.append(f"nodes = {json.dumps([f'{n.hostname}:{ranks_per_node}' for n in nodes])}")
            if args:
                out.append(f"mpirun_args = {json.dumps(args)}")
            out += [f"{k} = {json.dumps(v)}" for k, v in (keys or {}).get(site, {}).items()]
            if how[i] == "slurm":
                out.append("[site.slurm]")
                req = {"nodes": len(nodes), **(slurm or {}).get(site, {})}
                out += [f"{k} = {json.dumps(v)}" for k, v in req.items()]
            out.append("")
        path.write_text("\n".join(out))
        return path

    def queue(self, site: str) -> list[str]:
        """squeue's lines at `site` (every job: "id|name|state|reason")."""
        r = self.run(site, ["squeue", "-h", "-o", "%i|%j|%T|%r"])
        if r.returncode != 0:
            raise IsthmusError(f"site {site}: squeue failed: {r.stderr.strip()}")
        return r.stdout.split()

    def leftovers(self, wait: float = 10.0) -> dict[str, list[tuple[int, str]]]:
        """As Clusters.leftovers, without the Slurm daemons and munged."""
        daemons = {p.pid for s in self.sites.values() for p in s.procs.values()}
        deadline = time.monotonic() + wait
        while True:
            found = {host: left for host, procs in self.bed.leftovers(wait=0).items()
                     if (left := [(pid, cmd) for pid, cmd in procs
                                  if pid not in daemons and _parent(pid) not in daemons])}
            if not found or time.monotonic() > deadline:
                return found
            time.sleep(0.2)

    def _logs(self, site: str) -> str:
        d = self.sites[site].dir
        tails = []
        for f in sorted(d.glob("*.log")) + sorted(d.glob("*.out")):
            text = f.read_text(errors="replace").strip()
            if text:
                tails.append(f"[{f.name}] {text[-400:]}")
        return " ".join(tails) or "no logs"

    def close(self) -> None:
        """Stop every daemon of every site (slurmd first, munged last), then the clusters
        (which removes the per-node files, slurm.conf included). Idempotent."""
        for s in self.sites.values():
            order = sorted(s.procs, key=lambda k: (k.startswith("munged"), k.startswith("slurmctld")))
            for name in order:
                _stop(s.procs[name])
            s.procs.clear()
        self.sites.clear()
        self.bed.close()


def _parent(pid: int) -> int:
    """The parent of a process (slurmctld's own slurmscriptd is part of the daemon)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0
