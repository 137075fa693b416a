"""`tossim export`: stored games as JSON Lines and Parquet that
`datasets.load_dataset` loads; seeds and roles only where the server would
show them; seat traces from `seat_turns` where the store has them; no
secrets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tossim.arena.entries import resolve_entries
from tossim.arena.runner import open_arena, play_arena
from tossim.export import export_rows, write_dataset
from tossim.server import service
from tossim.server.bus import MemoryBus
from tossim.server.settings import Settings
from tossim.store import Store

REPO = Path(__file__).resolve().parents[1]


async def _arena_db(tmp_path: Path) -> tuple[str, Store, str]:
    """A database with a finished 2-game arena and a live game with a human
    seat (its token's hash is stored)."""
    db = f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"
    store = await Store.open(db)
    entries = resolve_entries(["a=scripted", "b=scripted"])
    arena = await open_arena(store, "ex", entries, games=2, players=7)
    await play_arena(store, MemoryBus(), Settings(database_url=db), arena, entries)
    row = await service.create_lobby(store, service.LobbyIn.model_validate(
        {"players": 7, "seats": [{"slot": 1, "kind": "human"}]}))
    joined = await service.join(store, row.id, service.JoinIn(name="Ann"))
    await store.start_game(row.id, row.config)
    return db, store, joined["token"]


async def test_export_rows_and_dataset_loading(tmp_path: Path) -> None:
    db, store, token = await _arena_db(tmp_path)
    arena = await store.get_arena("ex")
    assert arena is not None
    games, turns = await export_rows(store, arena_id="ex")
    assert [g["id"] for g in games] == [g.game_id for g in arena.games]
    for g, planned in zip(games, arena.games, strict=True):
        assert g["arena"] == "ex" and g["status"] == "finished" and g["seed"] == planned.seed
        assert len(g["roles"]) == 7 and g["result"] and g["winners"]
        assert [s["entry"] for s in g["seats"]] == planned.seats
    assert turns and {t["source"] for t in turns} == {"commands"}
    assert all(t["prompt"] is None and json.loads(t["action"])["actor"] == t["slot"]
               for t in turns)
    assert {t["phase"] for t in turns} >= {"day1", "voting", "night"}
    # the live game with a human seat: no seed, no roles
    live = [r for r in await store.list_games(status="live")]
    assert len(live) == 1
    (human_game,), _ = await export_rows(store, [live[0].id])
    assert human_game["seed"] is None and human_game["roles"] is None
    assert human_game["seats"][0]["kind"] == "human"
    await store.close()

    out = tmp_path / "ds"
    result = subprocess.run(
        [sys.executable, "-m", "tossim.cli", "export", "--db", db, "--out", str(out)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120)
    assert result.returncode == 0, result.stderr
    assert "2 games" in result.stdout  # every finished game
    text = "".join(p.read_text() for p in out.glob("*.jsonl"))
    assert token not in text and "token_hash" not in text
    assert service.token_hash(token) not in text

    datasets = pytest.importorskip("datasets")
    cache = str(tmp_path / "hf")
    for kind, suffix in (("json", "jsonl"), ("parquet", "parquet")):
        g = datasets.load_dataset(kind, data_files=str(out / f"games.{suffix}"),
                                  split="train", cache_dir=cache)
        t = datasets.load_dataset(kind, data_files=str(out / f"turns.{suffix}"),
                                  split="train", cache_dir=cache)
        assert g.num_rows == 2 and t.num_rows == len(turns)
        assert set(g.column_names) >= {"id", "seed", "result", "winners", "roles", "seats"}
        assert set(t.column_names) >= {"game_id", "slot", "day", "phase", "prompt", "output",
                                       "steps", "action"}
        assert g[0]["seats"][0]["entry"] in ("a", "b")


async def test_export_reads_seat_turns_when_the_store_has_them(tmp_path: Path) -> None:
    """A game's stored model-seat turns are exported instead of its command log."""
    db, store, _ = await _arena_db(tmp_path)
    arena = await store.get_arena("ex")
    assert arena is not None
    gid = arena.games[0].game_id
    trace = {"prompt": "<system>...", "output": "<action>vote 3</action>",
             "steps": [{"tool": "graveyard", "observation": "empty"}],
             "action": {"type": "vote", "actor": 2, "target": 3}, "tokens": 812}
    await store.add_turn(gid, 2, 1, 2, "voting", trace)
    games, turns = await export_rows(store, [gid])
    await store.close()
    assert len(turns) == 1
    t = turns[0]
    assert (t["source"], t["slot"], t["day"], t["phase"]) == ("seat_turns", 2, 2, "voting")
    assert t["prompt"] == "<system>..." and t["output"] == "<action>vote 3</action>"
    assert json.loads(t["steps"])[0]["tool"] == "graveyard"
    assert json.loads(t["action"])["target"] == 3 and json.loads(t["tokens"]) == 812
    write_dataset(games, turns, tmp_path / "o")  # the Parquet schema takes it


async def test_export_marks_a_stand_ins_turns(tmp_path: Path) -> None:
    """A human seat's commands sent by its stand-in (origin standin:N, the
    player away) are exported as the stand-in's, the player's own are not."""
    db, store, _ = await _arena_db(tmp_path)
    (live,) = await store.list_games(status="live")
    said = {"type": "chat", "actor": 1, "channel": "public"}
    await store.append(live.id, [(1, "standin:1", {**said, "text": "a bot speaking"}),
                                 (2, "seat:1", {**said, "text": "I am back"})], [],
                       day=1, phase="day1")
    games, turns = await export_rows(store, [live.id])
    await store.close()
    marks = [(json.loads(t["action"])["text"], t["standin"]) for t in turns]
    assert marks == [("a bot speaking", True), ("I am back", False)]
    write_dataset(games, turns, tmp_path / "o")  # the Parquet schema takes it


async def test_export_refuses_unknown_ids(tmp_path: Path) -> None:
    store = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'e.db'}")
    with pytest.raises(ValueError, match="no arena"):
        await export_rows(store, arena_id="nope")
    with pytest.raises(ValueError, match="no game"):
        await export_rows(store, ["nope"])
    assert await export_rows(store) == ([], [])
    await store.close()
