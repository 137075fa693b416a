"""Helpers for the server tests: databases, an in-process uvicorn server, a
websocket client for the game protocol, `tossim serve` subprocesses."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import uvicorn
from fastapi import FastAPI
from pydantic import ValidationError
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_client_connect

from tossim.engine import GameConfig, new_game
from tossim.server.limits import bounded_http_protocol
from tossim.server.settings import Settings
from tossim.server.wire import SERVER

PG_URL = os.environ.get("TOSSIM_TEST_POSTGRES_URL",
                        "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("TOSSIM_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
REPO = Path(__file__).resolve().parents[2]
TOSSIM_BIN = Path(sys.executable).with_name("tossim")

# How long a test waits for something the server is expected to do (generous:
# the CI machine has two cores). Never used as a timing assertion.
WAIT = 60.0


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def unavailable(service: str, message: str) -> None:
    """Skip (locally) or fail (CI) a test whose service cannot be reached."""
    if in_ci():
        pytest.fail(f"{service} is required in CI: {message}", pytrace=False)
    pytest.skip(f"{service} not available: {message}")


# --- PostgreSQL ----------------------------------------------------------------------


async def _admin(sql: str) -> None:
    admin = create_async_engine(PG_URL, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        async with admin.connect() as conn:
            await asyncio.wait_for(conn.execute(sa.text(sql)), 30)
    finally:
        await admin.dispose()


def _pg_create(prefix: str) -> str:
    """Create a new empty database (sync; runs its own event loop) and return its URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # unreachable, refused, no permission, ...
        unavailable("PostgreSQL", f"cannot create a test database at {PG_URL} "
                                  f"(TOSSIM_TEST_POSTGRES_URL): {type(exc).__name__}: {exc}")
    return make_url(PG_URL).set(database=name).render_as_string(hide_password=False)


def _pg_drop(url: str) -> None:
    name = make_url(url).database
    with contextlib.suppress(Exception):
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextlib.contextmanager
def fresh_pg_database(prefix: str = "tossim_srv") -> Iterator[str]:
    """A new PostgreSQL database for one test, dropped afterwards.
    Call it from a sync context (a sync fixture or before the loop runs)."""
    url = _pg_create(prefix)
    try:
        yield url
    finally:
        _pg_drop(url)



# --- in-process server ---------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Uvicorn(uvicorn.Server):
    """uvicorn without its signal handlers (it runs inside the test's loop)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class Server:
    """An app served by uvicorn on 127.0.0.1:<port> in this event loop."""

    def __init__(self, app: FastAPI, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.ws_base = f"ws://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="warning", lifespan="on", ws_max_size=4 << 20,
                                http=bounded_http_protocol(settings))
        self.uvicorn = _Uvicorn(config)
        self.task: asyncio.Task[None] | None = None
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                        base_url="http://testserver", timeout=WAIT)

    @property
    def store(self) -> Any:
        return self.app.state.store

    async def start(self) -> None:
        self.task = asyncio.create_task(self.uvicorn.serve(sockets=[self.sock]))
        deadline = time.monotonic() + WAIT
        while not self.uvicorn.started:
            if self.task.done():
                self.task.result()  # raise what stopped it
                raise RuntimeError("uvicorn stopped before it started")
            if time.monotonic() > deadline:
                raise TimeoutError("uvicorn did not start")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        await self.client.aclose()
        if self.task is not None:
            self.uvicorn.should_exit = True
            try:
                await asyncio.wait_for(self.task, WAIT)
            except TimeoutError:
                self.uvicorn.force_exit = True
                self.task.cancel()
                with contextlib.suppress(BaseException):
                    await self.task
        self.sock.close()

    def ws_connect(self, path: str, **kw: Any) -> Any:
        return ws_connect(self.ws_base + path, **kw)

    def seat_connect(self, game_id: str, token: str, since: int | None = None,
                     **kw: Any) -> Any:
        return seat_connect(self.ws_base, game_id, token, since, **kw)


ServerFactory = Callable[..., Awaitable[Server]]



# --- websockets ----------------------------------------------------------------------


class WS:
    """A websocket client speaking the game protocol (JSON messages). On a
    game socket (`wire`), every message received must be one of the wire's
    server messages (tossim/server/wire.py, docs/api.md "Websocket"), with no
    field the models lack."""

    def __init__(self, conn: ClientConnection, wire: bool = False) -> None:
        self.conn = conn
        self.wire = wire
        self.messages: list[dict[str, Any]] = []

    async def send(self, message: Any) -> None:
        await self.conn.send(message if isinstance(message, str | bytes)
                             else json.dumps(message))

    async def recv(self, timeout: float = WAIT) -> dict[str, Any]:
        raw = await asyncio.wait_for(self.conn.recv(), timeout)
        msg = json.loads(raw)
        assert isinstance(msg, dict), msg
        if self.wire:
            try:
                SERVER.validate_python(msg)
            except ValidationError as exc:
                raise AssertionError(f"not a wire message: {str(raw)[:300]!r}: {exc}") from None
        self.messages.append(msg)
        return msg

    async def recv_type(self, kind: str, timeout: float = WAIT) -> dict[str, Any]:
        """The next message of this type (others are kept in self.messages)."""
        deadline = time.monotonic() + timeout
        while True:
            msg = await self.recv(max(0.01, deadline - time.monotonic()))
            if msg["type"] == kind:
                return msg

    async def until(self, done: Callable[[dict[str, Any]], bool],
                    timeout: float = WAIT) -> dict[str, Any]:
        """Read messages until one satisfies `done`; return it."""
        deadline = time.monotonic() + timeout
        while True:
            msg = await self.recv(max(0.01, deadline - time.monotonic()))
            if done(msg):
                return msg

    def events(self) -> list[dict[str, Any]]:
        """Every event received so far, in order."""
        return [e for m in self.messages if m["type"] == "events" for e in m["events"]]

    async def close(self) -> None:
        await self.conn.close()


@asynccontextmanager
async def ws_connect(url: str, **kw: Any) -> AsyncIterator[WS]:
    async with ws_client_connect(url, max_size=None, open_timeout=WAIT,
                                 close_timeout=5, **kw) as conn:
        yield WS(conn, wire="/ws/games/" in url)


@asynccontextmanager
async def seat_connect(ws_base: str, game_id: str, token: str, since: int | None = None,
                       **kw: Any) -> AsyncIterator[WS]:
    """A seat's socket: the token (and `since`) go in the first message,
    never in the URL."""
    async with ws_connect(f"{ws_base}/ws/games/{game_id}", **kw) as ws:
        auth: dict[str, Any] = {"type": "auth", "token": token}
        if since is not None:
            auth["since"] = since
        await ws.send(auth)
        yield ws


def finished(msg: dict[str, Any]) -> bool:
    """An events message showing the game over."""
    return msg["type"] == "events" and msg.get("state", {}).get("phase") == "ended"


# --- HTTP helpers --------------------------------------------------------------------


# game id -> its lobby's owner token (POST /api/lobbies shows it once)
OWNER_TOKENS: dict[str, str] = {}


def owner(game_id: str) -> dict[str, str]:
    """The headers that authorise the lobby owner's requests (start, settings)."""
    return {"Authorization": f"Bearer {OWNER_TOKENS[game_id]}"}


def remember(r: httpx.Response) -> str:
    """A created lobby's id, keeping its owner token for `owner()`."""
    assert r.status_code == 201, r.text
    game_id: str = r.json()["id"]
    OWNER_TOKENS[game_id] = r.json()["owner_token"]
    return game_id


async def create_game(client: httpx.AsyncClient, *, start: bool = True,
                      **body: Any) -> str:
    game_id = remember(await client.post("/api/lobbies", json=body))
    if start:
        r = await client.post(f"/api/lobbies/{game_id}/start", headers=owner(game_id))
        assert r.status_code == 200, r.text
    return game_id


async def wait_game(client: httpx.AsyncClient, game_id: str,
                    done: Callable[[dict[str, Any]], bool], timeout: float = WAIT,
                    poll: float = 0.05) -> dict[str, Any]:
    """Poll GET /api/games/{id} until `done(summary)`."""
    deadline = time.monotonic() + timeout
    while True:
        r = await client.get(f"/api/games/{game_id}")
        assert r.status_code == 200, r.text
        summary: dict[str, Any] = r.json()
        if done(summary):
            return summary
        if time.monotonic() > deadline:
            raise TimeoutError(f"game {game_id}: still {summary['status']} "
                               f"v{summary['version']} after {timeout} s")
        await asyncio.sleep(poll)


def is_finished(summary: dict[str, Any]) -> bool:
    return summary["status"] == "finished"


# --- server processes ----------------------------------------------------------------


class ServeProcess:
    """`tossim serve` in a subprocess, with its output in a log file."""

    def __init__(self, db: str, *, port: int | None = None, redis: str | None = None,
                 resume: bool = True, env: dict[str, str] | None = None,
                 preload: bool = False, log: Path) -> None:
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.ws_base = f"ws://127.0.0.1:{self.port}"
        self.log_path = log
        args = [str(TOSSIM_BIN), "serve", "--host", "127.0.0.1", "--port", str(self.port),
                "--db", db]
        if redis:
            args += ["--redis", redis]
        if not resume:
            args.append("--no-resume")
        if not preload:  # these servers' games seat no model of this process
            args.append("--no-preload")
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("TOSSIM_")}
        # the tests make many lobbies from one address (the limit has its own test)
        full_env["TOSSIM_LOBBY_RATE_LIMIT"] = "100000"
        full_env.update(env or {})
        self._log = log.open("ab")
        self.proc = subprocess.Popen(args, cwd=REPO, env=full_env, stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.client = httpx.AsyncClient(base_url=self.base_url, timeout=WAIT)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    async def wait_ready(self, timeout: float = WAIT) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tossim serve exited with {self.proc.returncode}:\n"
                                   f"{self.output()[-4000:]}")
            with contextlib.suppress(httpx.HTTPError):
                r = await self.client.get("/api/health")
                if r.status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(f"tossim serve did not answer:\n{self.output()[-4000:]}")
            await asyncio.sleep(0.1)

    def kill(self) -> None:
        """kill -9: no shutdown, no flush."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    async def stop(self) -> None:
        await self.client.aclose()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()

    def ws_connect(self, path: str, **kw: Any) -> Any:
        return ws_connect(self.ws_base + path, **kw)

    def seat_connect(self, game_id: str, token: str, since: int | None = None,
                     **kw: Any) -> Any:
        return seat_connect(self.ws_base, game_id, token, since, **kw)


# --- games with a human seat ---------------------------------------------------------

PLAIN_TOWN = {"sheriff", "investigator", "doctor", "lookout", "escort", "vigilante",
              "bodyguard", "spy", "transporter", "veteran"}


def deals(players: int, slot: int, roles: set[str], seed: int) -> bool:
    """Whether `seed` deals `slot` one of `roles`."""
    return new_game(GameConfig(players=players, seed=seed)).player(slot).role in roles


async def human_game(server: Server, *, players: int = 7, slot: int = 1,
                     roles: set[str] | None = None, name: str = "Alice",
                     **lobby: Any) -> tuple[str, str]:
    """A started standard-speed game with one joined human seat: (game id, token).
    With `roles`, lobbies are made until the server's (secret) deal gives the
    human one of them: the test reads the dealt seed from the store."""
    c = server.client
    body: dict[str, Any] = {"players": players, "seats": [{"slot": slot, "kind": "human"}],
                            **lobby}
    for _ in range(200):
        game_id = await create_game(c, start=False, **body)
        row = await server.store.get_game(game_id)
        if roles is None or deals(players, slot, roles, row.config["seed"]):
            break
    else:
        raise AssertionError(f"no deal gave seat {slot} one of {sorted(roles or ())}")
    r = await c.post(f"/api/lobbies/{game_id}/join", json={"name": name, "slot": slot})
    assert r.status_code == 200, r.text
    r2 = await c.post(f"/api/lobbies/{game_id}/start", headers=owner(game_id))
    assert r2.status_code == 200, r2.text
    return game_id, str(r.json()["token"])


async def quiet(ws: WS, seconds: float = 0.5) -> list[dict[str, Any]]:
    """Read until nothing arrives for `seconds` (the AI seats have answered)."""
    got = []
    while True:
        try:
            got.append(await ws.recv(seconds))
        except TimeoutError:
            return got


async def snapshot(server: Server, game_id: str) -> tuple[Any, ...]:
    """Everything that would change if a command were applied."""
    c = server.client
    summary = (await c.get(f"/api/games/{game_id}")).json()
    replay = (await c.get(f"/api/games/{game_id}/replay")).json()
    return (summary["version"], summary["phase"], replay["events"],
            await server.store.commands(game_id), await server.store.events(game_id))


async def read_to_end(ws: WS, timeout: float = 120) -> list[dict[str, Any]]:
    """Every message a socket got until its game ended."""
    await ws.until(finished, timeout=timeout)
    return ws.messages


async def watch_thinking(server: Server, game_id: str, gate: asyncio.Event
                         ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An omniscient and a public spectator of a game whose AI seats wait on
    `gate`: both subscribe, then the seats may think; what each got to the end."""
    async with server.ws_connect(f"/ws/games/{game_id}/watch?viewer=omniscient") as omni, \
            server.ws_connect(f"/ws/games/{game_id}/watch?viewer=public") as public:
        assert (await omni.recv())["type"] == "hello"
        assert (await public.recv())["type"] == "hello"
        await asyncio.sleep(0.2)  # both subscribed before anyone thinks
        gate.set()
        seen_omni, seen_public = await asyncio.gather(read_to_end(omni), read_to_end(public))
    return seen_omni, seen_public


@asynccontextmanager
async def running_worker(worker: Any) -> AsyncIterator[Any]:
    """A `tossim.worker.client.Worker` connected for the block, stopped after."""
    task = asyncio.create_task(worker.run(retry=0.1, max_retry=0.5))
    try:
        await asyncio.wait_for(worker.connected.wait(), 30)
        yield worker
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
