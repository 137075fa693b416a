"""Shared fixtures for the server tests.

- `db_url`: a real database, parametrized: a SQLite file in tmp_path, and a
  PostgreSQL database made for this test session (`tossim_srv_<random>` on the
  server at $TOSSIM_TEST_POSTGRES_URL, dropped at the end). `pg_url` is a
  PostgreSQL database of the test's own (for server processes that resume
  every live game they find).
- `server`: the app (`create_app(Settings)`) served by a real uvicorn server on
  a free loopback port inside the test's event loop, with an httpx client
  (ASGITransport, same app instance) for HTTP and `ws_connect` for websockets.
  `server_factory` makes more, with other settings.
- `serve_process`: `tossim serve` in a subprocess (stopped at teardown).

Without PostgreSQL or Redis the tests that need them skip, or fail when
CI=true.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tossim.server.app import create_app
from tossim.server.settings import Settings

from .support import (
    REDIS_URL,
    ServeProcess,
    Server,
    ServerFactory,
    fresh_pg_database,
    unavailable,
)


@pytest.fixture(scope="session")
def pg_session_url() -> Iterator[str]:
    """One PostgreSQL database for the whole session (in-process servers share
    it; they do not resume games, so each test only sees its own)."""
    with fresh_pg_database("tossim_srv") as url:
        yield url


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL database of this test's own (for servers that resume games)."""
    with fresh_pg_database("tossim_srv") as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'tossim.db'}"
    url: str = request.getfixturevalue("pg_session_url")
    return url


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The Redis server ($TOSSIM_TEST_REDIS_URL), checked once."""
    import redis

    try:
        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5, socket_timeout=5)
        client.ping()
        client.close()
    except Exception as exc:
        unavailable("Redis", f"cannot reach {REDIS_URL} (TOSSIM_TEST_REDIS_URL): "
                             f"{type(exc).__name__}: {exc}")
    return REDIS_URL

@pytest.fixture
async def server_factory(db_url: str) -> AsyncIterator[ServerFactory]:
    """`await server_factory(**settings)`: a running Server on `db_url`; stopped at
    teardown. Settings default to no resume (the session database is shared)."""
    started: list[Server] = []

    async def make(**overrides: Any) -> Server:
        # the tests make many lobbies and sockets from one address; the limits
        # have their own tests (test_server_slow_clients.py)
        values: dict[str, Any] = {"database_url": db_url, "resume": False, "demo": False,
                                  "lobby_rate_limit": 100_000,
                                  "max_connections_per_client": 0}
        values.update(overrides)
        settings = Settings(**values)
        srv = Server(create_app(settings), settings)
        await srv.start()
        started.append(srv)
        return srv

    try:
        yield make
    finally:
        for srv in reversed(started):
            await srv.stop()


@pytest.fixture
async def server(server_factory: ServerFactory) -> Server:
    return await server_factory()

@pytest.fixture
async def serve_process(tmp_path: Path) -> AsyncIterator[Callable[..., ServeProcess]]:
    """`serve_process(db, ...)`: start `tossim serve`; every one is stopped at teardown."""
    procs: list[ServeProcess] = []

    def start(db: str, **kw: Any) -> ServeProcess:
        log = tmp_path / f"serve-{len(procs)}.log"
        p = ServeProcess(db, log=log, **kw)
        procs.append(p)
        return p

    try:
        yield start
    finally:
        for p in procs:
            await p.stop()
