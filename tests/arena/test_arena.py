"""An arena played in-process through the server's actors: three entries
(two labels on the scripted bots and the local backend with a tiny random
model), every planned game stored and finished, the report's figures, the
files it writes, and the HTTP routes the leaderboard page reads."""

from __future__ import annotations

import csv
import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from tossim.analysis.arena_report import arena_report, wilson, write_report
from tossim.arena.entries import ArenaEntry, resolve_entries
from tossim.arena.runner import game_limit, open_arena, play_arena
from tossim.engine import GameConfig
from tossim.engine.replay import rerun
from tossim.server import service
from tossim.server.app import create_app
from tossim.server.bus import MemoryBus
from tossim.server.settings import Settings
from tossim.store import Store


async def _play(db: str, entries: list[ArenaEntry], games: int, players: int,
                settings: Settings, arena_id: str = "t",
                seen: list[tuple[int, int]] | None = None) -> tuple[Any, Any]:
    store = await Store.open(db)
    try:
        arena = await open_arena(store, arena_id, entries, games=games, players=players,
                                 seed=11)
        seen = seen if seen is not None else []
        progress = await play_arena(store, MemoryBus(), settings, arena, entries, parallel=2,
                                    on_update=lambda p: seen.append((p.done, p.running)))
        assert seen[-1][0] == games and max(r for _, r in seen) <= 2
        return progress, await arena_report(store, arena_id)
    finally:
        await store.close()


async def test_scripted_arena_report_and_routes(tmp_path: Path) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'a.db'}"
    entries = resolve_entries(["alpha=scripted", "beta=scripted", "gamma=scripted"])
    progress, report = await _play(db, entries, 6, 7, Settings(database_url=db))
    assert (progress.done, progress.errors, progress.total) == (6, 0, 6)

    store = await Store.open(db)
    arena = await store.get_arena("t")
    assert arena is not None and arena.status == "finished"
    for g in arena.games:  # every game stored like any other, and it re-runs
        row = await store.get_game(g.game_id)
        assert row is not None and row.status == "finished" and row.lobby["speed"] == "fast"
        assert row.config["seed"] == g.seed
        game = rerun(GameConfig.from_dict(row.config),
                     [c for _, _, c in await store.commands(g.game_id)])
        assert game.ended and sorted(game.winners) == sorted(row.winners)
        assert json.loads(json.dumps([e.to_dict() for e in game.events])) \
            == await store.events(g.game_id)
    await store.close()

    assert report["arena"]["finished"] == 6
    entries_out = {e["label"]: e for e in report["entries"]}
    assert set(entries_out) == {"alpha", "beta", "gamma"}
    for e in entries_out.values():
        # 6 games of 7 seats among 3 entries: 14 seats each, factions balanced
        assert e["seats"] == 14 and e["games"] == 6
        lo, hi = e["win"]["lo"], e["win"]["hi"]
        assert lo <= e["win"]["rate"] <= hi
        assert e["rating"]["ordinal"] == pytest.approx(e["rating"]["mu"]
                                                       - 3 * e["rating"]["sigma"], abs=1e-2)
        assert e["rating"]["sigma"] < 25 / 3  # six games taught the model something
        assert e["decisions"] > 0 and e["fault_rate"] == 0
        assert e["mafia_votes"]["votes"] > 0
    by_faction = Counter()
    for f in report["factions"]:
        by_faction[(f["label"], f["faction"])] = f["seats"]
    assert by_faction[("alpha", "mafia")] == by_faction[("beta", "mafia")] \
        == by_faction[("gamma", "mafia")] > 0
    # the same seats, roles and seeds for everyone: the scripted bots tie exactly
    assert len({e["wins"] for e in entries_out.values()}) == 1

    paths = write_report(report, tmp_path / "out")
    names = {p.name for p in paths}
    assert names == {"entries.csv", "factions.csv", "roles.csv", "report.json",
                     "report.html"}
    rows = list(csv.DictReader((tmp_path / "out" / "entries.csv").open()))
    assert {r["label"] for r in rows} == {"alpha", "beta", "gamma"}
    assert all(float(r["win_lo"]) <= float(r["win_rate"]) <= float(r["win_hi"]) for r in rows)
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.count("<svg") >= 4 and "alpha" in page and "Wilson" in page
    assert json.loads((tmp_path / "out" / "report.json").read_text())["entries"]

    app = create_app(Settings(database_url=db, resume=False))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            listed = (await c.get("/api/arenas")).json()
            assert [(a["id"], a["planned"], a["finished"]) for a in listed] == [("t", 6, 6)]
            r = await c.get("/api/arenas/t/report")
            assert r.status_code == 200 and r.json()["entries"] == report["entries"]
            assert (await c.get("/api/arenas/nope/report")).status_code == 404
            # kept while no game changes status, computed again when one does
            assert (await c.get("/api/arenas/t/report")).json() == r.json()
            await app.state.store.set_status(arena.games[0].game_id, "aborted")
            again = (await c.get("/api/arenas/t/report")).json()
            assert again["arena"]["finished"] == 5
            assert sum(e["games"] for e in again["entries"]) == 5 * 3
            assert (await c.get("/api/arenas/" + "x" * 300 + "/report")).status_code == 404


async def test_resuming_with_another_spec_is_refused(tmp_path: Path) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'a.db'}"
    store = await Store.open(db)
    entries = resolve_entries(["scripted", "b=scripted"])
    await open_arena(store, "x", entries, games=2, players=7)
    again = await open_arena(store, "x", entries, games=2, players=7)
    assert len(again.games) == 2
    with pytest.raises(ValueError, match="another spec"):
        await open_arena(store, "x", entries, games=4, players=7)
    await store.close()


def test_entries_resolve_labels() -> None:
    a, b = resolve_entries(["scripted", "mine=smollm2"])
    assert (a.label, a.backend) == ("scripted", "scripted")
    assert (b.label, b.entry, b.backend) == ("mine", "smollm2", "local")
    assert b.seat_spec(3)["slot"] == 3
    with pytest.raises(ValueError, match="no entry"):
        resolve_entries(["gpt-nothing"])
    with pytest.raises(ValueError, match="share a label"):
        resolve_entries(["scripted", "scripted"])
    with pytest.raises(ValueError, match="bad arena label"):
        resolve_entries(["<b>=scripted"])


def test_game_limits() -> None:
    scripted, model = resolve_entries(["scripted", "smollm2"])
    assert game_limit(scripted, 15, 3) is None
    assert game_limit(model, 15, 3) == 1  # the built-in entry: 8 requests, 5 seats a game
    wide = dataclasses.replace(model, max_concurrency=64)
    assert game_limit(wide, 15, 3) == 12  # 5 seats a game
    assert game_limit(dataclasses.replace(model, max_concurrency=2), 15, 3) == 1


def test_wilson_interval() -> None:
    assert wilson(0, 0) == (None, None)
    lo, hi = wilson(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    lo, hi = wilson(0, 10)
    assert lo == 0 and hi == pytest.approx(0.2775, abs=1e-4)


async def test_arena_with_a_chat_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """scripted, scripted under a second label, and a chat-API entry whose
    model never writes a legal action (the fake provider's `ignore-schema`):
    its turns, tokens, faults, cost and latency reach the report, every turn
    ends in the safe default, and the games still finish."""
    from inference.fake_chat_provider import fake_provider

    from tossim.inference import chat_backend

    monkeypatch.setenv("TOSSIM_TEST_ARENA_KEY", "sk-arena-test")
    chat_backend.forget_shared()
    async with fake_provider() as (provider, url):
        catalogue = tmp_path / "models.toml"
        catalogue.write_text(f"""
[models.junk]
backend = "chat"
base_url = "{url}"
model = "ignore-schema"
api_key_env = "TOSSIM_TEST_ARENA_KEY"
price_prompt = 1.0
price_completion = 2.0
max_concurrency = 3
""")
        db = f"sqlite+aiosqlite:///{tmp_path / 'a.db'}"
        entries = resolve_entries(["scripted", "bot=scripted", "model=junk"], str(catalogue))
        settings = Settings(database_url=db, models=str(catalogue))
        seen: list[tuple[int, int]] = []
        progress, report = await _play(db, entries, 3, 7, settings, seen=seen)
    chat_backend.forget_shared()
    assert (progress.done, progress.errors) == (3, 0)
    # max_concurrency 3 over up to 3 seats a game: one of its games at a time
    assert game_limit(entries[2], 7, 3) == 1 and max(r for _, r in seen) == 1
    model = next(e for e in report["entries"] if e["label"] == "model")
    assert model["backend"] == "chat" and model["seats"] == 7
    assert model["model_turns"] > 0 and model["prompt_tokens"] > 0
    assert model["turn_seconds"] is not None
    # each turn: the first answer and its corrections are malformed, then the default
    assert model["malformed_rate"] is not None and model["malformed_rate"] >= 1
    assert model["tokens_per_turn"] > 0 and model["cost_usd"] is not None
    scripted = next(e for e in report["entries"] if e["label"] == "scripted")
    assert scripted["model_turns"] == 0 and scripted["tokens_per_turn"] is None
    assert provider.requests  # the model was asked


def test_openskill_ratings_rank_the_stronger_entry_first() -> None:
    from tossim.analysis.arena_report import openskill_ratings

    # "s" wins all its seats, "w" none, "m" half, in every game
    games = [{"s": (3, 3), "m": (2, 1), "w": (2, 0)}] * 6
    r = openskill_ratings(["s", "m", "w"], games)
    ordinal = {lb: mu - 3 * sigma for lb, (mu, sigma) in r.items()}
    assert ordinal["s"] > ordinal["m"] > ordinal["w"]
    assert all(sigma < 25 / 3 for _, sigma in r.values())
    # a symmetric block (each entry wins once): the ratings agree closely
    block = [{"a": (2, 2), "b": (2, 0), "c": (2, 0)}, {"a": (2, 0), "b": (2, 2), "c": (2, 0)},
             {"a": (2, 0), "b": (2, 0), "c": (2, 2)}] * 2
    r = openskill_ratings(["a", "b", "c"], block)
    mus = [mu for mu, _ in r.values()]
    assert max(mus) - min(mus) < 0.5


async def test_an_aborted_game_is_not_played_again(tmp_path: Path) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'a.db'}"
    store = await Store.open(db)
    entries = resolve_entries(["scripted", "b=scripted"])
    arena = await open_arena(store, "ab", entries, games=3, players=7)
    dropped = arena.games[1].game_id
    await service.create_lobby(store, service.LobbyIn(players=7, seed=arena.games[1].seed),
                               game_id=dropped)
    await store.set_status(dropped, "aborted")
    progress = await play_arena(store, MemoryBus(), Settings(database_url=db), arena, entries)
    assert (progress.done, progress.aborted, progress.errors) == (2, 1, 0)
    assert progress.finished
    row = await store.get_arena("ab")
    assert row is not None and row.status == "finished"
    assert (await store.game_statuses([dropped])) == {dropped: "aborted"}
    await store.close()


def most_in_any_window(times: list[float], window: float) -> int:
    """The most timestamps that fall in any `window`-second span."""
    times = sorted(times)
    return max((sum(1 for t in times[i:] if t < start + window)
                for i, start in enumerate(times)), default=0)


async def test_an_entrys_rpm_holds_across_concurrent_games(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two games at once, each with several seats of one chat entry limited
    to 600 requests a minute: the provider gets them at that rate (every seat
    of both games shares the entry's limiter), though it answers each at
    once (without the limit it sees about 70 in a second)."""
    from inference.fake_chat_provider import fake_provider

    from tossim.inference import chat_backend

    chat_backend.forget_shared()
    async with fake_provider() as (provider, url):
        catalogue = tmp_path / "models.toml"
        catalogue.write_text(f"""
[models.limited]
backend = "chat"
base_url = "{url}"
model = "good"
rpm = 600
""")
        db = f"sqlite+aiosqlite:///{tmp_path / 'a.db'}"
        entries = resolve_entries(["scripted", "model=limited"], str(catalogue))
        settings = Settings(database_url=db, models=str(catalogue))
        seen: list[tuple[int, int]] = []
        progress, report = await _play(db, entries, 2, 7, settings, seen=seen)
    chat_backend.forget_shared()
    assert (progress.done, progress.errors) == (2, 0)
    assert max(r for _, r in seen) == 2  # both games were played at the same time
    times = sorted(r["at"] for r in provider.requests)
    n = len(times)
    assert n > 20  # enough requests that a burst would show (unlimited: ~70 in a second)
    # 600 a minute is one start per 0.1 s. The provider shares the games' event
    # loop, so an arrival may be late by a moment: a second of slack is allowed
    assert most_in_any_window(times, 3.0) <= 10 * (3 + 1) + 1
    assert times[-1] - times[0] >= (n - 1) * 0.1 - 1.0
    model = next(e for e in report["entries"] if e["label"] == "model")
    assert model["model_turns"] > 0


def test_an_arena_on_a_custom_role_list_from_the_command_line(tmp_path: Path) -> None:
    """`tossim arena --roles`: short games on the list (stored as mode
    "custom", the list's length the player count), resumable by id alone."""
    import asyncio

    from typer.testing import CliRunner

    from tossim.cli import app

    db = f"sqlite+aiosqlite:///{tmp_path / 'r.db'}"
    runner = CliRunner()
    r = runner.invoke(app, ["arena", "--entry", "scripted", "--entry", "b=scripted",
                            "--games", "4", "--roles", "Sheriff, Mafioso, Doctor",
                            "--arena", "short", "--db", db])
    assert r.exit_code == 0, r.output
    assert "4/4 games finished" in r.output

    async def stored() -> list[Any]:
        store = await Store.open(db)
        try:
            arena = await store.get_arena("short")
            assert arena is not None and arena.spec["roles"] == ["Sheriff", "Mafioso", "Doctor"]
            assert (arena.spec["players"], arena.spec["mode"]) == (3, "custom")
            return [await store.get_game(g.game_id) for g in arena.games]
        finally:
            await store.close()

    rows = asyncio.run(stored())
    assert all(row.status == "finished" and row.config["role_list"] == ["Sheriff", "Mafioso",
                                                                         "Doctor"]
               for row in rows)
    again = runner.invoke(app, ["arena", "--arena", "short", "--db", db])
    assert again.exit_code == 0 and "4/4 games finished (0 this run" in again.output
    bad = runner.invoke(app, ["arena", "--entry", "scripted", "--roles", "Sheriff, Nobody",
                              "--db", db])
    assert bad.exit_code == 2 and "Nobody" in bad.output
