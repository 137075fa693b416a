"""Day summaries never hold a game up (docs/architecture.md, "Day summaries").

A standard game with a human seat and two model seats (`LLMSeat` on a fake
backend whose day summary waits for an asyncio.Event): night falls and ends
while the model's summary has not come, a command the human sends meanwhile
is applied once, and viewers get the extractive summary; when the model's
summary comes within the night's deadline, it replaces the extractive one,
once."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from tossim.agents.llm_seat import seat_from_spec
from tossim.agents.memory import SeatMemory
from tossim.agents.summarize import fallback_summary
from tossim.engine import GameConfig, new_game, view
from tossim.engine.replay import rerun
from tossim.engine.view import PUBLIC_VIEWER
from tossim.inference.base import GenerationRequest, GenerationResult
from tossim.server.bus import command_channel
from tossim.server.day_summaries import model_summary

from .model_fakes import MODEL_SUMMARY, GatedBackend, seat_models
from .support import WAIT, Server, ServerFactory, human_game, wait_game

MODELS = {2, 3}
WILL = "Day 1: quiet. I trust the Doctor claim."


async def extractive_day1(server: Server, game_id: str) -> str:
    """Day 1's extractive summary, from the stored log."""
    row = await server.store.get_game(game_id)
    game = rerun(GameConfig.from_dict(row.config),
                 [c for _s, _o, c in await server.store.commands(game_id)])
    memory = SeatMemory(0)
    memory.update(view(game, PUBLIC_VIEWER))
    return fallback_summary(memory, 1)


async def until_stored(server: Server, game_id: str, kind: str = "will") -> None:
    """Until a command of the human's of this type is in the stored log."""
    deadline = time.monotonic() + WAIT
    while not any(o == "seat:1" and d["type"] == kind
                  for _s, o, d in await server.store.commands(game_id)):
        assert time.monotonic() < deadline, f"the human's {kind} was never applied"
        await asyncio.sleep(0.02)


def in_phase(day: int, phase: str) -> Any:
    return lambda s: s["day"] == day and s["phase"] == phase


async def test_nightfall_does_not_wait_for_the_model_summary(
        server_factory: ServerFactory, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="tossim.server.day_summaries")
    backend = GatedBackend()  # its summary never comes: the gate stays shut
    seat_models(monkeypatch, MODELS, backend)
    server = await server_factory(time_scale=0.2)
    game_id, token = await human_game(server)
    c = server.client
    async with server.seat_connect(game_id, token) as ws:
        await ws.recv_type("hello")
        await wait_game(c, game_id, in_phase(1, "night"))
        await backend.summary_asked.wait()
        # the human writes a will while the model is still summarising: the
        # game takes it at once (it did not wait for the model)
        await ws.send({"type": "command", "command": {"type": "will", "text": WILL}})
        await until_stored(server, game_id)
        assert not backend.summary_gate.is_set()
        # the night ends on its own; the model's summary never came
        await wait_game(c, game_id, lambda s: s["day"] == 2)
        assert [m for m in ws.messages if m["type"] == "error"] == []
    expected = await extractive_day1(server, game_id)
    got = (await c.get(f"/api/games/{game_id}")).json()["summaries"]
    assert got == [{"day": 1, "text": expected}]
    assert await server.store.summaries(game_id) == [(1, expected)]
    commands = await server.store.commands(game_id)
    assert [d for _s, o, d in commands if o == "seat:1" and d["type"] == "will"] == [
        {"type": "will", "actor": 1, "text": WILL}]  # applied once
    assert "did not come within" in caplog.text

async def test_a_model_summary_in_time_replaces_the_extractive_one(
        server_factory: ServerFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = GatedBackend()
    seat_models(monkeypatch, MODELS, backend)
    server = await server_factory(time_scale=0.2, summary_share=1.0)
    game_id, _token = await human_game(server)
    c = server.client
    async with server.ws_connect(f"/ws/games/{game_id}/watch?viewer=public") as watcher:
        await watcher.recv_type("hello")
        await wait_game(c, game_id, in_phase(1, "night"))
        await backend.summary_asked.wait()
        expected = await extractive_day1(server, game_id)
        # nightfall published the extractive summary before the model answered,
        # and a watching page is told so (it fetches it; no polling)
        first = (await c.get(f"/api/games/{game_id}")).json()["summaries"]
        assert first == [{"day": 1, "text": expected}]
        assert (await watcher.recv_type("summary"))["day"] == 1
        backend.summary_gate.set()
        # the model's summary replaces it: the page is told again
        assert (await watcher.recv_type("summary"))["day"] == 1
    got = await wait_game(c, game_id, lambda s: s["summaries"] != first, poll=0.02)
    assert got["summaries"] == [{"day": 1, "text": MODEL_SUMMARY}]
    # stored once (a replay or a resumed game sees this one) and never asked twice
    assert await server.store.summaries(game_id) == [(1, MODEL_SUMMARY)]
    actor = server.app.state.actors.actors[game_id]
    assert actor.summaries[1] == MODEL_SUMMARY  # what the model seats read from now on
    assert backend.summaries_asked == 1


@pytest.mark.parametrize("written", ["", "   ", "The town slept. Nobody spoke. The town slept.",
                                     "Day 1 was quiet! day 1 was QUIET!"])
async def test_a_degenerate_model_summary_keeps_the_extractive_one(written: str) -> None:
    backend = GatedBackend(summary=written)
    backend.summary_gate.set()
    seat = seat_from_spec({}, 2, 7, backend, game_id="g")
    game = new_game(GameConfig(players=7, seed=3))
    assert await model_summary(seat, "g", view(game, PUBLIC_VIEWER), 1, 5, 10.0) is None
    assert backend.summaries_asked == 1


async def test_a_summary_cut_at_its_deadline_is_late() -> None:
    class Late(GatedBackend):
        async def _answer(self, r: GenerationRequest) -> GenerationResult:
            assert r.deadline is not None  # the backend is told when to stop
            return GenerationResult((ord("T"),) * 20, "The town talked abou", "deadline",
                                    len(r.prompt_ids))

    seat = seat_from_spec({}, 2, 7, Late(), game_id="g")
    game = new_game(GameConfig(players=7, seed=3))
    assert await model_summary(seat, "g", view(game, PUBLIC_VIEWER), 1, 5, 10.0) is None


async def test_a_command_the_game_took_up_too_late_is_not_applied(server: Server) -> None:
    """The socket tells a player "the game did not answer ... not applied"
    when the game does not take a command up in time; the game then drops
    it, so the player who sends it again has it applied once."""
    game_id, token = await human_game(server)
    late = {"type": "will", "text": "Sent while the game was busy."}
    await server.app.state.bus.publish(command_channel(game_id), {
        "type": "seat", "slot": 1, "command": late, "reply_to": "tossim:reply:gone",
        "expires": time.time() - 1.0})
    async with server.seat_connect(game_id, token) as ws:
        await ws.recv_type("hello")
        await ws.send({"type": "command", "command": late})
        # a chat after it: once the chat is in, the game has taken up both wills
        await ws.send({"type": "command", "command": {"type": "chat", "text": "Hello all."}})
        await until_stored(server, game_id, "chat")
        assert [m for m in ws.messages if m["type"] == "error"] == []
    commands = await server.store.commands(game_id)
    assert [d for _s, o, d in commands if o == "seat:1" and d["type"] == "will"] == [
        {**late, "actor": 1}]


def test_only_free_text_models_write_the_summaries_everyone_reads() -> None:
    """A structured-move seat (the bundled small model) writes no summary:
    its games keep the extractive one (`writes_summaries`)."""
    from tossim.server.day_summaries import writes_summaries

    backend = GatedBackend()
    small = seat_from_spec({"speech": "moves"}, 2, 7, backend)
    capable = seat_from_spec({"speech": "free"}, 3, 7, backend)
    assert not writes_summaries(small) and writes_summaries(capable)
    assert not writes_summaries(object())  # a scripted bot writes none
