# isthmus/commands/copy.py: `isthmus copy SRC DST` and `isthmus copy serve DIR`: files
# between sites over isthmus' reliable-UDP transport (or TCP), every connection
# authenticated with a job secret and every file checked end to end with SHA-256. The
# work is done by the C tool isthmus-copy (native/tools/copy); this wraps its command
# line, names the remote side as HOST:[PORT]:PATH, and handles the secret like
# `isthmus link serve` does (a file, never a command-line value, never printed).
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import click
from ..errors import IsthmusError
from ..linkprobe.endpoints import Credentials, serve_until_interrupted
from ..linkprobe.sweep import parse_size
from ..outputs import OutputFile, check_output_file, check_writable_dir
from ..paths import Prefix, find_prefix
from ..transfer import run_many
from ..units import parse_rate
from . import register

COPY_PORT = 41998
_CTX = {"help_option_names": ["-h", "--help"]}
_REMOTE = re.compile(r"^([A-Za-z0-9_.-]+):(\d*):(.*)$", re.S)


def copy_binary(prefix: Prefix) -> str:
    exe = prefix.root / "bin" / "isthmus-copy"
    if not exe.is_file():
        raise IsthmusError(f"{exe} is missing; run scripts/bootstrap.sh")
    return str(exe)


def parse_remote(text: str) -> tuple[str, str] | None:
    """'host:port:path' or 'host::path' (default port) -> ('host:port', 'path'); None for
    a local path (write ./a:1:b for a local file with such a name)."""
    m = _REMOTE.match(text)
    if not m:
        return None
    host, port, path = m.groups()
    number = int(port) if port else COPY_PORT
    if not 1 <= number <= 65535:
        raise IsthmusError(f"{text}: port {number} is not 1..65535")
    return f"{host}:{number}", path


class _CopyGroup(click.Group):
    """`isthmus copy SRC DST` runs the hidden `files` command; `isthmus copy serve DIR`
    the server."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["files", *args]
        return super().parse_args(ctx, args)


@register
@click.group("copy", cls=_CopyGroup, context_settings=_CTX,
             short_help="Copy files between sites (reliable UDP or TCP, SHA-256 checked).")
def copy_group() -> None:
    """Copy files between this host and a host running `isthmus copy serve`, over
    isthmus' reliable-UDP transport (default) or TCP.

    \b
      isthmus copy [OPTIONS] LOCAL HOST:[PORT]:PATH     put (PATH may be a directory)
      isthmus copy [OPTIONS] HOST:[PORT]:PATH LOCAL     get
      isthmus copy [OPTIONS] LOCAL... HOST:[PORT]:DIR   put many files and directories
      isthmus copy [OPTIONS] HOST:[PORT]:DIR LOCALDIR   get a directory (DIR/: its contents;
                                                        a glob such as 'out/*.dat' works too)
      isthmus copy serve DIR [--listen HOST:PORT]       serve DIR

    Both ends hold the job id and secret (--job, --secret-file). The file is written to a
    temporary name and renamed only after its SHA-256 matched the source's; on any error
    nothing is left under the target's name and the exit status is 1. The options of a
    copy: `isthmus copy SRC DST --help`.
    """


@copy_group.command("files", hidden=True, context_settings=_CTX)
@click.argument("paths", nargs=-1, required=True)
@click.option("--job", required=True, help="The job id the server was started with.")
@click.option("--secret-file", required=True, type=click.Path(dir_okay=False),
              help="A 0600 file with the job secret (hex).")
@click.option("--transport", type=click.Choice(["udp", "tcp"]), default="udp", show_default=True)
@click.option("--cc", default=None, help="Congestion control of our sends (udp: bbr, reno; tcp: the kernel's).")
@click.option("--window", default=None, metavar="BYTES",
              help="udp: send and receive buffers; tcp: socket buffers (e.g. 16m).")
@click.option("--rate", default=None, metavar="RATE",
              help="Put over udp: the link's rate if you know it (e.g. 100Mbit/s, measured with "
                   "`isthmus link probe`); the sends start there instead of ramping up, which "
                   "saves seconds per copy on a long round trip. Too high costs a few round "
                   "trips of loss, then the transport follows the path.")
@click.option("--timeout", type=click.FloatRange(0.1, 86400), default=30.0, show_default=True,
              help="Seconds without progress before giving up (and the UDP dead-peer time).")
@click.option("--quiet", is_flag=True, help="No progress lines, only the summary.")
@click.option("--resume", is_flag=True,
              help="Keep what a failed copy moved (next to the target, hidden) and continue from "
                   "it when run again with --resume; its bytes are checked before they are used.")
@click.option("--parallel", type=click.IntRange(1, 16), default=None,
              help="Many files: connections at once (default 4).")
@click.option("--files-from", type=click.Path(dir_okay=False, allow_dash=True), default=None,
              help="Many files: a list of paths, one a line, each kept as given under the "
                   "remote directory.")
@click.option("--manifest", type=OutputFile(), default=None,
              help="Many files: write the JSON manifest (path, size, sha256, status) here.")
@click.pass_context
def files_command(ctx, paths, job, secret_file, transport, cc, window, rate, timeout, quiet,
                  resume, parallel, files_from, manifest):
    """Copy one file, or (put) files, directories and a list of paths under a remote
    directory."""
    rate = _start_rate(rate, transport, cc, paths)
    if len(paths) == 2 and parse_remote(paths[0]) and (
            parallel is not None or manifest is not None or _names_many(parse_remote(paths[0])[1])):
        ctx.exit(_get_many(paths, job, secret_file, transport, cc, window, rate, timeout, quiet,
                           resume, parallel, files_from, manifest))
    many = (len(paths) > 2 or files_from is not None or parallel is not None
            or manifest is not None or (len(paths) == 2 and Path(paths[0]).is_dir()))
    if many:
        ctx.exit(_put_many(paths, job, secret_file, transport, cc, window, rate, timeout, quiet,
                           resume, parallel, files_from, manifest))
    if len(paths) != 2:
        raise IsthmusError("give a source and a destination (one of them HOST:[PORT]:PATH)")
    src, dst = paths
    rs, rd = parse_remote(src), parse_remote(dst)
    if (rs is None) == (rd is None):
        raise IsthmusError("give one local path and one remote HOST:[PORT]:PATH "
                           f"({'both are remote' if rs else 'neither is remote'})")
    if rd is None:  # a get: where it lands is checked before we connect
        local = Path(dst)
        if dst.endswith("/") or local.is_dir():
            check_writable_dir(local, "target")
        else:
            check_output_file(local, "target")
    exe = copy_binary(find_prefix())
    creds = Credentials(job, secret_file)
    if rd is not None:
        argv = [exe, "put", src, rd[0], rd[1]]
    else:
        argv = [exe, "get", rs[0], rs[1], dst]
    argv += _tool_options(creds, transport, cc, window, rate, timeout, quiet, resume)
    ctx.exit(subprocess.run(argv).returncode)


def _start_rate(text: str | None, transport: str, cc: str | None, paths) -> int | None:
    """--rate as bits/s for the tool, refused where it cannot apply (before anything moves)."""
    if text is None:
        return None
    try:
        bits = parse_rate(text)
    except ValueError as e:
        raise IsthmusError(f"--rate: {e}") from None
    if not 8000 <= bits <= 4e12:
        raise IsthmusError(f"--rate {text}: expected 8 kbit/s to 4 Tbit/s")
    if transport != "udp" or (cc and cc != "bbr"):
        raise IsthmusError("--rate needs the udp transport with bbr (TCP and reno ramp up from "
                           "their initial window)")
    if paths and parse_remote(paths[0]) is not None:
        raise IsthmusError("--rate goes with a put: it sets the starting rate of our sends (in a "
                           "get the server sends, and ramps up as usual)")
    return int(bits)


def _tool_options(creds: Credentials, transport, cc, window, rate, timeout, quiet,
                  resume) -> list[str]:
    argv = [*creds.args(), "--transport", transport, "--timeout", f"{timeout:g}"]
    if cc:
        argv += ["--cc", cc]
    if window:
        argv += ["--window", str(parse_size(window))]
    if rate:
        argv += ["--rate", str(rate)]
    if quiet:
        argv.append("--quiet")
    if resume:
        argv.append("--resume")
    return argv


def _names_many(remote_path: str) -> bool:
    """A remote path that surely names many files: a directory's contents ('dir/') or a
    glob. (A directory named without the slash is found out by the tool itself.)"""
    return remote_path.endswith("/") or remote_path == "" or any(c in remote_path for c in "*?[")


def _run_many_cli(argv: list[str], label: str, quiet: bool, manifest) -> int:
    if quiet:
        res = run_many(argv, label, Path(manifest) if manifest else None, bar=False,
                       plain_every=float("inf"))
    else:
        res = run_many(argv, label, Path(manifest) if manifest else None)
    if res.summary:
        click.echo(res.summary)
    return res.returncode


def _get_many(paths, job, secret_file, transport, cc, window, rate, timeout, quiet, resume,
              parallel, files_from, manifest) -> int:
    """A remote directory or glob into a local directory: the progress and summary of a
    many-file put."""
    src, dst = paths
    rs = parse_remote(src)
    if files_from is not None:
        raise IsthmusError("--files-from goes with a put (a get takes a directory or a glob)")
    if parse_remote(dst) is not None:
        raise IsthmusError("give one local path and one remote HOST:[PORT]:PATH (both are remote)")
    exe = copy_binary(find_prefix())
    creds = Credentials(job, secret_file)
    argv = [exe, "get", rs[0], rs[1], dst, "--parallel", str(parallel or 4),
            *_tool_options(creds, transport, cc, window, rate, timeout, quiet, resume)]
    return _run_many_cli(argv, f"get {src}", quiet, manifest)


def _put_many(paths, job, secret_file, transport, cc, window, rate, timeout, quiet, resume,
              parallel, files_from, manifest) -> int:
    """Files, directories and a list under a remote directory: a progress bar on a
    terminal, plain lines otherwise, the summary on stdout, exit 1 if any file failed."""
    *locals_, dst = paths
    rd = parse_remote(dst)
    if rd is None or any(parse_remote(p) for p in locals_):
        raise IsthmusError("many files are put: give the local files and directories, then one "
                           "remote HOST:[PORT]:DIR (or get one remote directory: "
                           "HOST:[PORT]:DIR LOCALDIR)")
    for p in locals_:
        if not Path(p).exists():
            raise IsthmusError(f"{p}: no such file or directory (nothing was copied)")
    exe = copy_binary(find_prefix())
    creds = Credentials(job, secret_file)
    argv = [exe, "put", *locals_, rd[0], rd[1], "--parallel", str(parallel or 4),
            *_tool_options(creds, transport, cc, window, rate, timeout, quiet, resume)]
    if files_from:
        argv += ["--files-from", files_from]
    return _run_many_cli(argv, f"put -> {dst}", quiet, manifest)


@copy_group.command("serve", context_settings=_CTX)
@click.argument("directory", type=click.Path(file_okay=False, exists=True))
@click.option("--listen", default=f"0.0.0.0:{COPY_PORT}", show_default=True, metavar="HOST:PORT")
@click.option("--job", default=None, help="Job id (default: a new one, printed).")
@click.option("--secret-file", default=None, type=click.Path(dir_okay=False),
              help="0600 file with the secret in hex (default: a new one in a private temp file, printed).")
@click.option("--timeout", type=click.FloatRange(0.1, 86400), default=30.0, show_default=True,
              help="Seconds without progress before a transfer is given up.")
@click.option("--window", default=None, metavar="BYTES",
              help="Per connection: udp send and receive buffers (default 64m each), tcp socket "
                   "buffers. At most 16 copies run at once.")
def serve_command(directory, listen, job, secret_file, timeout, window):
    """Serve DIRECTORY until Ctrl-C: store files put into it, send files got from it.
    Paths outside it (absolute, with '..', or through a symbolic link that leads out) are
    refused. Clients must know the job id and the secret; until a connection has proven
    them it has 5 s and counts in a budget of 8 of its own, apart from the 16 copies
    (docs/copy.md, Strangers). Stored files get the sender's mode masked by our umask."""
    exe = copy_binary(find_prefix())
    creds = Credentials(job, secret_file)
    try:
        argv = [exe, "serve", directory, "--listen", listen, "--timeout", f"{timeout:g}"]
        if window:
            argv += ["--window", str(parse_size(window))]
        serve_until_interrupted(argv, creds, "copy server", "other host")
    finally:
        creds.close()
