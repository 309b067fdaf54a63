# tests/conftest.py: shared fixtures: a clean ISTHMUS_* environment and a fake native prefix
# (scripts standing in for isthmus-gateway, empty backend plugins) for tests that need one.
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from isthmus.paths import Prefix

FAKE_GATEWAY = """#!/bin/sh
# fake isthmus-gateway for tests: report what it was given and exit
echo "gateway site=$ISTHMUS_SITE job=$ISTHMUS_JOB"
"""


@pytest.fixture(autouse=True)
def clean_isthmus_env(request, monkeypatch):
    """No unit test sees ISTHMUS_* variables from the developer's shell (native tests keep
    them: CI points them at the build with ISTHMUS_PREFIX)."""
    if request.node.get_closest_marker("native"):
        return
    for name in list(os.environ):
        if name.startswith("ISTHMUS_"):
            monkeypatch.delenv(name)


def make_fake_prefix(root: Path) -> Prefix:
    (root / "bin").mkdir(parents=True)
    (root / "lib" / "isthmus").mkdir(parents=True)
    gw = root / "bin" / "isthmus-gateway"
    gw.write_text(FAKE_GATEWAY)
    gw.chmod(gw.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (root / "lib" / "libisthmus.so").write_bytes(b"")
    # the settings' checker `isthmus run` calls first: the real one when it is built (a
    # fake prefix fakes the launch, not what a setting may be), else one that finds none
    knobs = root / "bin" / "isthmus-knobs"
    real = Path(__file__).resolve().parents[2] / "_install" / "bin" / "isthmus-knobs"
    if real.is_file():
        knobs.symlink_to(real)
    else:
        knobs.write_text("#!/bin/sh\nexit 0\n")
        knobs.chmod(0o755)
    for vendor in ("openmpi", "mpich"):
        (root / "lib" / "isthmus" / f"isthmus-backend-{vendor}.so").write_bytes(b"")
    return Prefix(root)


@pytest.fixture
def fake_prefix(tmp_path, monkeypatch) -> Prefix:
    prefix = make_fake_prefix(tmp_path / "prefix")
    monkeypatch.setenv("ISTHMUS_PREFIX", str(prefix.root))
    return prefix


@pytest.fixture
def script(tmp_path):
    """Factory: write an executable #! script and return its path."""

    def make(name: str, body: str) -> Path:
        p = tmp_path / name
        p.write_text("#!/bin/sh\n" + body)
        p.chmod(0o755)
        return p

    return make


@pytest.fixture(scope="session")
def prefix():
    """The native install for end-to-end tests. Under ./scripts/test.sh (and so in CI)
    ISTHMUS_REQUIRE_NATIVE is set and a missing build fails instead of skipping."""
    from isthmus import paths
    from isthmus.errors import IsthmusError

    try:
        return paths.find_prefix()
    except IsthmusError as e:
        if os.environ.get("ISTHMUS_REQUIRE_NATIVE"):
            pytest.fail(f"the native build is required here: {e}")
        pytest.skip(f"needs the native build: {e}")


@pytest.fixture(scope="session")
def netadmin(prefix):
    """Root (or CAP_NET_ADMIN), /dev/net/tun and the link emulator, for tests in network
    namespaces. Skipped with the reason locally; under ./scripts/test.sh
    ISTHMUS_REQUIRE_NETADMIN is set and a missing one fails instead."""
    from isthmus.errors import IsthmusError
    from isthmus.netemu.emulation import check_privileges

    try:
        check_privileges()
        if not (prefix.root / "bin" / "isthmus-linkemu").is_file():
            raise IsthmusError(f"{prefix.root}/bin/isthmus-linkemu is missing; run scripts/bootstrap.sh")
    except IsthmusError as e:
        if os.environ.get("ISTHMUS_REQUIRE_NETADMIN"):
            pytest.fail(f"ISTHMUS_REQUIRE_NETADMIN is set but: {e}")
        pytest.skip(f"needs root and /dev/net/tun (network namespaces, link emulator): {e}")
    return prefix
