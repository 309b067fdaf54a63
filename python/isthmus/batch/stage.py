# isthmus/batch/stage.py: data staged around a submitted job (a site's stage_in and
# stage_out): files and directories from the submitting host into the site's stage_dir
# before the job starts (while the allocations are being obtained), and files from there
# back after it ends. The site runs `isthmus-copy serve` on its login node for the
# transfers (over ssh, the job secret on stdin, stopped when its stdin ends, as a site's
# launcher is); this host runs one `isthmus-copy put`/`get` per file, largest first, each
# file SHA-256-checked by the tool. The result is a summary: files, bytes, rate, failures.
from __future__ import annotations

import os
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..errors import IsthmusError
from ..launch.layout import Site
from ..launch.secret import Secret, SecretFile
from ..launch.ssh import SECRET_VAR, remote_script, ssh_prefix
from ..paths import Prefix

CONNECT_TIMEOUT = 20.0  # seconds for the site's copy server to accept the first file


@dataclass
class StageReport:
    site: str
    direction: str  # "in" or "out"
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    failed: list[str] = field(default_factory=list)

    def summary(self) -> str:
        rate = self.bytes / self.seconds / 1e6 if self.seconds > 0 else 0.0
        where = f"into site {self.site}" if self.direction == "in" else f"from site {self.site}"
        text = (f"staged {self.files} file(s), {self.bytes} bytes {where} in {self.seconds:.1f} s "
                f"({rate:.2f} MB/s)")
        if self.failed:
            text += f"; FAILED: {', '.join(self.failed)}"
        return text


def local_files(paths: Sequence[str], base: Path) -> list[tuple[Path, str]]:
    """(local file, path relative to the stage directory) for the files and directories
    of stage_in, largest first (the long transfers start while the small ones fill in)."""
    out: list[tuple[Path, str]] = []
    for entry in paths:
        p = (base / entry) if not os.path.isabs(entry) else Path(entry)
        if p.is_file():
            out.append((p, p.name))
        elif p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file():
                    out.append((f, str(Path(p.name) / f.relative_to(p))))
        else:
            raise IsthmusError(f"stage_in: {p} is neither a file nor a directory")
    return sorted(out, key=lambda fr: -fr[0].stat().st_size)


class SiteStager:
    """The copy server at one site and the transfers to and from it."""

    def __init__(self, site: Site, prefix: Prefix, job: str, secret: Secret,
                 say: Callable[[str], None] = lambda m: None):
        if site.stage_listen is None or site.ssh_host is None:
            raise IsthmusError(f"site {site.name}: staging needs ssh_host and stage_listen")
        self.site = site
        self.copy = str(prefix.root / "bin" / "isthmus-copy")
        self.job = job
        self.secret = secret
        self.say = say
        self.server: subprocess.Popen | None = None

    def start(self, dirs: Sequence[str] = ()) -> None:
        """The copy server on the login node, serving $HOME, after making stage_dir and
        the directories the files go to."""
        s = self.site
        root_dirs = [f'"$HOME"/{shlex.quote(str(Path(s.stage_dir) / d))}' for d in ("", *dirs)]
        body = (f"mkdir -p {' '.join(root_dirs)} && exec \"$0\" serve \"$HOME\" --listen \"$1\" "
                f"--job \"$2\" --secret-file \"${SECRET_VAR}\"")
        launcher = ["sh", "-c", body, self.copy, s.stage_listen, self.job]
        script = remote_script(launcher, {SECRET_VAR: ""}, ".")
        argv = [*ssh_prefix(s.ssh_host, jump=s.ssh_jump, options=s.ssh_options),
                f"exec /bin/sh -c {shlex.quote(script)}"]
        self.server = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, start_new_session=True)
        assert self.server.stdin is not None
        self.server.stdin.write((self.secret.reveal() + "\n").encode())
        self.server.stdin.flush()  # kept open: the server stops when it is closed

    def stop(self) -> None:
        p = self.server
        if p is None:
            return
        try:
            assert p.stdin is not None
            p.stdin.close()
        except OSError:
            pass
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        self.server = None

    def _copy(self, args: list[str], secret_path: str, first: bool) -> subprocess.CompletedProcess:
        argv = [self.copy, *args, "--job", self.job, "--secret-file", secret_path,
                "--transport", "tcp", "--quiet"]
        deadline = time.monotonic() + (CONNECT_TIMEOUT if first else 0)
        while True:
            r = subprocess.run(argv, capture_output=True, text=True)
            # the server may not listen yet when the first file goes
            if r.returncode == 0 or time.monotonic() > deadline or "refused" not in r.stderr.lower():
                return r
            if self.server is not None and self.server.poll() is not None:
                err = self.server.stderr.read().decode(errors="replace") if self.server.stderr else ""
                raise IsthmusError(f"site {self.site.name}: the copy server stopped: {err.strip()[-400:]}")
            time.sleep(0.3)

    def _transfers(self, direction: str, items: list[tuple[list[str], str, Path]]) -> StageReport:
        """One copy per item: (isthmus-copy arguments, the name in the report, the local
        file once copied)."""
        rep = StageReport(self.site.name, direction)
        started = time.monotonic()
        with SecretFile(self.secret) as sf:
            for i, (args, label, local) in enumerate(items):
                r = self._copy(args, str(sf.path), i == 0)
                if r.returncode == 0:
                    rep.files += 1
                    rep.bytes += local.stat().st_size
                else:
                    err = r.stderr.strip().splitlines()
                    rep.failed.append(f"{label} ({err[-1] if err else f'exit {r.returncode}'})")
        rep.seconds = time.monotonic() - started
        return rep

    def stage_in(self, files: list[tuple[Path, str]]) -> StageReport:
        s = self.site
        return self._transfers("in", [(["put", str(local), s.stage_listen, str(Path(s.stage_dir) / rel)],
                                       str(local), local) for local, rel in files])

    def stage_out(self, paths: Sequence[str], dest: Path) -> StageReport:
        s = self.site
        dest.mkdir(parents=True, exist_ok=True)
        return self._transfers("out", [(["get", s.stage_listen, str(Path(s.stage_dir) / rel),
                                         str(dest / Path(rel).name)], rel, dest / Path(rel).name)
                                        for rel in paths])

class Staging:
    """Every site's staging for one job: stage-in runs in a thread while the allocations
    are obtained (start_in, wait_in), stage-out after the job (stage_out), the copy
    servers stopped on every path (stop)."""

    def __init__(self, sites: Sequence[Site], prefix: Prefix, job: str, secret: Secret,
                 workdir: Path, say: Callable[[str], None] = lambda m: None):
        self.say = say
        self.workdir = workdir
        self.stagers = [SiteStager(s, prefix, job, secret, say) for s in sites
                        if s.stage_in or s.stage_out]
        # what goes in is looked at before anything is queued: a missing file is refused
        self.files = {st.site.name: local_files(st.site.stage_in, workdir) for st in self.stagers}
        self.reports: list[StageReport] = []
        self._error: BaseException | None = None
        self._thread = None

    def __bool__(self) -> bool:
        return bool(self.stagers)

    def _run_in(self) -> None:
        try:
            for st in self.stagers:
                files = self.files[st.site.name]
                dirs = sorted({str(Path(rel).parent) for _, rel in files} - {"."})
                st.start(dirs)
                if files:
                    self.reports.append(st.stage_in(files))
                    self.say(self.reports[-1].summary())
        except BaseException as e:  # reported by wait_in, in the main thread
            self._error = e

    def start_in(self) -> None:
        import threading

        self._thread = threading.Thread(target=self._run_in, name="isthmus-stage-in", daemon=True)
        self._thread.start()

    def wait_in(self) -> None:
        """Raise IsthmusError if anything failed to go in."""
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error if isinstance(self._error, IsthmusError) else IsthmusError(
                f"stage-in failed: {self._error}")
        failed = [r for r in self.reports if r.failed]
        if failed:
            raise IsthmusError("stage-in failed: " + "; ".join(r.summary() for r in failed))

    def stage_out(self) -> bool:
        """Copy every site's stage_out into <workdir>/<site>/; False if a file failed."""
        ok = True
        for st in self.stagers:
            if st.site.stage_out:
                rep = st.stage_out(st.site.stage_out, self.workdir / st.site.name)
                self.say(rep.summary())
                ok = ok and not rep.failed
        return ok

    def stop(self) -> None:
        for st in self.stagers:
            st.stop()
