# isthmus/launch/layout.py: the job layout: which sites exist, how many app ranks and
# gateways each has, where its gateways listen and how it is launched. Global ranks are
# numbered by site, then by local rank. Validation of a layout lives here too.
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Sequence

from ..batch.request import SlurmRequest
from ..errors import IsthmusError
from .cpulimit import check_cores

LAUNCHERS = ("local", "ssh", "slurm")
MPI_CHOICES = ("auto", "openmpi", "mpich")
TRANSPORTS = ("tcp", "udp")
DEFAULT_HOST = "127.0.0.1"
# The most ranks a job may have: libisthmus and the gateways refuse more (native/src/contract/
# layout.c, ISM_LAYOUT_MAX_RANKS), and global ranks travel as 32-bit integers well below this.
MAX_RANKS = 1 << 24

_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")


def default_site_names(count: int) -> list[str]:
    """A, B, ..., Z, AA, AB, ... (spreadsheet column names)."""
    names = []
    for i in range(count):
        n, name = i + 1, ""
        while n:
            n, rem = divmod(n - 1, 26)
            name = chr(ord("A") + rem) + name
        names.append(name)
    return names


@dataclass(frozen=True)
class Site:
    """One site: its own vendor MPI job of `ranks` app ranks plus `gateways` gateway ranks.

    `port` is the port of gateway 0 (gateway i listens on port + i); None means "pick free
    ports at launch" (only possible for local sites)."""

    name: str
    ranks: int
    gateways: int = 1
    host: str = DEFAULT_HOST
    port: int | None = None
    launcher: str = "local"
    mpi: str = "auto"
    ssh_host: str | None = None
    mpirun_args: tuple[str, ...] = ()
    # A site of several nodes: `nodes` ("host" or "host:slots") or a `hostfile` that the
    # site's launcher reads; the gateway ranks run on `gateway_node`.
    nodes: tuple[str, ...] = ()
    hostfile: str | None = None
    gateway_node: str | None = None
    ssh_jump: str | None = None  # login node to hop through (ssh -J)
    ssh_options: tuple[str, ...] = ()  # extra ssh client arguments
    # Other paths to the gateways ("host:port" of gateway 0 on each, after the primary
    # host/port): a link that cannot reach the site over one moves to the next.
    backup_gateways: tuple[str, ...] = ()
    # The site only dials out (behind NAT, or no inbound port): its gateways open every
    # link they have, and listen for nothing.
    dial_out: bool = False
    # launch = "slurm": the allocation asked of the site's Slurm (through ssh_host, its
    # login node, when given); the site's part runs inside it, the gateways on gateway_node
    slurm: SlurmRequest | None = None
    # data staged by `isthmus submit` (batch/stage.py): local files and directories copied
    # into stage_dir (relative to the site's $HOME) before the job, files copied from there
    # after it, through a copy server the site runs at stage_listen ("host:port")
    stage_in: tuple[str, ...] = ()
    stage_out: tuple[str, ...] = ()
    stage_dir: str = "isthmus-stage"
    stage_listen: str | None = None
    # at most this many cores for the site's application ranks together (launch/cpulimit.py:
    # a cgroup on this machine); None: no limit
    cpu: float | None = None

    @property
    def remote(self) -> bool:
        """Started over ssh (an ssh site, or a Slurm site reached through its login node)."""
        return self.launcher == "ssh" or (self.launcher == "slurm" and self.ssh_host is not None)

    @property
    def multi_node(self) -> bool:
        return bool(self.nodes or self.hostfile)

    def node_ranks(self) -> list[tuple[str, int]]:
        """(host, app ranks) per node of `nodes`: the slots given, else an even split."""
        hosts = [n.partition(":")[0] for n in self.nodes]
        slots = [n.partition(":")[2] for n in self.nodes]
        if all(slots):
            counts, left = [], self.ranks
            for sl in slots:
                counts.append(min(int(sl), left))
                left -= counts[-1]
            return [(h, c) for h, c in zip(hosts, counts) if c > 0]
        return [(h, c) for h, c in zip(hosts, split_ranks(self.ranks, len(hosts))) if c > 0]

    @property
    def gateway_paths(self) -> str:
        """ISTHMUS_GATEWAY_ADDRS' entry for the site: the primary address, then the backups."""
        return "|".join((self.gateway_addr, *self.backup_gateways))

    @property
    def gateway_addr(self) -> str:
        """host:port of gateway 0 (IPv6 hosts in brackets)."""
        if self.port is None:
            raise ValueError(f"site {self.name!r} has no gateway port yet")
        return f"{format_host(self.host)}:{self.port}"


def format_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@dataclass(frozen=True)
class Layout:
    sites: tuple[Site, ...]
    transport: str = "tcp"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sites", tuple(self.sites))

    @property
    def total_ranks(self) -> int:
        return sum(s.ranks for s in self.sites)

    def first_rank(self, index: int) -> int:
        """Global rank of local rank 0 of site `index`."""
        return sum(s.ranks for s in self.sites[:index])

    def rank_range(self, index: int) -> range:
        start = self.first_rank(index)
        return range(start, start + self.sites[index].ranks)

    def with_sites(self, sites: Sequence[Site]) -> "Layout":
        return replace(self, sites=tuple(sites))

    def with_transport(self, transport: str) -> "Layout":
        return replace(self, transport=transport).validate()

    def validate(self) -> "Layout":
        """Check the whole layout; raises IsthmusError naming the site and field."""
        if not self.sites:
            raise IsthmusError("the job has no sites")
        if self.transport not in TRANSPORTS:
            raise IsthmusError(
                f"transport {self.transport!r} is not supported (choose from: {', '.join(TRANSPORTS)})"
            )
        dialers = [s.name for s in self.sites if s.dial_out]
        if len(dialers) > 1:
            raise IsthmusError(
                f"sites {dialers[0]!r} and {dialers[1]!r} both only dial out (dial_out): nothing "
                "could connect them to each other; at most one site of a job may, the others "
                "need a gateway address it can reach")
        seen: dict[str, int] = {}
        for i, s in enumerate(self.sites):
            where = f"site {s.name!r}"
            if not isinstance(s.name, str) or not _NAME_RE.match(s.name):
                raise IsthmusError(
                    f"site #{i + 1}: name {s.name!r} is not valid (1-32 letters, digits, '_', '.', '-')"
                )
            if s.name in seen:
                raise IsthmusError(
                    f"site name {s.name!r} is used twice (sites #{seen[s.name] + 1} and #{i + 1})"
                )
            seen[s.name] = i
            if not _is_int(s.ranks) or s.ranks < 1:
                raise IsthmusError(f"{where}: needs at least 1 rank, got {s.ranks!r}")
            if s.ranks > MAX_RANKS:
                raise IsthmusError(f"{where}: {s.ranks} ranks is more than isthmus runs "
                                   f"({MAX_RANKS} in a job)")
            if not _is_int(s.gateways) or s.gateways < 1:
                raise IsthmusError(f"{where}: needs at least 1 gateway, got {s.gateways!r}")
            if s.launcher not in LAUNCHERS:
                raise IsthmusError(
                    f"{where}: launcher {s.launcher!r} is not one of {', '.join(LAUNCHERS)}"
                )
            if s.mpi not in MPI_CHOICES:
                raise IsthmusError(f"{where}: mpi {s.mpi!r} is not one of {', '.join(MPI_CHOICES)}")
            if not s.host:
                raise IsthmusError(f"{where}: gateway host is empty")
            if s.port is not None:
                if not _is_int(s.port) or not 1 <= s.port <= 65535:
                    raise IsthmusError(f"{where}: gateway port must be 1-65535, got {s.port!r}")
                if s.port + s.gateways - 1 > 65535:
                    raise IsthmusError(
                        f"{where}: {s.gateways} gateways starting at port {s.port} run past 65535"
                    )
            if s.launcher == "ssh":
                if not s.ssh_host:
                    raise IsthmusError(f"{where}: launch 'ssh' needs an ssh host")
                if s.port is None:
                    raise IsthmusError(
                        f"{where}: an ssh site needs an explicit gateway host:port "
                        "(free ports can only be picked on this machine)"
                    )
            elif s.launcher == "slurm":
                _validate_slurm(s, where)
                continue
            elif s.ssh_host or s.ssh_jump or s.ssh_options:
                raise IsthmusError(f"{where}: ssh settings are only allowed with launch 'ssh'")
            if s.slurm is not None:
                raise IsthmusError(f"{where}: a Slurm request is only allowed with launch 'slurm'")
            _validate_nodes(s, where)
        for s in self.sites:
            _validate_cpu(s, f"site {s.name!r}")
        if self.total_ranks > MAX_RANKS:
            raise IsthmusError(f"{self.total_ranks} ranks over all sites is more than isthmus "
                               f"runs ({MAX_RANKS} in a job)")
        # Gateways of two sites on the same host must not share ports.
        for i, a in enumerate(self.sites):
            for b in self.sites[i + 1 :]:
                if a.port is None or b.port is None or a.host != b.host:
                    continue
                if a.port < b.port + b.gateways and b.port < a.port + a.gateways:
                    raise IsthmusError(
                        f"sites {a.name!r} and {b.name!r} both use gateway ports on {a.host} "
                        f"({_port_span(a)} and {_port_span(b)})"
                    )
        return self


def _validate_nodes(s: Site, where: str) -> None:
    if s.nodes and s.hostfile:
        raise IsthmusError(f"{where}: give either nodes or a hostfile, not both")
    if not s.multi_node:
        if s.gateway_node:
            raise IsthmusError(f"{where}: gateway_node needs nodes or a hostfile (a site of one "
                               "node runs its gateway where its launcher runs)")
        return
    if s.hostfile and not s.gateway_node:
        raise IsthmusError(f"{where}: with a hostfile, name the node of the gateway (gateway_node)")
    slots = [n.partition(":")[2] for n in s.nodes]
    if any(slots) and not all(slots):
        raise IsthmusError(f"{where}: nodes: give slots (\"host:N\") for every node or for none")
    if all(slots) and s.nodes and sum(int(x) for x in slots) < s.ranks:
        raise IsthmusError(f"{where}: nodes have {sum(int(x) for x in slots)} slots but the site "
                           f"has {s.ranks} ranks; add slots or nodes")


def _validate_cpu(s: Site, where: str) -> None:
    """A CPU limit is a cgroup on this machine, so only for a site whose ranks all run here."""
    if s.cpu is None:
        return
    if s.launcher != "local" or s.multi_node:
        how = f"launch '{s.launcher}'" if s.launcher != "local" else "several nodes"
        raise IsthmusError(f"{where}: a CPU limit (cpu, --site-cpu) is a cgroup on this machine, "
                           f"so it needs a site whose ranks all run here, not {how}")
    check_cores(s.cpu, where)


def _validate_slurm(s: Site, where: str) -> None:
    if s.slurm is None:
        raise IsthmusError(f"{where}: launch 'slurm' needs its request ([site.slurm])")
    if s.nodes or s.hostfile:
        raise IsthmusError(f"{where}: Slurm chooses the nodes of a 'slurm' site; give their "
                           "number in [site.slurm] nodes, not a node list or host file")
    if s.port is None:
        raise IsthmusError(f"{where}: a Slurm site needs an explicit gateway host:port (the "
                           "address of gateway_node that the other sites reach)")
    if s.slurm.nodes > 1 and not s.gateway_node:
        raise IsthmusError(f"{where}: an allocation of {s.slurm.nodes} nodes needs the node of "
                           "the gateway (gateway_node: the node that holds the 'gateway' address)")


def _port_span(s: Site) -> str:
    assert s.port is not None
    return str(s.port) if s.gateways == 1 else f"{s.port}-{s.port + s.gateways - 1}"


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def parse_ranks_per_site(text: str) -> list[int]:
    """'2,3' -> [2, 3], with a clear message for anything else."""
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise IsthmusError(
            f"--ranks-per-site {text!r} is not a comma-separated list of integers (e.g. 2,2)"
        ) from None
    return values


def split_ranks(n: int, sites: int) -> list[int]:
    """Even split, earlier sites get the remainder: 5 ranks on 2 sites -> [3, 2]."""
    base, extra = divmod(n, sites)
    return [base + (1 if i < extra else 0) for i in range(sites)]


def embedded_layout(
    n: int,
    sites: int = 2,
    ranks_per_site: Sequence[int] | str | None = None,
    gateways: int = 1,
    host: str = DEFAULT_HOST,
    port: int | None = None,
    mpi: str = "auto",
    transport: str = "tcp",
) -> Layout:
    """The layout of `isthmus run -n N [--sites S] ...` (all sites local, on `host`).

    With `port`, site i's gateway 0 listens on port + (gateways of the sites before it), so
    all gateways use one consecutive block; without it ports are picked at launch."""
    if sites < 1:
        raise IsthmusError(f"--sites must be at least 1, got {sites}")
    if gateways < 1:
        raise IsthmusError(f"--gateways must be at least 1, got {gateways}")
    if n < 1:
        raise IsthmusError(f"-n must be at least 1, got {n}")
    if isinstance(ranks_per_site, str):
        ranks_per_site = parse_ranks_per_site(ranks_per_site)
    if ranks_per_site is not None:
        counts = list(ranks_per_site)
        if len(counts) != sites:
            raise IsthmusError(
                f"--ranks-per-site has {len(counts)} entries but there are {sites} sites "
                "(give one count per site, or change --sites)"
            )
        for i, c in enumerate(counts):
            if c < 1:
                raise IsthmusError(
                    f"--ranks-per-site: site {default_site_names(sites)[i]} would have {c} ranks; "
                    "every site needs at least 1"
                )
        if sum(counts) != n:
            raise IsthmusError(
                f"--ranks-per-site adds up to {sum(counts)} but -n is {n}"
            )
    else:
        if n < sites:
            raise IsthmusError(
                f"-n {n} is less than the number of sites ({sites}); every site needs at least 1 rank"
            )
        counts = split_ranks(n, sites)
    if port is not None and not 1 <= port <= 65535:
        raise IsthmusError(f"--port must be 1-65535, got {port}")
    names = default_site_names(sites)
    out = []
    next_port = port
    for name, count in zip(names, counts):
        out.append(
            Site(name=name, ranks=count, gateways=gateways, host=host, port=next_port, mpi=mpi)
        )
        if next_port is not None:
            next_port += gateways
    if port is not None and next_port is not None and next_port - 1 > 65535:
        raise IsthmusError(
            f"--port {port}: {sites * gateways} gateway ports would run past 65535"
        )
    return Layout(sites=tuple(out), transport=transport).validate()
