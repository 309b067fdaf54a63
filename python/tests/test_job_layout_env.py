# tests/test_job_layout_env.py: the job layout `isthmus run` writes (ISTHMUS_SITE,
# ISTHMUS_SITE_RANKS, ISTHMUS_SITE_GATEWAYS, ISTHMUS_SITE_NAMES) is read by one parser on
# both sides of a site (native/src/contract/layout.c): libisthmus at MPI_Init and
# isthmus-gateway refuse a bad one with the same line. Both used to take ISTHMUS_SITE=0x for
# site 0 and the gateway ISTHMUS_SITE_RANKS=1x,2 for 1,2 (atoi); the parser's own cases are
# native/tests/test_layout.c.
from __future__ import annotations

import os
import subprocess

import pytest

from isthmus.paths import REPO_ROOT

BAD_RANKS = ('ISTHMUS_SITE_RANKS=1x: entry 1 ("1x") is not allowed; allowed: a comma list of '
             "app ranks per site, each a whole number from 1 to 16777216")


def _env(prefix, **settings):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ISTHMUS_")}
    env.update(ISTHMUS_PREFIX=str(prefix.root), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", **settings)
    return env


@pytest.mark.native
def test_the_library_refuses_junk_in_the_layout(prefix, tmp_path):
    exe = tmp_path / "ring"
    subprocess.run([str(prefix.cc), "-O2", "-o", str(exe), str(REPO_ROOT / "examples" / "ring.c")],
                   check=True, timeout=120)
    env = _env(prefix, ISTHMUS_SITE="0", ISTHMUS_SITE_RANKS="1x", ISTHMUS_SITE_GATEWAYS="1")
    r = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and not r.stdout, (r.stdout, r.stderr)
    assert f"isthmus: bad job layout: {BAD_RANKS}; start the program with `isthmus run`" in \
        r.stderr.splitlines(), r.stderr
    env.update(ISTHMUS_SITE="0x", ISTHMUS_SITE_RANKS="1")
    r = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and not r.stdout, (r.stdout, r.stderr)
    assert ("isthmus: bad job layout: ISTHMUS_SITE=0x is not allowed; allowed: a site index "
            "from 0 to 0 (ISTHMUS_SITE_RANKS=1 lists 1 site); start the program with "
            "`isthmus run`") in r.stderr.splitlines(), r.stderr
    # the same layout written correctly runs (one site, one rank, no gateway needed)
    env["ISTHMUS_SITE"] = "0"
    r = subprocess.run([str(exe), "3", "0"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ring: ok: 1 ranks" in r.stdout, r.stderr


@pytest.mark.native
@pytest.mark.parametrize("ranks,gws,names,line", [
    ("1x,2", "1,1", "A,B", BAD_RANKS.replace("=1x:", "=1x,2:")),
    ("2,2", "1", "A,B", "ISTHMUS_SITE_GATEWAYS=1 lists 1 site, ISTHMUS_SITE_RANKS lists 2; "
     "allowed: one entry per site"),
    ("2,2", "1,1", "A", "ISTHMUS_SITE_NAMES=A lists 1 site, ISTHMUS_SITE_RANKS lists 2; "
     "allowed: one name per site"),
], ids=["junk", "short-gateways", "short-names"])
def test_the_gateway_refuses_a_bad_layout_with_the_same_line(prefix, ranks, gws, names, line):
    env = _env(prefix, ISTHMUS_SITE="0", ISTHMUS_SITE_RANKS=ranks, ISTHMUS_SITE_GATEWAYS=gws,
               ISTHMUS_SITE_NAMES=names, ISTHMUS_GATEWAY_ADDRS="127.0.0.1:1,127.0.0.1:2")
    r = subprocess.run([str(prefix.gateway)], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"isthmus-gateway: bad job layout: {line}; start jobs with `isthmus run`"]
