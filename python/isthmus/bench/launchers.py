# isthmus/bench/launchers.py: how one measurement is started: isthmus-bench built for a
# library ("openmpi"/"mpich": the vendor alone; "isthmus-openmpi"/"isthmus-mpich": isthmus
# on that vendor) under a link profile (loopback, or sites joined by the link emulator),
# and how its JSON lines are collected. Every launch returns its exact command line.
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..errors import IsthmusError
from ..launch import vendor as vendor_mod
from ..paths import find_prefix

LIBRARIES = ("openmpi", "mpich", "isthmus-openmpi", "isthmus-mpich")
STDERR_TAIL = 4000


@dataclass(frozen=True)
class Profile:
    """A link profile: `link` is a link spec for the emulator, None for loopback (no
    emulation: sites talk over the host's loopback)."""

    name: str
    link: str | None = None
    sites: int = 2
    # isthmus on one site without `isthmus run`'s gateway: the vendor's launcher starts
    # isthmus-bench over libisthmus, as a program built with isthmus-cc runs on one node
    gateway: bool = True

    def describe(self) -> str:
        return self.link if self.link else "loopback"


LOOPBACK = Profile("loopback", None, 2)


def check_library(name: str) -> None:
    if name not in LIBRARIES:
        raise IsthmusError(f"unknown MPI library {name!r}; use one of {', '.join(LIBRARIES)} "
                           "(a vendor alone, or isthmus-<vendor> for isthmus on that vendor)")


def vendor_of(library: str) -> str:
    return library.split("-", 1)[1] if library.startswith("isthmus-") else library


def is_isthmus(library: str) -> bool:
    return library.startswith("isthmus-")


def sites_of(library: str, profile: Profile) -> int:
    """How many sites a launch spans: a vendor alone on loopback is one job on this host."""
    if not is_isthmus(library) and profile.link is None:
        return 1
    return profile.sites


def check_combination(library: str, profile: Profile) -> None:
    """Refuse combinations that cannot run, before a campaign starts."""
    check_library(library)
    if profile.link is not None:
        from ..netemu.emulation import check_privileges
        from ..netemu.spec import parse_link_spec

        parse_link_spec(profile.link)
        check_privileges()
        if not is_isthmus(library) and vendor_of(library) != "openmpi":
            raise IsthmusError(
                f"profile {profile.name!r}: {library} alone across emulated sites is not supported "
                "(only Open MPI's rsh launch agent can start one job over several namespaces); "
                "use openmpi as the vendor baseline")
    prefix = find_prefix()
    v = vendor_of(library)
    if vendor_mod.launcher_path(v) is None:
        raise IsthmusError(f"{library}: {vendor_mod.LAUNCHER[v]} not found; install the Debian "
                           f"package {vendor_mod.DEBIAN_PACKAGE[v]}")
    binary = bench_binary(library)
    if not binary.is_file():
        raise IsthmusError(f"{binary} is missing; run scripts/bootstrap.sh (it builds isthmus-bench "
                           f"for isthmus and for every vendor MPI found)")
    if is_isthmus(library):
        vendor_mod.resolve(v, prefix)


def bench_binary(library: str) -> Path:
    root = find_prefix().root / "bin"
    return root / "isthmus-bench" if is_isthmus(library) else root / f"isthmus-bench.{library}"


@dataclass
class Launch:
    benchmark: str
    args: list[str]
    library: str
    profile: Profile
    ranks: int
    timeout: float = 600.0
    env: dict[str, str] = field(default_factory=dict)

    @property
    def sites(self) -> int:
        return sites_of(self.library, self.profile)


@dataclass
class LaunchResult:
    records: list[dict]
    returncode: int
    command: str
    seconds: float
    stderr_tail: str
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def _bench_argv(launch: Launch) -> list[str]:
    return [str(bench_binary(launch.library)), launch.benchmark, *launch.args, "--json"]


def _bench_env(launch: Launch) -> dict[str, str]:
    env = dict(os.environ)
    env.update(launch.env)
    if is_isthmus(launch.library) and not launch.profile.gateway:
        env["ISTHMUS_MPI"] = vendor_of(launch.library)
        for k in ("ISTHMUS_SITE", "ISTHMUS_SITE_RANKS"):
            env.pop(k, None)
    env["ISTHMUS_BENCH_LINK"] = launch.profile.describe()
    env["ISTHMUS_BENCH_PROFILE"] = launch.profile.name
    env.update(vendor_mod.launcher_env("openmpi"))
    return env


def command_for(launch: Launch) -> list[str]:
    """The command line that runs `launch` (for the WAN vendor baseline: the command run
    inside site A's namespace; see vendorwan.py)."""
    argv = _bench_argv(launch)
    v = vendor_of(launch.library)
    if is_isthmus(launch.library) and not launch.profile.gateway:
        if launch.profile.link or launch.profile.sites != 1:
            raise IsthmusError(f"profile {launch.profile.name!r}: without a gateway there is one "
                               "site and no link")
        if v == "openmpi":
            return ["mpirun.openmpi", "--oversubscribe", "-np", str(launch.ranks), *argv]
        return ["mpiexec.mpich", "-np", str(launch.ranks), *argv]
    if is_isthmus(launch.library):
        cmd = [sys.executable, "-m", "isthmus", "run", "-n", str(launch.ranks), "--sites",
               str(launch.profile.sites), "--mpi", v, "--timeout", f"{launch.timeout:g}"]
        if launch.profile.link:
            cmd += ["--wan", launch.profile.link]
        return cmd + ["--", *argv]
    if launch.profile.link:
        from .vendorwan import vendor_wan_command

        return vendor_wan_command(launch.ranks, launch.profile.sites, argv)
    if v == "openmpi":
        # the same yield setting isthmus run gives every site (it shares cores with gateways)
        return ["mpirun.openmpi", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1", "-np",
                str(launch.ranks), *argv]
    return ["mpiexec.mpich", "-np", str(launch.ranks), *argv]


def parse_records(stdout: str) -> list[dict]:
    records = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("isthmus_bench") == 1:
            records.append(rec)
    return records


def run_launch(launch: Launch) -> LaunchResult:
    """Run one launch to completion (or its timeout); never raises for a failed run."""
    if not is_isthmus(launch.library) and launch.profile.link:
        from .vendorwan import run_vendor_wan

        return run_vendor_wan(launch, _bench_argv(launch), _bench_env(launch))
    cmd = command_for(launch)
    start = time.monotonic()
    timed_out = False
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_bench_env(launch), start_new_session=True)
    try:
        out, err = proc.communicate(timeout=launch.timeout + 30)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        out, err = proc.communicate()
    except KeyboardInterrupt:
        _kill_group(proc)  # it runs in its own session: Ctrl-C did not reach it
        raise
    return LaunchResult(parse_records(out), proc.returncode, shlex.join(cmd),
                        time.monotonic() - start, err[-STDERR_TAIL:], timed_out)


def _kill_group(proc: subprocess.Popen) -> None:
    import signal

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue


def describe(launch: Launch) -> str:
    return (f"{launch.benchmark} {' '.join(launch.args)} | {launch.library} | "
            f"{launch.profile.name} | {launch.ranks} ranks")


def shell_join(cmd: Sequence[str]) -> str:
    return shlex.join(cmd)
