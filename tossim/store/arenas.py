"""Arenas in the store: a tournament's spec and its planned games.

A mixin of `Store` (same connections, same rules: rows come back as plain
dataclasses). The plan is stored whole when the arena is made, with the game
id of every planned game fixed then, so a restarted arena finds the games it
already started (by id) and never starts one twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from tossim.store import tables as T
from tossim.store.errors import ConflictError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

ARENA_STATUSES = ("running", "finished")


@dataclass
class ArenaGameRow:
    idx: int  # the game's index in the plan
    game_id: str  # fixed when the arena was made; the game row exists once it started
    seed: int
    seats: list[str]  # the entry label of each slot, slot 1 first


@dataclass
class ArenaRow:
    id: str
    status: str
    spec: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    games: list[ArenaGameRow] = field(default_factory=list)


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class ArenaQueries:
    """Arena reads and writes (mixed into `Store`)."""

    if TYPE_CHECKING:
        def _tx(self) -> AbstractAsyncContextManager[AsyncConnection]: ...
        def _read(self) -> AbstractAsyncContextManager[AsyncConnection]: ...

    async def create_arena(self, arena_id: str, spec: dict[str, Any],
                           games: Sequence[ArenaGameRow]) -> None:
        """Store an arena (status "running") and its whole plan in one
        transaction. Raises ConflictError if the id (or a game id) is taken."""
        now = datetime.now(UTC)
        try:
            async with self._tx() as conn:
                await conn.execute(sa.insert(T.arenas).values(
                    id=arena_id, created_at=now, updated_at=now, status="running", spec=spec))
                if games:
                    await conn.execute(sa.insert(T.arena_games), [
                        {"arena_id": arena_id, "idx": g.idx, "game_id": g.game_id,
                         "seed": g.seed, "seats": list(g.seats)} for g in games])
        except IntegrityError as exc:
            raise ConflictError(f"arena {arena_id!r} already exists") from exc

    async def get_arena(self, arena_id: str) -> ArenaRow | None:
        async with self._read() as conn:
            row = (await conn.execute(
                sa.select(T.arenas).where(T.arenas.c.id == arena_id))).first()
            if row is None:
                return None
            games = (await conn.execute(
                sa.select(T.arena_games).where(T.arena_games.c.arena_id == arena_id)
                .order_by(T.arena_games.c.idx))).all()
        return ArenaRow(id=row.id, status=row.status, spec=row.spec,
                        created_at=_utc(row.created_at), updated_at=_utc(row.updated_at),
                        games=[ArenaGameRow(idx=g.idx, game_id=g.game_id, seed=int(g.seed),
                                            seats=list(g.seats)) for g in games])

    async def list_arenas(self, limit: int = 100) -> list[ArenaRow]:
        """Arenas, newest first, without their games."""
        async with self._read() as conn:
            rows = (await conn.execute(
                sa.select(T.arenas).order_by(T.arenas.c.created_at.desc(), T.arenas.c.id)
                .limit(limit))).all()
        return [ArenaRow(id=r.id, status=r.status, spec=r.spec,
                         created_at=_utc(r.created_at), updated_at=_utc(r.updated_at))
                for r in rows]

    async def set_arena_status(self, arena_id: str, status: str) -> None:
        if status not in ARENA_STATUSES:
            raise ValueError(f"arena status is one of {ARENA_STATUSES}")
        async with self._tx() as conn:
            await conn.execute(sa.update(T.arenas).where(T.arenas.c.id == arena_id)
                               .values(status=status, updated_at=datetime.now(UTC)))

    async def game_statuses(self, game_ids: Sequence[str]) -> dict[str, str]:
        """The status of each of these games that exists (ids not started are absent)."""
        if not game_ids:
            return {}
        async with self._read() as conn:
            rows = await conn.execute(sa.select(T.games.c.id, T.games.c.status)
                                      .where(T.games.c.id.in_(list(game_ids))))
            return {r.id: r.status for r in rows}

    async def arenas_of_games(self, game_ids: Sequence[str]
                              ) -> dict[str, tuple[str, list[str]]]:
        """game id -> (arena id, the entry label of each slot), for those of
        these games an arena planned."""
        if not game_ids:
            return {}
        async with self._read() as conn:
            rows = await conn.execute(
                sa.select(T.arena_games.c.game_id, T.arena_games.c.arena_id,
                          T.arena_games.c.seats)
                .where(T.arena_games.c.game_id.in_(list(game_ids))))
            return {r.game_id: (r.arena_id, list(r.seats)) for r in rows}
