# isthmus/linkprobe/endpoints.py: where the two ends of a probe run and how to start the
# isthmus-linkprobe client and server there: two sites of a link emulation (namespaces),
# two existing namespaces, or this machine against a server already running on a host.
# Every connection authenticates with a job id and secret, like the gateways.
from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..errors import IsthmusError
from ..launch.secret import Secret, new_job_id
from ..paths import Prefix

PROBE_PORT = 41999


def probe_binary(prefix: Prefix) -> str:
    exe = prefix.root / "bin" / "isthmus-linkprobe"
    if not exe.is_file():
        raise IsthmusError(f"{exe} is missing; run scripts/bootstrap.sh")
    return str(exe)


class Credentials:
    """A job id and a 0600 secret file in a private directory (removed by close())."""

    def __init__(self, job: str | None = None, secret_file: str | None = None):
        self._dir = None
        if secret_file:
            if not job:
                raise IsthmusError("--secret-file needs --job (the job id the server was started with)")
            self.job, self.secret_file = job, secret_file
            return
        self._dir = tempfile.TemporaryDirectory(prefix="isthmus-probe-")
        os.chmod(self._dir.name, 0o700)
        self.job = job or new_job_id()
        self.secret_file = str(Path(self._dir.name) / "secret")
        fd = os.open(self.secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(Secret.generate().reveal() + "\n")

    def args(self) -> list[str]:
        return ["--job", self.job, "--secret-file", self.secret_file]

    def close(self) -> None:
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


def serve_until_interrupted(argv: Sequence[str], creds: Credentials, what: str, peer: str) -> None:
    """Run a server (argv gets creds.args() appended) in the foreground until it stops,
    Ctrl-C or SIGTERM, after printing the job id and where the secret is (never the
    secret). `what` names the server in errors, `peer` the host that needs the secret."""
    from rich.text import Text

    from ..ui import err_console

    err_console().print(Text(f"job id: {creds.job}\nsecret file: {creds.secret_file} (copy it to "
                             f"the {peer}, mode 0600)"))
    p = subprocess.Popen([*argv, *creds.args()])

    def _term(_sig, _frame):  # SIGTERM stops the server too, not just this process
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, _term)
    try:
        rc = p.wait()
    except KeyboardInterrupt:
        p.terminate()
        p.wait()
        rc = 0
    finally:
        signal.signal(signal.SIGTERM, old)
    if rc:
        raise IsthmusError(f"the {what} stopped with exit status {rc}")


@dataclass
class Endpoints:
    """How to run the client (`wrap_client`) and where the server listens."""

    exe: str
    creds: Credentials
    server_addr: str                     # host:port the client connects to
    client_prefix: Sequence[str] = ()    # e.g. ip netns exec <ns>
    server_prefix: Sequence[str] | None = None  # None: the server is not ours to start
    label: str = ""
    _server: subprocess.Popen | None = field(default=None, repr=False)

    def start_server(self) -> None:
        if self.server_prefix is None:
            return
        host, port = self.server_addr.rsplit(":", 1)
        self._server = subprocess.Popen(
            [*self.server_prefix, self.exe, "serve", "--listen", f"{host}:{port}", *self.creds.args()],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self._server.stdout.readline()
        if not line.startswith("listening"):
            err = self._server.stderr.read()
            self.stop_server()
            raise IsthmusError(f"the probe server did not start at {self.server_addr}: {err.strip()}")

    def stop_server(self) -> None:
        if self._server is not None:
            self._server.terminate()
            try:
                self._server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._server.kill()
                self._server.wait()
            self._server = None

    def run(self, mode: str, args: Sequence[str], timeout: float) -> dict:
        """Run one client measurement; its JSON result, or IsthmusError with its message."""
        cmd = [*self.client_prefix, self.exe, mode, "--connect", self.server_addr,
               *self.creds.args(), *args]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise IsthmusError(f"{mode} probe to {self.server_addr} took longer than {timeout:.0f} s") from None
        if r.returncode != 0:
            msg = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
            raise IsthmusError(msg.removeprefix("isthmus-linkprobe: "))
        try:
            return json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise IsthmusError(f"{mode} probe printed no result: {r.stdout!r}") from None
