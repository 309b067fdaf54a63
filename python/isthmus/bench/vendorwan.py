# isthmus/bench/vendorwan.py: the baseline for cross-site comparisons: ONE vendor MPI job
# (Open MPI) spanning the emulated sites, so that the vendor's own TCP transport crosses
# the same emulated links that isthmus's gateways use.
#
# Each site is a network namespace (netemu.Emulation) with its own UTS namespace and host
# name (site-A, site-B, ...): ranks in different namespaces must not look like one node,
# or Open MPI picks shared memory between them and crashes (FIELD-NOTES). mpirun runs in
# site A; its rsh launch agent (a small script written per launch) starts the daemon of
# every other site inside that site's namespace. TCP is restricted to the emulated subnet.
from __future__ import annotations

import os
import shlex
import stat
import subprocess
import tempfile
import time
from pathlib import Path

from ..launch.layout import split_ranks
from ..netemu.emulation import SUBNET, Emulation
from ..netemu.spec import parse_link_spec
from ..netemu.matrix import uniform

AGENT = """#!/bin/sh
# rsh agent of one isthmus bench launch: run the command for host 10.77.0.<i> in site i's
# network namespace, with its own host name (written by isthmus/bench/vendorwan.py)
host=$1; shift
idx=${host##*.}
eval "ns=\\${ISM_BENCH_NETNS_$idx:-}"
eval "site=\\${ISM_BENCH_SITENAME_$idx:-}"
if [ -z "$ns" ]; then echo "isthmus bench: rsh agent: no emulated site has address $host" >&2; exit 1; fi
exec ip netns exec "$ns" unshare -u /bin/sh -c 'hostname "site-$1" && ISTHMUS_BENCH_SITE=$1 && export ISTHMUS_BENCH_SITE && shift && exec /bin/sh -c "$*"' sh "$site" "$@"
"""


def _hosts(ranks: int, sites: int) -> str:
    counts = split_ranks(ranks, sites)
    return ",".join(f"{SUBNET}.{i + 1}:{c}" for i, c in enumerate(counts))


def vendor_wan_command(ranks: int, sites: int, argv, agent: str = "<agent script>") -> list[str]:
    """The command run in site A's namespace (with its own UTS namespace)."""
    subnet = f"{SUBNET}.0/24"
    inner = ["mpirun.openmpi", "--oversubscribe", "--host", _hosts(ranks, sites), "-np", str(ranks),
             "--mca", "plm_rsh_agent", agent,
             "--mca", "btl", "self,vader,tcp", "--mca", "mpi_yield_when_idle", "1",
             "--mca", "btl_tcp_if_include", subnet, "--mca", "oob_tcp_if_include", subnet,
             "-x", "ISTHMUS_BENCH_LINK", "-x", "ISTHMUS_BENCH_PROFILE", *argv]
    return ["unshare", "-u", "/bin/sh", "-c",
            'hostname site-A && ISTHMUS_BENCH_SITE=A && export ISTHMUS_BENCH_SITE && exec "$@"', "sh",
            *inner]


def run_across_sites(ranks: int, sites: int, link: str, argv, env: dict, timeout: float, cwd=None):
    """Run argv as one Open MPI job of `ranks` ranks over `sites` emulated sites.
    Returns (stdout, stderr, exit code, timed out, the command); never raises for a
    failed run (a failed emulation set-up is reported in stderr)."""
    matrix = uniform(sites, parse_link_spec(link))
    env = dict(env)
    env.setdefault("ISTHMUS_BENCH_LINK", link)
    env.setdefault("ISTHMUS_BENCH_PROFILE", "wan")
    out, err, code, timed_out, cmd_text = "", "", 1, False, ""
    with tempfile.TemporaryDirectory(prefix="isthmus-bench-") as tmp:
        agent = Path(tmp) / "rsh-agent.sh"
        agent.write_text(AGENT)
        agent.chmod(stat.S_IRWXU)
        try:
            with Emulation(matrix=matrix, job=f"b{os.getpid()}") as emu:
                for i, name in enumerate(emu.names):
                    env[f"ISM_BENCH_NETNS_{i + 1}"] = emu.namespace(i)
                    env[f"ISM_BENCH_SITENAME_{i + 1}"] = name
                full = emu.command(0, vendor_wan_command(ranks, sites, argv, str(agent)))
                cmd_text = shlex.join(full)
                proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=env, cwd=cwd)
                try:
                    out, err = proc.communicate(timeout=timeout)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    proc.kill()
                    out, err = proc.communicate()
                code = proc.returncode
        except Exception as e:  # emulation set-up failure: reported, not raised
            err += f"\nisthmus bench: emulated sites for the vendor baseline failed: {e}"
            code = code or 1
    return out, err, code, timed_out, cmd_text or shlex.join(vendor_wan_command(ranks, sites, argv))


def run_vendor_wan(launch, argv, env):
    from .launchers import STDERR_TAIL, LaunchResult, parse_records

    start = time.monotonic()
    out, err, code, timed_out, cmd = run_across_sites(launch.ranks, launch.profile.sites, launch.profile.link,
                                                      argv, env, launch.timeout)
    return LaunchResult(parse_records(out), code, cmd, time.monotonic() - start, err[-STDERR_TAIL:], timed_out)
