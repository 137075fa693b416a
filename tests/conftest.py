"""Fixtures shared by the test folders: a tiny local model (inference/tiny_model.py)
for the loop, backend and server tests of model seats."""

from __future__ import annotations

from pathlib import Path

import pytest
from inference.tiny_model import build_tiny_model

REPO_ROOT = Path(__file__).resolve().parents[1]
CACHE_DIR = REPO_ROOT / ".cache" / "tiny-model"


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    """A Hugging Face folder with a tiny random Llama and its byte-level BPE
    tokenizer, built once into .cache/tiny-model (reused while its version
    marker matches). Skips the test when torch or transformers is missing."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    return build_tiny_model(CACHE_DIR)
