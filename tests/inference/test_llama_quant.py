"""The bundled GGUF runs re-quantised to Q8_0 (tossim/inference/llama_quant.py):
made once into the model cache and re-used, the shipped file on request or
when the cache cannot be written (with a warning), and a clear error for a
type that does not exist."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import pytest

from tossim.inference.base import BackendUnavailable

pytestmark = pytest.mark.model

if importlib.util.find_spec("llama_cpp") is None:
    pytest.skip("llama-cpp-python is not installed (./scripts/test builds it)",
                allow_module_level=True)

from tossim.inference.llama_quant import quant_setting, requantised  # noqa: E402


@pytest.fixture
def shipped() -> Path:
    from tossim.inference.llama_backend import bundled_gguf

    try:
        return bundled_gguf()
    except BackendUnavailable as exc:
        pytest.skip(f"bundled GGUF: {exc}")


def test_the_bundled_file_is_requantised_once_and_reused(
        shipped: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOSSIM_MODEL_CACHE", str(tmp_path))
    first = requantised(shipped, "Q8_0")
    assert first.parent == tmp_path and first.name.endswith(".Q8_0.gguf")
    assert first.read_bytes()[:4] == b"GGUF"
    assert first.stat().st_size > shipped.stat().st_size  # 8 bits against about 5
    made = first.stat().st_mtime_ns
    assert requantised(shipped, "Q8_0") == first
    assert first.stat().st_mtime_ns == made  # not written again
    assert not list(tmp_path.glob("*.partial"))
    assert requantised(shipped, "shipped") == shipped


def test_an_unwritable_cache_keeps_the_shipped_file_with_a_warning(
        shipped: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TOSSIM_MODEL_CACHE", str(blocker / "models"))
    with caplog.at_level(logging.WARNING):
        assert requantised(shipped, "Q8_0") == shipped
    assert "could not re-quantise" in caplog.text


def test_the_setting_names_a_type(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOSSIM_LOCAL_QUANT", raising=False)
    assert quant_setting() == "Q8_0"
    monkeypatch.setenv("TOSSIM_LOCAL_QUANT", "shipped")
    assert quant_setting() == "shipped"
    monkeypatch.setenv("TOSSIM_LOCAL_QUANT", "Q3_K")
    with pytest.raises(ValueError, match="TOSSIM_LOCAL_QUANT='Q3_K'"):
        quant_setting()
