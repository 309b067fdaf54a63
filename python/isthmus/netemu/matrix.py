# isthmus/netemu/matrix.py: the per-direction link settings of an emulation with N sites:
# one spec for every direction (--link), optionally overridden per pair or per direction
# from a TOML file:
#
#   sites = 3                        # or: sites = ["A", "B", "C"]
#   default = "delay=1ms"            # optional: every direction not named below
#   [links]
#   "A-B" = "delay=27ms,rate=808kB/s"    # both directions
#   "B>C" = "delay=84ms,rate=71kB/s"     # this direction only
#
# A pair's spec is read on top of the default, so "A-B" = "loss=1%" keeps the default's
# delay. Later entries override earlier ones for the directions they name.
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..errors import IsthmusError
from ..launch.layout import default_site_names
from .spec import LinkSpec, parse_link_spec

MAX_SITES = 64
_NAME_RE = re.compile(r"[A-Za-z0-9_.]{1,32}")  # no '-' or '>': they separate pairs


@dataclass(frozen=True)
class LinkMatrix:
    """Site names and the LinkSpec of every direction (i, j), i != j."""

    names: tuple[str, ...]
    links: dict[tuple[int, int], LinkSpec]

    @property
    def count(self) -> int:
        return len(self.names)

    def get(self, i: int, j: int) -> LinkSpec:
        return self.links[(i, j)]

    def site_mtu(self, i: int) -> int:
        """The MTU of site i's device: the smallest of its outgoing links."""
        return min(self.links[(i, j)].mtu for j in range(self.count) if j != i)

    def with_link(self, i: int, j: int, spec: LinkSpec) -> "LinkMatrix":
        """The same matrix with direction (i, j) set to spec."""
        return LinkMatrix(self.names, {**self.links, (i, j): spec})

    def native_args(self) -> list[str]:
        args: list[str] = []
        for (i, j), spec in sorted(self.links.items()):
            args += ["--link", f"{i}:{j}:{spec.native()}"]
        return args


def uniform(count: int, spec: LinkSpec, names: list[str] | None = None) -> LinkMatrix:
    names = names or default_site_names(count)
    _check_count(len(names), "sites")
    return LinkMatrix(tuple(names), {(i, j): spec for i in range(len(names))
                                     for j in range(len(names)) if i != j})


def _check_count(count: int, where: str) -> None:
    if not 2 <= count <= MAX_SITES:
        raise IsthmusError(f"{where}: the emulator joins 2 to {MAX_SITES} sites, not {count}")


def load_matrix(path: Path, base: LinkSpec | None = None, sites: int | None = None) -> LinkMatrix:
    """Read a TOML link matrix. base (from --link) is the default under the file's default;
    sites (from --sites) must agree with the file's when both are given."""
    where = str(path)
    try:
        data = tomllib.loads(Path(path).read_text())
    except OSError as e:
        raise IsthmusError(f"cannot read link matrix {where}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise IsthmusError(f"{where}: not valid TOML: {e}") from None
    unknown = set(data) - {"sites", "default", "links"}
    if unknown:
        raise IsthmusError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} "
                           "(known: sites, default, links)")
    raw_sites = data.get("sites", sites)
    if isinstance(raw_sites, int) and not isinstance(raw_sites, bool):
        _check_count(raw_sites, where)
        names = default_site_names(raw_sites)
    elif isinstance(raw_sites, list) and all(isinstance(n, str) and n for n in raw_sites):
        names = list(raw_sites)
        bad = [n for n in names if not _NAME_RE.fullmatch(n)]
        if bad:
            raise IsthmusError(f"{where}: site name {bad[0]!r} is not valid (1-32 letters, digits, '_', '.')")
        if len(set(names)) != len(names):
            raise IsthmusError(f"{where}: a site name appears twice in sites")
    else:
        raise IsthmusError(f"{where}: give sites = <count> or sites = [\"A\", \"B\", ...]")
    _check_count(len(names), where)
    if sites is not None and sites != len(names):
        raise IsthmusError(f"--sites {sites} disagrees with {where}, which has {len(names)} sites")

    default = base or LinkSpec()
    if "default" in data:
        default = parse_link_spec(_text(data["default"], where, "default"), default)
    links = {(i, j): default for i in range(len(names)) for j in range(len(names)) if i != j}
    table = data.get("links", {})
    if not isinstance(table, dict):
        raise IsthmusError(f"{where}: [links] must be a table of \"A-B\" = \"spec\" entries")
    index = {n: k for k, n in enumerate(names)}
    for key, value in table.items():
        directions = _directions(key, index, where)
        spec = parse_link_spec(_text(value, where, key), default)
        for d in directions:
            links[d] = spec
    return LinkMatrix(tuple(names), links)


def _text(value, where: str, key: str) -> str:
    if not isinstance(value, str):
        raise IsthmusError(f"{where}: {key} must be a string like \"delay=20ms,rate=1gbit\"")
    return value


def _directions(key: str, index: dict[str, int], where: str) -> list[tuple[int, int]]:
    for sep, both in (("-", True), (">", False)):
        a, found, b = key.partition(sep)
        if found:
            a, b = a.strip(), b.strip()
            for n in (a, b):
                if n not in index:
                    raise IsthmusError(f"{where}: link {key!r} names site {n!r}, which is not one of "
                                       f"{', '.join(index)}")
            if a == b:
                raise IsthmusError(f"{where}: link {key!r} joins a site to itself")
            i, j = index[a], index[b]
            return [(i, j), (j, i)] if both else [(i, j)]
    raise IsthmusError(f"{where}: link key {key!r} must be \"A-B\" (both directions) or \"A>B\" (one)")
