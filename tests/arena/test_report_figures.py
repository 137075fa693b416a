"""The arena report's figures tell the truth (issue 21): timeouts and errors
are counted from the same turn records as the seat metrics, and an entry
without prices shows no cost ("-"), not 0.0000."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tossim.agents.chat_seat import ChatConfig, ChatSeat
from tossim.analysis.arena_report import arena_report, entry_rows
from tossim.arena.entries import resolve_entries
from tossim.engine import GameConfig, Viewer, new_game, view
from tossim.inference.catalogue import ModelEntry
from tossim.inference.chat_backend import ChatError
from tossim.server.settings import Settings
from tossim.store import Store

from .test_arena import _play


class _TimedOut:
    """A chat backend whose endpoint never answers before the seat's deadline."""

    mode = "json_schema"

    def __init__(self, entry: ModelEntry) -> None:
        self.entry = entry

    async def ensure_mode(self, deadline: float, errors: dict[str, int]) -> str:
        errors["timeout"] = errors.get("timeout", 0) + 1
        raise ChatError("timeout", "the endpoint did not answer before the deadline")


def _abstaining_seat(turns: int) -> ChatSeat:
    entry = ModelEntry(name="unpriced", backend="chat", model="m", base_url="http://x")
    assert not entry.priced
    seat = ChatSeat(1, _TimedOut(entry), ChatConfig(turn_seconds=5))  # type: ignore[arg-type]
    game = new_game(GameConfig(players=7, seed=1))
    for _ in range(turns):
        assert asyncio.run(seat.decide(view(game, Viewer.player(1)))) == []
    return seat


def test_a_chat_seat_counts_its_own_timeouts_and_has_no_price() -> None:
    m = _abstaining_seat(3).seat_metrics().to_dict()
    assert m["abstained"] == 3 and m["abstained_kinds"] == {"timeout": 3}
    assert m["cost_usd"] is None  # was 0.0


async def test_report_counts_timeouts_from_the_turn_records(tmp_path: Path) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'a.db'}"
    entries = resolve_entries(["alpha=scripted", "beta=scripted"])
    await _play(db, entries, 1, 7, Settings(database_url=db))
    seat = await asyncio.to_thread(_abstaining_seat, 4)
    store = await Store.open(db)
    try:
        arena = await store.get_arena("t")
        assert arena is not None
        game = arena.games[0]
        slot = game.seats.index("beta") + 1
        # the seat abstained on its own deadline: the actor saw answers, not timeouts
        stored: dict[str, Any] = (await store.metrics(game.game_id))[slot]
        assert stored["timeouts"] == 0
        for seq, record in enumerate(seat.turn_log, start=1):
            await store.add_turn(game.game_id, slot, seq, 1, "day1", record)
        agent = seat.seat_metrics().to_dict()
        await store.save_metrics(game.game_id, slot, {**stored, "agent": agent})
        report = await arena_report(store, "t")
    finally:
        await store.close()
    assert report is not None
    beta = next(e for e in report["entries"] if e["label"] == "beta")
    assert beta["timeouts"] == 4 and beta["timeout_rate"] == 1.0  # was 0.0
    assert beta["cost_usd"] is None  # was 0.0
    row = next(r for r in entry_rows(report) if r["label"] == "beta")
    assert row["cost_usd"] is None
