"""Kill -9 and restart: a paced all-AI game is interrupted mid-game by killing
its `tossim serve` process; a new process on the same database resumes it
(re-simulating it from the stored log) and plays it to the end. The resumed
game's full event log equals an uninterrupted run of the same game by the
server code, and the headless match driver's (`play_match`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tossim.agents.match import play_match
from tossim.engine import OMNISCIENT_VIEWER, GameConfig
from tossim.engine.replay import event_lines, rerun
from tossim.engine.view import project_event
from tossim.server.app import create_app
from tossim.server.settings import Settings
from tossim.store import Store

from .support import WAIT, ServeProcess, create_game, is_finished, wait_game

SEED = 31
LOBBY = {"players": 15, "speed": "paced", "seed": SEED}
ENV = {"TOSSIM_PACE": "0.02",
       # the killed process's lease runs out 2 s after its last renewal; then
       # the new process takes the game over
       "TOSSIM_LEASE_S": "2"}


async def uninterrupted(db: str) -> dict[str, Any]:
    """The same game played start to end by the server's actor, in this process
    (no pause between decisions: the pace only sleeps)."""
    app = create_app(Settings(database_url=db, pace=0.0, resume=False))
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://testserver",
            timeout=WAIT) as c:
        game_id = await create_game(c, **LOBBY)
        await wait_game(c, game_id, is_finished, timeout=120)
        r = await c.get(f"/api/games/{game_id}/replay", params={"viewer": "omniscient"})
        body: dict[str, Any] = r.json()
        return body


async def kill_and_resume(serve_process: Callable[..., ServeProcess], db: str,
                          tmp_path: Path, other_db: str) -> None:
    first = serve_process(db, env=ENV)
    await first.wait_ready()
    game_id = await create_game(first.client, **LOBBY)
    summary = await wait_game(first.client, game_id,
                              lambda s: s["version"] > 100 or is_finished(s),
                              timeout=120, poll=0.02)
    assert summary["status"] == "live", "the game ended before it could be interrupted"
    first.kill()

    store = await Store.open(db, migrate=False)
    try:
        row = await store.get_game(game_id)
        assert row is not None and row.status == "live"
        killed_at = len(await store.commands(game_id))
        assert killed_at > 0
    finally:
        await store.close()

    second = serve_process(db, env=ENV)
    await second.wait_ready()
    final = await wait_game(second.client, game_id, is_finished, timeout=180)
    assert final["version"] > summary["version"]
    resumed = (await second.client.get(f"/api/games/{game_id}/replay",
                                       params={"viewer": "omniscient"})).json()
    assert "resumed 1 live game" in second.output()
    assert "diverged" not in second.output()

    # the stored log has no hole and no repeat across the restart
    store = await Store.open(db, migrate=False)
    try:
        commands = await store.commands(game_id)
        stored_events = await store.events(game_id)
        metrics = await store.metrics(game_id)
    finally:
        await store.close()
    assert [s for s, _o, _d in commands] == list(range(1, len(commands) + 1))
    assert len(commands) > killed_at
    assert [d for _s, _o, d in commands] == resumed["commands"]
    assert sorted(metrics) == list(range(1, 16))
    config = GameConfig.from_dict(resumed["config"])
    game = rerun(config, resumed["commands"])
    assert game.ended and final["result"] == game.result
    assert final["winners"] == list(game.winners)
    lines = event_lines(game)
    first_v = stored_events[0]["v"]
    assert lines[first_v - 1:] == [json.dumps(e, sort_keys=True, ensure_ascii=False)
                                   for e in stored_events]

    # equal to an uninterrupted run by the same server code ...
    straight = await uninterrupted(other_db)
    assert straight["config"] == resumed["config"]
    assert straight["commands"] == resumed["commands"]
    assert straight["events"] == resumed["events"]
    # ... and to the headless match driver with the same bots and seat order
    match = play_match(config).game
    assert match.ended
    assert event_lines(match) == lines
    assert json.loads(json.dumps([project_event(e, OMNISCIENT_VIEWER)
                                  for e in match.events])) == resumed["events"]


async def test_kill_and_restart_sqlite(serve_process: Callable[..., ServeProcess],
                                       tmp_path: Path) -> None:
    await kill_and_resume(serve_process, f"sqlite+aiosqlite:///{tmp_path / 'game.db'}",
                          tmp_path, f"sqlite+aiosqlite:///{tmp_path / 'straight.db'}")


@pytest.mark.postgres
async def test_kill_and_restart_postgres(serve_process: Callable[..., ServeProcess],
                                         pg_url: str, tmp_path: Path) -> None:
    await kill_and_resume(serve_process, pg_url, tmp_path,
                          f"sqlite+aiosqlite:///{tmp_path / 'straight.db'}")
