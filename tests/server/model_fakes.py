"""A model-free backend for server tests of real model seats (`LLMSeat` and
its tool loop): each request is answered at once with the first of a few
fixed texts its grammar accepts (a tool call, a note, a speech), and a day
summary waits for `summary_gate` (an asyncio.Event the test sets, or never
sets). Requests are not batched, so a summary that waits holds up no seat."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

import pytest
from agents.fake_backend import CharTokenizer  # tests/ is on sys.path under pytest

from tossim.agents.llm_seat import seat_from_spec
from tossim.agents.summarize import SUMMARY_REGEX
from tossim.inference.base import Backend, GenerationRequest, GenerationResult
from tossim.server import runner

SPEECH = "I am the Doctor and I trust nobody yet."
NOTE = "I told the town I am the Doctor."
MODEL_SUMMARY = "The town talked; one player claimed Doctor and nobody was lynched."


class GatedBackend(Backend):
    """See the module docstring. `seeds` keeps every request's seed by its key
    (game:slot); `summaries_asked` counts the summary requests."""

    name = "gated-fake"

    def __init__(self, summary: str = MODEL_SUMMARY) -> None:
        super().__init__()
        self.tokenizer = CharTokenizer()
        self.summary = summary
        self.summary_gate = asyncio.Event()
        self.summary_asked = asyncio.Event()
        self.summaries_asked = 0
        self.seeds: dict[str, list[int | None]] = {}

    def _seat_text(self, r: GenerationRequest) -> str:
        """The first text the request's grammar takes of: a thought that looks
        at the graveyard (a turn's first request), then writes a note, then
        ends; a speech; a wait."""
        prompt = self.tokenizer.decode(r.prompt_ids).rstrip()
        if prompt.endswith("</observation>"):
            last = prompt[prompt.rindex("<observation>"):]
            thought = [" Done.</thinking>" if last.startswith("<observation>Noted")
                       else f" Noting it.<notebook>{NOTE}</notebook>"]
        else:
            thought = ["<thinking>Checking.<graveyard></graveyard>",
                       "<thinking>Done.</thinking>"]
        for text in [*thought, f"<speak>{SPEECH}</speak>", "<wait></wait>"]:
            if r.regex is None or re.fullmatch(r.regex, text):
                return text
        return "<wait></wait>"

    async def _answer(self, r: GenerationRequest) -> GenerationResult:
        if r.regex == SUMMARY_REGEX:
            self.summaries_asked += 1
            self.summary_asked.set()
            await self.summary_gate.wait()
            text = self.summary
        else:
            self.seeds.setdefault(r.key, []).append(r.seed)
            text = self._seat_text(r)
        ids = tuple(ord(c) for c in text[:r.max_tokens])
        return GenerationResult(ids, text[:r.max_tokens],
                                "stop" if len(text) <= r.max_tokens else "length",
                                len(r.prompt_ids))

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return [await self._answer(r) for r in requests]

    async def _generate_batch(
            self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return await self.generate(requests)


def seat_models(monkeypatch: pytest.MonkeyPatch, slots: set[int],
                backend: GatedBackend) -> dict[int, list[Any]]:
    """Seats `slots` of every game become model seats (`LLMSeat`, the server's
    own) on `backend`; returns slot -> the seats made for it (a resumed game
    makes new ones)."""
    made: dict[int, list[Any]] = {}
    real = runner.make_ai_seat

    def make(spec: dict[str, Any], slot: int, seed: int, **kw: Any) -> Any:
        if slot in slots:
            seat = seat_from_spec({}, slot, seed, backend, game_id=kw.get("game_id", ""),
                                  summaries=kw.get("summaries"))
            made.setdefault(slot, []).append(seat)
            return seat
        return real(spec, slot, seed, **kw)

    monkeypatch.setattr(runner, "make_ai_seat", make)
    return made
