# isthmus/launch/sitefile.py: reads a TOML site file ([job] + [[site]] tables) into a Layout
# and an optional secret, checking every field; messages name the file, the site and the key.
# Unknown keys are errors so that typos do not silently fall back to defaults.
from __future__ import annotations

import os
import re
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..batch.request import parse_request
from ..batch.split import Split, parse_split
from ..errors import IsthmusError
from .cpulimit import check_cores
from .layout import LAUNCHERS, MAX_RANKS, MPI_CHOICES, TRANSPORTS, Layout, Site, default_site_names
from .secret import Secret

JOB_KEYS = {"secret", "secret_file", "transport", "crypto"}
CRYPTO = ("aead", "none")  # native/src/common/knobs.def: ISTHMUS_WAN_CRYPTO
SITE_KEYS = {
    "name", "ranks", "gateways", "mpi", "gateway", "launch", "ssh_host", "mpirun_args",
    "nodes", "hostfile", "gateway_node", "ssh_jump", "ssh_options", "dial_out", "slurm",
    "stage_in", "stage_out", "stage_dir", "stage_listen", "cpu",
}  # fmt: skip
REMOTE_LAUNCHERS = ("ssh", "slurm")  # those that may go through ssh
_HOST_RE = re.compile(r"[A-Za-z0-9_.\[\]:%-]{1,255}")


@dataclass(frozen=True)
class SiteFile:
    path: Path
    layout: Layout
    secret: Secret | None  # None: generate one per job
    transport_given: bool = False  # [job] names the transport (else tcp, or --transport)
    crypto: str | None = None  # [job] crypto: "aead" or "none" (None: not given)
    # [split]: the ranks of some Slurm sites left to `isthmus submit` to choose; until then
    # those sites have Split.provisional ranks
    split: Split | None = None
    warnings: tuple[str, ...] = field(default=())  # for the user, one line each


class _Ctx:
    def __init__(self, path: Path, display: str):
        self.path = path
        self.display = display

    def fail(self, where: str | None, msg: str) -> IsthmusError:
        return IsthmusError(f"{self.display}: {where}: {msg}" if where else f"{self.display}: {msg}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _type_name(v: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(v), type(v).__name__)  # fmt: skip


def _shown(v: Any) -> str:
    return repr(v) if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)


def _parse_hostport(ctx: _Ctx, where: str, value: Any, key: str = "gateway") -> tuple[str, int]:
    if not isinstance(value, str):
        raise ctx.fail(where, f"'{key}' must be a \"host:port\" string, got {_type_name(value)}")
    text = value.strip()
    if text.startswith("["):  # [v6addr]:port
        host, sep, rest = text[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ctx.fail(where, f"'{key}' must look like \"host:port\", got {value!r}")
        port_text = rest[1:]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise ctx.fail(where, f"'{key}' must look like \"host:port\", got {value!r}")
    if not host:
        raise ctx.fail(where, f"'{key}' has no host in {value!r}")
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ctx.fail(where, f"'{key}' port must be an integer 1-65535, got {port_text!r}")
    return host, int(port_text)


def _parse_site(ctx: _Ctx, index: int, raw: Any, default_name: str, default_mpi: str,
                split: Split | None = None) -> Site:
    where = f"site #{index + 1}"
    if not isinstance(raw, dict):
        raise ctx.fail(where, f"must be a table ([[site]]), got {_type_name(raw)}")
    name = raw.get("name", default_name)
    if "name" in raw:
        if not isinstance(name, str) or not name.strip():
            raise ctx.fail(where, f"'name' must be a non-empty string, got {_shown(name)}")
        where = f"site {name!r}"
        bad = [c for c in name if not (c.isascii() and (c.isalnum() or c in "_.-"))]
        if bad or len(name) > 32:
            raise ctx.fail(where, "'name' may only use letters, digits, '_', '.', '-' (at most 32)")
    else:
        where = f"site {name!r}"

    unknown = sorted(set(raw) - SITE_KEYS)
    if unknown:
        raise ctx.fail(
            where,
            f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(SITE_KEYS))})",
        )

    if split is not None and name in split.sites:
        if "ranks" in raw:
            raise ctx.fail(where, f"'ranks' cannot be given: [split] chooses this site's ranks "
                                  f"({split.describe()}); leave it out")
        if raw.get("launch") != "slurm":
            raise ctx.fail(where, f"[split] names this site, so it needs launch = \"slurm\": "
                                  "the choice is made from each scheduler's expected start "
                                  f"(got launch = {_shown(raw.get('launch', 'local'))})")
        ranks = split.provisional(name)
    elif "ranks" not in raw:
        raise ctx.fail(where, "'ranks' is missing (the number of application ranks of this site)")
    else:
        ranks = raw["ranks"]
    if not _is_int(ranks) or ranks < 1:
        raise ctx.fail(where, f"'ranks' must be a positive integer, got {_shown(ranks)}")
    if ranks > MAX_RANKS:
        raise ctx.fail(where, f"'ranks' must be at most {MAX_RANKS}, got {ranks}")

    gateways = raw.get("gateways", 1)
    if not _is_int(gateways) or gateways < 1:
        raise ctx.fail(where, f"'gateways' must be a positive integer, got {_shown(gateways)}")
    if gateways > ranks:
        raise ctx.fail(where, f"'gateways' ({gateways}) is more than 'ranks' ({ranks}): each "
                       "gateway serves some of its site's ranks, so a site has at most one per rank")

    mpi = raw.get("mpi", default_mpi)
    if mpi not in MPI_CHOICES:
        raise ctx.fail(where, f"'mpi' must be one of {', '.join(MPI_CHOICES)}, got {_shown(mpi)}")

    launch = raw.get("launch", "local")
    if launch not in LAUNCHERS:
        raise ctx.fail(where, f"'launch' must be one of {', '.join(LAUNCHERS)}, got {_shown(launch)}")

    ssh_host = raw.get("ssh_host")
    if launch == "ssh":
        if ssh_host is None:
            raise ctx.fail(where, "'ssh_host' is required with launch = \"ssh\"")
        if not isinstance(ssh_host, str) or not ssh_host.strip() or ssh_host.startswith("-"):
            raise ctx.fail(where, f"'ssh_host' must be a host name, got {_shown(ssh_host)}")
    elif ssh_host is not None and launch != "slurm":
        raise ctx.fail(where, "'ssh_host' is only allowed with launch = \"ssh\" or \"slurm\"")
    elif ssh_host is not None and (not isinstance(ssh_host, str) or not ssh_host.strip()
                                   or ssh_host.startswith("-")):
        raise ctx.fail(where, f"'ssh_host' must be a host name, got {_shown(ssh_host)}")
    ssh_jump, ssh_options = _parse_ssh_extras(ctx, where, raw, launch)
    slurm = None
    if launch == "slurm":
        if "slurm" not in raw:
            raise ctx.fail(where, "launch = \"slurm\" needs a [site.slurm] table (partition, "
                                  "time, nodes, ...; may be empty for the site's defaults)")
        for key in ("nodes", "hostfile"):
            if key in raw:
                raise ctx.fail(where, f"'{key}' cannot be used with launch = \"slurm\": Slurm "
                                      "chooses the nodes; give their number in [site.slurm] nodes")
        slurm = parse_request(raw["slurm"], lambda msg: ctx.fail(where, msg))
        nodes, hostfile, gateway_node = (), None, raw.get("gateway_node")
        if gateway_node is not None:
            _host_name(ctx, where, "gateway_node", gateway_node)
        elif slurm.nodes > 1:
            raise ctx.fail(where, f"an allocation of {slurm.nodes} nodes needs 'gateway_node': "
                                  "the node that holds the 'gateway' address (it is added to "
                                  "the allocation with --nodelist)")
    elif "slurm" in raw:
        raise ctx.fail(where, "[site.slurm] is only allowed with launch = \"slurm\"")
    else:
        nodes, hostfile, gateway_node = _parse_nodes(ctx, where, raw, ranks)

    host, port, backups = "127.0.0.1", None, []
    if "gateway" in raw:
        # one "host:port", or a list of them: the primary path first, then the backups
        paths = raw["gateway"] if isinstance(raw["gateway"], list) else [raw["gateway"]]
        if not paths or len(paths) > 4:
            raise ctx.fail(where, "'gateway' must be a \"host:port\" string or a list of 1 to 4 "
                                  "of them (the primary path first)")
        for i, value in enumerate(paths):
            h, p = _parse_hostport(ctx, where, value)
            if p + gateways - 1 > 65535:
                raise ctx.fail(where, f"'gateway': {gateways} gateways from port {p} run past 65535")
            if i == 0:
                host, port = h, p
            else:
                backups.append(f"[{h}]:{p}" if ":" in h else f"{h}:{p}")
    elif launch in REMOTE_LAUNCHERS:
        raise ctx.fail(
            where, f"'gateway' (\"host:port\") is required for an {launch} site; ports can "
            "only be picked automatically on this machine",
        )

    extra = raw.get("mpirun_args", [])
    if not isinstance(extra, list) or not all(isinstance(a, str) for a in extra):
        raise ctx.fail(where, "'mpirun_args' must be a list of strings")
    dial_out = raw.get("dial_out", False)
    if not isinstance(dial_out, bool):
        raise ctx.fail(where, f"'dial_out' must be true or false, got {_shown(dial_out)}")

    stage = _parse_stage(ctx, where, raw, ssh_host)
    cpu = raw.get("cpu")
    if cpu is not None:  # cores for the site's ranks together (launch/cpulimit.py)
        try:
            cpu = check_cores(cpu, "'cpu'")
        except IsthmusError as e:
            raise ctx.fail(where, str(e)) from None
    return Site(
        name=name, ranks=ranks, gateways=gateways, host=host, port=port, launcher=launch,
        mpi=mpi, ssh_host=ssh_host, mpirun_args=tuple(extra), nodes=nodes, hostfile=hostfile,
        gateway_node=gateway_node, ssh_jump=ssh_jump, ssh_options=ssh_options,
        backup_gateways=tuple(backups), dial_out=dial_out, slurm=slurm, cpu=cpu, **stage,
    )  # fmt: skip


def _parse_stage(ctx: _Ctx, where: str, raw: dict, ssh_host: str | None) -> dict:
    """stage_in, stage_out (lists of paths), stage_dir (relative to the site's $HOME) and
    stage_listen (the site's copy server), for sites reached over ssh."""
    out: dict = {}
    for key in ("stage_in", "stage_out"):
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ctx.fail(where, f"'{key}' must be a list of paths")
        out[key] = tuple(value)
    for rel in out["stage_out"]:
        if os.path.isabs(rel) or ".." in Path(rel).parts:
            raise ctx.fail(where, f"'stage_out': {rel!r} must be relative to stage_dir, without '..'")
    if "stage_dir" in raw:
        d = raw["stage_dir"]
        if not isinstance(d, str) or not d or os.path.isabs(d) or ".." in Path(d).parts:
            raise ctx.fail(where, f"'stage_dir' must be a path relative to the site's $HOME, "
                                  f"without '..', got {_shown(d)}")
        out["stage_dir"] = d
    staged = bool(out["stage_in"] or out["stage_out"])
    if staged or "stage_listen" in raw:
        if ssh_host is None:
            raise ctx.fail(where, "staging (stage_in, stage_out) needs 'ssh_host': the site's "
                                  "copy server is started there")
        if "stage_listen" not in raw:
            raise ctx.fail(where, "staging needs 'stage_listen' (\"host:port\"): where the "
                                  "site's copy server listens, reachable from here")
        host, port = _parse_hostport(ctx, where, raw["stage_listen"], "stage_listen")
        out["stage_listen"] = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return out


def _host_name(ctx: _Ctx, where: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not _HOST_RE.fullmatch(value) or value.startswith("-"):
        raise ctx.fail(where, f"'{key}' must be a host name, got {_shown(value)}")
    return value


def _parse_ssh_extras(ctx: _Ctx, where: str, raw: dict, launch: str) -> tuple[str | None, tuple[str, ...]]:
    for key in ("ssh_jump", "ssh_options"):
        if key in raw and launch not in REMOTE_LAUNCHERS:
            raise ctx.fail(where, f"'{key}' is only allowed with launch = \"ssh\" or \"slurm\"")
        if key in raw and launch == "slurm" and "ssh_host" not in raw:
            raise ctx.fail(where, f"'{key}' needs 'ssh_host' (the site's login node)")
    jump = None
    if "ssh_jump" in raw:
        jump = raw["ssh_jump"]
        hops = jump.split(",") if isinstance(jump, str) else [jump]
        for hop in hops:  # user@host:port, as ssh -J takes them
            _host_name(ctx, where, "ssh_jump", hop.rpartition("@")[2] if isinstance(hop, str) else hop)
    options = raw.get("ssh_options", [])
    if not isinstance(options, list) or not all(isinstance(a, str) for a in options):
        raise ctx.fail(where, "'ssh_options' must be a list of strings (ssh arguments, e.g. "
                       "[\"-p\", \"2222\"])")
    return jump, tuple(options)


def _parse_nodes(ctx: _Ctx, where: str, raw: dict, ranks: int) -> tuple[tuple[str, ...], str | None, str | None]:
    nodes: list[str] = []
    if "nodes" in raw:
        value = raw["nodes"]
        if not isinstance(value, list) or not value:
            raise ctx.fail(where, "'nodes' must be a non-empty list of \"host\" or \"host:slots\"")
        for entry in value:
            if not isinstance(entry, str):
                raise ctx.fail(where, f"'nodes' entries must be strings, got {_type_name(entry)}")
            host, sep, slots = entry.partition(":")
            _host_name(ctx, where, "nodes", host)
            if sep and (not slots.isdigit() or int(slots) < 1):
                raise ctx.fail(where, f"'nodes': {entry!r}: slots must be a positive integer "
                               "(\"host:2\")")
            nodes.append(entry)
        hosts = [n.partition(":")[0] for n in nodes]
        dup = sorted({h for h in hosts if hosts.count(h) > 1})
        if dup:
            raise ctx.fail(where, f"'nodes' names {dup[0]!r} twice")
    hostfile = raw.get("hostfile")
    if hostfile is not None and (not isinstance(hostfile, str) or not hostfile):
        raise ctx.fail(where, f"'hostfile' must be a path (on the site), got {_shown(hostfile)}")
    if nodes and hostfile:
        raise ctx.fail(where, "give either 'nodes' or 'hostfile', not both")
    gateway_node = raw.get("gateway_node")
    if gateway_node is not None:
        _host_name(ctx, where, "gateway_node", gateway_node)
        if not nodes and not hostfile:
            raise ctx.fail(where, "'gateway_node' needs 'nodes' or 'hostfile'")
        if nodes and gateway_node not in [n.partition(":")[0] for n in nodes]:
            raise ctx.fail(where, f"'gateway_node' {gateway_node!r} is not one of 'nodes'")
    elif hostfile:
        raise ctx.fail(where, "with 'hostfile', name the node of the gateway ('gateway_node'): "
                       "it must be the node that holds the address in 'gateway'")
    elif nodes:
        gateway_node = nodes[0].partition(":")[0]
    slots = [n.partition(":")[2] for n in nodes]
    if any(slots) and not all(slots):
        raise ctx.fail(where, "'nodes': give slots (\"host:N\") for every node or for none")
    if nodes and all(slots) and sum(int(x) for x in slots) < ranks:
        raise ctx.fail(where, f"'nodes' give {sum(int(x) for x in slots)} slots for {ranks} ranks")
    return tuple(nodes), hostfile, gateway_node


def _read_secret_file(ctx: _Ctx, spath: Path) -> str:
    """The secret file's text, if only its owner may read it: the check the gateways make
    when they load the secret (native/src/wan/auth.c), made before anything starts."""
    try:
        # O_NONBLOCK: a FIFO at that path cannot hang us before the regular-file check
        fd = os.open(spath, os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as e:
        raise ctx.fail("[job]", f"'secret_file': cannot read {spath}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)  # the opened file, not the path: the one that is read
        if not stat.S_ISREG(st.st_mode):
            raise ctx.fail("[job]", f"'secret_file': cannot read {spath}: not a regular file")
        if st.st_mode & 0o077:
            raise ctx.fail("[job]", f"'secret_file': refusing job secret file {spath}: its "
                           f"permissions {stat.S_IMODE(st.st_mode):04o} let group/other users "
                           f"access it; run 'chmod 600 {spath}' (and consider the secret leaked "
                           "if others could read it)")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(1 << 16).decode("ascii", errors="replace")
    except OSError as e:
        raise ctx.fail("[job]", f"'secret_file': cannot read {spath}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _inline_secret_warning(ctx: _Ctx) -> str:
    try:
        mode = stat.S_IMODE(ctx.path.stat().st_mode)
    except OSError:
        mode = 0
    who = (f"anyone who can read it (mode {mode:04o}: group/other users too)" if mode & 0o077
           else "anyone who can read it, or a copy of it")
    return (f"{ctx.display}: [job]: 'secret' is written in the site file itself: {who} can "
            "join the job; put the secret in a file only you can read (chmod 600) and name it "
            "with secret_file")


def _parse_job(ctx: _Ctx, raw: Any) -> tuple[str | None, Secret | None, list[str], str | None]:
    if not isinstance(raw, dict):
        raise ctx.fail(None, "[job] must be a table")
    unknown = sorted(set(raw) - JOB_KEYS)
    if unknown:
        raise ctx.fail("[job]", f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(JOB_KEYS))})")
    transport = raw.get("transport")
    if transport is not None and transport not in TRANSPORTS:
        raise ctx.fail("[job]", f"'transport' must be one of {', '.join(TRANSPORTS)}, got {_shown(transport)}")
    crypto = raw.get("crypto")
    if crypto is not None and crypto not in CRYPTO:
        raise ctx.fail("[job]", f"'crypto' must be aead (every byte between sites encrypted and "
                                f"authenticated, the default) or none, got {_shown(crypto)}")
    if "secret" in raw and "secret_file" in raw:
        raise ctx.fail("[job]", "give either 'secret' or 'secret_file', not both")
    secret, warnings = None, []
    if "secret" in raw:
        if not isinstance(raw["secret"], str):
            raise ctx.fail("[job]", f"'secret' must be a string of hex digits, got {_type_name(raw['secret'])}")
        secret = Secret.parse(raw["secret"], f"{ctx.display}: [job]: 'secret'")
        warnings.append(_inline_secret_warning(ctx))
    elif "secret_file" in raw:
        value = raw["secret_file"]
        if not isinstance(value, str) or not value:
            raise ctx.fail("[job]", f"'secret_file' must be a path string, got {_type_name(value)}")
        spath = Path(value).expanduser()
        if not spath.is_absolute():
            spath = ctx.path.parent / spath
        text = _read_secret_file(ctx, spath)
        secret = Secret.parse(text, f"{ctx.display}: [job]: 'secret_file' {spath}")
    return transport, secret, warnings, crypto


def load_site_file(path: str | Path, default_mpi: str = "auto") -> SiteFile:
    """Parse and validate a site file. `default_mpi` applies to sites without 'mpi'."""
    display = str(path)
    p = Path(path)
    ctx = _Ctx(p, display)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise IsthmusError(f"{display}: cannot read site file: {e.strerror or e}") from None
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ctx.fail(None, "not valid UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise ctx.fail(None, f"invalid TOML: {e}") from None

    unknown = sorted(set(doc) - {"job", "site", "split"})
    if unknown:
        raise ctx.fail(None, f"unknown top-level key {unknown[0]!r} (allowed: [job], [[site]], [split])")
    transport, secret, warnings, crypto = _parse_job(ctx, doc.get("job", {}))
    split = parse_split(doc["split"], lambda msg: ctx.fail("[split]", msg)) if "split" in doc else None

    raw_sites = doc.get("site")
    if raw_sites is None:
        raise ctx.fail(None, "no [[site]] tables; describe at least one site")
    if not isinstance(raw_sites, list):
        raise ctx.fail(None, "'site' must be an array of tables: write [[site]], not [site]")
    if not raw_sites:
        raise ctx.fail(None, "no [[site]] tables; describe at least one site")

    names = default_site_names(len(raw_sites))
    if split is not None:
        given = [raw.get("name", names[i]) if isinstance(raw, dict) else names[i]
                 for i, raw in enumerate(raw_sites)]
        missing = [s for s in split.sites if s not in given]
        if missing:
            raise ctx.fail("[split]", f"names site {missing[0]!r}, which no [[site]] has (the "
                                      f"sites: {', '.join(map(str, given))})")
    sites = [_parse_site(ctx, i, raw, names[i], default_mpi, split) for i, raw in enumerate(raw_sites)]

    seen: dict[str, int] = {}
    for i, s in enumerate(sites):
        if s.name in seen:
            raise ctx.fail(
                f"site {s.name!r}",
                f"the name is used twice (sites #{seen[s.name] + 1} and #{i + 1}); site names must be unique",
            )
        seen[s.name] = i

    layout = Layout(sites=tuple(sites), transport=transport or "tcp")
    try:
        layout.validate()
    except IsthmusError as e:
        raise ctx.fail(None, str(e)) from None
    return SiteFile(path=p, layout=layout, secret=secret, transport_given=transport is not None,
                    warnings=tuple(warnings), crypto=crypto, split=split)
