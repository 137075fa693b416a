"""The one interface every model backend implements.

An AI seat's context is a list of token IDs that the tool loop only ever
appends to (prompt, generated segment, observation, next segment ...), so a
backend sees the whole context in every request and a backend with a prefix
cache (vLLM, or the local backend's own cache) re-uses everything but the tail.
Requests carry their own guided-decoding constraint (a regex for the XML
protocol, a JSON schema for the JSON protocol), stop strings, a token budget
and a seed; `generate` takes a batch so a backend can decode the seats that are
waiting together.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tossim.inference.seeds import check_seed


@dataclass(frozen=True)
class GenerationRequest:
    prompt_ids: tuple[int, ...]
    max_tokens: int
    regex: str | None = None
    json_schema: dict[str, Any] | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None
    temperature: float = 0.7
    # requests with the same key share a prefix (one seat of one game)
    key: str = ""
    # nucleus sampling and repetition penalties (a catalogue entry's `sampling`,
    # applied by `registry.EntrySampling`); the defaults leave sampling alone
    top_p: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    # when the answer stops being useful (time.monotonic()); a backend stops
    # generating at it and returns what it has with finish_reason "deadline"
    deadline: float | None = None
    # a request nobody waits on at a table (the demo's seats, watched, not
    # played with): a backend that schedules requests itself (local) serves it
    # only while no other request waits or runs, so a lobby's model seats
    # never share their steps with the demo's (docs/agents.md, "Backends")
    background: bool = False

    def __post_init__(self) -> None:
        check_seed(self.seed)


@dataclass(frozen=True)
class GenerationResult:
    token_ids: tuple[int, ...]
    text: str
    # "stop": the constraint was complete, EOS or a stop string; "length":
    # max_tokens; "deadline": the request's deadline passed first
    finish_reason: str
    prompt_tokens: int
    cached_tokens: int = 0
    seconds: float = 0.0


class Tokenizer(Protocol):
    """Text <-> token IDs as the backend's model sees them."""

    def encode(self, text: str) -> list[int]:
        """Token IDs of `text`, no special tokens added."""
        ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def chat_prompt(self, messages: Sequence[dict[str, str]]) -> list[int]:
        """The model's chat template applied to `messages`, ending with the
        assistant turn's opening (what the model continues from)."""
        ...


def hits_stop(tokenizer: Tokenizer, ids: Sequence[int], stop: Sequence[str]) -> bool:
    """Whether the generated IDs' tail already holds a stop string (checked
    on the last 16 tokens' text: a stop string is a few tokens long)."""
    tail = tokenizer.decode(list(ids[-16:]))
    return any(x in tail for x in stop)


def cut_at_stop(tokenizer: Tokenizer, ids: Sequence[int], stop: Sequence[str]) -> list[int]:
    """Generated IDs up to and including the first stop string (all of them
    when none is there)."""
    for k in range(1, len(ids) + 1):
        text = tokenizer.decode(list(ids[:k]))
        if any(x in text for x in stop):
            return list(ids[:k])
    return list(ids)


class HFTokenizer:
    """A transformers tokenizer (used by the local and vLLM backends, and by
    the OpenAI backend when the model's tokenizer is available locally)."""

    def __init__(self, tokenizer: Any) -> None:
        self.hf = tokenizer

    def encode(self, text: str) -> list[int]:
        return list(self.hf.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.hf.decode(list(ids), skip_special_tokens=True))

    def chat_prompt(self, messages: Sequence[dict[str, str]]) -> list[int]:
        text = self.hf.apply_chat_template(list(messages), tokenize=False,
                                           add_generation_prompt=True)
        return self.encode(text)

    @property
    def eos_token_id(self) -> int | None:
        eos = self.hf.eos_token_id
        return None if eos is None else int(eos)


@dataclass
class BackendStats:
    requests: int = 0
    batches: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    generated_tokens: int = 0
    seconds: float = 0.0
    largest_batch: int = 0
    # filled in by backends that can tell (the local one)
    prefill_seconds: float = 0.0
    decode_seconds: float = 0.0
    decode_steps: int = 0
    prefill_passes: int = 0  # forward passes that prefilled new rows (several rows per pass)
    # generated tokens the grammar forced, evaluated with the step before
    # them rather than a step of their own (the local backend)
    forced_tokens: int = 0
    # requests stopped at their deadline, and dropped because their caller gave up
    deadline_stops: int = 0
    cancelled: int = 0

    def add(self, results: Sequence[GenerationResult], seconds: float) -> None:
        self.requests += len(results)
        self.batches += 1
        self.largest_batch = max(self.largest_batch, len(results))
        self.seconds += seconds
        for r in results:
            self.prompt_tokens += r.prompt_tokens
            self.cached_tokens += r.cached_tokens
            self.generated_tokens += len(r.token_ids)
            self.deadline_stops += r.finish_reason == "deadline"

    def tokens_per_second(self) -> float | None:
        """How fast one request's tokens come, as measured so far (None before
        any): decode steps per second where the backend times its steps (each
        step adds a sampled token to every row; tokens the grammar forces
        ride along uncounted, so free text is never sized too long), else
        generated tokens per second of batch time. The tool loop sizes a
        turn's thinking to its deadline with it (docs/agents.md#deadlines)."""
        if self.decode_steps and self.decode_seconds > 0:
            return self.decode_steps / self.decode_seconds
        if self.generated_tokens and self.seconds > 0:
            return self.generated_tokens / self.seconds
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "batches": self.batches,
                "largest_batch": self.largest_batch, "prompt_tokens": self.prompt_tokens,
                "cached_tokens": self.cached_tokens, "generated_tokens": self.generated_tokens,
                "seconds": round(self.seconds, 3),
                "prefill_seconds": round(self.prefill_seconds, 3),
                "decode_seconds": round(self.decode_seconds, 3), "decode_steps": self.decode_steps,
                "prefill_passes": self.prefill_passes, "forced_tokens": self.forced_tokens,
                "deadline_stops": self.deadline_stops,
                "cancelled": self.cancelled}


def seconds_left(deadline: float | None) -> float | None:
    """Seconds until a request's deadline (time.monotonic), never below 0;
    None without one."""
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def earliest_deadline(requests: Sequence[GenerationRequest]) -> float | None:
    """The first deadline among `requests` (a batch is waited for as one)."""
    found = [r.deadline for r in requests if r.deadline is not None]
    return min(found) if found else None


def deadline_result(request: GenerationRequest) -> GenerationResult:
    """What a request whose deadline passed before any token gets."""
    return GenerationResult((), "", "deadline", len(request.prompt_ids))


def cpu_threads() -> int:
    """The cores this process may run on (its affinity, not the machine's
    count): a CPU backend uses this many threads, never more. More threads
    than cores made a shared 2-core machine 5x slower (docs/agents.md#deadlines)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


class Backend(abc.ABC):
    """A model behind the tool loop. Subclasses implement `_generate_batch`
    (blocking or async); `generate` collects the requests of seats that ask at
    about the same time into one batch (up to `max_batch`)."""

    name: str = "backend"
    tokenizer: Tokenizer
    max_batch: int = 16
    # how long the first request of a batch waits for others (seconds)
    batch_window: float = 0.005

    def __init__(self) -> None:
        self.stats = BackendStats()
        self._waiting: list[tuple[GenerationRequest, asyncio.Future[GenerationResult]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None

    @abc.abstractmethod
    async def _generate_batch(
            self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Generate for every request (same order)."""

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Results for `requests`, batched with whatever else is waiting."""
        loop = asyncio.get_running_loop()
        futures = []
        for r in requests:
            fut: asyncio.Future[GenerationResult] = loop.create_future()
            self._waiting.append((r, fut))
            futures.append(fut)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        return list(await asyncio.gather(*futures))

    async def generate_one(self, request: GenerationRequest) -> GenerationResult:
        return (await self.generate([request]))[0]

    async def _flush(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            await asyncio.sleep(self.batch_window)
            while self._waiting:
                batch, self._waiting = (self._waiting[:self.max_batch],
                                        self._waiting[self.max_batch:])
                started = time.perf_counter()
                try:
                    results = await self._follow([r for r, _ in batch], [f for _, f in batch])
                except Exception as exc:  # every waiting seat learns about it
                    for _, fut in batch:
                        if not fut.done():
                            fut.set_exception(exc)
                    continue
                if results is None:  # every seat of the batch gave up waiting
                    continue
                self.stats.add(results, time.perf_counter() - started)
                for (_, fut), res in zip(batch, results, strict=True):
                    if not fut.done():
                        fut.set_result(res)
                # seats that asked while this batch ran form the next one
                await asyncio.sleep(0)

    async def _follow(self, requests: list[GenerationRequest],
                      futures: list[asyncio.Future[GenerationResult]]
                      ) -> list[GenerationResult] | None:
        """`_generate_batch`, cancelled (None) when every seat waiting on it
        was cancelled: a cancelled asyncio task cancels its request."""
        work = asyncio.ensure_future(self._generate_batch(requests))
        try:
            while not work.done():
                live = [f for f in futures if not f.done()]
                if not live:
                    self.stats.cancelled += len(futures)
                    work.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await work
                    return None
                waits: list[asyncio.Future[Any]] = [work, *live]
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            work.cancel()
            raise
        return work.result()

    async def start(self) -> None:  # noqa: B027 - most backends are ready once built
        """Get ready before the first game (load, connect, self-test)."""

    async def close(self) -> None:  # noqa: B027 - most backends hold nothing to release
        """Release the model (and any worker threads)."""


class BackendUnavailable(RuntimeError):
    """The backend cannot run here (missing package, model file or server)."""
