# isthmus/launch/env.py: the environment contract with the native side: the ISTHMUS_*
# variables every process (app rank and gateway) of a site gets. libisthmus.so and
# isthmus-gateway read exactly these; keep this file and docs in sync with the C side (the
# layout, ISTHMUS_SITE*, is parsed by native/src/contract/layout.c for both).
from __future__ import annotations

from typing import Sequence

from .layout import Layout

# Every variable isthmus sets for a site, in the order they are shown by --dry-run.
CONTRACT_VARS = (
    "ISTHMUS_JOB",  # job id, 32 lowercase hex chars, same for all sites
    "ISTHMUS_SITE",  # this site's index, 0-based, in the order of the layout
    "ISTHMUS_SITE_NAMES",  # comma list of site names, e.g. "A,B"
    "ISTHMUS_SITE_RANKS",  # comma list of app ranks per site, e.g. "2,2"
    "ISTHMUS_SITE_GATEWAYS",  # comma list of gateways per site, e.g. "1,1"
    "ISTHMUS_GATEWAY_ADDRS",  # comma list of each site's gateway 0 host:port (gateway i: port+i),
                              # each with its backup paths after '|': "a:1|b:1,c:2"
    "ISTHMUS_SITE_DIALOUT",  # comma list of 0/1: 1 = the site only dials out
    "ISTHMUS_SECRET_FILE",  # path of the 0600 file holding the secret as hex text + "\n"
    "ISTHMUS_MPI",  # this site's vendor: "openmpi" or "mpich"
    "ISTHMUS_PREFIX",  # the native install prefix
    "ISTHMUS_TRANSPORT",  # "tcp" or "udp" (the gateways' links)
)


def site_env(
    layout: Layout,
    index: int,
    *,
    job_id: str,
    secret_path: str,
    vendor: str,
    prefix: str,
    gateway_addrs: Sequence[str] | None = None,
) -> dict[str, str]:
    """The contract variables for site `index` (nothing else). `gateway_addrs` defaults to
    each site's host:port; every site must have its port decided by then."""
    sites = layout.sites
    addrs = list(gateway_addrs) if gateway_addrs is not None else [s.gateway_paths for s in sites]
    env = {
        "ISTHMUS_JOB": job_id,
        "ISTHMUS_SITE": str(index),
        "ISTHMUS_SITE_NAMES": ",".join(s.name for s in sites),
        "ISTHMUS_SITE_RANKS": ",".join(str(s.ranks) for s in sites),
        "ISTHMUS_SITE_GATEWAYS": ",".join(str(s.gateways) for s in sites),
        "ISTHMUS_GATEWAY_ADDRS": ",".join(addrs),
        "ISTHMUS_SITE_DIALOUT": ",".join("1" if s.dial_out else "0" for s in sites),
        "ISTHMUS_SECRET_FILE": secret_path,
        "ISTHMUS_MPI": vendor,
        "ISTHMUS_PREFIX": prefix,
        "ISTHMUS_TRANSPORT": layout.transport,
    }
    assert tuple(env) == CONTRACT_VARS
    return env
