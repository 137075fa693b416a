"""The local backend's deadlines, cancellation and threads (docs/agents.md#deadlines)
on the tiny model: a request stops at its deadline with what it has, a
request whose caller gave up is dropped from the running batch, and torch
uses the process's cores, never more."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from tossim.inference.base import GenerationRequest

pytest.importorskip("torch")
pytest.importorskip("outlines_core")

from tossim.inference.local_backend import LocalBackend  # noqa: E402

# tokens no test waits for: the tiny model at temperature 0 never ends early,
# and on an idle machine it writes a few hundred a second
LONG = 4000


@pytest.fixture(scope="module")
def backend(tiny_model_dir: Path) -> LocalBackend:
    return LocalBackend(tiny_model_dir)


def prompt(backend: LocalBackend) -> tuple[int, ...]:
    return tuple(backend.tokenizer.encode("Who is the Mafia? Player 4 claimed Doctor."))


def test_decoding_stops_at_the_deadline_with_what_it_has(backend: LocalBackend) -> None:
    async def go() -> None:
        ids = prompt(backend)
        res = await backend.generate_one(GenerationRequest(
            ids, LONG, temperature=0.0, key="deadline", deadline=time.monotonic() + 0.5))
        assert res.finish_reason == "deadline"
        assert len(res.token_ids) < LONG
        assert res.text == backend.tokenizer.decode(res.token_ids)
        # the same request without a deadline runs to its token budget
        short = await backend.generate_one(GenerationRequest(ids, 3, temperature=0.0))
        assert short.finish_reason == "length" and len(short.token_ids) == 3
    asyncio.run(go())


def test_a_request_past_its_deadline_gets_nothing(backend: LocalBackend) -> None:
    async def go() -> None:
        before = backend.stats.deadline_stops
        res = await backend.generate_one(GenerationRequest(
            prompt(backend), LONG, temperature=0.0, deadline=time.monotonic() - 1.0))
        assert res.finish_reason == "deadline" and res.token_ids == () and res.text == ""
        assert backend.stats.deadline_stops == before + 1
    asyncio.run(go())


def test_a_cancelled_caller_drops_its_request_from_the_batch(backend: LocalBackend) -> None:
    async def go() -> None:
        cancelled = backend.stats.cancelled
        batches = backend.stats.batches
        slow = asyncio.create_task(backend.generate_one(GenerationRequest(
            prompt(backend), LONG, temperature=0.0, key="cancelled")))
        while backend.stats.batches == batches:  # admitted: it is decoding
            await asyncio.sleep(0.01)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        # the next request's steps see the cancelled row and drop it first
        res = await backend.generate_one(GenerationRequest(prompt(backend), 2,
                                                           temperature=0.0))
        assert res.finish_reason == "length"
        assert backend.stats.cancelled == cancelled + 1
    asyncio.run(go())


def test_threads_are_the_cores_this_process_may_use(tiny_model_dir: Path) -> None:
    import torch
    cores = len(os.sched_getaffinity(0))
    LocalBackend(tiny_model_dir, threads=cores + 8)
    assert torch.get_num_threads() == cores  # never more than the cores
    LocalBackend(tiny_model_dir)
    assert torch.get_num_threads() == cores
