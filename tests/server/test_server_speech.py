"""Speech moves in the server (docs/agents.md#speech-moves): a lobby seat
that chooses moves says rendered sentences, and each stored turn keeps the
move behind its line; `speech` is refused where it cannot apply."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tossim.engine import GameConfig
from tossim.engine.replay import rerun

from .support import ServerFactory, create_game, is_finished, wait_game

pytest.importorskip("torch")
pytest.importorskip("outlines_core")

MOVE_HEADS = ("claim ", "report ", "lie ", "accuse ", "defend ", "will vote ", "ask ")


@pytest.mark.slow
async def test_structured_seats_say_sentences_and_store_their_moves(
        server_factory: ServerFactory, tiny_model_dir: Path) -> None:
    # a model folder (not the bundled model) writes free text unless the seat says moves
    server = await server_factory(model=str(tiny_model_dir))
    c = server.client
    seats = [{"slot": 1, "backend": "local", "speech": "moves"}, {"slot": 2, "backend": "local"}]
    game_id = await create_game(c, players=7, speed="fast", seed=5, seats=seats)
    summary = await wait_game(c, game_id, is_finished, timeout=600)
    store = server.app.state.store
    stored = await store.commands(game_id)
    game = rerun(GameConfig(players=7, seed=5), [data for _, _, data in stored])
    assert game.ended and game.result == summary["result"]

    turns = await store.turns(game_id)
    said = [t for t in turns if t["slot"] == 1 and (t.get("action") or {}).get("type")
            in ("chat", "write_will", "write_death_note")]
    assert said, "the structured seats said nothing"
    names = {p.name for p in game.players}
    for t in said:
        move, text = t["move"], t["action"].get("text", "")
        assert move is not None and move["move"], t["action"]
        assert not text.startswith(MOVE_HEADS), text  # a sentence, not the move's syntax
        assert set(re.findall(r"Player \d+", text)) <= names, text
    assert [t for t in turns if t["slot"] == 2]  # the free-text seat keeps no moves
    assert all(t.get("move") is None for t in turns if t["slot"] == 2)
    whispers = [t for t in turns if t["slot"] == 1
                and (t.get("action") or {}).get("type") == "whisper"]
    assert not whispers


async def test_lobby_refuses_speech_where_it_cannot_apply(server_factory: ServerFactory) -> None:
    server = await server_factory()
    c = server.client
    r = await c.post("/api/lobbies", json={"players": 7, "seats": [
        {"slot": 1, "backend": "scripted", "speech": "moves"}]})
    assert r.status_code == 422 and "speech" in r.text
    r = await c.post("/api/lobbies", json={"players": 7, "seats": [
        {"slot": 1, "kind": "human", "speech": "free"}]})
    assert r.status_code == 422 and "speech" in r.text
    r = await c.post("/api/lobbies", json={"players": 7, "seats": [
        {"slot": 1, "backend": "local", "speech": "poetry"}]})
    assert r.status_code == 422


def test_a_seat_on_an_inference_worker_plays_its_speech() -> None:
    """The server sends the seat's speech in the decide frame, and the worker
    builds the seat with it (docs/api.md#inference-workers)."""
    from agents.fake_backend import ScriptedBackend

    from tossim.server.workers import RemoteSeat
    from tossim.worker.client import Worker

    sent = RemoteSeat(None, "g1", 3, 7, {"backend": "local", "speech": "moves"},  # type: ignore[arg-type]
                      {}).spec
    assert sent["speech"] == "moves"
    worker = Worker("http://127.0.0.1:9", "local", ScriptedBackend([]))
    seat = worker.make_seat({"slot": 3, "seed": 7, "game": "g1", "spec": sent}, {})
    assert seat.loop.config.speech == "moves"
    old = {k: v for k, v in sent.items() if k != "speech"}  # a server before speech moves
    assert worker.make_seat({"slot": 3, "seed": 7, "game": "g1", "spec": old},
                            {}).loop.config.speech == "free"
