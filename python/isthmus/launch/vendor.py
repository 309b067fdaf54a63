# isthmus/launch/vendor.py: which vendor MPIs (Open MPI, MPICH) are usable here, and the
# per-site MPMD launcher command line: app ranks first, then the site's gateway ranks.
from __future__ import annotations

import os
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ..errors import IsthmusError
from ..paths import Prefix

VENDORS = ("openmpi", "mpich")  # "auto" prefers them in this order
LAUNCHER = {"openmpi": "mpirun.openmpi", "mpich": "mpiexec.mpich"}
DEBIAN_PACKAGE = {"openmpi": "openmpi-bin", "mpich": "mpich"}

# Open MPI refuses to run as root without these.
OPENMPI_ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def launcher_path(vendor: str, path: str | None = None) -> str | None:
    return shutil.which(LAUNCHER[vendor], path=path)


def _problem(vendor: str, prefix: Prefix, path: str | None) -> str | None:
    """Why `vendor` cannot be used here, or None if it can."""
    if launcher_path(vendor, path) is None:
        return f"{LAUNCHER[vendor]} was not found"
    if not prefix.backend(vendor).is_file():
        return f"the isthmus backend {prefix.backend(vendor)} is missing"
    return None


def detect(prefix: Prefix, path: str | None = None) -> list[str]:
    """Vendors usable here: launcher on PATH and the isthmus backend plugin in the prefix."""
    return [v for v in VENDORS if _problem(v, prefix, path) is None]


def resolve(requested: str, prefix: Prefix, path: str | None = None) -> str:
    """Turn --mpi auto|openmpi|mpich into a usable vendor, or raise a message saying what to do."""
    if requested == "auto":
        found = detect(prefix, path)
        if found:
            return found[0]
        reasons = "; ".join(f"{v}: {_problem(v, prefix, path)}" for v in VENDORS)
        raise IsthmusError(
            f"no usable MPI found ({reasons}); install the Debian package openmpi-bin or mpich, "
            "and build the native part (scripts/bootstrap.sh)"
        )
    if requested not in VENDORS:
        raise IsthmusError(f"--mpi {requested!r} is not one of auto, {', '.join(VENDORS)}")
    problem = _problem(requested, prefix, path)
    if problem is None:
        return requested
    other = [v for v in VENDORS if v != requested][0]
    if launcher_path(requested, path) is None:
        raise IsthmusError(
            f"--mpi {requested} requested but {problem}; install the Debian package "
            f"{DEBIAN_PACKAGE[requested]}, or use --mpi {other}"
        )
    raise IsthmusError(
        f"--mpi {requested} requested but {problem}; rebuild the native part with "
        f"{requested} installed (scripts/bootstrap.sh), or use --mpi {other}"
    )


def launcher_env(vendor: str) -> dict[str, str]:
    """Extra environment the vendor's launcher needs on this machine."""
    if vendor == "openmpi" and hasattr(os, "geteuid") and os.geteuid() == 0:
        return dict(OPENMPI_ROOT_ENV)
    return {}


@dataclass(frozen=True)
class Placement:
    """Where a multi-node site's processes go: app ranks per node (or the site's own host
    file), and the node of the gateway ranks, the one holding the gateway's address."""

    app_hosts: tuple[tuple[str, int], ...] = ()
    hostfile: str | None = None
    gateway_node: str | None = None


def _host_list(hosts: Sequence[tuple[str, int]]) -> str:
    """hydra's -hosts, a host that comes back at once merged ("a:2,a:1" -> "a:3"): the
    same placement, and under Slurm hydra asks srun for one node per entry."""
    merged: list[list] = []
    for h, n in hosts:
        if merged and merged[-1][0] == h:
            merged[-1][1] += n
        else:
            merged.append([h, n])
    return ",".join(f"{h}:{n}" for h, n in merged)


def build_command(
    vendor: str,
    ranks: int,
    gateways: int,
    program: str,
    args: Sequence[str],
    gateway_path: str,
    export_names: Sequence[str] = (),
    extra_args: Sequence[str] = (),
    placement: Placement | None = None,
    tag_output: bool = False,
) -> list[str]:
    """The MPMD command line of one site: `ranks` copies of the program (vendor ranks
    0..ranks-1), then `gateways` copies of isthmus-gateway (vendor ranks ranks..).

    `export_names` are environment variables the launcher must forward to ranks on other
    nodes of the site (Open MPI only forwards OMPI_* unless told with -x; MPICH's hydra
    forwards the whole environment by default). `placement` spreads the ranks over the
    site's nodes with the vendor's own remote launcher (Open MPI's rsh/ssh agent, hydra's
    ssh bootstrap); `tag_output` makes the vendor mark each output line with its rank."""
    if ":" in args:
        raise IsthmusError(
            "a program argument is a lone ':' which the MPI launcher would take as an MPMD "
            "separator; quote or change it"
        )
    pl = placement or Placement()
    if vendor == "openmpi":
        exports = [a for name in export_names for a in ("-x", name)]
        # one app context per node: Open MPI numbers ranks in context order, and one
        # context with a host list is mapped from mpirun's own node first, whatever the order
        if pl.app_hosts:
            apps = [[*exports, "--host", f"{h}:{n}", "-np", str(n), program, *args, ":"]
                    for h, n in pl.app_hosts]
        else:
            apps = [[*exports, "-np", str(ranks), program, *args, ":"]]
        gw_hosts = ["--host", f"{pl.gateway_node}:{gateways}"] if pl.gateway_node else []
        return [
            LAUNCHER[vendor],
            "--oversubscribe",
            "--mca", "mpi_yield_when_idle", "1",
            *_op_avx_off(extra_args),
            *(["--tag-output"] if tag_output else []),
            *(["--hostfile", pl.hostfile] if pl.hostfile else []),
            *extra_args,
            *[a for app in apps for a in app],
            *exports, *gw_hosts, "-np", str(gateways), gateway_path,
        ]  # fmt: skip
    if vendor == "mpich":
        # hydra takes one host list for all executables and fills it in order, a host
        # may come back: the app ranks' nodes, then the gateway node for the gateways
        if pl.hostfile:
            raise IsthmusError(
                "MPICH's mpiexec places the processes of all executables from one host file, "
                "so the gateway's node cannot be chosen: list the site's nodes in 'nodes' instead"
            )
        hosts = list(pl.app_hosts) + ([(pl.gateway_node, gateways)] if pl.gateway_node else [])
        return [
            LAUNCHER[vendor],
            *(["-prepend-rank"] if tag_output else []),
            *(["-hosts", _host_list(hosts)] if pl.app_hosts else []),
            *extra_args,
            "-np", str(ranks), program, *args,
            ":",
            "-np", str(gateways), gateway_path,
        ]  # fmt: skip
    raise ValueError(f"unknown vendor {vendor!r}")


def _op_avx_off(extra_args: Sequence[str]) -> list[str]:
    """Open MPI's op/avx component (4.1) sums 8- and 16-bit integers with saturating vector
    adds: 200 + 100 in MPI_UINT8_T gives 255, not 44 (open-mpi/ompi#8045; seen with Debian
    12's 4.1.4 on AVX2/AVX-512 CPUs, tests/mpi/coll_small_int_wrap.c). isthmus reproduces
    the site's reductions, so a site runs with the component off unless the user chose
    the op components (OMPI_MCA_op, or --mca op among the site's mpirun arguments)."""
    if os.environ.get("OMPI_MCA_op") is not None:
        return []
    if any(a == "op" and i > 0 and extra_args[i - 1] in ("--mca", "-mca")
           for i, a in enumerate(extra_args)):
        return []
    return ["--mca", "op", "^avx"]


def export_names(env: Mapping[str, str]) -> list[str]:
    """Names of the ISTHMUS_* variables a launcher must forward to every rank."""
    return sorted(k for k in env if k.startswith("ISTHMUS_"))


def openmpi_session_root(env: Mapping[str, str]) -> Path:
    """The directory every Open MPI 4.1 mpirun of this user on this node keeps its session
    directories in: <tmpdir base>/ompi.<short host name>.<uid>."""
    base = (env.get("OMPI_MCA_orte_tmpdir_base") or env.get("TMPDIR") or env.get("TEMP")
            or env.get("TMP") or "/tmp")
    host = socket.gethostname()
    if not host.replace(".", "").isdigit():  # (a name, not an address: its first label)
        host = host.split(".")[0]
    return Path(base) / f"ompi.{host}.{os.getuid()}"


def prepare_openmpi_sessions(env: Mapping[str, str]) -> None:
    """Makes openmpi_session_root before the sites of a job start: when it is missing, each
    site's mpirun creates it, and two creating it at the same instant fail one of them
    ("A call to mkdir was unable to create the desired directory ... File exists", seen
    once in 529 runs of the program table with 3 sites). What cannot be made here is left
    to mpirun, as before."""
    try:
        openmpi_session_root(env).mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        pass
