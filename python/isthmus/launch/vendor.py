# isthmus/launch/vendor.py: which vendor MPIs (Open MPI, MPICH) are usable here, and the
# per-site MPMD launcher command line: app ranks first, then the site's gateway ranks.
from __future__ import annotations

import os
import shutil
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


def build_command(
    vendor: str,
    ranks: int,
    gateways: int,
    program: str,
    args: Sequence[str],
    gateway_path: str,
    export_names: Sequence[str] = (),
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The MPMD command line of one site: `ranks` copies of the program (vendor ranks
    0..ranks-1), then `gateways` copies of isthmus-gateway (vendor ranks ranks..).

    `export_names` are environment variables the launcher must forward to ranks on other
    nodes of the site (Open MPI only forwards OMPI_* unless told with -x; MPICH's hydra
    forwards the whole environment by default)."""
    if ":" in args:
        raise IsthmusError(
            "a program argument is a lone ':' which the MPI launcher would take as an MPMD "
            "separator; quote or change it"
        )
    if vendor == "openmpi":
        exports = [a for name in export_names for a in ("-x", name)]
        return [
            LAUNCHER[vendor],
            "--oversubscribe",
            "--mca", "mpi_yield_when_idle", "1",
            *extra_args,
            *exports, "-np", str(ranks), program, *args,
            ":",
            *exports, "-np", str(gateways), gateway_path,
        ]  # fmt: skip
    if vendor == "mpich":
        return [
            LAUNCHER[vendor],
            *extra_args,
            "-np", str(ranks), program, *args,
            ":",
            "-np", str(gateways), gateway_path,
        ]  # fmt: skip
    raise ValueError(f"unknown vendor {vendor!r}")


def export_names(env: Mapping[str, str]) -> list[str]:
    """Names of the ISTHMUS_* variables a launcher must forward to every rank."""
    return sorted(k for k in env if k.startswith("ISTHMUS_"))
