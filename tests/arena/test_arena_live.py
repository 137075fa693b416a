"""An arena's games are watchable live from a separate `tossim serve` on the
same database and Redis: a spectator there follows a game from its first
events to its end, with no gap and no duplicate, while the arena's process
plays it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from server.support import REDIS_URL, WAIT, ServeProcess, finished, unavailable

from tossim.arena.entries import resolve_entries
from tossim.arena.runner import open_arena, play_arena
from tossim.server.bus import make_bus
from tossim.server.settings import Settings
from tossim.store import Store

pytestmark = pytest.mark.redis


async def test_a_server_on_the_same_db_and_redis_shows_arena_games_live(
        tmp_path: Path) -> None:
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5).ping()
    except Exception as exc:
        unavailable("Redis", f"cannot reach {REDIS_URL}: {exc}")
    db = f"sqlite+aiosqlite:///{tmp_path / 'live.db'}"
    serve = ServeProcess(db, redis=REDIS_URL, resume=False, log=tmp_path / "serve.log")
    try:
        await serve.wait_ready()
        store = await Store.open(db)
        entries = resolve_entries(["a=scripted", "b=scripted"])
        arena = await open_arena(store, "live", entries, games=2, players=15)
        settings = Settings(database_url=db, redis_url=REDIS_URL, resume=False)
        bus = make_bus(REDIS_URL)
        playing = asyncio.create_task(play_arena(store, bus, settings, arena, entries,
                                                 parallel=1))
        first = arena.games[0].game_id
        deadline = asyncio.get_running_loop().time() + WAIT
        while (await serve.client.get(f"/api/games/{first}")).status_code != 200 or \
                (await serve.client.get(f"/api/games/{first}")).json()["status"] != "live":
            assert asyncio.get_running_loop().time() < deadline, serve.output()[-3000:]
            await asyncio.sleep(0.02)
        async with serve.ws_connect(f"/ws/games/{first}/watch?viewer=omniscient") as ws:
            await ws.until(finished)
            events = ws.events()
        progress = await playing
        assert (progress.done, progress.errors) == (2, 0)
        stored = await store.events(first)
        # the spectator got every event of the game, once, in order
        assert [e["v"] for e in events] == list(range(1, len(stored) + 1))
        live = [m for m in ws.messages if m["type"] == "events" and m["events"]]
        assert len(live) > 1  # pushed as the game went, not in one piece at the end
        listed = (await serve.client.get("/api/arenas")).json()
        assert listed[0]["id"] == "live" and listed[0]["finished"] == 2
        await bus.close()
        await store.close()
    finally:
        await serve.stop()
