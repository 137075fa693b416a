"""One game, three places: the same config, seed and seats (scripted bots and
model seats of one catalogue entry) give the same omniscient event log
played headless (`tossim play`'s `play_entry_match`), through the server at
`fast` speed (a lobby of AI seats), and in an arena. All three play through
the one match driver (docs/agents.md#the-match-driver). A timed game (the
server's `standard` speed, in real time) on a clock that moves only when
nothing else can happen is deterministic too, and plays the same headless
and through the server.

The model seats run on a model-free backend that writes what each
request's grammar allows, seeded by the request (tests/agents/grammar_backend.py),
so the seats go through the real tool loop, prompts and parsers."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest

from tossim.agents.driver import Clock, RealTime, Timer
from tossim.agents.entry_match import play_entry_match
from tossim.arena.entries import resolve_entries
from tossim.arena.runner import open_arena, play_arena
from tossim.engine import Game, GameConfig
from tossim.engine.modes import DURATIONS
from tossim.inference import registry
from tossim.inference.catalogue import cached_catalogue
from tossim.server import service
from tossim.server.bus import MemoryBus
from tossim.server.settings import Settings
from tossim.store import Store

from .support import ServerFactory, create_game, is_finished, wait_game

pytest.importorskip("outlines_core")

ENTRY = "smollm2"  # the built-in entry of the local backend, played by the fake here


def _lines(events: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(e, sort_keys=True, ensure_ascii=False) for e in events]


@pytest.fixture
def walker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local backend is the grammar walk (in every place seats are built)."""
    from agents.grammar_backend import GrammarWalkBackend  # tests/ is on sys.path

    backend = GrammarWalkBackend()
    monkeypatch.setattr(registry, "shared_backend", lambda *a, **k: backend)
    monkeypatch.setattr(registry, "unavailable_reason", lambda *a, **k: None)
    monkeypatch.setattr(service, "unavailable_reason", lambda *a, **k: None)


async def test_headless_server_and_arena_play_the_same_game(
        server_factory: ServerFactory, walker: None, tmp_path: Path) -> None:
    # the arena plans the game: its seed and which seats the model plays
    db = f"sqlite+aiosqlite:///{tmp_path / 'arena.db'}"
    entries = resolve_entries(["bots=scripted", f"model={ENTRY}"])
    store = await Store.open(db)
    try:
        arena = await open_arena(store, "same", entries, games=1, players=7, seed=21)
        progress = await play_arena(store, MemoryBus(), Settings(database_url=db, resume=False),
                                    arena, entries, parallel=1)
        assert (progress.done, progress.errors) == (1, 0)
        planned = arena.games[0]
        row = await store.get_game(planned.game_id)
        assert row is not None and row.status == "finished"
        config = GameConfig.from_dict(row.config)
        in_arena = await store.events(planned.game_id)
    finally:
        await store.close()
    model_slots = [slot for slot, label in enumerate(planned.seats, start=1)
                   if label == "model"]
    assert model_slots and len(model_slots) < config.players

    # headless, as `tossim play --model-entry`
    entry = cached_catalogue(None).get(ENTRY)
    match = await play_entry_match(config, entry, model_seats=model_slots)
    assert match.result.finished
    headless = [e.to_dict() for e in match.result.game.events]
    assert sum(s.get("agent", {}).get("turns", 0)
               for s in match.metrics()["seats"].values()) > 0  # the model seats played

    # the server, fast: a lobby of the same seats
    server = await server_factory()
    seats = [{"slot": s, "kind": "ai", **({"model": ENTRY} if s in model_slots
                                            else {"backend": "scripted"})}
             for s in range(1, config.players + 1)]
    game_id = await create_game(server.client, mode="classic", players=config.players,
                                seed=config.seed, speed="fast", seats=seats)
    await wait_game(server.client, game_id, is_finished, timeout=300)
    served = await server.store.events(game_id)
    stored = await server.store.get_game(game_id)
    assert GameConfig.from_dict(stored.config) == config

    assert _lines(served) == _lines(headless)
    assert _lines(in_arena) == _lines(headless)


class SteppedTimer(Timer):
    """Real time that moves only when nothing else can happen: every ask in
    flight has answered and every answer was taken. Answers that came in
    together are handed out in seat order (a backend batches at its own
    pace), so a timed game is a function of its config and seats."""

    def __init__(self) -> None:
        self.t = time.time()
        self.waiting: list[object] = []

    def now(self) -> float:
        return self.t

    async def next(self, inbox: asyncio.Queue[object], until: float,
                   busy: Collection[asyncio.Future[Any]]) -> object | None:
        if busy:
            await asyncio.wait(busy)
        while not inbox.empty():
            self.waiting.append(inbox.get_nowait())
        if self.waiting:
            self.waiting.sort(key=lambda item: getattr(item, "slot", 0))
            return self.waiting.pop(0)
        self.t = max(self.t, until)
        return None


async def test_a_timed_game_plays_the_same_headless_and_served(
        server_factory: ServerFactory, walker: None) -> None:
    scale = 0.5
    server = await server_factory(time_scale=scale)
    server.app.state.actors.timer = SteppedTimer()
    model_slots = [2, 6]
    seats = [{"slot": s, "kind": "ai", **({"model": ENTRY} if s in model_slots
                                            else {"backend": "scripted"})}
             for s in range(1, 8)]
    game_id = await create_game(server.client, mode="classic", players=7, seed=5,
                                speed="standard", seats=seats)
    await wait_game(server.client, game_id, is_finished, timeout=300)
    served = await server.store.events(game_id)
    row = await server.store.get_game(game_id)
    config = GameConfig.from_dict(row.config)

    def phase_s(game: Game) -> float:  # the server's phase lengths
        return DURATIONS[game.flags.durations][game.phase.value] * scale

    entry = cached_catalogue(None).get(ENTRY)
    clock = Clock(real_time=RealTime(phase_s=phase_s, timer=SteppedTimer()))
    match = await play_entry_match(config, entry, model_seats=model_slots, clock=clock)
    assert match.result.finished
    assert sum(s.get("agent", {}).get("turns", 0)
               for s in match.metrics()["seats"].values()) > 0  # the model seats played
    headless = [e.to_dict() for e in match.result.game.events]
    assert _lines(served) == _lines(headless)
