"""A server open to strangers (issue 14): fair deals, secrets kept out of URLs
and logs, limits per seat and per client, names that cannot impersonate,
clean errors for odd input."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed

from tossim.engine import GameConfig, new_game
from tossim.replay import rerun
from tossim.server.service import fair_seed
from tossim.server.settings import Settings

from .support import ServeProcess, ServerFactory, human_game, is_finished, wait_game


def deal(players: int, seed: int) -> list[str]:
    return [p.role for p in new_game(GameConfig(players=players, seed=seed)).players]


async def test_fair_deal_creator_seed_does_not_give_the_deal(
        server_factory: ServerFactory) -> None:
    """A lobby with a human seat asks for seed 5: the deal comes from the
    server's secret, the seed stays hidden while the game is live, and is shown
    (with an exact replay) once it is over."""
    server = await server_factory(time_scale=0.01, deal_secret="unit-test-secret")
    c = server.client
    game_id, _token = await human_game(server, seed=5)
    row = await server.store.get_game(game_id)
    seed = row.config["seed"]
    assert seed != 5
    assert seed == fair_seed(b"unit-test-secret", game_id, 5)
    # the same creator seed in another lobby gives another deal
    other, _ = await human_game(server, seed=5, name="Bob")
    assert (await server.store.get_game(other)).config["seed"] != seed

    # live: no seed anywhere public
    for path in (f"/api/games/{game_id}", f"/api/lobbies/{game_id}",
                 f"/api/games/{game_id}/replay"):
        r = await c.get(path)
        assert r.status_code == 200
        assert str(seed) not in r.text
    assert (await c.get(f"/api/games/{game_id}/replay",
                        params={"viewer": "omniscient"})).status_code == 403

    await wait_game(c, game_id, is_finished)
    rp = (await c.get(f"/api/games/{game_id}/replay", params={"viewer": "omniscient"})).json()
    assert rp["seed"] == seed
    game = rerun(GameConfig.from_dict(rp["config"]), rp["commands"])
    assert [p.role for p in game.players] == deal(7, seed)
    assert len(game.events) == len(await server.store.events(game_id))  # replays stay exact


async def test_all_ai_games_keep_the_creator_seed(server_factory: ServerFactory) -> None:
    server = await server_factory()
    r = await server.client.post("/api/lobbies", json={"players": 7, "seed": 5})
    assert (await server.store.get_game(r.json()["id"])).config["seed"] == 5


def test_server_secret_generated_once_and_private(tmp_path: Path) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"
    first = Settings(database_url=db).server_secret()
    path = tmp_path / "tossim-server-secret"
    assert path.exists() and os.stat(path).st_mode & 0o777 == 0o600
    assert Settings(database_url=db).server_secret() == first and len(first) >= 32
    assert "zz" not in repr(Settings(database_url=db, deal_secret="zz"))


async def test_tokens_never_reach_the_log(
        serve_process: Callable[..., ServeProcess], tmp_path: Path) -> None:
    """`tossim serve`: seats and a worker connect (the right way, and with a
    token in the URL, which is refused); the log has no token and no secret."""
    worker_token, secret = "wt-" + "k" * 30, "deal-" + "s" * 30
    proc = serve_process(f"sqlite+aiosqlite:///{tmp_path / 'serve.db'}",
                         env={"TOSSIM_INFERENCE": "workers",
                              "TOSSIM_WORKER_TOKEN": worker_token,
                              "TOSSIM_DEAL_SECRET": secret})
    await proc.wait_ready()
    c = proc.client
    r = await c.post("/api/lobbies", json={"players": 7, "seats": [
        {"slot": 1, "kind": "human"}, {"slot": 2, "kind": "human"}]})
    game_id = r.json()["id"]
    tokens = []
    for slot, name in ((1, "Ann"), (2, "Bea")):
        r = await c.post(f"/api/lobbies/{game_id}/join", json={"name": name, "slot": slot})
        tokens.append(r.json()["token"])
    assert (await c.post(f"/api/lobbies/{game_id}/start")).status_code == 200
    for token in tokens:
        async with proc.seat_connect(game_id, token) as ws:
            assert (await ws.recv())["type"] == "hello"
        async with proc.ws_connect(f"/ws/games/{game_id}?token={token}&since=0") as ws:
            with pytest.raises(ConnectionClosed) as closed:
                await ws.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4400
            assert "first message" in closed.value.rcvd.reason
    hello = {"type": "hello", "backends": ["local"], "name": "w", "token": worker_token}
    async with proc.ws_connect("/ws/workers") as ws:
        await ws.send(hello)
        assert (await ws.recv())["type"] == "welcome"
    async with proc.ws_connect(f"/ws/workers?token={worker_token}") as ws:
        with pytest.raises(ConnectionClosed) as closed:
            await ws.send(hello)
            await ws.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4400
    await proc.stop()
    log = proc.output()
    assert f"WebSocket /ws/games/{game_id}" in log and "/ws/workers" in log  # lines logged
    assert "token=[redacted]" in log
    for token in (*tokens, worker_token, secret):
        assert token not in log
