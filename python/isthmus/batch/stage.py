# isthmus/batch/stage.py: data staged around a submitted job (a site's stage_in and
# stage_out): files and directories from the submitting host into the site's stage_dir
# before the job starts (while the allocations are being obtained), and files from there
# back after it ends. The site runs `isthmus-copy serve` on its login node for the
# transfers (over ssh, the job secret on stdin, stopped when its stdin ends, as a site's
# launcher is). Stage-in is one many-file `isthmus-copy put` (docs/copy.md: several
# connections, largest file first, small files pipelined, SHA-256 per file, a manifest);
# stage-out is one many-file `isthmus-copy get` per entry (a file, a directory or a
# glob: the server lists it). Both run with --resume: files already in place (same size
# and SHA-256) are not sent again, and a copy that moved files but failed some (a
# connection broke) is run again (RETRIES times at most) from where it stopped. Their progress is `isthmus copy`'s: a bar on a
# terminal (the queue wait's messages print above it), plain lines every PROGRESS_EVERY
# seconds otherwise. The result is a summary: files, bytes, rate, failures.
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
from ..transfer import ManyResult, run_many

CONNECT_TIMEOUT = 20.0  # seconds for the site's copy server to accept the first file
PARALLEL = 4  # connections of a stage-in or a stage-out
RETRIES = 2  # runs again of a copy that moved files and failed some
PROGRESS_EVERY = 10.0  # seconds between a stage-in's progress lines


@dataclass
class StageReport:
    site: str
    direction: str  # "in" or "out"
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    failed: list[str] = field(default_factory=list)

    def add(self, res: ManyResult, what: str) -> None:
        """A many-file copy's outcome: its files moved (or already in place) and its
        failures by name; one that failed before any file (nothing listed, the server not
        reached) is named by what (the entry) with the tool's last words."""
        files = (res.manifest or {}).get("files", [])
        moved = [f for f in files if f["status"] in _MOVED]
        self.files += len(moved)
        self.bytes += sum(f["size"] for f in moved)
        self.failed += [f"{f['path']} ({f.get('error', '')})" for f in files if f["status"] == "failed"]
        if res.returncode != 0 and not any(f["status"] == "failed" for f in files):
            last = [x for x in res.stderr if x.strip()]
            self.failed.append(f"{what} ({last[-1] if last else f'exit {res.returncode}'})")

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

    def _check_server(self) -> None:
        if self.server is not None and self.server.poll() is not None:
            self.log.seek(0)
            err = self.log.read()[-4000:].decode(errors="replace")
            raise IsthmusError(f"site {self.site.name}: the copy server stopped: {err.strip()[-400:]}")

    def _run(self, argv: list[str], label: str, manifest: Path, first: bool) -> ManyResult:
        """One many-file copy (argv without the secret), run again while the server does
        not accept connections yet (first: it has only just been started) or, with
        --resume, after a connection broke midway."""
        started = time.monotonic()
        retries = RETRIES
        with SecretFile(self.secret) as sf:
            full = [*argv, "--job", self.job, "--secret-file", str(sf.path), "--transport", "tcp",
                    "--parallel", str(PARALLEL), "--resume"]
            while True:
                res = run_many(full, label, manifest, plain_every=PROGRESS_EVERY, say=self._progress)
                if res.returncode == 0:
                    return res
                files = (res.manifest or {}).get("files", [])
                moved = [f for f in files if f["status"] in _MOVED]
                errors = " ".join([*(f.get("error") or "" for f in files), *res.stderr[-3:]])
                if first and not moved and "connecting to" in errors and \
                        time.monotonic() - started <= CONNECT_TIMEOUT:
                    self._check_server()
                    time.sleep(0.3)
                    continue
                # a run that moved files and still failed some (a connection broke, the
                # link dropped) goes again: --resume skips what arrived; a file that
                # fails for good fails again with nothing new moved, and that ends it
                if retries and any(f["status"] in ("copied", "resumed") for f in files):
                    retries -= 1
                    self.say(f"site {self.site.name}: {len(files) - len(moved)} file(s) failed; "
                             f"running again with --resume ({label})")
                    continue
                return res

    def stage_in(self, entries: Sequence[str], base: Path) -> StageReport:
        """The files and directories of stage_in (relative to base) into stage_dir, each
        under its own name, as one many-file put."""
        s = self.site
        srcs = [str(base / e).rstrip("/") if not os.path.isabs(e) else e.rstrip("/") for e in entries]
        rep = StageReport(s.name, "in")
        started = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            res = self._run([self.copy, "put", *srcs, s.stage_listen, s.stage_dir],
                            f"staging into site {s.name}", Path(tmp) / "manifest.json", True)
        rep.add(res, "every file")
        rep.seconds = time.monotonic() - started
        return rep

    def _progress(self, line: str) -> None:
        if not line.startswith("isthmus-copy: FAILED"):  # the summary names those
            self.say(line)

    def stage_out(self, paths: Sequence[str], dest: Path) -> StageReport:
        """Each stage_out entry (a file, a directory or a glob under stage_dir) into dest,
        as one many-file get: a file as dest/NAME, a directory as dest/DIR/..., a glob's
        matches by their path below its fixed part."""
        s = self.site
        dest.mkdir(parents=True, exist_ok=True)
        rep = StageReport(s.name, "out")
        started = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            for i, rel in enumerate(paths):
                res = self._run([self.copy, "get", s.stage_listen, f"{s.stage_dir.rstrip('/')}/{rel}",
                                 str(dest)], f"staging {rel} from site {s.name}",
                                Path(tmp) / f"manifest-{i}.json", i == 0)
                rep.add(res, rel)
        rep.seconds = time.monotonic() - started
        return rep


_MOVED = ("copied", "resumed", "unchanged")


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
