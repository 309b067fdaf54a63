# isthmus/launch/ssh.py: wraps a site's launcher command for a site started over ssh
# (launch = "ssh"). The secret travels on ssh's stdin into a private 0600 file on the remote
# side, so it never appears on a command line.
from __future__ import annotations

import shlex
from typing import Mapping, Sequence

SECRET_VAR = "ISTHMUS_SECRET_FILE"


def ssh_command(
    ssh_host: str,
    launcher_argv: Sequence[str],
    env: Mapping[str, str],
    workdir: str,
) -> list[str]:
    """`ssh -o BatchMode=yes HOST 'SCRIPT'` where SCRIPT makes a private temp dir, stores the
    first line of stdin as the secret file, cds to `workdir` and runs the launcher with
    `env` (ISTHMUS_SECRET_FILE is replaced by the remote file's path)."""
    assigns = []
    for name, value in env.items():
        if name == SECRET_VAR:
            assigns.append(f'{SECRET_VAR}="$d/secret"')
        else:
            assigns.append(f"{name}={shlex.quote(value)}")
    script = (
        "umask 077 && d=$(mktemp -d \"${TMPDIR:-/tmp}/isthmus-XXXXXX\") && "
        "trap 'rm -rf \"$d\"' EXIT && head -n 1 > \"$d/secret\" && "
        f"cd {shlex.quote(workdir)} && env {' '.join(assigns)} {shlex.join(launcher_argv)}"
    )
    return ["ssh", "-o", "BatchMode=yes", ssh_host, script]
