# tests/test_layering.py: the include rules between native/src's folders that keep the
# app-gateway contract in one place (docs/design.md, "The app-gateway contract"): wan/
# moves bytes and knows nothing of MPI or the frame protocol; core/ and abi/ reach the
# other sites only through contract/; the gateway does not include the library's core;
# contract/ depends on neither side.
from __future__ import annotations

import re
from pathlib import Path

from isthmus.paths import REPO_ROOT

SRC = REPO_ROOT / "native" / "src"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# folder -> folders of native/src it must not include
FORBIDDEN = {
    "core": {"wan", "gateway"},
    "abi": {"wan", "gateway"},
    "coll": {"wan", "gateway"},
    "gateway": {"core", "abi", "coll"},
    "wan": {"contract", "core", "abi", "coll", "gateway", "backend"},
    "contract": {"core", "abi", "coll", "gateway", "wan"},
}
# names of the frame protocol that wan/ must not use
PROTOCOL = re.compile(r"\b(ism_frame_\w+|ISM_F_[A-Z_]+|ISM_FRAME_\w+|ISM_TAG_\w+|ISM_ROLE_\w+)")


def _sources(folder: Path):
    return sorted(p for p in folder.rglob("*") if p.suffix in (".c", ".h", ".def"))


def violations(src: Path) -> list[str]:
    found = []
    for folder, banned in FORBIDDEN.items():
        for path in _sources(src / folder):
            text = path.read_text(errors="replace")
            for inc in INCLUDE.findall(text):
                target = (path.parent / inc).resolve()
                try:
                    top = target.relative_to(src.resolve()).parts[0]
                except ValueError:
                    continue
                if top in banned:
                    found.append(f"{path.relative_to(src)} includes {inc}")
            if folder == "wan":
                for name in sorted(set(PROTOCOL.findall(text))):
                    found.append(f"{path.relative_to(src)} uses {name} (frame protocol)")
    return found


def test_every_folder_keeps_to_its_side_of_the_contract():
    assert violations(SRC) == []


def test_the_check_sees_a_forbidden_include(tmp_path):
    """The rules bite: a core file including a wan header, a gateway file including the
    core and a wan file naming a frame type are each reported."""
    for folder, name, text in [
        ("core", "x.c", '#include "../wan/sock.h"\n'),
        ("gateway", "y.c", '#include "../core/core.h"\n'),
        ("wan", "z.c", "int t = ISM_F_EAGER;\n"),
        ("wan/udp", "w.c", '#include "../../contract/frame.h"\n'),
    ]:
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / name).write_text(text)
    assert violations(tmp_path) == [
        "core/x.c includes ../wan/sock.h",
        "gateway/y.c includes ../core/core.h",
        "wan/udp/w.c includes ../../contract/frame.h",
        "wan/z.c uses ISM_F_EAGER (frame protocol)",
    ]
