"""Two real `tossim serve` processes sharing one PostgreSQL database and Redis:
A runs the games, B (started with --no-resume) only serves them. A spectator
on B follows a game run by A live; a human seat connected to B plays a game
run by A (its commands go to A's actor over the bus)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tossim.engine import PUBLIC_VIEWER, GameConfig
from tossim.engine.replay import rerun
from tossim.engine.view import project_event, visible_events
from tossim.store import Store

from .support import ServeProcess, create_game, finished, is_finished, owner, wait_game

pytestmark = [pytest.mark.redis, pytest.mark.postgres]

ENV = {"TOSSIM_PACE": "0.02",  # paced games: ~20 ms between AI decisions
       "TOSSIM_TIME_SCALE": "4"}  # standard games: Day 1 lasts a minute


async def two_servers(serve_process: Callable[..., ServeProcess], db: str,
                      redis: str) -> tuple[ServeProcess, ServeProcess]:
    a = serve_process(db, redis=redis, env=ENV)
    await a.wait_ready()
    b = serve_process(db, redis=redis, resume=False, env=ENV)
    await b.wait_ready()
    for p in (a, b):
        health = (await p.client.get("/api/health")).json()
        assert health["bus"] == "redis" and health["db"] == "ok", health
    return a, b


async def test_spectator_on_another_process_follows_the_game(
        serve_process: Callable[..., ServeProcess], pg_url: str, redis_url: str) -> None:
    a, b = await two_servers(serve_process, pg_url, redis_url)
    game_id = await create_game(a.client, players=15, speed="paced", seed=8)
    assert (await a.client.get("/api/health")).json()["live_games"] == 1
    async with b.ws_connect(f"/ws/games/{game_id}/watch?viewer=public") as ws:
        hello = await ws.recv()
        assert hello["type"] == "hello" and hello["game_id"] == game_id
        await ws.until(finished, timeout=180)
    assert (await b.client.get("/api/health")).json()["live_games"] == 0  # B runs nothing
    await wait_game(a.client, game_id, is_finished, timeout=60)
    pushes = [m for m in ws.messages if m["type"] == "events"]
    assert len(pushes) > 10, "B pushed the game as it went, not only at the end"
    assert pushes[0]["version"] < pushes[-1]["version"]

    got = ws.events()
    versions = [e["v"] for e in got]
    assert versions == sorted(set(versions))
    replay_a = (await a.client.get(f"/api/games/{game_id}/replay")).json()
    replay_b = (await b.client.get(f"/api/games/{game_id}/replay")).json()
    assert got == replay_a["events"] == replay_b["events"]
    omni = (await a.client.get(f"/api/games/{game_id}/replay",
                               params={"viewer": "omniscient"})).json()
    game = rerun(GameConfig.from_dict(omni["config"]), omni["commands"])
    # numbered in the public viewer's own sequence
    assert got == json.loads(json.dumps([{**project_event(e, PUBLIC_VIEWER), "v": n}
                                         for n, e in enumerate(
                                             visible_events(game, PUBLIC_VIEWER), 1)]))
    assert pushes[-1]["state"]["result"] == game.result


async def test_seat_on_another_process_plays(
        serve_process: Callable[..., ServeProcess], pg_url: str, redis_url: str) -> None:
    a, b = await two_servers(serve_process, pg_url, redis_url)
    game_id = await create_game(a.client, start=False, players=7,
                                seats=[{"slot": 4, "kind": "human"}])
    r = await b.client.post(f"/api/lobbies/{game_id}/join", json={"name": "Remote"})
    assert r.status_code == 200, r.text
    token = r.json()["token"]
    r = await a.client.post(f"/api/lobbies/{game_id}/start", headers=owner(game_id))
    assert r.status_code == 200, r.text
    assert (await a.client.get("/api/health")).json()["live_games"] == 1

    async with b.seat_connect(game_id, token) as ws:
        assert (await ws.recv())["type"] == "hello"
        state: dict[str, Any] = (await ws.recv_type("events"))["state"]
        while state["deadline"] is None:  # B's mirror asked A's actor for it
            state = (await ws.recv_type("events"))["state"]
        assert state["phase"] == "day1" and state["you"]["slot"] == 4
        text = "hello from process B <i>not html</i>"
        await ws.send({"type": "command", "command": {"type": "chat", "text": text}})

        def mine(m: dict[str, Any]) -> bool:
            return m["type"] == "events" and any(
                e["key"] == "chat.public" and e["data"] == {"author": 4, "text": text}
                for e in m["events"])
        await ws.until(mine)
        # an illegal command through B: A's actor answers with the fault
        await ws.send({"type": "command", "command": {"type": "whisper", "target": 4,
                                                      "text": "me"}})
        err = await ws.recv_type("error")
        assert err["fault"] == "premise" and 4 not in err["candidates"]
        await ws.send({"type": "ping"})
        await ws.recv_type("pong")

    replay = (await a.client.get(f"/api/games/{game_id}/replay")).json()
    chats = [e for e in replay["events"] if e["key"] == "chat.public"
             and e["data"]["author"] == 4]
    assert [e["data"]["text"] for e in chats] == [text]
    store = await Store.open(pg_url, migrate=False)
    try:
        seat_commands = [(o, d) for _s, o, d in await store.commands(game_id)
                         if o.startswith("seat:")]
    finally:
        await store.close()
    assert seat_commands == [("seat:4", {"type": "chat", "actor": 4, "text": text,
                                         "channel": None})]
