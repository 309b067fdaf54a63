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


def _hosts(launch, names) -> str:
    counts = split_ranks(launch.ranks, launch.profile.sites)
    return ",".join(f"{SUBNET}.{i + 1}:{c}" for i, c in enumerate(counts))


def vendor_wan_command(launch, argv, agent: str = "<agent script>", names=None) -> list[str]:
    """The command run in site A's namespace (with its own UTS namespace)."""
    subnet = f"{SUBNET}.0/24"
    inner = ["mpirun.openmpi", "--oversubscribe", "--host", _hosts(launch, names), "-np", str(launch.ranks),
             "--mca", "plm_rsh_agent", agent,
             "--mca", "btl", "self,vader,tcp", "--mca", "mpi_yield_when_idle", "1",
             "--mca", "btl_tcp_if_include", subnet, "--mca", "oob_tcp_if_include", subnet,
             "-x", "ISTHMUS_BENCH_LINK", "-x", "ISTHMUS_BENCH_PROFILE", *argv]
    return ["unshare", "-u", "/bin/sh", "-c",
            'hostname site-A && ISTHMUS_BENCH_SITE=A && export ISTHMUS_BENCH_SITE && exec "$@"', "sh",
            *inner]


def run_vendor_wan(launch, argv, env):
    from .launchers import STDERR_TAIL, LaunchResult, parse_records

    matrix = uniform(launch.profile.sites, parse_link_spec(launch.profile.link))
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="isthmus-bench-") as tmp:
        agent = Path(tmp) / "rsh-agent.sh"
        agent.write_text(AGENT)
        agent.chmod(stat.S_IRWXU)
        out, err, code, timed_out = "", "", 1, False
        cmd_text = ""
        try:
            with Emulation(matrix=matrix, job=f"b{os.getpid()}") as emu:
                for i, name in enumerate(emu.names):
                    env[f"ISM_BENCH_NETNS_{i + 1}"] = emu.namespace(i)
                    env[f"ISM_BENCH_SITENAME_{i + 1}"] = name
                cmd = vendor_wan_command(launch, argv, str(agent), emu.names)
                full = emu.command(0, cmd)
                cmd_text = shlex.join(full)
                proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=env)
                try:
                    out, err = proc.communicate(timeout=launch.timeout)
                    code = proc.returncode
                except subprocess.TimeoutExpired:
                    timed_out = True
                    proc.kill()
                    out, err = proc.communicate()
                    code = proc.returncode
        except Exception as e:  # emulation set-up failure: recorded, not raised
            err += f"\nisthmus bench: emulated sites for the vendor baseline failed: {e}"
            code = code if code else 1
        shown = cmd_text or shlex.join(vendor_wan_command(launch, argv))
        return LaunchResult(parse_records(out), code, shown, time.monotonic() - start,
                            err[-STDERR_TAIL:], timed_out)
