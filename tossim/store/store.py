"""The repository: every read and write of a stored game goes through `Store`.

Rows come back as plain dataclasses (`GameRow`, `SeatRow`), never ORM objects,
so callers never hold a session. Queries are SQLAlchemy Core on an async engine
(aiosqlite or asyncpg); the schema comes only from the Alembic migrations,
which `Store.open` runs.

Writes are short transactions. `append` is the hot path (the server stores
every command and event before publishing them): one transaction, a guarded
update of the game row, then executemany inserts of the commands and events.
On SQLite, writes are serialised by an asyncio lock inside the process (SQLite
has one writer at a time anyway; waiting on a lock is cheaper than its busy
handler's sleeps), and the file runs in WAL mode with synchronous=NORMAL so
readers never block the writer.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from tossim.store import migrate as _migrate
from tossim.store import tables as T
from tossim.store.arenas import ArenaQueries
from tossim.store.errors import ConflictError, GameNotFound, StoreError
from tossim.store.leases import LeaseQueries

DEFAULT_URL = "sqlite+aiosqlite:///./tossim.db"
FORMAT = 1  # tossim.engine.replay.LOG_FORMAT: the format version of a stored game


def hash_token(token: str) -> str:
    """The sha256 hex digest stored in `seats.token_hash` for a seat token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass
class SeatRow:
    slot: int
    name: str
    kind: str  # "human" | "ai"
    backend: str | None = None
    model: str | None = None
    persona: str | None = None
    protocol: str | None = None
    token_hash: str | None = None  # sha256 hex of the seat's token (hash_token)
    claimed: bool = False


@dataclass
class GameRow:
    id: str
    status: str  # "lobby" | "live" | "finished" | "aborted"
    format: int
    ruleset: str
    config: dict[str, Any]  # GameConfig.to_dict()
    lobby: dict[str, Any]  # the lobby request
    version: int  # events stored (the last event's v)
    day: int  # 0 before the first append
    phase: str  # "" before the first append
    result: str | None
    winners: list[int]
    created_at: datetime  # aware, UTC
    updated_at: datetime
    seats: list[SeatRow] = field(default_factory=list)


def _now() -> datetime:
    return datetime.now(UTC)


def _utc(value: datetime) -> datetime:
    # SQLite hands back naive datetimes (stored as UTC); PostgreSQL aware ones.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


_json_dumps = partial(json.dumps, ensure_ascii=False, separators=(",", ":"))

_SEAT_COLUMNS = (T.seats.c.slot, T.seats.c.name, T.seats.c.kind, T.seats.c.backend,
                 T.seats.c.model, T.seats.c.persona, T.seats.c.protocol,
                 T.seats.c.token_hash, T.seats.c.claimed)
_EVENT_COLUMNS = (T.events.c.v, T.events.c.day, T.events.c.phase, T.events.c.key,
                  T.events.c.audience, T.events.c.text, T.events.c.data, T.events.c.secret)


def _seat(row: Any) -> SeatRow:
    return SeatRow(slot=row.slot, name=row.name, kind=row.kind, backend=row.backend,
                   model=row.model, persona=row.persona, protocol=row.protocol,
                   token_hash=row.token_hash, claimed=bool(row.claimed))


def _game(row: Any, seats: list[SeatRow]) -> GameRow:
    return GameRow(id=row.id, status=row.status, format=row.format, ruleset=row.ruleset,
                   config=row.config, lobby=row.lobby, version=row.version, day=row.day,
                   phase=row.phase, result=row.result, winners=list(row.winners),
                   created_at=_utc(row.created_at), updated_at=_utc(row.updated_at),
                   seats=seats)


def _event(row: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "v": row.v, "day": row.day, "phase": row.phase, "key": row.key,
        "audience": row.audience, "text": row.text, "data": row.data,
    }
    if row.secret:
        out["secret"] = row.secret
    return out


def _make_engine(url: str) -> tuple[AsyncEngine, bool]:
    """The engine for `url`, and whether the database is one in-memory SQLite
    connection (tests) that every call must take in turn."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        database = parsed.database or ""
        memory = database in ("", ":memory:") or "mode=memory" in str(parsed.query)
        if memory:
            engine = create_async_engine(url, json_serializer=_json_dumps, poolclass=StaticPool)
        else:
            if not database.startswith("file:"):
                Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            engine = create_async_engine(url, json_serializer=_json_dumps,
                                         pool_size=8, max_overflow=8, pool_timeout=60)

        @sa_event.listens_for(engine.sync_engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            if not memory:
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        return engine, memory
    if backend == "postgresql":
        return create_async_engine(url, json_serializer=_json_dumps, pool_size=10,
                                   max_overflow=10, pool_timeout=60, pool_recycle=1800), False
    return create_async_engine(url, json_serializer=_json_dumps), False


@dataclass(slots=True)
class _Batch:
    """One append, in the row order of its tables."""

    game_id: str
    day: int
    phase: str
    now: datetime
    commands: list[tuple[int, str, Mapping[str, Any]]]
    # (v, day, phase, key, audience, text, data, secret or None)
    events: list[tuple[int, int, str, str, Any, str, Any, Any]]
    first: int | None = field(init=False)  # lowest event v; None with no events
    version: int | None = field(init=False)  # highest event v

    def __post_init__(self) -> None:
        vs = [e[0] for e in self.events]
        self.first = min(vs) if vs else None
        self.version = max(vs) if vs else None


# One round trip, one transaction: see Store._append_postgresql.
_PG_APPEND = """
WITH g AS (
    UPDATE games SET version = coalesce($2::int, version), day = $3, phase = $4,
                     updated_at = $5
    WHERE id = $1 AND ($6::int IS NULL OR version < $6::int)
    RETURNING id
), c AS (
    INSERT INTO commands (game_id, seq, origin, data, created_at)
    SELECT g.id, x.seq, x.origin, x.data, $5
    FROM g, unnest($7::int[], $8::text[], $9::json[]) AS x (seq, origin, data)
), e AS (
    INSERT INTO events (game_id, v, day, phase, key, audience, text, data, secret)
    SELECT g.id, y.v, y.day, y.phase, y.key, y.audience, y.text, y.data, y.secret
    FROM g, unnest($10::int[], $11::int[], $12::text[], $13::text[], $14::json[],
                   $15::text[], $16::json[], $17::json[])
         AS y (v, day, phase, key, audience, text, data, secret)
)
SELECT count(*) FROM g
"""


class Store(ArenaQueries, LeaseQueries):
    """Stored games. Make one with `await Store.open(url)`; share it; `close()`
    at shutdown. Every method is a coroutine and safe to call concurrently."""

    def __init__(self, engine: AsyncEngine, *, serialize_all: bool = False) -> None:
        self.engine = engine
        self.dialect = engine.dialect.name
        # SQLite: one writer at a time in this process. In-memory SQLite (a
        # single shared connection): every call in turn.
        lock = asyncio.Lock() if self.dialect == "sqlite" else None
        self._write_lock = lock
        self._read_lock = lock if serialize_all else None
        self._datetime_bind: Any = None
        # Which append to use: the driver's own fast form, or None for Core.
        driver = engine.dialect.driver
        self._fast: str | None = None
        if (self.dialect, driver) == ("postgresql", "asyncpg") or (
                (self.dialect, driver) == ("sqlite", "aiosqlite") and not serialize_all):
            self._fast = self.dialect

    @classmethod
    async def open(cls, url: str = DEFAULT_URL, *, migrate: bool = True) -> Store:
        """Connect to `url` (`sqlite+aiosqlite:///path.db` or
        `postgresql+asyncpg://...`) and, unless `migrate=False`, bring the
        schema to the newest Alembic revision. A SQLite file's folder is
        created if missing."""
        engine, memory = _make_engine(url)
        store = cls(engine, serialize_all=memory)
        if migrate:
            try:
                await store.migrate()
            except BaseException:
                await engine.dispose()
                raise
        return store

    async def migrate(self) -> None:
        """`alembic upgrade head` on this database."""
        async with self._write(), self.engine.begin() as conn:
            await conn.run_sync(_migrate.upgrade)

    async def revision(self) -> str | None:
        """The database's current Alembic revision (None if never migrated)."""
        async with self._read() as conn:
            return await conn.run_sync(_migrate.current)

    async def close(self) -> None:
        await self.engine.dispose()

    async def ping(self) -> bool:
        """True when the database answers (for /api/health)."""
        try:
            async with self._read() as conn:
                await conn.execute(sa.text("SELECT 1"))
        except Exception:
            return False
        return True

    # --- connections ---------------------------------------------------------

    def _write(self) -> AbstractAsyncContextManager[Any]:
        return self._write_lock if self._write_lock is not None else nullcontext()

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[AsyncConnection]:
        """A write transaction: committed at the end, rolled back on error."""
        async with self._write(), self.engine.begin() as conn:
            yield conn

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        lock = self._read_lock if self._read_lock is not None else nullcontext()
        async with lock, self.engine.connect() as conn:
            yield conn

    # --- games and seats -----------------------------------------------------

    async def create_game(self, game_id: str, config: dict[str, Any], lobby: dict[str, Any],
                          seats: list[SeatRow], status: str = "lobby") -> None:
        """Store a new game (version 0, day 0, phase "") with its seats.
        Raises ConflictError if the id is taken."""
        now = _now()
        try:
            async with self._tx() as conn:
                await conn.execute(sa.insert(T.games).values(
                    id=game_id, created_at=now, updated_at=now, status=status, format=FORMAT,
                    ruleset=str(config.get("ruleset", "")), config=config, lobby=lobby,
                    version=0, day=0, phase="", result=None, winners=[]))
                if seats:
                    await conn.execute(sa.insert(T.seats), [
                        {"game_id": game_id, "slot": s.slot, "name": s.name, "kind": s.kind,
                         "backend": s.backend, "model": s.model, "persona": s.persona,
                         "protocol": s.protocol, "token_hash": s.token_hash,
                         "claimed": bool(s.claimed)}
                        for s in seats])
        except IntegrityError as exc:
            raise ConflictError(f"game {game_id!r} already exists (or two seats share a slot)"
                                ) from exc

    async def _seats_of(self, conn: AsyncConnection, game_ids: Sequence[str]
                        ) -> dict[str, list[SeatRow]]:
        out: dict[str, list[SeatRow]] = {gid: [] for gid in game_ids}
        if not game_ids:
            return out
        rows = await conn.execute(
            sa.select(T.seats.c.game_id, *_SEAT_COLUMNS)
            .where(T.seats.c.game_id.in_(list(game_ids)))
            .order_by(T.seats.c.game_id, T.seats.c.slot))
        for row in rows:
            out[row.game_id].append(_seat(row))
        return out

    async def get_game(self, game_id: str) -> GameRow | None:
        async with self._read() as conn:
            row = (await conn.execute(
                sa.select(T.games).where(T.games.c.id == game_id))).first()
            if row is None:
                return None
            seats = await self._seats_of(conn, [game_id])
        return _game(row, seats[game_id])

    async def list_games(self, status: str | None = None, limit: int = 100,
                         offset: int = 0) -> list[GameRow]:
        """Games, newest first, optionally only those with `status`; `offset`
        skips that many (paging)."""
        query = sa.select(T.games)
        if status is not None:
            query = query.where(T.games.c.status == status)
        query = (query.order_by(T.games.c.created_at.desc(), T.games.c.id.desc())
                 .limit(limit).offset(offset))
        async with self._read() as conn:
            rows = (await conn.execute(query)).all()
            seats = await self._seats_of(conn, [r.id for r in rows])
        return [_game(r, seats[r.id]) for r in rows]

    async def start_game(self, game_id: str, config: dict[str, Any], *,
                         lease: tuple[str, float] | None = None) -> None:
        """Lobby to live: store the final config (names filled in) and set the
        status to "live". With `lease=(owner, seconds)`, `owner` takes the
        game's lease in the same transaction, so no other process can see the
        game live and unleased (and take it over) before its actor starts.
        Raises ConflictError if the game is not a lobby any more (started
        twice, or concurrently) or another owner holds its lease, GameNotFound
        if there is none."""
        now = _now()
        try:
            async with self._tx() as conn:
                res = await conn.execute(
                    sa.update(T.games)
                    .where(T.games.c.id == game_id, T.games.c.status == "lobby")
                    .values(config=config, ruleset=str(config.get("ruleset", "")),
                            status="live", updated_at=now))
                if res.rowcount != 1:
                    status = (await conn.execute(sa.select(T.games.c.status)
                                                 .where(T.games.c.id == game_id))).scalar()
                    if status is None:
                        raise GameNotFound(game_id)
                    raise ConflictError(f"game {game_id} is {status}, not a lobby")
                if lease is not None:
                    owner, seconds = lease
                    until = now + timedelta(seconds=seconds)
                    L = T.game_leases
                    res = await conn.execute(
                        sa.update(L).where(L.c.game_id == game_id,
                                           sa.or_(L.c.owner == owner, L.c.expires_at < now))
                        .values(owner=owner, expires_at=until, acquired_at=now))
                    if res.rowcount != 1:  # no row yet (else: another owner's)
                        await conn.execute(sa.insert(L).values(
                            game_id=game_id, owner=owner, expires_at=until, acquired_at=now))
        except IntegrityError as exc:
            raise ConflictError(f"game {game_id}: another process holds its lease") from exc

    async def live_game_ids(self) -> list[str]:
        """Ids of games with status "live", oldest first (to resume at start-up)."""
        async with self._read() as conn:
            rows = await conn.execute(
                sa.select(T.games.c.id).where(T.games.c.status == "live")
                .order_by(T.games.c.created_at, T.games.c.id))
            return [r.id for r in rows]

    async def claim_seat(self, game_id: str, slot: int, name: str, token_hash: str) -> bool:
        """Claim a free human seat, atomically: True if this call claimed it;
        False if the seat does not exist, is an AI seat, or is already claimed,
        or if the game is not a lobby (a seat is never claimed in a started
        game: the row stays locked against a start meanwhile)."""
        async with self._tx() as conn:
            live = (await conn.execute(sa.select(T.games.c.status)
                                       .where(T.games.c.id == game_id)
                                       .with_for_update())).scalar()
            if live != "lobby":
                return False
            res = await conn.execute(
                sa.update(T.seats)
                .where(T.seats.c.game_id == game_id, T.seats.c.slot == slot,
                       T.seats.c.kind == "human", T.seats.c.claimed == sa.false())
                .values(name=name, token_hash=token_hash, claimed=True))
            if res.rowcount != 1:
                return False
            await conn.execute(sa.update(T.games).where(T.games.c.id == game_id)
                               .values(updated_at=_now()))
            return True

    async def update_lobby(self, game_id: str, lobby: dict[str, Any],
                           seats: Sequence[SeatRow] = ()) -> bool:
        """A lobby's settings: its `lobby` document and the unclaimed seats in
        `seats` (kind, backend, model, persona, protocol), in one transaction.
        False (nothing written) if the game is not a lobby any more."""
        async with self._tx() as conn:
            res = await conn.execute(
                sa.update(T.games).where(T.games.c.id == game_id, T.games.c.status == "lobby")
                .values(lobby=lobby, updated_at=_now()))
            if res.rowcount != 1:
                return False
            for s in seats:
                await conn.execute(
                    sa.update(T.seats)
                    .where(T.seats.c.game_id == game_id, T.seats.c.slot == s.slot,
                           T.seats.c.claimed == sa.false())
                    .values(kind=s.kind, backend=s.backend, model=s.model, persona=s.persona,
                            protocol=s.protocol))
            return True

    async def release_seat(self, game_id: str, slot: int) -> bool:
        """Free a claimed human seat of a lobby (its token stops working).
        False if the game is not a lobby or the seat is not claimed."""
        async with self._tx() as conn:
            # the game's row stays locked until the seat is freed, so a start
            # (which updates that row) cannot slip in between: a seat is never
            # freed in a started game, where its sockets already play it
            live = (await conn.execute(sa.select(T.games.c.status)
                                       .where(T.games.c.id == game_id)
                                       .with_for_update())).scalar()
            if live != "lobby":
                return False
            res = await conn.execute(
                sa.update(T.seats)
                .where(T.seats.c.game_id == game_id, T.seats.c.slot == slot,
                       T.seats.c.kind == "human", T.seats.c.claimed == sa.true())
                .values(name=f"Player {slot}", token_hash=None, claimed=False))
            return res.rowcount == 1

    async def set_lobby_field(self, game_id: str, key: str, value: Any) -> None:
        """Set one field of a game's `lobby` document, in any status (a
        finished game's pointer to its next lobby). Raises GameNotFound."""
        async with self._tx() as conn:
            doc = (await conn.execute(sa.select(T.games.c.lobby).where(T.games.c.id == game_id)
                                      .with_for_update())).scalar()
            if doc is None:
                raise GameNotFound(game_id)
            await conn.execute(sa.update(T.games).where(T.games.c.id == game_id)
                               .values(lobby={**doc, key: value}))

    async def seat_for_token(self, game_id: str, token_hash: str) -> SeatRow | None:
        async with self._read() as conn:
            row = (await conn.execute(
                sa.select(*_SEAT_COLUMNS)
                .where(T.seats.c.game_id == game_id, T.seats.c.token_hash == token_hash)
                .limit(1))).first()
        return None if row is None else _seat(row)

    async def set_status(self, game_id: str, status: str, *, result: str | None = None,
                         winners: list[int] | None = None) -> None:
        """Set the status; `result` and `winners` are written only when given.
        Raises GameNotFound."""
        values: dict[str, Any] = {"status": status, "updated_at": _now()}
        if result is not None:
            values["result"] = result
        if winners is not None:
            values["winners"] = list(winners)
        async with self._tx() as conn:
            res = await conn.execute(
                sa.update(T.games).where(T.games.c.id == game_id).values(**values))
            if res.rowcount != 1:
                raise GameNotFound(game_id)

    # --- the log -------------------------------------------------------------

    async def append(self, game_id: str, commands: Iterable[tuple[int, str, Mapping[str, Any]]],
                     events: Iterable[Mapping[str, Any]], *, day: int, phase: str) -> None:
        """Store commands `(seq, origin, data)` and events (`Event.to_dict()`
        dicts) in one transaction, and set the game's version (the highest
        event `v`), day and phase.

        Raises ConflictError, storing nothing, if a `seq` or `v` is already
        stored or the events do not come after the stored version (another
        writer got there first); GameNotFound if there is no such game.
        """
        batch = _Batch(game_id, day, phase, _now(),
                       [(seq, origin, data) for seq, origin, data in commands],
                       [(e["v"], e["day"], e["phase"], e["key"], e["audience"], e["text"],
                         e.get("data", {}), e.get("secret") or None) for e in events])
        if self._fast == "sqlite":
            await self._append_sqlite(batch)
        elif self._fast == "postgresql":
            await self._append_postgresql(batch)
        else:
            await self._append_core(batch)

    def _conflict(self, batch: _Batch, stored: int | None) -> StoreError:
        if stored is None:
            return GameNotFound(batch.game_id)
        return ConflictError(f"game {batch.game_id}: events from v={batch.first} cannot follow "
                             f"the stored version {stored}")

    def _duplicate(self, batch: _Batch) -> ConflictError:
        return ConflictError(f"game {batch.game_id}: a command seq or event v is already stored")

    async def _append_core(self, batch: _Batch) -> None:
        """The portable form (SQLAlchemy Core, executemany inserts). The
        dialect-specific forms below store exactly the same rows, faster; the
        tests check that they agree."""
        values: dict[str, Any] = {"day": batch.day, "phase": batch.phase, "updated_at": batch.now}
        guard = T.games.c.id == batch.game_id
        if batch.events:
            values["version"] = batch.version
            # Events only move forward (gaps are allowed: a caller may keep the
            # events new_game() emits out of the store).
            guard = sa.and_(guard, T.games.c.version < batch.first)
        try:
            async with self._tx() as conn:
                res = await conn.execute(sa.update(T.games).where(guard).values(**values))
                if res.rowcount != 1:
                    raise self._conflict(batch, (await conn.execute(
                        sa.select(T.games.c.version).where(T.games.c.id == batch.game_id))
                    ).scalar())
                if batch.commands:
                    await conn.execute(sa.insert(T.commands), [
                        {"game_id": batch.game_id, "seq": seq, "origin": origin, "data": data,
                         "created_at": batch.now} for seq, origin, data in batch.commands])
                if batch.events:
                    await conn.execute(sa.insert(T.events), [
                        {"game_id": batch.game_id, "v": e[0], "day": e[1], "phase": e[2],
                         "key": e[3], "audience": e[4], "text": e[5], "data": e[6],
                         "secret": e[7]} for e in batch.events])
        except IntegrityError as exc:
            raise self._duplicate(batch) from exc

    async def _append_sqlite(self, batch: _Batch) -> None:
        """`append` on a SQLite file, straight on the aiosqlite connection:
        four calls into its thread (update, insert, insert, commit) where
        SQLAlchemy's cursor handling makes about eleven. Each call costs
        ~0.1 ms of thread switching, and with SQLite's one writer that latency
        is the ceiling on stored batches per second for the whole server."""
        stamp = self._sqlite_datetime(batch.now)
        async with self._write(), self.engine.connect() as conn:
            raw = (await conn.get_raw_connection()).driver_connection
            assert raw is not None
            try:
                cur = await raw.execute(
                    "UPDATE games SET version = coalesce(?, version), day = ?, phase = ?, "
                    "updated_at = ? WHERE id = ? AND (? IS NULL OR version < ?)",
                    (batch.version, batch.day, batch.phase, stamp, batch.game_id,
                     batch.first, batch.first))
                if cur.rowcount != 1:
                    cur = await raw.execute("SELECT version FROM games WHERE id = ?",
                                            (batch.game_id,))
                    found = await cur.fetchone()
                    raise self._conflict(batch, None if found is None else found[0])
                if batch.commands:
                    await raw.executemany(
                        "INSERT INTO commands (game_id, seq, origin, data, created_at) "
                        "VALUES (?, ?, ?, ?, ?)",
                        [(batch.game_id, seq, origin, _json_dumps(data), stamp)
                         for seq, origin, data in batch.commands])
                if batch.events:
                    await raw.executemany(
                        "INSERT INTO events (game_id, v, day, phase, key, audience, text, data, "
                        "secret) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [(batch.game_id, v, day, phase, key, _json_dumps(audience), text,
                          _json_dumps(data), None if secret is None else _json_dumps(secret))
                         for v, day, phase, key, audience, text, data, secret in batch.events])
                await raw.commit()
            except BaseException as exc:
                await raw.rollback()
                if isinstance(exc, sqlite3.IntegrityError):
                    raise self._duplicate(batch) from exc
                raise

    async def _append_postgresql(self, batch: _Batch) -> None:
        """`append` on PostgreSQL as one statement, so one round trip and its
        own transaction: the guarded UPDATE of the game row and both INSERTs
        are data-modifying CTEs; the inserts take their rows from arrays
        (unnest) and only happen if the update matched. The row lock the
        update takes makes a second writer wait for the first, then find the
        version moved on (READ COMMITTED re-checks the WHERE)."""
        d = _json_dumps
        async with self.engine.connect() as conn:
            raw = (await conn.get_raw_connection()).driver_connection
            assert raw is not None
            try:
                matched = await raw.fetchval(
                    _PG_APPEND, batch.game_id, batch.version, batch.day, batch.phase, batch.now,
                    batch.first,
                    [c[0] for c in batch.commands], [c[1] for c in batch.commands],
                    [d(c[2]) for c in batch.commands],
                    [e[0] for e in batch.events], [e[1] for e in batch.events],
                    [e[2] for e in batch.events], [e[3] for e in batch.events],
                    [d(e[4]) for e in batch.events], [e[5] for e in batch.events],
                    [d(e[6]) for e in batch.events],
                    [None if e[7] is None else d(e[7]) for e in batch.events])
            except Exception as exc:
                if getattr(exc, "sqlstate", None) == "23505":  # unique_violation
                    raise self._duplicate(batch) from exc
                # Not ours to judge: drop the connection rather than pool it.
                await conn.invalidate()
                raise
            if matched != 1:
                stored = (await conn.execute(sa.select(T.games.c.version)
                                             .where(T.games.c.id == batch.game_id))).scalar()
                raise self._conflict(batch, stored)

    def _sqlite_datetime(self, value: datetime) -> str:
        """A datetime in the text form SQLAlchemy stores in SQLite."""
        if self._datetime_bind is None:
            self._datetime_bind = sa.DateTime(timezone=True).dialect_impl(
                self.engine.dialect).bind_processor(self.engine.dialect)
        return str(self._datetime_bind(value))

    async def commands(self, game_id: str) -> list[tuple[int, str, dict[str, Any]]]:
        """The command log `(seq, origin, data)`, in order."""
        async with self._read() as conn:
            rows = await conn.execute(
                sa.select(T.commands.c.seq, T.commands.c.origin, T.commands.c.data)
                .where(T.commands.c.game_id == game_id).order_by(T.commands.c.seq))
            return [(r.seq, r.origin, r.data) for r in rows]

    async def events(self, game_id: str, since: int = 0) -> list[dict[str, Any]]:
        """Events with v > since, in order, shaped like `Event.to_dict()`
        ("secret" only when the event has one)."""
        async with self._read() as conn:
            rows = await conn.execute(
                sa.select(*_EVENT_COLUMNS)
                .where(T.events.c.game_id == game_id, T.events.c.v > since)
                .order_by(T.events.c.v))
            return [_event(r) for r in rows]

    # --- summaries and metrics -----------------------------------------------

    async def add_summary(self, game_id: str, day: int, text: str) -> None:
        async with self._tx() as conn:
            await conn.execute(sa.insert(T.summaries).values(
                game_id=game_id, day=day, text=text, created_at=_now()))

    async def replace_summary(self, game_id: str, day: int, text: str) -> None:
        """Day `day`'s summary becomes `text` (a model's summary that came in
        time replaces the extractive one stored at nightfall, so replays and a
        resumed game see one summary per day, the final one); added if the
        day has none."""
        async with self._tx() as conn:
            res = await conn.execute(
                sa.update(T.summaries)
                .where(T.summaries.c.game_id == game_id, T.summaries.c.day == day)
                .values(text=text, created_at=_now()))
            if not res.rowcount:
                await conn.execute(sa.insert(T.summaries).values(
                    game_id=game_id, day=day, text=text, created_at=_now()))

    async def summaries(self, game_id: str) -> list[tuple[int, str]]:
        """`(day, text)` in day order (several for one day in the order added)."""
        async with self._read() as conn:
            rows = await conn.execute(
                sa.select(T.summaries.c.day, T.summaries.c.text)
                .where(T.summaries.c.game_id == game_id)
                .order_by(T.summaries.c.day, T.summaries.c.id))
            return [(r.day, r.text) for r in rows]

    async def save_metrics(self, game_id: str, slot: int, data: dict[str, Any]) -> None:
        """Insert or replace one seat's metrics."""
        await self.save_all_metrics(game_id, {slot: data})

    async def save_all_metrics(self, game_id: str, seats: Mapping[int, dict[str, Any]]) -> None:
        """Insert or replace the metrics of several seats in one transaction
        (a game stores all of its seats' at every nightfall)."""
        if not seats:
            return
        insert = postgresql.insert if self.dialect == "postgresql" else sqlite.insert
        now = _now()
        stmt = insert(T.seat_metrics).values(
            [{"game_id": game_id, "slot": slot, "data": data, "updated_at": now}
             for slot, data in seats.items()])
        stmt = stmt.on_conflict_do_update(
            index_elements=[T.seat_metrics.c.game_id, T.seat_metrics.c.slot],
            set_={"data": stmt.excluded.data, "updated_at": stmt.excluded.updated_at})
        async with self._tx() as conn:
            await conn.execute(stmt)

    async def metrics(self, game_id: str) -> dict[int, dict[str, Any]]:
        async with self._read() as conn:
            rows = await conn.execute(
                sa.select(T.seat_metrics.c.slot, T.seat_metrics.c.data)
                .where(T.seat_metrics.c.game_id == game_id).order_by(T.seat_metrics.c.slot))
            return {r.slot: r.data for r in rows}

    # --- model seats' turns ----------------------------------------------------

    async def add_turn(self, game_id: str, slot: int, seq: int, day: int, phase: str,
                       data: dict[str, Any]) -> None:
        """Store one finished turn of a model seat (`seq` counts the seat's
        turns from 1; a seq already stored raises ConflictError)."""
        try:
            async with self._tx() as conn:
                await conn.execute(sa.insert(T.seat_turns).values(
                    game_id=game_id, slot=slot, seq=seq, day=day, phase=phase, data=data,
                    created_at=_now()))
        except IntegrityError as exc:
            raise ConflictError(f"game {game_id}: turn {seq} of seat {slot} exists "
                                "(or no such game)") from exc

    async def turns(self, game_id: str, slot: int | None = None) -> list[dict[str, Any]]:
        """The stored turns, by seat then seq: dicts with slot, seq, day, phase
        and the turn's data (prompt, output, steps, action, tokens)."""
        q = sa.select(T.seat_turns.c.slot, T.seat_turns.c.seq, T.seat_turns.c.day,
                      T.seat_turns.c.phase, T.seat_turns.c.data
                      ).where(T.seat_turns.c.game_id == game_id)
        if slot is not None:
            q = q.where(T.seat_turns.c.slot == slot)
        async with self._read() as conn:
            rows = await conn.execute(q.order_by(T.seat_turns.c.slot, T.seat_turns.c.seq))
            return [{**(r.data if isinstance(r.data, dict) else {}), "slot": r.slot,
                     "seq": r.seq, "day": r.day, "phase": r.phase} for r in rows]
