"""The store (tossim/store) and its Alembic migrations, on SQLite and PostgreSQL.

Every test runs twice: on a SQLite file in tmp_path, and on a fresh PostgreSQL
database made for the test (`tossim_test_<random>` on the server at
$TOSSIM_TEST_POSTGRES_URL, dropped afterwards), so migrations always start
from an empty database. Without PostgreSQL the PostgreSQL runs skip, or fail
when CI=true.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from tossim.agents.match import play_match
from tossim.engine import GameConfig, apply, command_from_dict, new_game
from tossim.engine.replay import LOG_FORMAT, check_record, event_lines, rerun
from tossim.store import ConflictError, GameNotFound, GameRow, SeatRow, Store, hash_token
from tossim.store.migrate import alembic_config, migrations_dir
from tossim.store.tables import metadata

PG_URL = os.environ.get("TOSSIM_TEST_POSTGRES_URL",
                        "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
TABLES = {"games", "seats", "commands", "events", "summaries", "seat_metrics", "game_leases"}


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def _unavailable(message: str) -> None:
    if _in_ci():
        pytest.fail(f"PostgreSQL is required in CI: {message}", pytrace=False)
    pytest.skip(message)


def _url_string(url: sa.URL) -> str:
    return url.render_as_string(hide_password=False)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A URL to an empty database: a SQLite file (in a folder that does not
    exist yet) or a new PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'data' / 'tossim.db'}"
        return
    admin = create_async_engine(PG_URL, isolation_level="AUTOCOMMIT", poolclass=NullPool,
                                connect_args={"timeout": 10})
    name = f"tossim_test_{uuid.uuid4().hex[:12]}"
    problem = None
    try:
        async with admin.connect() as conn:
            await asyncio.wait_for(conn.execute(sa.text(f'CREATE DATABASE "{name}"')), 30)
    except Exception as exc:  # unreachable, refused, no permission, ...
        problem = f"{type(exc).__name__}: {exc}"
    if problem is not None:
        await admin.dispose()
        _unavailable(f"cannot create a test database at {PG_URL} "
                     f"(TOSSIM_TEST_POSTGRES_URL): {problem}")
    try:
        yield _url_string(make_url(PG_URL).set(database=name))
    finally:
        async with admin.connect() as conn:
            await conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        await admin.dispose()


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    s = await Store.open(db_url)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture(params=["fast", "core"])
def any_path(request: pytest.FixtureRequest, store: Store) -> Store:
    """The store, appending through its dialect's own fast statement or
    through the portable SQLAlchemy Core form: both must behave the same."""
    if request.param == "core":
        store._fast = None
    else:
        assert store._fast == store.dialect
    return store


def gid() -> str:
    return uuid.uuid4().hex


CONFIG = GameConfig(players=3, seed=7, names=("Ann", "Bo", "Cy")).to_dict()
LOBBY: dict[str, Any] = {"mode": "classic", "players": 3, "speed": "fast",
                         "seats": [{"slot": 1, "kind": "human"}]}


def seats3() -> list[SeatRow]:
    return [
        SeatRow(slot=1, name="Player 1", kind="human"),
        SeatRow(slot=2, name="Player 2", kind="human"),
        SeatRow(slot=3, name="Player 3", kind="ai", backend="scripted", model=None,
                persona="rational", protocol="xml"),
    ]


def ev(v: int, *, day: int = 1, phase: str = "day1", secret: dict[str, Any] | None = None,
       **data: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"v": v, "day": day, "phase": phase, "key": "chat.public",
                           "audience": {"kind": "public", "players": []},
                           "text": f"event {v}", "data": data}
    if secret:
        out["secret"] = secret
    return out


def normal(value: Any) -> Any:
    """What a value is once it has been through JSON (tuples become lists)."""
    return json.loads(json.dumps(value))


# --- migrations --------------------------------------------------------------


async def test_migrations_create_every_table(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        head = ScriptDirectory.from_config(alembic_config()).get_current_head()
        assert head is not None
        assert await store.revision() == head

        def inspect(conn: sa.Connection) -> tuple[set[str], list[Any]]:
            names = set(sa.inspect(conn).get_table_names())
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            return names, compare_metadata(ctx, metadata)

        async with store.engine.connect() as conn:
            names, diffs = await conn.run_sync(inspect)
        assert TABLES | {"alembic_version"} <= names
        # tossim/store/tables.py (what the queries use) matches the migrations.
        assert diffs == []
    finally:
        await store.close()

    # Opening again is a no-op upgrade.
    again = await Store.open(db_url)
    assert await again.revision() == head
    await again.close()

    # And the migrations go back down to nothing.
    engine = create_async_engine(db_url, poolclass=NullPool)

    def down(conn: sa.Connection) -> set[str]:
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "base")
        return set(sa.inspect(conn).get_table_names())

    async with engine.begin() as conn:
        left = await conn.run_sync(down)
    await engine.dispose()
    assert not (TABLES & left)


async def test_open_without_migrate_does_not_create_tables(db_url: str) -> None:
    store = await Store.open(db_url, migrate=False)
    try:
        assert await store.revision() is None
        assert await store.ping()
    finally:
        await store.close()


def test_alembic_command_line(tmp_path: Path) -> None:
    """`alembic -c migrations/alembic.ini upgrade head` works on its own."""
    db = tmp_path / "cli.db"
    env = {**os.environ, "TOSSIM_DATABASE_URL": f"sqlite+aiosqlite:///{db}"}
    ini = migrations_dir() / "alembic.ini"
    for args in (["upgrade", "head"], ["current"]):
        out = subprocess.run([sys.executable, "-m", "alembic", "-c", str(ini), *args],
                             env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
    assert "(head)" in out.stdout
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        assert set(sa.inspect(conn).get_table_names()) >= TABLES
    engine.dispose()


async def test_sqlite_settings(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "t.db"
    store = await Store.open(f"sqlite+aiosqlite:///{path}")
    try:
        assert path.is_file()
        async with store.engine.connect() as conn:
            assert (await conn.execute(sa.text("PRAGMA journal_mode"))).scalar() == "wal"
            assert (await conn.execute(sa.text("PRAGMA synchronous"))).scalar() == 1  # NORMAL
            assert (await conn.execute(sa.text("PRAGMA foreign_keys"))).scalar() == 1
    finally:
        await store.close()


async def test_in_memory_sqlite() -> None:
    store = await Store.open("sqlite+aiosqlite://")
    try:
        await store.create_game("m1", CONFIG, LOBBY, seats3())
        row = await store.get_game("m1")
        assert row is not None and len(row.seats) == 3
        await asyncio.gather(*(store.append("m1", [(i, "timer", {"i": i})], [ev(i)], day=1,
                                            phase="day1") for i in range(1, 6)))
        assert [e["v"] for e in await store.events("m1", since=2)] == [3, 4, 5]
    finally:
        await store.close()


# --- games and seats ---------------------------------------------------------


async def test_create_get_list(store: Store) -> None:
    ids = [gid() for _ in range(3)]
    for i, game_id in enumerate(ids):
        await store.create_game(game_id, CONFIG, {**LOBBY, "n": i}, seats3(),
                                status="live" if i == 1 else "lobby")
        await asyncio.sleep(0.002)  # distinct created_at

    row = await store.get_game(ids[0])
    assert isinstance(row, GameRow)
    assert row.id == ids[0]
    assert row.status == "lobby"
    assert row.format == LOG_FORMAT == 1
    assert row.ruleset == CONFIG["ruleset"]
    assert row.config == CONFIG
    assert GameConfig.from_dict(row.config) == GameConfig.from_dict(CONFIG)
    assert row.lobby == {**LOBBY, "n": 0}
    assert (row.version, row.day, row.phase, row.result, row.winners) == (0, 0, "", None, [])
    assert row.created_at.tzinfo is not None and row.updated_at >= row.created_at
    assert row.seats == seats3()

    assert await store.get_game("nope") is None
    with pytest.raises(ConflictError):
        await store.create_game(ids[0], CONFIG, LOBBY, [])

    listed = await store.list_games()
    assert [g.id for g in listed] == ids[::-1]
    assert all(len(g.seats) == 3 for g in listed)
    assert [g.id for g in await store.list_games(status="live")] == [ids[1]]
    assert [g.id for g in await store.list_games(status="lobby")] == [ids[2], ids[0]]
    assert [g.id for g in await store.list_games(limit=2)] == [ids[2], ids[1]]
    assert await store.list_games(status="finished") == []


async def test_claim_seat_once(store: Store) -> None:
    game_id = gid()
    await store.create_game(game_id, CONFIG, LOBBY, seats3())
    assert await store.claim_seat(game_id, 1, "Alice", hash_token("t1"))
    assert not await store.claim_seat(game_id, 1, "Mallory", hash_token("t2"))
    assert not await store.claim_seat(game_id, 3, "Eve", hash_token("t3"))  # AI seat
    assert not await store.claim_seat(game_id, 9, "Nobody", hash_token("t4"))  # no such seat
    assert not await store.claim_seat(gid(), 1, "Nobody", hash_token("t5"))  # no such game
    row = await store.get_game(game_id)
    assert row is not None
    one, two, three = row.seats
    assert (one.name, one.claimed, one.token_hash) == ("Alice", True, hash_token("t1"))
    assert (two.claimed, two.token_hash) == (False, None)
    assert (three.name, three.claimed) == ("Player 3", False)

    # Many claims of one seat at once: exactly one wins.
    results = await asyncio.gather(*(store.claim_seat(game_id, 2, f"P{i}", hash_token(str(i)))
                                     for i in range(8)))
    assert sorted(results) == [False] * 7 + [True]


async def test_seat_for_token(store: Store) -> None:
    game_id, other = gid(), gid()
    await store.create_game(game_id, CONFIG, LOBBY, seats3())
    await store.create_game(other, CONFIG, LOBBY, seats3())
    token = "s3cr3t-token"
    assert await store.claim_seat(game_id, 2, "Bob", hash_token(token))
    seat = await store.seat_for_token(game_id, hash_token(token))
    assert seat is not None and (seat.slot, seat.name, seat.kind) == (2, "Bob", "human")
    assert await store.seat_for_token(game_id, hash_token("wrong")) is None
    assert await store.seat_for_token(other, hash_token(token)) is None
    assert hash_token(token) == hash_token(token) and len(hash_token(token)) == 64


async def test_status_and_live_games(store: Store) -> None:
    a, b, c = gid(), gid(), gid()
    for game_id in (a, b, c):
        await store.create_game(game_id, CONFIG, LOBBY, seats3())
        await asyncio.sleep(0.002)
    assert await store.live_game_ids() == []
    await store.start_game(a, {**CONFIG, "names": ["X", "Y", "Z"]})
    await store.set_status(b, "live")
    await store.set_status(c, "live")
    assert await store.live_game_ids() == [a, b, c]
    row = await store.get_game(a)
    assert row is not None and row.status == "live" and row.config["names"] == ["X", "Y", "Z"]
    with pytest.raises(ConflictError):
        await store.start_game(a, CONFIG)  # not a lobby any more
    with pytest.raises(GameNotFound):
        await store.start_game(gid(), CONFIG)

    await store.set_status(b, "finished", result="town", winners=[1, 3])
    await store.set_status(c, "aborted")
    assert await store.live_game_ids() == [a]
    row = await store.get_game(b)
    assert row is not None and (row.status, row.result, row.winners) == ("finished", "town", [1, 3])
    row = await store.get_game(c)
    assert row is not None and (row.status, row.result, row.winners) == ("aborted", None, [])
    with pytest.raises(GameNotFound):
        await store.set_status(gid(), "live")


# --- leases ------------------------------------------------------------------


async def test_leases_acquire_renew_expire_and_steal(store: Store) -> None:
    """One process runs a game at a time: a lease is taken by one owner only,
    renewed by it, taken over by another only once it has expired, and a
    renewal tells the old owner it lost the game."""
    a, b = gid(), gid()
    for game_id in (a, b):
        await store.create_game(game_id, CONFIG, LOBBY, seats3())
    t0 = datetime.now(UTC)
    await store.set_status(b, "live")
    assert await store.unleased_live_games(now=t0) == [b]  # live, nobody runs it
    await store.start_game(a, CONFIG, lease=("p1", 10))
    lease = await store.lease(a)
    assert lease is not None and lease.owner == "p1"
    assert lease.expires_at > lease.acquired_at
    assert await store.unleased_live_games(now=t0) == [b]  # a is leased

    # held: nobody else gets it; its owner extends it
    assert not await store.acquire_lease(a, "p2", 10, now=t0)
    assert await store.acquire_lease(a, "p1", 10, now=t0 + timedelta(seconds=5))
    renewed = await store.lease(a)
    assert renewed is not None and renewed.owner == "p1"
    assert renewed.expires_at > lease.expires_at and renewed.acquired_at == lease.acquired_at
    assert not await store.acquire_lease(a, "p2", 10, now=t0 + timedelta(seconds=14))
    assert await store.renew_leases("p1", [a, b], 10, now=t0 + timedelta(seconds=6)) == {a}

    # expired (p1 died): listed, and the first taker wins; the second loses
    late = t0 + timedelta(seconds=17)
    assert await store.unleased_live_games(now=late) == [a, b]
    assert await store.acquire_lease(a, "p2", 10, now=late)
    assert not await store.acquire_lease(a, "p3", 10, now=late)
    stolen = await store.lease(a)
    assert stolen is not None and stolen.owner == "p2" and stolen.acquired_at > lease.acquired_at
    # p1 wakes up: its renewal says it lost the game, and changes nothing
    assert await store.renew_leases("p1", [a], 10, now=late) == set()
    assert (await store.lease(a)) == stolen
    assert await store.unleased_live_games(now=late) == [b]

    # two takers race for a game nobody holds: exactly one wins
    wins = await asyncio.gather(*(store.acquire_lease(b, f"q{i}", 10) for i in range(6)))
    assert wins.count(True) == 1
    winner = await store.lease(b)
    assert winner is not None and winner.owner == f"q{wins.index(True)}"

    # releasing frees the game at once; only the owner's own leases go
    assert await store.release_leases("p3", [a]) == 0
    assert await store.release_leases("p2") == 1
    assert await store.lease(a) is None
    assert await store.acquire_lease(a, "p3", 10)
    # a lease cannot be taken for a game that does not exist, nor started
    # under another owner's live lease
    with pytest.raises(GameNotFound):
        await store.acquire_lease(gid(), "p1", 10)
    c = gid()
    await store.create_game(c, CONFIG, LOBBY, seats3())
    assert await store.acquire_lease(c, "other", 10)  # (a lobby's lease: unusual)
    with pytest.raises(ConflictError):
        await store.start_game(c, CONFIG, lease=("p1", 10))
    row = await store.get_game(c)
    assert row is not None and row.status == "lobby"  # nothing changed
    # finished games are not offered for takeover, leased or not
    await store.set_status(b, "finished")
    assert b not in await store.unleased_live_games(now=late + timedelta(hours=1))


async def test_concurrent_stealers_on_separate_connections(db_url: str) -> None:
    """Several stores (as several processes would) race to take one expired
    lease: exactly one takes it."""
    stores = [await Store.open(db_url) for _ in range(4)]
    try:
        game_id = gid()
        await stores[0].create_game(game_id, CONFIG, LOBBY, seats3(), status="live")
        t0 = datetime.now(UTC)
        assert await stores[0].acquire_lease(game_id, "dead", 1, now=t0)
        later = t0 + timedelta(seconds=5)
        for _ in range(5):
            wins = await asyncio.gather(*(s.acquire_lease(game_id, f"s{i}", 60, now=later)
                                          for i, s in enumerate(stores)))
            assert wins.count(True) == 1, wins
            lease = await stores[0].lease(game_id)
            assert lease is not None and lease.owner == f"s{wins.index(True)}"
            later += timedelta(seconds=61)  # the winner's lease expires too
    finally:
        for s in stores:
            await s.close()


# --- the log -----------------------------------------------------------------


async def test_append_round_trip(any_path: Store) -> None:
    store = any_path
    game_id = gid()
    await store.create_game(game_id, CONFIG, LOBBY, seats3(), status="live")
    commands = [
        (1, "seat:1", {"type": "chat", "actor": 1, "text": "Héllo ☃ 你好 — \"quoted\" \\ <tag>"}),
        (2, "timer", {"type": "timeout", "phase_seq": 0}),
        (3, "ai:3", {"type": "night", "actor": 3, "targets": [1, 2]}),
    ]
    events = [
        ev(1, text="x", nested={"a": [1, {"b": None, "c": [True, 2.5]}], "é": "ü"}),
        ev(2, secret={"jailor": 3, "why": ["anon"]}),
        {**ev(3, day=2, phase="night"), "audience": {"kind": "mafia", "players": [2, 5]},
         "text": "Ünïcödé ☃ 🐺", "data": {"tuple": (1, 2), "empty": {}, "s": ""}},
    ]
    await store.append(game_id, commands[:2], events[:2], day=1, phase="day1")
    await store.append(game_id, commands[2:], events[2:], day=2, phase="night")

    assert await store.commands(game_id) == commands
    got = await store.events(game_id)
    assert got == normal(events)
    assert "secret" not in got[0] and got[1]["secret"] == {"jailor": 3, "why": ["anon"]}
    assert list(got[0]) == ["v", "day", "phase", "key", "audience", "text", "data"]
    row = await store.get_game(game_id)
    assert row is not None and (row.version, row.day, row.phase) == (3, 2, "night")

    # An empty secret is stored as none; commands with no events are fine.
    await store.append(game_id, [(4, "seat:2", {"type": "will", "actor": 2, "text": ""})],
                       [{**ev(4), "secret": {}}], day=2, phase="night")
    await store.append(game_id, [(5, "seat:2", {"type": "vote", "actor": 2, "target": None})],
                       [], day=2, phase="night")
    assert "secret" not in (await store.events(game_id, since=3))[0]
    row = await store.get_game(game_id)
    assert row is not None and row.version == 4
    assert [s for s, _, _ in await store.commands(game_id)] == [1, 2, 3, 4, 5]

    with pytest.raises(GameNotFound):
        await store.append(gid(), [(1, "timer", {})], [ev(1)], day=1, phase="day1")


async def test_duplicate_raises_and_stores_nothing(any_path: Store) -> None:
    store = any_path
    game_id = gid()
    await store.create_game(game_id, CONFIG, LOBBY, seats3(), status="live")
    await store.append(game_id, [(1, "seat:1", {"n": 1}), (2, "seat:2", {"n": 2})],
                       [ev(1), ev(2), ev(3)], day=1, phase="day1")

    async def unchanged() -> None:
        row = await store.get_game(game_id)
        assert row is not None and (row.version, row.day, row.phase) == (3, 1, "day1")
        assert [s for s, _, _ in await store.commands(game_id)] == [1, 2]
        assert [e["v"] for e in await store.events(game_id)] == [1, 2, 3]
        assert (await store.events(game_id))[2]["text"] == "event 3"

    # a new command with an event version already stored
    with pytest.raises(ConflictError):
        await store.append(game_id, [(3, "seat:1", {"n": 3})], [{**ev(3), "text": "again"}],
                           day=2, phase="night")
    await unchanged()
    # a command seq already stored with new events
    with pytest.raises(ConflictError):
        await store.append(game_id, [(3, "seat:1", {"n": 3}), (2, "seat:1", {"n": 2})],
                           [ev(4), ev(5)], day=2, phase="night")
    await unchanged()
    # a command seq already stored, no events
    with pytest.raises(ConflictError):
        await store.append(game_id, [(1, "timer", {})], [], day=2, phase="night")
    await unchanged()
    # a duplicate inside one batch
    with pytest.raises(ConflictError):
        await store.append(game_id, [(3, "a", {}), (3, "b", {})], [ev(4)], day=2, phase="night")
    await unchanged()

    # Two writers racing for the next slot: exactly one wins.
    async def writer(name: str) -> bool:
        try:
            await store.append(game_id, [(3, name, {"who": name})], [ev(4), ev(5)],
                               day=1, phase="voting")
        except ConflictError:
            return False
        return True

    assert sorted(await asyncio.gather(*(writer(f"w{i}") for i in range(4)))) == [
        False, False, False, True]
    row = await store.get_game(game_id)
    assert row is not None and row.version == 5
    assert [s for s, _, _ in await store.commands(game_id)] == [1, 2, 3]


async def test_events_since(any_path: Store) -> None:
    store = any_path
    game_id = gid()
    await store.create_game(game_id, CONFIG, LOBBY, seats3(), status="live")
    for v in range(1, 21, 4):
        await store.append(game_id, [(v, "timer", {"v": v})],
                           [ev(i) for i in range(v, v + 4)], day=1, phase="day1")
    assert [e["v"] for e in await store.events(game_id)] == list(range(1, 21))
    assert [e["v"] for e in await store.events(game_id, since=13)] == list(range(14, 21))
    assert await store.events(game_id, since=20) == []
    assert await store.events(gid()) == []
    assert await store.commands(gid()) == []


# --- summaries and metrics ---------------------------------------------------


async def test_summaries(store: Store) -> None:
    game_id = gid()
    await store.create_game(game_id, CONFIG, LOBBY, seats3())
    assert await store.summaries(game_id) == []
    await store.add_summary(game_id, 2, "Day 2: Bo claimed Sheriff — ☃.")
    await store.add_summary(game_id, 1, "Day 1: quiet.")
    await store.add_summary(game_id, 2, "Day 2, later.")
    assert await store.summaries(game_id) == [
        (1, "Day 1: quiet."), (2, "Day 2: Bo claimed Sheriff — ☃."), (2, "Day 2, later.")]


async def test_a_model_summary_replaces_the_fallback(store: Store) -> None:
    game_id = gid()
    await store.create_game(game_id, CONFIG, LOBBY, seats3())
    await store.add_summary(game_id, 1, "Votes against Bo: Al.")
    await store.replace_summary(game_id, 1, "Al pushed Bo; nobody claimed.")
    await store.replace_summary(game_id, 2, "Day 2 had no fallback stored.")
    assert await store.summaries(game_id) == [
        (1, "Al pushed Bo; nobody claimed."), (2, "Day 2 had no fallback stored.")]


async def test_metrics_upsert(store: Store) -> None:
    game_id = gid()
    await store.create_game(game_id, CONFIG, LOBBY, seats3())
    assert await store.metrics(game_id) == {}
    await store.save_metrics(game_id, 3, {"turns": 1, "faults": {"premise": 0}})
    await store.save_metrics(game_id, 2, {"turns": 5})
    await store.save_metrics(game_id, 3, {"turns": 2, "faults": {"premise": 1}, "ms": [1.5]})
    assert await store.metrics(game_id) == {
        2: {"turns": 5}, 3: {"turns": 2, "faults": {"premise": 1}, "ms": [1.5]}}


# --- a whole game ------------------------------------------------------------


def _origin(cmd: dict[str, Any]) -> str:
    return "timer" if cmd.get("type") == "timeout" else f"seat:{cmd.get('actor')}"


async def test_store_a_real_game(store: Store) -> None:
    config = GameConfig(players=15, seed=3)
    played = play_match(config).game
    assert played.ended

    game_id = gid()
    seats = [SeatRow(slot=i, name=f"Player {i}", kind="ai", backend="scripted")
             for i in range(1, 16)]
    await store.create_game(game_id, config.to_dict(), {"speed": "fast"}, seats)
    await store.start_game(game_id, config.to_dict())

    # Re-run it the way the server does: the opening events, then a batch of
    # a few commands with the events they produced.
    game = new_game(config)
    await store.append(game_id, [], [e.to_dict() for e in game.events],
                       day=game.day, phase=game.phase.value)
    batch_c: list[tuple[int, str, dict[str, Any]]] = []
    batch_e: list[dict[str, Any]] = []
    for seq, raw in enumerate(played.commands, start=1):
        batch_e.extend(e.to_dict() for e in apply(game, command_from_dict(raw)))
        batch_c.append((seq, _origin(raw), raw))
        if len(batch_c) == 4 or seq == len(played.commands):
            await store.append(game_id, batch_c, batch_e, day=game.day, phase=game.phase.value)
            batch_c, batch_e = [], []
    await store.set_status(game_id, "finished", result=game.result, winners=list(game.winners))
    assert event_lines(game) == event_lines(played)

    row = await store.get_game(game_id)
    assert row is not None
    assert (row.status, row.result, row.winners) == ("finished", played.result,
                                                     list(played.winners))
    assert row.version == len(played.events) == played.events[-1].v
    assert (row.day, row.phase) == (played.day, played.phase.value)
    commands = await store.commands(game_id)
    events = await store.events(game_id)
    assert [c for _, _, c in commands] == normal(played.commands)
    assert [s for s, _, _ in commands] == list(range(1, len(played.commands) + 1))
    assert events == normal([e.to_dict() for e in played.events])

    # The stored config and commands rebuild the same events, byte for byte.
    rebuilt = rerun(GameConfig.from_dict(row.config), [c for _, _, c in commands])
    stored_lines = [json.dumps(e, sort_keys=True, ensure_ascii=False) for e in events]
    assert event_lines(rebuilt) == stored_lines
    report = check_record({"format": row.format, "ruleset": row.ruleset, "config": row.config,
                           "commands": [c for _, _, c in commands], "events": events})
    assert report.identical, report.detail


async def test_fast_and_core_appends_store_the_same_rows(store: Store) -> None:
    a, b = gid(), gid()
    Batch = tuple[list[tuple[int, str, dict[str, Any]]], list[dict[str, Any]], int, str]
    batches: list[Batch] = [
        ([(1, "seat:1", {"type": "chat", "actor": 1, "text": "é ☃ \"q\""})],
         [ev(1, x=[1, {"y": None}]), ev(2, secret={"s": [1]})], 1, "day1"),
        ([], [ev(3, day=2, phase="night")], 2, "night"),
        ([(2, "timer", {"type": "timeout"})], [], 2, "night"),
    ]
    for game_id, fast in ((a, store._fast), (b, None)):
        await store.create_game(game_id, CONFIG, LOBBY, seats3(), status="live")
        store._fast = fast
        for cmds, evs, day, phase in batches:
            await store.append(game_id, cmds, evs, day=day, phase=phase)

    def raw(conn: sa.Connection, game_id: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for table, order, stamp in (("games", "id", "updated_at"),
                                    ("commands", "seq", "created_at"),
                                    ("events", "v", None)):
            key = "id" if table == "games" else "game_id"
            rows = conn.execute(sa.text(f"SELECT * FROM {table} WHERE {key} = :g "
                                        f"ORDER BY {order}"), {"g": game_id}).mappings().all()
            out[table] = [{k: v for k, v in r.items() if k not in (key, stamp, "created_at")}
                          for r in rows]
            out[table + " stamps"] = [type(r[stamp]) for r in rows] if stamp else []
            if store.dialect == "sqlite" and stamp:
                out[table + " stamps"] = [len(r[stamp]) for r in rows]  # same text form
        return out

    async with store.engine.connect() as conn:
        fast_rows = await conn.run_sync(raw, a)
        core_rows = await conn.run_sync(raw, b)
    assert fast_rows == core_rows
    assert fast_rows["games"][0]["version"] == 3
    assert len(fast_rows["events"]) == 3 and fast_rows["events"][0]["secret"] is None
    ga, gb = await store.get_game(a), await store.get_game(b)
    assert ga is not None and gb is not None
    assert ga.updated_at.tzinfo is not None and ga.updated_at >= ga.created_at
    assert await store.events(a) == await store.events(b)
    assert await store.commands(a) == await store.commands(b)
