"""llama.cpp's CPU kernels are chosen at run time (tossim/inference/
llama_kernels.py): the best variant this CPU runs, never an AMX one, a clear
error where none runs, and a build with the kernels linked in left alone.
With the installed build, the kernels loaded are ones this CPU runs (the
bundled model's tests, test_llama_backend.py, evaluate on them)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tossim.inference import llama_kernels
from tossim.inference.base import BackendUnavailable


def _libs(tmp_path: Path, *names: str) -> list[Path]:
    return [tmp_path / f"libggml-cpu-{name}.so" for name in names]


def test_the_best_variant_this_cpu_runs_is_chosen_and_amx_never(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scores = {"x64": 1, "haswell": 40, "skylakex": 0, "sapphirerapids": 99}
    monkeypatch.setattr(llama_kernels, "score",
                        lambda p: scores[llama_kernels.variant_name(p)])
    lib = _libs(tmp_path, *scores)
    best = llama_kernels.best_variant(lib)
    assert best is not None and llama_kernels.variant_name(best) == "haswell"


def test_a_cpu_no_variant_runs_on_gets_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llama_kernels, "score", lambda p: 0)
    with pytest.raises(BackendUnavailable, match="none of llama.cpp's CPU kernels runs"):
        llama_kernels.best_variant(_libs(tmp_path, "haswell", "zen4"))


def test_a_build_with_the_kernels_linked_in_has_no_variant_to_choose() -> None:
    assert llama_kernels.best_variant([]) is None


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                    reason="llama-cpp-python is not installed (./scripts/test builds it)")
def test_the_installed_build_loads_kernels_this_cpu_runs() -> None:
    found = {llama_kernels.variant_name(p): p for p in llama_kernels.installed_variants()}
    name = llama_kernels.load_cpu_kernels()
    if not found:  # a build with the kernels linked in
        assert name is None
        return
    assert name is not None and name not in llama_kernels.AMX_VARIANTS
    assert llama_kernels.score(found[name]) > 0
    assert llama_kernels.load_cpu_kernels() == name  # once per process


def test_kernels_missing_from_where_the_wheel_says_get_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen on a machine where llama-cpp-python went in with `pip install
    --target`: its kernels were not where its file list said, and the model
    load failed with only "Failed to load model from file"."""
    from importlib import metadata

    class Listed:
        def __init__(self, path: Path) -> None:
            self.name, self._path = path.name, path

        def locate(self) -> Path:
            return self._path

    present = _libs(tmp_path, "haswell")[0]
    present.write_bytes(b"")
    files = [Listed(p) for p in _libs(tmp_path / "elsewhere", "haswell", "zen4")]
    monkeypatch.setattr(metadata, "files", lambda name: files)
    with pytest.raises(BackendUnavailable, match="lists its CPU kernels"):
        llama_kernels.installed_variants()
    # where they are, they are found
    monkeypatch.setattr(metadata, "files", lambda name: [Listed(present)])
    assert llama_kernels.installed_variants() == [present]
