# tests/test_paths.py: finding the native prefix ($ISTHMUS_PREFIX, <repo>/_install, PATH).
import pytest

from isthmus import paths
from isthmus.errors import IsthmusError

from conftest import make_fake_prefix


def test_env_prefix(tmp_path):
    p = make_fake_prefix(tmp_path / "pfx")
    found = paths.find_prefix({"ISTHMUS_PREFIX": str(p.root), "PATH": ""})
    assert found.root == p.root.resolve()
    assert found.gateway == found.root / "bin" / "isthmus-gateway"
    assert found.cc == found.root / "bin" / "isthmus-cc"
    assert found.libisthmus == found.root / "lib" / "libisthmus.so"
    assert found.backend("mpich") == found.root / "lib" / "isthmus" / "isthmus-backend-mpich.so"
    assert found.demo_source == found.root / "share" / "isthmus" / "examples" / "demo.c"


def test_env_prefix_without_gateway(tmp_path):
    with pytest.raises(IsthmusError, match="has no bin/isthmus-gateway"):
        paths.find_prefix({"ISTHMUS_PREFIX": str(tmp_path), "PATH": ""})


def test_repo_install(tmp_path, monkeypatch):
    make_fake_prefix(tmp_path / "_install")
    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path)
    assert paths.find_prefix({"PATH": ""}).root == (tmp_path / "_install").resolve()


def test_gateway_on_path(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path / "norepo")
    p = make_fake_prefix(tmp_path / "opt")
    assert paths.find_prefix({"PATH": str(p.root / "bin")}).root == p.root.resolve()


def test_not_found_message(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path)
    with pytest.raises(IsthmusError) as exc:
        paths.find_prefix({"PATH": str(tmp_path)})
    msg = str(exc.value)
    assert msg.startswith("native build not found (looked in ")
    assert str(tmp_path / "_install") in msg
    assert msg.endswith("run scripts/bootstrap.sh or set ISTHMUS_PREFIX")
