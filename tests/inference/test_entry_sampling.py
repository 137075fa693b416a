"""A catalogue entry's `sampling` reaches the token-ID backends: the seat's
requests carry the entry's temperature, top_p, penalties and seed, its
`max_tokens` caps every request (a smaller thinking budget), and each
backend turns those fields into its own sampling (the local backend's
nucleus and penalties, the OpenAI-compatible request body)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agents.fake_backend import ScriptedBackend  # tests/ is on sys.path under pytest
from agents.support import day3_investigator

from tossim.agents.entry_seat import make_seat_for_entry
from tossim.agents.loop import MOVES_THINK_SHARE, LoopConfig
from tossim.inference import registry
from tossim.inference.base import GenerationRequest
from tossim.inference.catalogue import ModelEntry


def _local_entry(**sampling: object) -> ModelEntry:
    return ModelEntry(name="smol-tuned", backend="local", sampling=dict(sampling))


def test_entry_sampling_reaches_every_request_of_a_seat(
        monkeypatch: pytest.MonkeyPatch) -> None:
    backend = ScriptedBackend(["<thinking>Player 4 lies.</thinking>", "<vote>Player 4</vote>"])
    # the process-wide backend the entry's seats share (no model is loaded)
    monkeypatch.setitem(registry._shared, ("local", "|"), backend)
    entry = _local_entry(temperature=0.25, top_p=0.8, max_tokens=40, presence_penalty=0.5,
                         frequency_penalty=0.2, seed=9, stop=["</speak>"])
    seat = make_seat_for_entry(entry, 7, seed=1)
    memory = day3_investigator().memories[7]
    result = asyncio.run(seat.loop.run_turn(memory, key="g:7", seed=1))  # type: ignore[union-attr]
    assert result.action == "vote"
    assert len(backend.requests) == 2
    for r in backend.requests:
        assert (r.temperature, r.top_p) == (0.25, 0.8)
        assert (r.presence_penalty, r.frequency_penalty) == (0.5, 0.2)
        assert r.max_tokens <= 40 and "</speak>" in r.stop
    # the voting thought's own budget (128 tokens) was cut to the entry's cap
    assert backend.requests[0].max_tokens == 40
    # the entry's seed is mixed into the loop's per-request seeds (still distinct)
    assert len({r.seed for r in backend.requests}) == 2

    # an entry without sampling sends the loop's own settings
    plain = ScriptedBackend(["<thinking>Hm.</thinking>", "<vote>Player 4</vote>"])
    monkeypatch.setitem(registry._shared, ("local", "|"), plain)
    seat = make_seat_for_entry(_local_entry(), 7, seed=1)
    asyncio.run(seat.loop.run_turn(day3_investigator().memories[7], key="g:7",  # type: ignore[union-attr]
                                   seed=1))
    # (the bundled entry's seats speak in moves: they think MOVES_THINK_SHARE of it)
    voting_budget = LoopConfig(speech="moves").budget("voting")
    assert voting_budget == int(128 * MOVES_THINK_SHARE)
    assert plain.requests[0].max_tokens == voting_budget and plain.requests[0].top_p == 1.0
    assert plain.requests[0].temperature == 0.6


def test_local_backend_applies_top_p_and_penalties(tiny_model_dir: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("outlines_core")
    from tossim.inference.local_backend import LocalBackend, nucleus, penalised

    probs = torch.tensor([0.1, 0.5, 0.3, 0.1])
    kept = nucleus(torch, probs.clone(), 0.7)  # 0.5 + 0.3 reach 0.7
    assert kept.tolist() == pytest.approx([0.0, 0.5, 0.3, 0.0])
    assert nucleus(torch, probs.clone(), 1e-9).nonzero().flatten().tolist() == [1]
    logits = torch.zeros(1, 4)
    out = penalised(torch, logits, [2, 2, 3], presence=1.0, frequency=0.5)
    assert out[0].tolist() == pytest.approx([0.0, 0.0, -2.0, -1.5])

    async def run() -> tuple[list[int], list[int]]:
        backend = LocalBackend(str(tiny_model_dir))
        try:
            prompt = tuple(backend.tokenizer.chat_prompt([{"role": "user", "content": "Hi"}]))
            greedy = await backend.generate_one(GenerationRequest(
                prompt_ids=prompt, max_tokens=12, temperature=0.0, seed=1))
            # hot sampling, but a nucleus so small only the likeliest token is left
            narrow = await backend.generate_one(GenerationRequest(
                prompt_ids=prompt, max_tokens=12, temperature=5.0, top_p=1e-9, seed=1))
            return list(greedy.token_ids), list(narrow.token_ids)
        finally:
            await backend.close()

    greedy, narrow = asyncio.run(run())
    assert greedy and narrow == greedy


def test_openai_backend_sends_the_sampling_fields() -> None:
    from tossim.inference.openai_backend import OpenAIBackend

    backend = object.__new__(OpenAIBackend)  # its request body only: no server, no tokenizer
    backend.model = "m"
    r = GenerationRequest(prompt_ids=(1, 2), max_tokens=8, temperature=0.3, top_p=0.9,
                          presence_penalty=0.4)
    body = backend._body(r)
    assert (body["temperature"], body["top_p"], body["presence_penalty"]) == (0.3, 0.9, 0.4)
    assert "frequency_penalty" not in body  # unset fields leave the server's defaults
    assert "top_p" not in backend._body(GenerationRequest(prompt_ids=(1,), max_tokens=8))
