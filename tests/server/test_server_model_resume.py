"""A model seat resumed after a restart is the same player
(docs/architecture.md, "Resume").

A standard game with a human seat and a model seat (`LLMSeat` on a fake
backend that looks at the graveyard, writes a note and claims Doctor): the
game's actor is stopped once the seat has spoken on Day 1 and started again
from the store, as a restarted server does. Neither the seat nor a scripted
seat that had played is asked again on Day 1; the seat's next turn (Night 1)
goes on counting (no sampling seed repeats), and it still has its note, its
tool result and its claim."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import pytest

from tossim.agents.resume import history
from tossim.engine import GameConfig, Viewer, apply, command_from_dict, new_game, view
from tossim.worker.client import Worker

from .model_fakes import NOTE, SPEECH, GatedBackend, seat_models
from .support import WAIT, Server, ServerFactory, create_game, deals, owner

SEAT = 2
# roles with a target on Night 1, so the seat's next turn is that night
NIGHT_ONE = {"sheriff", "investigator", "doctor", "lookout", "escort"}


async def until(check: Any, what: str) -> Any:
    """Poll the store until `check()` gives something true."""
    deadline = time.monotonic() + WAIT
    while True:
        got = await check()
        if got:
            return got
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


async def model_game(server: Server) -> str:
    """A started standard game with a joined human in seat 1 and the model
    seat dealt a role that acts on Night 1 (the deal is secret: the test reads
    the seed from the store)."""
    c = server.client
    for _ in range(200):
        game_id = await create_game(c, start=False, players=7,
                                    seats=[{"slot": 1, "kind": "human"}])
        row = await server.store.get_game(game_id)
        if deals(7, SEAT, NIGHT_ONE, row.config["seed"]):
            break
    else:
        raise AssertionError("no deal gave the model seat a Night 1 role")
    r = await c.post(f"/api/lobbies/{game_id}/join", json={"name": "Alice", "slot": 1})
    assert r.status_code == 200, r.text
    r = await c.post(f"/api/lobbies/{game_id}/start", headers=owner(game_id))
    assert r.status_code == 200, r.text
    return game_id


async def day1_moves(server: Server, game_id: str) -> Counter[str]:
    """How many commands each AI seat has in the log for Day 1's phase."""
    row = await server.store.get_game(game_id)
    game = new_game(GameConfig.from_dict(row.config))
    first = game.phase_seq
    out: Counter[str] = Counter()
    for _s, origin, data in await server.store.commands(game_id):
        if origin.startswith("ai:") and game.phase_seq == first:
            out[origin] += 1
        apply(game, command_from_dict(data))
    return out


async def seat_turns(server: Server, game_id: str) -> list[dict[str, Any]]:
    return await server.store.turns(game_id, SEAT)


async def test_a_resumed_model_seat_is_the_same_player(
        server_factory: ServerFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = GatedBackend()
    backend.summary_gate.set()
    made = seat_models(monkeypatch, {SEAT}, backend)
    server = await server_factory(time_scale=0.4)
    game_id = await model_game(server)
    store, hub = server.store, server.app.state.actors
    key = f"{game_id}:{SEAT}"

    async def spoke() -> bool:
        return any(o == f"ai:{SEAT}" and d["type"] == "chat"
                   for _s, o, d in await store.commands(game_id))

    # Day 1: the seat's turn is stored and its claim is in the log
    await until(spoke, "the model seat never spoke on Day 1")
    assert [t["phase"] for t in await seat_turns(server, game_id)] == ["day1"]
    # the server stops mid-day and takes the game up again from the store
    await hub.actors[game_id].stop()
    before = await day1_moves(server, game_id)
    seeds_before = list(backend.seeds[key])
    resumed = await hub.start_game(game_id, await store.commands(game_id))
    assert resumed.game.phase.value == "day1"
    seat = made[SEAT][-1]
    assert len(made[SEAT]) == 2  # a new seat object, rebuilt from the store
    assert seat.metrics.turns == 1
    assert [n.text for n in seat.memory.notes] == [NOTE]
    assert [t.tool for t in seat.memory.tool_log] == ["graveyard"]

    async def night_turn() -> list[dict[str, Any]]:
        turns = await seat_turns(server, game_id)
        return turns if any(t["phase"] == "night" for t in turns) else []

    turns = await until(night_turn, "the model seat never played Night 1")
    # no AI seat, scripted or model, that had played Day 1 was asked again in it
    after = await day1_moves(server, game_id)
    assert {o: after[o] for o in before} == before
    # asked once on Day 1 (not again after the restart), then at night
    assert [(t["seq"], t["phase"]) for t in turns] == [(1, "day1"), (2, "night")]
    assert seat.metrics.turns == 2
    # its turn counter went on: no request after the restart reused a seed
    after = backend.seeds[key][len(seeds_before):]
    assert after and not set(after) & set(seeds_before)
    # its claim, its tool result and its notes are all still its own
    night = turns[1]
    assert SPEECH in night["prompt"]
    assert "graveyard(" in night["prompt"]
    assert [n.text for n in seat.memory.notes] == [NOTE, NOTE]
    said = [e["data"].get("text") for e in await store.events(game_id)
            if e["key"] == "chat.public" and e["data"].get("author") == SEAT
            and e["day"] == 1]
    assert said == [SPEECH]  # said once, not repeated because of the restart


async def test_a_worker_that_takes_a_seat_over_plays_the_same_player() -> None:
    """A seat a worker plays: the server sends the seat's turn records with
    a `fresh` decide (after a restart, or when its worker left), and the new
    worker's seat goes on from them."""
    backend = GatedBackend()
    game = new_game(GameConfig(players=7, seed=3))
    message = {"type": "decide", "game": "g1", "slot": SEAT, "seed": 7,
               "spec": {"protocol": "xml"}, "fresh": True,
               "view": view(game, Viewer.player(SEAT)).to_dict(), "summaries": {}}
    first = await Worker("http://127.0.0.1:9", "local", backend).decide(message)
    seeds_before = list(backend.seeds[f"g1:{SEAT}"])
    other = Worker("http://127.0.0.1:9", "local", backend)
    await other.decide({**message, "history": history(first["records"])})
    seat = other.seats[("g1", SEAT)]
    assert seat.metrics.turns == 2
    assert [n.text for n in seat.memory.notes] == [NOTE, NOTE]
    assert [t.tool for t in seat.memory.tool_log] == ["graveyard", "graveyard"]
    after = backend.seeds[f"g1:{SEAT}"][len(seeds_before):]
    assert after and not set(after) & set(seeds_before)
