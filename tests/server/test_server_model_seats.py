"""Model seats in the server: a fast all-model game (the local backend with a
tiny random model) finishes, every command it stored re-runs, its day
summaries are stored and shown in the game summary, and each seat's agent
metrics (turns, tokens, faults, tool calls) are stored with the game."""

from __future__ import annotations

from pathlib import Path

import pytest

from tossim.engine import GameConfig
from tossim.engine.replay import rerun

from .support import ServerFactory, create_game, is_finished, wait_game

pytest.importorskip("torch")
pytest.importorskip("outlines_core")


async def test_model_seats_play_a_fast_game(server_factory: ServerFactory,
                                            tiny_model_dir: Path) -> None:
    server = await server_factory(model=str(tiny_model_dir))
    c = server.client
    seats = [{"slot": s, "backend": "local"} for s in range(1, 8)]
    game_id = await create_game(c, players=7, speed="fast", seed=31, seats=seats)
    summary = await wait_game(c, game_id, is_finished, timeout=600)
    assert summary["result"] is not None
    days = [s["day"] for s in summary["summaries"]]
    assert days and days == sorted(days) and days[0] == 1
    assert all(s["text"].strip() for s in summary["summaries"])

    store = server.app.state.store
    stored = await store.commands(game_id)
    game = rerun(GameConfig(players=7, seed=31), [data for _, _, data in stored])
    assert game.ended and game.result == summary["result"]
    origins = {origin for _, origin, _ in stored}
    assert {f"ai:{s}" for s in range(1, 8)} & origins

    metrics = await store.metrics(game_id)
    assert set(metrics) == set(range(1, 8))
    for slot, m in metrics.items():
        assert m["faults"] == 0, (slot, m)  # the engine took every command
        agent = m["agent"]
        assert agent["turns"] >= 2 and agent["malformed"] == 0 and agent["forced"] == 0
        assert agent["generated_tokens"] > 0 and agent["prompt_tokens"] > 0
        # resumed segments re-use the cached context: a rate, never above 1
        assert agent["requested_tokens"] >= agent["prompt_tokens"]
        assert 0 < agent["cache_hit_rate"] <= 1 and agent["cached_tokens"] > 0
    assert sum(m["agent"]["tool_calls"] for m in metrics.values()) > 0


async def test_lobby_refuses_a_model_path_and_unknown_backends(
        server_factory: ServerFactory) -> None:
    server = await server_factory()
    c = server.client
    r = await c.post("/api/lobbies", json={"players": 7, "seats": [
        {"slot": 1, "backend": "local", "model": "/etc"}]})
    assert r.status_code == 422 and "model" in r.text
    r = await c.post("/api/lobbies", json={"players": 7, "seats": [
        {"slot": 1, "backend": "gpt-9"}]})
    assert r.status_code == 422 and "gpt-9" in r.text


def test_demo_uses_the_bundled_model_when_it_can_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from tossim.server import app as app_module
    from tossim.server import service
    from tossim.server.settings import Settings

    monkeypatch.setattr(service, "unavailable_reason", lambda name, url=None: None)
    lobby = app_module.demo_lobby(Settings(demo_model_seats=15))
    assert lobby.speed == "paced" and lobby.players == 15
    assert [s.backend for s in lobby.seats] == ["local"] * 15
    monkeypatch.setattr(service, "unavailable_reason",
                        lambda name, url=None: "torch is not installed")
    assert {s.backend for s in app_module.demo_lobby(Settings()).seats} == {"scripted"}
    scripted = app_module.demo_lobby(Settings(demo_backend="scripted"))
    assert scripted.players == 15 and {s.backend for s in scripted.seats} == {"scripted"}
    # by default a few model seats play among scripted bots (the bundled model
    # cannot carry a game alone); the lobby fills the rest with scripted seats
    monkeypatch.setattr(service, "unavailable_reason", lambda name, url=None: None)
    assert [s.backend for s in app_module.demo_lobby(Settings()).seats] == ["local"] * 4
    assert service.seat_label("ai", "local") == "model (local)"
    assert service.seat_label("ai", "scripted") == "scripted bot"


def test_the_demos_model_seats_give_way_to_other_games(tiny_model_dir: Path) -> None:
    """The demo's model seats (and its day summaries, written on their
    backend) send background requests, which a shared local backend serves
    only while no lobby's seat is thinking
    (tests/inference/test_llama_backend.py); a lobby's seats do not."""
    from tossim.inference.base import GenerationRequest
    from tossim.server.runner import GameActor
    from tossim.server.settings import Settings

    settings = Settings(model=str(tiny_model_dir))
    seats = [{"slot": 1, "kind": "ai", "backend": "local"}]
    request = GenerationRequest((1, 2, 3), 4)
    marked = {}
    for demo in (True, False):
        actor = GameActor(f"g{demo}", GameConfig(players=7, seed=3),
                          {"demo": demo, "seats": seats}, None, None,  # type: ignore[arg-type]
                          settings)
        backend = actor.ai[1].loop.backend  # type: ignore[attr-defined]
        apply = getattr(backend, "apply", lambda r: r)
        marked[demo] = apply(request).background
    assert marked == {True: True, False: False}
