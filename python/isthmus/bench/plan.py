# isthmus/bench/plan.py: campaign plans (TOML, read with tomllib). A plan names the
# benchmarks with their options, and the matrix they are swept over: rank counts, MPI
# libraries (a vendor alone, or isthmus on it) and link profiles (loopback, or sites
# joined by the link emulator). Every mistake is reported with the file and the key.
#
#   [campaign]                 name, runs (launches of every point), timeout (s per launch)
#   [matrix]                   ranks = [2, 4], libraries = [...], profiles = [...]
#   [profiles.<name>]          link = "delay=5ms,rate=1gbit" (omit for loopback), sites = 2
#   [defaults]                 isthmus-bench options for every benchmark
#   [[benchmark]]              name = "latency", options..., optional ranks = [...]
from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import IsthmusError
from .catalog import OPTIONS, check_benchmark, check_ranks, to_args
from .launchers import Launch, Profile, check_library, sites_of

PLAN_KEYS = {"campaign", "matrix", "profiles", "defaults", "benchmark", "env"}
CAMPAIGN_KEYS = {"name", "runs", "timeout", "description"}
MATRIX_KEYS = {"ranks", "libraries", "profiles"}
PROFILE_KEYS = {"link", "sites"}


@dataclass(frozen=True)
class Point:
    """One measurement: a launch of isthmus-bench, repeated `run` times by a campaign."""

    benchmark: str
    options: tuple[tuple[str, Any], ...]
    args: tuple[str, ...]
    library: str
    profile: Profile
    ranks: int
    run: int

    @property
    def sites(self) -> int:
        return sites_of(self.library, self.profile)

    @property
    def key(self) -> str:
        ident = {"benchmark": self.benchmark, "args": list(self.args), "library": self.library,
                 "profile": self.profile.name, "link": self.profile.link,
                 "sites": self.sites, "ranks": self.ranks, "run": self.run}
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]

    def describe(self) -> dict:
        return {"benchmark": self.benchmark, "options": dict(self.options), "library": self.library,
                "profile": self.profile.name, "link": self.profile.link, "sites": self.sites,
                "ranks": self.ranks, "run": self.run}

    def launch(self, timeout: float, env: dict[str, str]) -> Launch:
        return Launch(self.benchmark, list(self.args), self.library, self.profile, self.ranks,
                      timeout=timeout, env=dict(env))


@dataclass
class Plan:
    path: Path
    text: str
    name: str
    runs: int
    timeout: float
    points: list[Point] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    profiles: dict[str, Profile] = field(default_factory=dict)
    libraries: list[str] = field(default_factory=list)


def _err(path: Path, msg: str) -> IsthmusError:
    return IsthmusError(f"plan {path}: {msg}")


def _unknown(path: Path, where: str, table: dict, allowed: set[str]) -> None:
    extra = sorted(set(table) - allowed)
    if extra:
        raise _err(path, f"[{where}]: unknown key {extra[0]!r}; allowed: {', '.join(sorted(allowed))}")


def _int_list(path: Path, where: str, value: Any, minimum: int = 1) -> list[int]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) and v >= minimum for v in values):
        raise _err(path, f"{where}: expected integers >= {minimum} (or a list of them), got {value!r}")
    return values


def _str_list(path: Path, where: str, value: Any) -> list[str]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, str) and v for v in values):
        raise _err(path, f"{where}: expected a string or a list of strings, got {value!r}")
    return values


def load_plan(path: str | Path, check_launchable: bool = True) -> Plan:
    """Read and check a plan; expand it into points (runs interleaved: run 0 of every
    point, then run 1, ...; libraries innermost so compared libraries run back to back)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise IsthmusError(f"cannot read plan {path}: {e.strerror or e}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise _err(path, f"not valid TOML: {e}") from None
    _unknown(path, "top level", data, PLAN_KEYS)
    camp = data.get("campaign", {})
    _unknown(path, "campaign", camp, CAMPAIGN_KEYS)
    name = camp.get("name", path.stem)
    if not isinstance(name, str) or not name:
        raise _err(path, "[campaign] name must be a non-empty string")
    runs = camp.get("runs", 1)
    if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
        raise _err(path, f"[campaign] runs must be an integer >= 1, got {runs!r}")
    timeout = camp.get("timeout", 600)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise _err(path, f"[campaign] timeout must be seconds > 0, got {timeout!r}")
    env = data.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise _err(path, "[env] must map variable names to strings")

    profiles = {"loopback": Profile("loopback", None, 2)}
    for pname, p in data.get("profiles", {}).items():
        if not isinstance(p, dict):
            raise _err(path, f"[profiles.{pname}] must be a table")
        _unknown(path, f"profiles.{pname}", p, PROFILE_KEYS)
        link = p.get("link")
        if link is not None and (not isinstance(link, str) or not link):
            raise _err(path, f"[profiles.{pname}] link must be a link spec such as 'delay=5ms,rate=1gbit'")
        sites = p.get("sites", 2)
        if not isinstance(sites, int) or isinstance(sites, bool) or not 1 <= sites <= 64:
            raise _err(path, f"[profiles.{pname}] sites must be an integer in 1..64, got {sites!r}")
        if link is not None and sites < 2:
            raise _err(path, f"[profiles.{pname}] an emulated link needs at least 2 sites")
        profiles[pname] = Profile(pname, link, sites)

    matrix = data.get("matrix", {})
    _unknown(path, "matrix", matrix, MATRIX_KEYS)
    ranks = _int_list(path, "[matrix] ranks", matrix.get("ranks", [2]))
    libraries = _str_list(path, "[matrix] libraries", matrix.get("libraries", ["openmpi"]))
    profile_names = _str_list(path, "[matrix] profiles", matrix.get("profiles", ["loopback"]))
    for lib in libraries:
        try:
            check_library(lib)
        except IsthmusError as e:
            raise _err(path, f"[matrix] libraries: {e}") from None
    for pn in profile_names:
        if pn not in profiles:
            raise _err(path, f"[matrix] profiles: no profile {pn!r} (defined: {', '.join(profiles)}; "
                             f"add a [profiles.{pn}] table)")

    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise _err(path, "[defaults] must be a table")
    benches = data.get("benchmark", [])
    if not isinstance(benches, list) or not benches:
        raise _err(path, "no [[benchmark]] entries: add at least one, e.g. [[benchmark]] name = \"latency\"")

    plan = Plan(path, text, name, runs, float(timeout), env=dict(env),
                profiles={n: profiles[n] for n in profile_names}, libraries=libraries)
    combos = []
    for i, b in enumerate(benches):
        where = f"[[benchmark]] #{i + 1}"
        if not isinstance(b, dict) or "name" not in b:
            raise _err(path, f"{where}: needs a name, e.g. name = \"latency\"")
        bname = b["name"]
        try:
            check_benchmark(bname)
        except IsthmusError as e:
            raise _err(path, f"{where}: {e}") from None
        where = f"[[benchmark]] {bname}"
        opts = {**defaults, **{k: v for k, v in b.items() if k not in ("name", "ranks")}}
        branks = _int_list(path, f"{where} ranks", b["ranks"]) if "ranks" in b else ranks
        # `background` may list several kinds: one point each
        variants = [opts]
        if isinstance(opts.get("background"), list):
            variants = [{**opts, "background": bg} for bg in opts["background"]]
        for o in variants:
            try:
                args = tuple(to_args(o, where=where))
            except IsthmusError as e:
                raise _err(path, str(e)) from None
            for r in branks:
                for pn in profile_names:
                    for lib in libraries:
                        prof = profiles[pn]
                        try:
                            check_ranks(bname, o, r, sites_of(lib, prof))
                        except IsthmusError as e:
                            raise _err(path, f"{where}: {e} (library {lib}, profile {pn})") from None
                        combos.append((bname, tuple(sorted(o.items(), key=lambda kv: kv[0])), args, lib, prof, r))
    if check_launchable:
        from .launchers import check_combination

        for lib in libraries:
            for pn in profile_names:
                check_combination(lib, profiles[pn])
    for run in range(runs):
        for bname, o, args, lib, prof, r in combos:
            plan.points.append(Point(bname, _hashable(o), args, lib, prof, r, run))
    return plan


def _hashable(items):
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in items)


def option_names() -> list[str]:
    return list(OPTIONS)
