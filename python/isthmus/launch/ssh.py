# isthmus/launch/ssh.py: wraps a site's launcher command for a site started over ssh
# (launch = "ssh"), optionally through a login node (ssh -J). The secret travels on ssh's
# stdin into a private 0600 file on the remote side, so it never appears on a command
# line; the file lives under $HOME/.isthmus/run, because the gateway may run on another
# node of the site than the launcher and clusters share $HOME, not /tmp.
#
# ssh's stdin then stays open for the whole job: the remote script watches it, and when
# it ends (isthmus stopped the site, or the connection is gone) it stops the launcher's
# whole process group, whose vendor launcher in turn stops the ranks on the other nodes.
# Without a terminal sshd sends no SIGHUP on disconnect, so this is what ties the remote
# job's life to the connection.
from __future__ import annotations

import shlex
from typing import Mapping, Sequence

SECRET_VAR = "ISTHMUS_SECRET_FILE"
# A connection that stops answering is given up after 3 x 5 s (the site counts as lost).
KEEPALIVE = ("-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3")
STOP_GRACE = 5  # seconds between SIGTERM and SIGKILL of the remote launcher's group

_REMOTE = """\
umask 077
base="$HOME/.isthmus/run"
mkdir -p "$base" && d=$(mktemp -d "$base/job-XXXXXXXX") || exit 70
pid=
stop() {{ [ -n "$pid" ] && kill -s TERM -- "-$pid" 2>/dev/null; }}
trap 'rm -rf "$d"' EXIT
trap 'stop; exit 143' TERM HUP INT
IFS= read -r secret || {{ echo "isthmus: no job secret on stdin" >&2; exit 70; }}
printf '%s\\n' "$secret" > "$d/secret"
secret=
cd {workdir} || exit 70
{root}exec 3<&0  # an asynchronous list without job control gets /dev/null as stdin: keep ours
env {assigns} setsid {launcher} </dev/null 3<&- &
pid=$!
# a lost connection leaves stderr a broken pipe: the shell's own "Terminated" would kill
# it with SIGPIPE before the EXIT trap removes the secret (the launcher keeps the default)
trap '' PIPE
( while IFS= read -r _; do :; done
  kill -s TERM -- "-$pid" 2>/dev/null; sleep {grace}; kill -s KILL -- "-$pid" 2>/dev/null ) <&3 &
exec 3<&-
watch=$!
wait "$pid"
rc=$?
kill "$watch" 2>/dev/null
exit $rc
"""


def remote_script(launcher_argv: Sequence[str], env: Mapping[str, str], workdir: str,
                  root_env: Mapping[str, str] | None = None) -> str:
    """The POSIX sh script run on the site: stores the first line of stdin as the secret
    file, starts the launcher as its own process group with `env` (ISTHMUS_SECRET_FILE is
    replaced by the remote file's path), and stops that group when stdin ends. `root_env`
    is added when the remote user is root (Open MPI refuses root without it)."""
    assigns = []
    for name, value in env.items():
        if name == SECRET_VAR:
            assigns.append(f'{SECRET_VAR}="$d/secret"')
        else:
            assigns.append(f"{name}={shlex.quote(value)}")
    root = ""
    if root_env:
        pairs = " ".join(f"{k}={shlex.quote(v)}" for k, v in root_env.items())
        root = f'[ "$(id -u)" = 0 ] && export {pairs}\n'
    return _REMOTE.format(workdir=shlex.quote(workdir), assigns=" ".join(assigns),
                          launcher=shlex.join(launcher_argv), grace=STOP_GRACE, root=root)


def ssh_command(
    ssh_host: str,
    launcher_argv: Sequence[str],
    env: Mapping[str, str],
    workdir: str,
    *,
    jump: str | None = None,
    options: Sequence[str] = (),
    root_env: Mapping[str, str] | None = None,
) -> list[str]:
    """`ssh -o BatchMode=yes [-J JUMP] [OPTIONS] HOST 'sh -c SCRIPT'` (see remote_script).
    The script goes through /bin/sh whatever the remote login shell is."""
    script = remote_script(launcher_argv, env, workdir, root_env)
    return [*ssh_prefix(ssh_host, jump=jump, options=options), f"exec /bin/sh -c {shlex.quote(script)}"]


def ssh_prefix(ssh_host: str, *, jump: str | None = None, options: Sequence[str] = ()) -> list[str]:
    """`ssh ... HOST`, to which the remote command is appended (as one word)."""
    hop = ["-J", jump] if jump else []
    return ["ssh", "-o", "BatchMode=yes", *KEEPALIVE, *hop, *options, ssh_host]
