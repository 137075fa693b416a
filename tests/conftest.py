"""Fixtures shared by the test folders: a tiny local model (inference/tiny_model.py)
for the loop, backend and server tests of model seats, and one `vllm serve` of
the bundled model's chat endpoint for the chat-backend and arena tests."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from inference.tiny_model import build_tiny_model

REPO_ROOT = Path(__file__).resolve().parents[1]

# Servers started by the tests (in process, or `tossim serve` subprocesses,
# which inherit the environment) keep their deal secret in a data folder of
# this run's own, never in the user's (docs/api.md, "Fair deals").
_DATA_HOME = tempfile.mkdtemp(prefix="tossim-test-data-")
os.environ["XDG_DATA_HOME"] = _DATA_HOME
atexit.register(shutil.rmtree, _DATA_HOME, True)
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


@pytest.fixture(scope="session")
def vllm_chat_url() -> Iterator[str]:
    """The base URL (`.../v1`) of a `vllm serve` of the bundled model with
    chat tool calling, started once for every test that asks for it (each
    start costs half a minute); TOSSIM_TEST_VLLM_CHAT_URL names one already
    running with the same flags instead. Tests using it carry `needs_vllm`."""
    given = os.environ.get("TOSSIM_TEST_VLLM_CHAT_URL")
    if given:
        yield given
        return
    from inference.test_vllm_backend import CHAT_SERVED, serve_vllm
    with serve_vllm("--served-model-name", CHAT_SERVED, "--enable-auto-tool-choice",
                    "--tool-call-parser", "hermes",
                    # a named tool choice becomes structured outputs
                    env={"VLLM_ENFORCE_STRICT_TOOL_CALLING": "0"},
                    log_name="vllm-chat-serve.log") as url:
        yield f"{url}/v1"
