"""Model seats' thinking: streamed live to omniscient spectators of an all-AI
game (never to public viewers or seats), stored per turn, and served by
`GET /api/games/{id}/turns` where the omniscient view is allowed.

The model seat is a fake with the `LLMSeat` contract (`turn_log`, `on_step`)
that plays like a scripted bot, so the test needs no model."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tossim.agents.seat import ScriptedSeat, SeatTelemetry
from tossim.engine import Command, View
from tossim.server import runner

from .support import (
    Server,
    ServerFactory,
    create_game,
    human_game,
    quiet,
    watch_thinking,
)

SECRET_PROMPT = "SYSTEM PROMPT: you are a seat; never show this"
THINKERS = (1, 2)


class FakeModelSeat(SeatTelemetry):
    """Plays like a scripted bot, and reports each turn's steps as a model seat does."""

    def __init__(self, slot: int, seed: int, gate: asyncio.Event) -> None:
        self.slot = slot
        self.inner = ScriptedSeat(slot, seed)
        self.gate = gate
        self.turn_log: list[dict[str, Any]] = []
        self.on_step: Any = None
        self.steps_reported = 0

    def _step(self, step: dict[str, Any], steps: list[dict[str, Any]]) -> None:
        steps.append(step)
        if self.on_step is not None:
            self.on_step(self.slot, step)
            self.steps_reported += 1

    async def decide(self, obs: View, deadline: float | None = None) -> list[Command]:
        await self.gate.wait()
        steps: list[dict[str, Any]] = []
        self._step({"kind": "thinking", "text": f"Day {obs.day}: who is lying?"}, steps)
        self._step({"kind": "tool", "name": "graveyard", "args": {},
                    "observation": f"{len(obs.roster)} players"}, steps)
        cmds = await self.inner.decide(obs)
        action = type(cmds[0]).__name__ if cmds else "wait"
        self._step({"kind": "action", "text": action}, steps)
        self.turn_log.append({"day": obs.day, "phase": obs.phase, "prompt": SECRET_PROMPT,
                              "output": "<think>...</think>", "steps": steps,
                              "action": action, "tokens": {"prompt": 10, "generated": 5}})
        return cmds


@pytest.fixture
def fake_models(monkeypatch: pytest.MonkeyPatch) -> tuple[asyncio.Event, dict[int, Any]]:
    """Seats 1 and 2 of every game become fake model seats that wait for the gate."""
    gate = asyncio.Event()
    made: dict[int, Any] = {}
    real = runner.make_ai_seat

    def make(spec: dict[str, Any], slot: int, seed: int, **kw: Any) -> Any:
        if slot in THINKERS:
            made[slot] = FakeModelSeat(slot, seed, gate)
            return made[slot]
        return real(spec, slot, seed, **kw)

    monkeypatch.setattr(runner, "make_ai_seat", make)
    return gate, made


async def test_all_ai_game_streams_thinking_to_omniscient_only(
        server: Server, fake_models: tuple[asyncio.Event, dict[int, Any]]) -> None:
    gate, made = fake_models
    game_id = await create_game(server.client, players=7, speed="fast", seed=5)
    seen_omni, seen_public = await watch_thinking(server, game_id, gate)

    thinking = [m for m in seen_omni if m["type"] == "thinking"]
    assert thinking, "the omniscient spectator saw no thinking"
    assert {m["slot"] for m in thinking} == set(THINKERS)
    kinds = {m["step"]["kind"] for m in thinking}
    assert kinds == {"thinking", "tool", "action"}
    tool = next(m for m in thinking if m["step"]["kind"] == "tool")
    assert tool["step"]["name"] == "graveyard" and "players" in tool["step"]["observation"]
    assert all(isinstance(m["day"], int) and m["phase"] for m in thinking)
    assert not [m for m in seen_public if m["type"] == "thinking"]
    assert SECRET_PROMPT not in json.dumps(seen_omni)  # prompts never go over the socket

    # every finished turn is stored, and served without its prompt
    r = await server.client.get(f"/api/games/{game_id}/turns")
    assert r.status_code == 200, r.text
    turns = r.json()["turns"]
    total = sum(len(s.turn_log) for s in made.values())
    assert len(turns) == total > 0
    assert {t["slot"] for t in turns} == set(THINKERS)
    first = [t for t in turns if t["slot"] == 1]
    assert [t["seq"] for t in first] == list(range(1, len(first) + 1))
    assert first[0]["steps"][0]["kind"] == "thinking" and first[0]["action"]
    assert SECRET_PROMPT not in r.text
    only2 = (await server.client.get(f"/api/games/{game_id}/turns?slot=2")).json()["turns"]
    assert only2 and {t["slot"] for t in only2} == {2}
    stored = await server.store.turns(game_id, 1)
    assert stored[0]["prompt"] == SECRET_PROMPT  # kept for replays, not sent


async def test_live_human_game_keeps_thinking_secret(
        server_factory: ServerFactory,
        fake_models: tuple[asyncio.Event, dict[int, Any]]) -> None:
    gate, made = fake_models
    gate.set()
    server = await server_factory(time_scale=0.05)
    game_id, token = await human_game(server, players=7, slot=3)
    async with server.seat_connect(game_id, token) as seat:
        await seat.until(lambda m: m["type"] == "events"
                         and m.get("state", {}).get("phase") == "night", timeout=60)
        await quiet(seat, 0.3)
        assert not [m for m in seat.messages if m["type"] == "thinking"]
    assert sum(s.steps_reported for s in made.values()) > 0  # the seats did think
    r = await server.client.get(f"/api/games/{game_id}/turns")
    assert r.status_code == 403
    assert (await server.store.turns(game_id))  # stored all the same, for the replay
    r = await server.client.get("/api/games/nope/turns")
    assert r.status_code == 404
