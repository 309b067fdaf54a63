# isthmus/paths.py: finds the native install prefix (gateway, compiler wrapper, libraries,
# backend plugins, bundled examples) and names the files inside it.
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .errors import IsthmusError

GATEWAY = "isthmus-gateway"
CC = "isthmus-cc"
FC = "isthmus-fc"

# python/isthmus/paths.py -> python/isthmus -> python -> <repo>
PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent.parent


@dataclass(frozen=True)
class Prefix:
    """A native install prefix and the paths of the files isthmus uses in it."""

    root: Path

    @property
    def gateway(self) -> Path:
        return self.root / "bin" / GATEWAY

    @property
    def cc(self) -> Path:
        return self.root / "bin" / CC

    @property
    def fc(self) -> Path:
        return self.root / "bin" / FC

    @property
    def libisthmus(self) -> Path:
        return self.root / "lib" / "libisthmus.so"

    def backend(self, vendor: str) -> Path:
        return self.root / "lib" / "isthmus" / f"isthmus-backend-{vendor}.so"

    @property
    def demo_source(self) -> Path:
        return self.root / "share" / "isthmus" / "examples" / "demo.c"

    def __str__(self) -> str:
        return str(self.root)


def _has_gateway(root: Path) -> bool:
    return (root / "bin" / GATEWAY).is_file()


def find_prefix(env: dict[str, str] | None = None) -> Prefix:
    """Return the native prefix: $ISTHMUS_PREFIX, else <repo>/_install, else the parent of
    the directory holding isthmus-gateway on PATH. Raises IsthmusError if none is usable."""
    env = os.environ if env is None else env
    looked: list[str] = []

    explicit = env.get("ISTHMUS_PREFIX")
    if explicit:
        root = Path(explicit).expanduser()
        if _has_gateway(root):
            return Prefix(root.resolve())
        raise IsthmusError(
            f"native build not found (ISTHMUS_PREFIX={explicit} has no bin/{GATEWAY}); "
            "run scripts/bootstrap.sh or set ISTHMUS_PREFIX to the install prefix"
        )

    repo_install = REPO_ROOT / "_install"
    looked.append(f"$ISTHMUS_PREFIX (unset), {repo_install}")
    if _has_gateway(repo_install):
        return Prefix(repo_install.resolve())

    on_path = shutil.which(GATEWAY, path=env.get("PATH", os.defpath))
    looked.append(f"{GATEWAY} on PATH")
    if on_path:
        return Prefix(Path(on_path).resolve().parent.parent)

    raise IsthmusError(
        f"native build not found (looked in {', '.join(looked)}); "
        "run scripts/bootstrap.sh or set ISTHMUS_PREFIX"
    )


def repo_demo_source() -> Path:
    """examples/demo.c in the source tree (used when the prefix does not ship it)."""
    return REPO_ROOT / "examples" / "demo.c"
