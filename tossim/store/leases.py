"""Leases: which server process runs each live game.

A mixin of `Store` (same connections, same rules). Several `tossim serve`
processes may share one database; each live game is run by exactly one of
them, the holder of its lease (`game_leases`: the process's name and when the
claim expires). The holder renews its leases well before they expire; a
process that dies stops renewing, and once a lease has expired any other
process may take the game over (and resumes it from the stored log).

Every change is one conditional statement, atomic on PostgreSQL and SQLite
alike: taking a lease is an UPDATE guarded by "mine, or expired" and, when
there is no row yet, an INSERT that the primary key lets only one process
win. On PostgreSQL the UPDATE re-checks its guard on the row it locked, so
of two processes stealing one expired lease only the first succeeds: the
second finds a fresh expiry and matches nothing.

Times are the processes' own clocks (UTC), so the machines of one fleet need
clocks that agree to well under a lease's length (NTP does).

The store never acts on a lease: it only records claims. It is the server's
`ActorHub` that starts an actor only under a lease, renews, and takes over.
The event log has its own guard in any case: `append` refuses a batch that
does not follow the stored version, so even a process that lost its lease
without noticing cannot write a second history.
"""

from __future__ import annotations

from collections.abc import Collection
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from tossim.store import tables as T
from tossim.store.errors import GameNotFound

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

L = T.game_leases


@dataclass
class LeaseRow:
    game_id: str
    owner: str  # the holding process's name
    expires_at: datetime  # aware, UTC
    acquired_at: datetime  # when this owner took it


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class LeaseQueries:
    """Lease reads and writes (mixed into `Store`)."""

    if TYPE_CHECKING:
        def _tx(self) -> AbstractAsyncContextManager[AsyncConnection]: ...
        def _read(self) -> AbstractAsyncContextManager[AsyncConnection]: ...

    async def acquire_lease(self, game_id: str, owner: str, seconds: float, *,
                            now: datetime | None = None) -> bool:
        """Take (or, if `owner` holds it already, extend) the lease on a game
        for `seconds`: True if `owner` holds it now, False if another owner's
        lease has not expired. `now` (default: the clock) is for tests.
        Raises GameNotFound (from tossim.store) if there is no such game."""
        now = now or datetime.now(UTC)
        until = now + timedelta(seconds=seconds)
        async with self._tx() as conn:
            res = await conn.execute(
                sa.update(L)
                .where(L.c.game_id == game_id, sa.or_(L.c.owner == owner, L.c.expires_at < now))
                .values(expires_at=until, owner=owner,
                        acquired_at=sa.case((L.c.owner == owner, L.c.acquired_at), else_=now)))
            if res.rowcount == 1:
                return True
        try:
            async with self._tx() as conn:
                await conn.execute(sa.insert(L).values(game_id=game_id, owner=owner,
                                                       expires_at=until, acquired_at=now))
            return True
        except IntegrityError:
            # a live lease of another owner (or someone inserted first), or no game
            async with self._read() as conn:
                found = (await conn.execute(sa.select(T.games.c.id)
                                            .where(T.games.c.id == game_id))).first()
            if found is None:
                raise GameNotFound(game_id) from None
            return False

    async def renew_leases(self, owner: str, game_ids: Collection[str], seconds: float, *,
                           now: datetime | None = None) -> set[str]:
        """Extend `owner`'s leases on `game_ids` by `seconds` from now, in one
        transaction. Returns the games `owner` still holds: one missing from
        the answer was taken over by another process (its lease had expired)
        or released, and its actor must stop."""
        if not game_ids:
            return set()
        now = now or datetime.now(UTC)
        ids = list(game_ids)
        async with self._tx() as conn:
            await conn.execute(sa.update(L).where(L.c.owner == owner, L.c.game_id.in_(ids))
                               .values(expires_at=now + timedelta(seconds=seconds)))
            rows = await conn.execute(sa.select(L.c.game_id)
                                      .where(L.c.owner == owner, L.c.game_id.in_(ids)))
            return {r.game_id for r in rows}

    async def release_leases(self, owner: str, game_ids: Collection[str] | None = None) -> int:
        """Give up `owner`'s leases (all of them, or those on `game_ids`), so
        another process may take those games at once. Returns how many."""
        q = sa.delete(L).where(L.c.owner == owner)
        if game_ids is not None:
            if not game_ids:
                return 0
            q = q.where(L.c.game_id.in_(list(game_ids)))
        async with self._tx() as conn:
            return int((await conn.execute(q)).rowcount or 0)

    async def lease(self, game_id: str) -> LeaseRow | None:
        """The game's lease row, expired or not (None: nobody has claimed it)."""
        async with self._read() as conn:
            row = (await conn.execute(sa.select(L).where(L.c.game_id == game_id))).first()
        if row is None:
            return None
        return LeaseRow(game_id=row.game_id, owner=row.owner,
                        expires_at=_utc(row.expires_at), acquired_at=_utc(row.acquired_at))

    async def unleased_live_games(self, *, now: datetime | None = None) -> list[str]:
        """Live games nobody runs: no lease, or one that has expired (its
        process died, or was cut off). Oldest first."""
        now = now or datetime.now(UTC)
        async with self._read() as conn:
            rows = await conn.execute(
                sa.select(T.games.c.id)
                .select_from(T.games.outerjoin(L, L.c.game_id == T.games.c.id))
                .where(T.games.c.status == "live",
                       sa.or_(L.c.game_id.is_(None), L.c.expires_at < now))
                .order_by(T.games.c.created_at, T.games.c.id))
            return [r.id for r in rows]
