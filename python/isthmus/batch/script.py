# isthmus/batch/script.py: the shell scripts of a Slurm site. The batch script holds the
# allocation until isthmus starts the site's part in it; the runner, started by isthmus on
# the login node (over ssh) once every site's allocation runs, hands the batch script its
# work and follows it. They meet in a directory under $HOME, which a cluster's login and
# compute nodes share (/tmp is per node):
#
#   $HOME/.isthmus/batch/<job>-<site>/   0700, made before sbatch
#     out      the batch job's output (sbatch --output), followed by the runner
#     secret   the job secret (0600), written by the runner from its stdin
#     go       what the batch script runs: the site's MPMD launcher line, inside the allocation
#     rc       its exit code, the runner's signal that the site's part is over
#
# The runner's stdin stays open for the whole job, as for an ssh site (launch/ssh.py): when
# it ends (isthmus stopped the site, or the connection is gone) the runner cancels the
# Slurm job, which ends everything in the allocation.
from __future__ import annotations

import shlex
from typing import Mapping, Sequence

from ..launch.ssh import SECRET_VAR

HOLD_TICK = 0.2  # seconds between the batch script's looks for its work
END_MARK = "ISTHMUS_GO_END"


def batch_dir(job: str, site: str) -> str:
    """The shared directory, as a shell word (expanded on the site)."""
    return f'"$HOME/.isthmus/batch/{job}-{site}"'


def holder_script(job: str, site: str, safety: float) -> str:
    """The batch script: waits for `go`, then runs it; gives the allocation back by itself
    after `safety` seconds without it (isthmus gone without cancelling)."""
    ticks = max(1, int(safety / HOLD_TICK))
    return f"""#!/bin/sh
# isthmus job {job}, site {site}: holds this allocation until isthmus starts the site's
# part of the job in it (the file go appears), at most {safety:.0f} s
d={batch_dir(job, site)}
n=0
while [ ! -e "$d/go" ]; do
    n=$((n + 1))
    if [ "$n" -gt {ticks} ]; then
        echo "isthmus: nothing was started in this allocation within {safety:.0f} s; giving it back" >&2
        exit 75
    fi
    sleep {HOLD_TICK}
done
exec /bin/sh "$d/go"
"""


def submit_argv(job: str, site: str, options: Sequence[str]) -> list[str]:
    """The shared directory made, then sbatch with the script on stdin."""
    d = batch_dir(job, site)
    return ["/bin/sh", "-c", f'umask 077; d={d}; rm -rf "$d" && mkdir -p "$d" && '
            f'exec sbatch --output="$d/out" "$@"', "sh", *options]


def cleanup_argv(job: str, site: str) -> list[str]:
    return ["/bin/sh", "-c", f"rm -rf {batch_dir(job, site)}"]


def go_script(job: str, site: str, launcher: Sequence[str], env: Mapping[str, str],
              workdir: str, root_env: Mapping[str, str] | None = None) -> str:
    """What the batch script runs: the launcher with the job's environment (the secret
    file in the shared directory), its exit code left in rc."""
    assigns = []
    for name, value in env.items():
        value_word = '"$d/secret"' if name == SECRET_VAR else shlex.quote(value)
        assigns.append(f"{name}={value_word}")
    root = ""
    if root_env:
        pairs = " ".join(f"{k}={shlex.quote(v)}" for k, v in root_env.items())
        root = f'[ "$(id -u)" = 0 ] && export {pairs}\n'
    return (f"d={batch_dir(job, site)}\n"
            f"cd {shlex.quote(workdir)} || {{ echo 70 > \"$d/rc\"; exit 70; }}\n"
            f"{root}export {' '.join(assigns)}\n"
            f"{shlex.join(launcher)}\n"
            "rc=$?\n"
            'echo "$rc" > "$d/rc.tmp" && mv "$d/rc.tmp" "$d/rc"\n'
            'exit "$rc"\n')


_RUNNER = """\
umask 077
d={d}
[ -d "$d" ] || {{ echo "isthmus: site {site}: $d is missing (is $HOME shared by the login and compute nodes?)" >&2; exit 70; }}
IFS= read -r secret || {{ echo "isthmus: no job secret on stdin" >&2; exit 70; }}
printf '%s\\n' "$secret" > "$d/secret"
secret=
cat > "$d/go.tmp" <<'{end}'
{go}{end}
mv "$d/go.tmp" "$d/go"
: >> "$d/out"
tail --pid=$$ -n +1 -s 0.2 -F "$d/out" 2>/dev/null &  # ends with this shell, however it ends
t=$!
stop() {{ kill "$t" 2>/dev/null; scancel {slurm_job} 2>/dev/null; rm -rf "$d"; }}
trap 'stop; exit 143' TERM HUP INT
trap '' PIPE
exec 3<&0  # an asynchronous list without job control gets /dev/null as stdin: keep ours
( while IFS= read -r _; do :; done; scancel {slurm_job} 2>/dev/null ) <&3 &
w=$!
exec 3<&-
n=0
while [ ! -e "$d/rc" ]; do
    sleep 0.2
    n=$((n + 1))
    if [ $((n % 10)) = 0 ] && [ -z "$(squeue -h -j {slurm_job} -o %T 2>/dev/null)" ]; then
        sleep 1
        [ -e "$d/rc" ] && break
        kill "$t" "$w" 2>/dev/null
        echo "isthmus: site {site}: Slurm job {slurm_job} ended before the site's part did (cancelled, or past its time limit)" >&2
        rm -rf "$d"
        exit 75
    fi
done
sleep 0.5
kill "$t" "$w" 2>/dev/null
rc=$(cat "$d/rc")
rm -rf "$d"
exit "$rc"
"""


def runner_script(job: str, site: str, slurm_job: str, go: str) -> str:
    """The login node's side of a started Slurm site (see the top of this file)."""
    if END_MARK in go:
        raise ValueError("the launcher line contains the here-document's end mark")
    return _RUNNER.format(d=batch_dir(job, site), site=site, slurm_job=shlex.quote(slurm_job),
                          go=go, end=END_MARK)
