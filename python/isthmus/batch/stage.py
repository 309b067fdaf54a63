# isthmus/batch/stage.py: data staged around a submitted job (a site's stage_in and
# stage_out): files and directories from the submitting host into the site's stage_dir
# before the job starts (while the allocations are being obtained), and files from there
# back after it ends. The site runs `isthmus-copy serve` on its login node for the
# transfers (over ssh, the job secret on stdin, stopped when its stdin ends, as a site's
# launcher is). Stage-in is one many-file `isthmus-copy put` (docs/copy.md: several
# connections, largest file first, small files pipelined, SHA-256 per file, a manifest),
# its progress as plain lines every PROGRESS_EVERY seconds (it runs beside the queue
# wait's own messages); stage-out is one `isthmus-copy get` per file. The result is a
# summary: files, bytes, rate, failures.
from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..errors import IsthmusError
from ..launch.layout import Site
from ..launch.secret import Secret, SecretFile
from ..launch.ssh import SECRET_VAR, remote_script, ssh_prefix
from ..paths import Prefix
from ..transfer import run_many

CONNECT_TIMEOUT = 20.0  # seconds for the site's copy server to accept the first file
PARALLEL = 4  # connections of a stage-in
PROGRESS_EVERY = 10.0  # seconds between a stage-in's progress lines


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
        self.log = None  # the server's stderr (a temporary file)

    def start(self) -> None:
        """The copy server on the login node, serving $HOME, after making stage_dir (the
        directories below it are made by the put as the files arrive)."""
        s = self.site
        body = (f"mkdir -p \"$HOME\"/{shlex.quote(s.stage_dir)} && exec \"$0\" serve \"$HOME\" --listen \"$1\" "
                f"--job \"$2\" --secret-file \"${SECRET_VAR}\"")
        launcher = ["sh", "-c", body, self.copy, s.stage_listen, self.job]
        script = remote_script(launcher, {SECRET_VAR: ""}, ".")
        argv = [*ssh_prefix(s.ssh_host, jump=s.ssh_jump, options=s.ssh_options),
                f"exec /bin/sh -c {shlex.quote(script)}"]
        # its log goes to a file: a pipe nobody reads while files move would fill and stop it
        self.log = tempfile.TemporaryFile()
        self.server = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                       stderr=self.log, start_new_session=True)
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
        if self.log is not None:
            self.log.close()
            self.log = None

    def _copy(self, args: list[str], secret_path: str, first: bool) -> subprocess.CompletedProcess:
        argv = [self.copy, *args, "--job", self.job, "--secret-file", secret_path,
                "--transport", "tcp", "--quiet"]
        deadline = time.monotonic() + (CONNECT_TIMEOUT if first else 0)
        while True:
            r = subprocess.run(argv, capture_output=True, text=True)
            # the server may not listen yet when the first file goes
            if r.returncode == 0 or time.monotonic() > deadline or "refused" not in r.stderr.lower():
                return r
            self._check_server()
            time.sleep(0.3)

    def _check_server(self) -> None:
        if self.server is not None and self.server.poll() is not None:
            self.log.seek(0)
            err = self.log.read()[-4000:].decode(errors="replace")
            raise IsthmusError(f"site {self.site.name}: the copy server stopped: {err.strip()[-400:]}")

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

    def stage_in(self, entries: Sequence[str], base: Path) -> StageReport:
        """The files and directories of stage_in (relative to base) into stage_dir, each
        under its own name, as one many-file put; retried while the server does not
        accept connections yet (it has only just been started)."""
        s = self.site
        srcs = [str(base / e).rstrip("/") if not os.path.isabs(e) else e.rstrip("/") for e in entries]
        rep = StageReport(s.name, "in")
        started = time.monotonic()
        with SecretFile(self.secret) as sf, tempfile.TemporaryDirectory() as tmp:
            manifest = Path(tmp) / "manifest.json"
            argv = [self.copy, "put", *srcs, s.stage_listen, s.stage_dir, "--job", self.job,
                    "--secret-file", str(sf.path), "--transport", "tcp", "--parallel", str(PARALLEL)]
            while True:
                res = run_many(argv, f"staging into site {s.name}", manifest, bar=False,
                               plain_every=PROGRESS_EVERY, say=self._progress)
                files = (res.manifest or {}).get("files", [])
                moved = [f for f in files if f["status"] in ("copied", "resumed", "unchanged")]
                unreached = res.returncode != 0 and not moved and any(
                    "connecting to" in (f.get("error") or "") for f in files)
                if not unreached or time.monotonic() - started > CONNECT_TIMEOUT:
                    break
                self._check_server()
                time.sleep(0.3)
        if res.manifest is None:
            rep.failed.append(f"every file ({res.stderr[-1] if res.stderr else f'exit {res.returncode}'})")
        rep.files = len(moved)
        rep.bytes = sum(f["size"] for f in moved)
        rep.failed += [f"{f['path']} ({f.get('error', '')})" for f in files if f["status"] == "failed"]
        rep.seconds = time.monotonic() - started
        return rep

    def _progress(self, line: str) -> None:
        if not line.startswith("isthmus-copy: FAILED"):  # the summary names those
            self.say(line)

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
        for st in self.stagers:
            local_files(st.site.stage_in, workdir)
        self.reports: list[StageReport] = []
        self._error: BaseException | None = None
        self._thread = None

    def __bool__(self) -> bool:
        return bool(self.stagers)

    def _run_in(self) -> None:
        try:
            for st in self.stagers:
                st.start()  # the put makes the directories the files go to
                if st.site.stage_in:
                    self.reports.append(st.stage_in(st.site.stage_in, self.workdir))
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
