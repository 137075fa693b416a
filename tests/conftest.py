"""Fixtures shared by the test folders: a tiny local model (inference/tiny_model.py)
for the loop, backend and server tests of model seats, and one `vllm serve` of
the bundled model's chat endpoint for the chat-backend and arena tests."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
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


class _VllmChat:
    """The one `vllm serve` with chat tool calling: started by its first user,
    stopped after its last (`pytest_runtest_teardown`), not at the session's
    end: left running, it held about 3 GB of memory through the rest of the
    run. The tests that use it are run together
    (`pytest_collection_modifyitems`)."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._url: str | None = None

    def url(self) -> str:
        if self._url is None:
            from inference.test_vllm_backend import CHAT_SERVED, serve_vllm
            self._url = self._stack.enter_context(serve_vllm(
                "--served-model-name", CHAT_SERVED, "--enable-auto-tool-choice",
                "--tool-call-parser", "hermes",
                # a named tool choice becomes structured outputs
                env={"VLLM_ENFORCE_STRICT_TOOL_CALLING": "0"},
                log_name="vllm-chat-serve.log"))
        return f"{self._url}/v1"

    def stop(self) -> None:
        self._stack.close()
        self._url = None


_VLLM_CHAT = _VllmChat()
_VLLM_FIXTURE = "vllm_chat_url"


def _uses_vllm_chat(item: pytest.Item | None) -> bool:
    return item is not None and _VLLM_FIXTURE in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that share the chat `vllm serve` run one after another, from
    where the first of them stands, so the server is up for one stretch."""
    users = [item for item in items if _uses_vllm_chat(item)]
    if not users:
        return
    first = items.index(users[0])
    others = [item for item in items if not _uses_vllm_chat(item)]
    items[:] = others[:first] + users + others[first:]


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if _uses_vllm_chat(item) and not _uses_vllm_chat(nextitem):
        _VLLM_CHAT.stop()


@pytest.fixture
def vllm_chat_url() -> str:
    """The base URL (`.../v1`) of a `vllm serve` of the bundled model with
    chat tool calling, shared by the tests that ask for it (each start costs
    half a minute); TOSSIM_TEST_VLLM_CHAT_URL names one already running with
    the same flags instead. Tests using it carry `needs_vllm`."""
    return os.environ.get("TOSSIM_TEST_VLLM_CHAT_URL") or _VLLM_CHAT.url()


def pytest_sessionfinish() -> None:
    _VLLM_CHAT.stop()  # a run cut short after a user started it
