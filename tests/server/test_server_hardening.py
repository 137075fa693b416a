"""A server open to strangers (issue 14): fair deals, secrets kept out of URLs
and logs, limits per seat and per client, names that cannot impersonate,
clean errors for odd input."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect as ws_client_connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tossim.engine import GameConfig, new_game
from tossim.engine.replay import rerun
from tossim.server.service import fair_seed
from tossim.server.settings import Settings, StartRefused

from .support import (
    PLAIN_TOWN,
    REPO,
    ServeProcess,
    Server,
    ServerFactory,
    create_game,
    human_game,
    is_finished,
    owner,
    remember,
    wait_game,
)


def deal(players: int, seed: int) -> list[str]:
    return [p.role for p in new_game(GameConfig(players=players, seed=seed)).players]


async def test_fair_deal_creator_seed_does_not_give_the_deal(
        server_factory: ServerFactory) -> None:
    """A lobby with a human seat asks for seed 5: the deal comes from the
    server's secret, the seed stays hidden while the game is live, and is shown
    (with an exact replay) once it is over."""
    server = await server_factory(time_scale=0.01, deal_secret="unit-test-secret")
    c = server.client
    game_id, _token = await human_game(server, seed=5)
    row = await server.store.get_game(game_id)
    seed = row.config["seed"]
    assert seed != 5
    assert seed == fair_seed(b"unit-test-secret", game_id, 5)
    # the same creator seed in another lobby gives another deal
    other, _ = await human_game(server, seed=5, name="Bob")
    assert (await server.store.get_game(other)).config["seed"] != seed

    # live: no seed anywhere public
    for path in (f"/api/games/{game_id}", f"/api/lobbies/{game_id}",
                 f"/api/games/{game_id}/replay"):
        r = await c.get(path)
        assert r.status_code == 200
        assert str(seed) not in r.text
    assert (await c.get(f"/api/games/{game_id}/replay",
                        params={"viewer": "omniscient"})).status_code == 403

    await wait_game(c, game_id, is_finished)
    rp = (await c.get(f"/api/games/{game_id}/replay", params={"viewer": "omniscient"})).json()
    assert rp["seed"] == seed
    game = rerun(GameConfig.from_dict(rp["config"]), rp["commands"])
    replayed = json.loads(json.dumps([e.to_dict() for e in game.events]))
    assert replayed == await server.store.events(game_id)
    # the deal is the stored seed's (the creator's 5 would have dealt its own)
    dealt = [p.role for p in rerun(GameConfig.from_dict(rp["config"]), []).players]
    assert dealt == deal(7, seed)


async def test_all_ai_games_keep_the_creator_seed(server_factory: ServerFactory) -> None:
    server = await server_factory()
    r = await server.client.post("/api/lobbies", json={"players": 7, "seed": 5})
    assert (await server.store.get_game(r.json()["id"])).config["seed"] == 5


async def test_patched_to_human_seats_is_dealt_fairly(server_factory: ServerFactory) -> None:
    """An all-AI lobby asks for seed 4242, then its owner makes seat 1 human:
    the start deals from the fair seed, not from 4242. The other way round,
    a lobby left with AI seats only is dealt from the seed it asked for."""
    server = await server_factory(time_scale=0.01, deal_secret="unit-test-secret")
    c = server.client
    game_id = await create_game(c, start=False, players=7, seed=4242)
    r = await c.patch(f"/api/lobbies/{game_id}", headers=owner(game_id),
                      json={"seats": [{"slot": 1, "kind": "human"}]})
    assert r.status_code == 200, r.text
    assert (await c.post(f"/api/lobbies/{game_id}/join", json={"name": "Ann"})
            ).status_code == 200
    assert (await c.post(f"/api/lobbies/{game_id}/start", headers=owner(game_id))
            ).status_code == 200
    seed = (await server.store.get_game(game_id)).config["seed"]
    assert seed == fair_seed(b"unit-test-secret", game_id, 4242) != 4242

    other = await create_game(c, start=False, players=7, seed=4242,
                              seats=[{"slot": 1, "kind": "human"}])
    r = await c.patch(f"/api/lobbies/{other}", headers=owner(other),
                      json={"seats": [{"slot": 1, "kind": "ai"}]})
    assert r.status_code == 200, r.text
    assert (await c.post(f"/api/lobbies/{other}/start", headers=owner(other))
            ).status_code == 200
    assert (await server.store.get_game(other)).config["seed"] == 4242


# --- the deal secret -------------------------------------------------------------------


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's data folder (XDG_DATA_HOME) for this test; no secret set."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("TOSSIM_DEAL_SECRET", raising=False)
    monkeypatch.delenv("TOSSIM_SECRET_FILE", raising=False)
    return tmp_path / "data"


def git_tree(folder: Path) -> Path:
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def test_server_secret_kept_in_the_user_data_folder(tmp_path: Path, data_home: Path) -> None:
    """Generated once (0600) in the data folder, not beside the database
    (which defaults to the current folder, often a clone)."""
    db = f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"
    first = Settings(database_url=db).server_secret()
    path = data_home / "tossim" / "server-secret"
    assert path.exists() and os.stat(path).st_mode & 0o777 == 0o600
    assert not (tmp_path / "tossim-server-secret").exists()
    assert Settings(database_url=db).server_secret() == first and len(first) >= 32
    assert "zz" not in repr(Settings(database_url=db, deal_secret="zz"))


def test_the_repository_holds_no_secret() -> None:
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "--", "*secret*"],
                             capture_output=True, text=True, check=True).stdout
    assert tracked.split() == [], tracked
    ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q",
                              "tossim-server-secret"], check=False)
    assert ignored.returncode == 0


def refused_serve(monkeypatch: pytest.MonkeyPatch, args: list[str],
                  env: dict[str, str]) -> str:
    """`tossim serve ARGS` with ENV: it must exit 2 before serving; its message."""
    import uvicorn
    from typer.testing import CliRunner

    from tossim.cli import app

    def serving(*_: Any, **__: Any) -> None:
        raise AssertionError("the server started")

    monkeypatch.setattr(uvicorn, "run", serving)
    result = CliRunner().invoke(app, ["serve", *args], env=env)
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    return " ".join(result.output.split())


@pytest.mark.parametrize("tracked", [True, False])
def test_secret_in_a_git_work_tree_is_refused(tmp_path: Path, data_home: Path, tracked: bool,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A secret file in a clone (committed, or only lying there) stops the start,
    saying why and how to make a new one."""
    tree = git_tree(tmp_path / "clone")
    path = tree / "tossim-server-secret"
    path.write_text("0" * 64 + "\n")
    path.chmod(0o600)
    if tracked:
        subprocess.run(["git", "-C", str(tree), "add", path.name], check=True)
    with pytest.raises(StartRefused) as refused:
        Settings(secret_file=str(path)).server_secret()
    message = str(refused.value)
    assert ("tracked by git" if tracked else "inside the git work tree") in message
    assert "tossim new-secret" in message and "0" * 64 not in message
    out = refused_serve(monkeypatch, ["--db", f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"],
                        {"TOSSIM_SECRET_FILE": str(path)})
    assert "refusing to start" in out and "tossim new-secret" in out
    # nor is a new one made inside a work tree
    with pytest.raises(StartRefused):
        Settings(secret_file=str(tree / "sub" / "fresh-secret")).server_secret()
    assert not (tree / "sub" / "fresh-secret").exists()


def test_secret_readable_by_others_is_refused_until_remade(
        tmp_path: Path, data_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = data_home / "tossim" / "server-secret"
    old = Settings().server_secret()
    path.chmod(0o644)
    with pytest.raises(StartRefused) as refused:
        Settings().server_secret()
    assert "read by other users" in str(refused.value)
    assert "tossim new-secret" in str(refused.value)
    assert "refusing to start" in refused_serve(monkeypatch, [], {})
    from typer.testing import CliRunner

    from tossim.cli import app
    done = CliRunner().invoke(app, ["new-secret"])
    assert done.exit_code == 0, done.output
    assert os.stat(path).st_mode & 0o777 == 0o600
    new = Settings().server_secret()
    assert new != old and len(new) >= 32


def test_a_published_secret_is_refused(tmp_path: Path, data_home: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of a secret the repository published (kept outside the work
    tree, or given in the environment) is refused like a tracked file."""
    from tossim.server import settings as settings_module
    leaked = "ab" * 32
    monkeypatch.setattr(settings_module, "PUBLISHED_SECRETS", frozenset(
        {hashlib.sha256(leaked.encode()).hexdigest()}))
    path = tmp_path / "copied-secret"
    path.write_text(leaked + "\n")
    path.chmod(0o600)
    with pytest.raises(StartRefused, match="once published"):
        Settings(secret_file=str(path)).server_secret()
    with pytest.raises(StartRefused, match="once published"):
        Settings(deal_secret=leaked).server_secret()
    assert Settings(deal_secret="cd" * 32).server_secret() == b"cd" * 32


# --- the worker token ------------------------------------------------------------------


@pytest.mark.parametrize(("host", "inference", "token", "refused"), [
    ("0.0.0.0", "workers", None, "no worker token"),
    ("0.0.0.0", "workers", "change-me", "published default"),
    ("0.0.0.0", "local", "change-me", "published default"),
    ("192.0.2.7", "workers", "k" * 31, "too short"),
    ("0.0.0.0", "workers", "k" * 32, None),
    ("0.0.0.0", "local", None, None),  # no token: workers from this machine only
    ("127.0.0.1", "workers", None, None),  # the one-machine mode
    ("::1", "workers", "change-me", None),
    ("localhost", "workers", None, None),
])
def test_worker_token_others_could_guess_is_refused(
        host: str, inference: str, token: str | None, refused: str | None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(host=host, inference=inference, worker_token=token,
                        deal_secret="unit-test-secret")
    if refused is None:
        settings.check_start()
        return
    with pytest.raises(StartRefused) as exc:
        settings.check_start()
    assert refused in str(exc.value) and "TOSSIM_WORKER_TOKEN" in str(exc.value)
    env = {"TOSSIM_INFERENCE": inference, "TOSSIM_DEAL_SECRET": "unit-test-secret",
           "TOSSIM_WORKER_TOKEN": token or ""}
    assert refused in refused_serve(monkeypatch, ["--host", host], env)


def test_compose_file_has_no_default_worker_token() -> None:
    compose = (REPO / "docker-compose.yml").read_text()
    assert "change-me" not in compose
    assert compose.count("${TOSSIM_WORKER_TOKEN:?") == 2  # compose stops, saying how


async def test_tokens_never_reach_the_log(
        serve_process: Callable[..., ServeProcess], tmp_path: Path) -> None:
    """`tossim serve`: seats and a worker connect (the right way, and with a
    token in the URL, which is refused); the log has no token and no secret."""
    worker_token, secret = "wt-" + "k" * 30, "deal-" + "s" * 30
    proc = serve_process(f"sqlite+aiosqlite:///{tmp_path / 'serve.db'}",
                         env={"TOSSIM_INFERENCE": "workers",
                              "TOSSIM_WORKER_TOKEN": worker_token,
                              "TOSSIM_DEAL_SECRET": secret})
    await proc.wait_ready()
    c = proc.client
    game_id = remember(await c.post("/api/lobbies", json={"players": 7, "seats": [
        {"slot": 1, "kind": "human"}, {"slot": 2, "kind": "human"}]}))
    tokens = []
    for slot, name in ((1, "Ann"), (2, "Bea")):
        r = await c.post(f"/api/lobbies/{game_id}/join", json={"name": name, "slot": slot})
        tokens.append(r.json()["token"])
    r = await c.post(f"/api/lobbies/{game_id}/start", headers=owner(game_id))
    assert r.status_code == 200, r.text
    for token in tokens:
        async with proc.seat_connect(game_id, token) as ws:
            assert (await ws.recv())["type"] == "hello"
        async with proc.ws_connect(f"/ws/games/{game_id}?token={token}&since=0") as ws:
            with pytest.raises(ConnectionClosed) as closed:
                await ws.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4400
            assert "first message" in closed.value.rcvd.reason
    hello = {"type": "hello", "backends": ["local"], "name": "w", "token": worker_token}
    async with proc.ws_connect("/ws/workers") as ws:
        await ws.send(hello)
        assert (await ws.recv())["type"] == "welcome"
    async with proc.ws_connect(f"/ws/workers?token={worker_token}") as ws:
        with pytest.raises(ConnectionClosed) as closed:
            await ws.send(hello)
            await ws.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4400
    # a token in an HTTP URL is blanked from the access line too
    assert (await c.get(f"/api/games/{game_id}?token={tokens[0]}")).status_code == 200
    await proc.stop()
    log = proc.output()
    assert f"WebSocket /ws/games/{game_id}" in log and "/ws/workers" in log  # lines logged
    assert f"GET /api/games/{game_id}?token=[redacted]" in log
    assert "Logging error" not in log
    assert "token=[redacted]" in log
    for token in (*tokens, worker_token, secret):
        assert token not in log


# --- limits --------------------------------------------------------------------------


async def test_chat_limit_is_per_seat_across_sockets(server_factory: ServerFactory) -> None:
    server = await server_factory(time_scale=100.0, chat_limit_messages=5,
                                  chat_limit_seconds=600.0, max_sockets_per_seat=3)
    game_id, token = await human_game(server, roles=PLAIN_TOWN)
    async with contextlib.AsyncExitStack() as stack:
        sockets = [await stack.enter_async_context(server.seat_connect(game_id, token))
                   for _ in range(3)]
        for ws in sockets:
            await ws.recv_type("events")
        # a fourth socket for the same seat is refused
        async with server.seat_connect(game_id, token) as extra:
            with pytest.raises(ConnectionClosed) as closed:
                await extra.recv_type("events")
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4429
        for ws in sockets:
            for i in range(4):
                await ws.send({"type": "command", "command": {"type": "chat",
                                                              "text": f"hello {i}"}})
        refused = 0
        for ws in sockets:
            await ws.send({"type": "ping"})
            while (msg := await ws.until(lambda m: m["type"] in ("pong", "error")))[
                    "type"] == "error":
                assert "too many chat messages from this seat" in msg["error"], msg
                refused += 1
    chats = [c for _, origin, c in await server.store.commands(game_id)
             if origin == "seat:1" and c["type"] == "chat"]
    assert len(chats) == 5 and refused == 12 - 5
    # once its sockets closed, the seat may open new ones
    async with server.seat_connect(game_id, token) as ws:
        assert (await ws.recv())["type"] == "hello"


async def test_bodies_are_bounded_and_schemas_strict(server_factory: ServerFactory) -> None:
    server = await server_factory(max_body_bytes=4096)
    c = server.client
    big = {"players": 7, "seats": [{"slot": 1, "persona": "x" * 20_000}]}
    r = await c.post("/api/lobbies", json=big)
    assert r.status_code == 413 and "4096" in r.text

    async def chunks() -> Any:
        for _ in range(10):
            yield b" " * 1000
    r = await c.post("/api/lobbies", content=chunks(),
                     headers={"content-type": "application/json"})
    assert r.status_code == 413
    for body in ({"players": 7, "colour": "red"},
                 {"players": 7, "seats": [{"slot": 1, "persona": "x" * 41}]},
                 {"players": 7, "seats": [{"slot": 1, "persona": "sneaky"}]},
                 {"players": 7, "seats": [{"slot": 1, "extra": 1}]},
                 {"players": 7, "mode": "m" * 100}):
        r = await c.post("/api/lobbies", json=body)
        assert r.status_code == 422, (body, r.text)
    lobby = (await c.post("/api/lobbies", json={"players": 7, "seats": [
        {"slot": 1, "kind": "human"}]})).json()["id"]
    r = await c.post(f"/api/lobbies/{lobby}/join", json={"name": "Al", "admin": True})
    assert r.status_code == 422
    assert len((await c.get("/api/lobbies")).content) < 100_000


async def test_long_urls_get_an_answer(server: Server) -> None:
    """Over HTTP and at a websocket handshake, an 8 KB+ URL is answered 414
    at once (the websocket client used to hang)."""
    long = "a" * 9000
    async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as c:
        r = await c.get(f"/api/games/x?viewer={long}")
    assert r.status_code == 414
    with pytest.raises(InvalidStatus) as refused:
        async with ws_client_connect(f"{server.ws_base}/ws/games/x/watch?viewer={long}",
                                     open_timeout=10):
            pass
    assert refused.value.response.status_code == 414


# --- names and text ------------------------------------------------------------------


async def test_names_cannot_impersonate(server: Server) -> None:
    c = server.client
    lobby = (await c.post("/api/lobbies", json={"players": 9, "seats": [
        {"slot": s, "kind": "human"} for s in (1, 2, 3)]})).json()["id"]
    join = f"/api/lobbies/{lobby}/join"
    assert (await c.post(join, json={"name": "Alice"})).status_code == 200
    for name in ("\u0410lice",   # Cyrillic A
                 "ALICE", "\uff21lice", "A lice", "AIice",  # fullwidth, capital i for l
                 "Player 7", "P1ayer 9", "player4",        # another seat's default name
                 "Jailor", "medium", "Serial Killer"):      # role names
        r = await c.post(join, json={"name": name})
        assert r.status_code == 409, (name, r.text)
    r = await c.post(join, json={"name": "Bob\u202e\u200b"})  # invisible tricks stripped
    assert r.status_code == 200
    seats = {s["slot"]: s["name"] for s in (await c.get(f"/api/lobbies/{lobby}")).json()["seats"]}
    assert seats[2] == "Bob"
    assert (await c.post(join, json={"name": "\u202e\u200b"})).status_code == 422


async def test_bidi_and_zero_width_characters_are_stripped_from_text(
        server_factory: ServerFactory) -> None:
    server = await server_factory(time_scale=100.0)
    game_id, token = await human_game(server, roles=PLAIN_TOWN)
    async with server.seat_connect(game_id, token) as ws:
        await ws.recv_type("events")
        await ws.send({"type": "command", "command": {
            "type": "chat", "text": "I am \u202etown\u202c honest\u2066!\u2069\u200b"}})
        msg = await ws.until(lambda m: m["type"] == "events" and any(
            e["data"].get("author") == 1 for e in m["events"]))
        (said,) = [e for e in msg["events"] if e["data"].get("author") == 1]
        assert said["data"]["text"] == "I am town honest!"
        await ws.send({"type": "command", "command": {"type": "will",
                                                      "text": "my \u202ewill"}})
        await ws.send({"type": "ping"})
        await ws.recv_type("pong")
    stored = [c for _, origin, c in await server.store.commands(game_id) if origin == "seat:1"]
    assert [c.get("text") for c in stored] == ["I am town honest!", "my will"]


# --- odd input and clean task handling -----------------------------------------------


async def test_unicode_digit_viewer_is_a_client_error(server: Server) -> None:
    game_id, _ = await human_game(server)
    for viewer in ("²", "٣", "1²", "00001", "-1", "1.0"):
        r = await server.client.get(f"/api/games/{game_id}/replay", params={"viewer": viewer})
        assert r.status_code == 422, (viewer, r.status_code)
        async with server.ws_connect(f"/ws/games/{game_id}/watch?viewer={viewer}") as ws:
            with pytest.raises(ConnectionClosed) as closed:
                await ws.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403


ERROR_LINES = ("Task was destroyed", "Traceback", " ERROR ", "Exception in ASGI",
               "exception was never retrieved")


async def test_a_thousand_socket_opens_and_closes_log_no_error(
        serve_process: Callable[..., ServeProcess], tmp_path: Path) -> None:
    """1,000 websockets against `tossim serve`, opened and closed every way a
    client does (cleanly, mid-handshake, by dropping the connection, refused,
    while a game runs), then the server's log holds no error line."""
    proc = serve_process(f"sqlite+aiosqlite:///{tmp_path / 'load.db'}")
    await proc.wait_ready()
    c = proc.client
    paced = remember(await c.post("/api/lobbies", json={"players": 7, "speed": "paced"}))
    r = await c.post(f"/api/lobbies/{paced}/start", headers=owner(paced))
    assert r.status_code == 200, r.text
    human = remember(await c.post("/api/lobbies", json={"players": 7, "seats": [
        {"slot": 1, "kind": "human"}]}))
    token = (await c.post(f"/api/lobbies/{human}/join", json={"name": "Ann"})).json()["token"]
    r = await c.post(f"/api/lobbies/{human}/start", headers=owner(human))
    assert r.status_code == 200, r.text

    async def one(i: int) -> bool:
        """Whether the socket opened (a connection a busy machine refused or
        reset before the handshake never reaches the server's log)."""
        kind = i % 5
        try:
            if kind == 0:  # a spectator that reads a little and leaves
                async with proc.ws_connect(f"/ws/games/{paced}/watch?viewer=public") as ws:
                    await ws.recv()
                    await ws.recv()
            elif kind == 1:  # a seat (at most 4 at once: the rest are refused)
                async with proc.seat_connect(human, token) as ws:
                    await ws.recv()
            elif kind == 2:  # dropped without a close frame
                async with proc.ws_connect(f"/ws/games/{paced}/watch?viewer=3") as ws:
                    await ws.recv()
                    ws.conn.transport.abort()
            elif kind == 3:  # refused: a view not offered, or nonsense
                viewer = ("omniscient", "²", "99", "x" * 13)[i // 5 % 4]
                async with proc.ws_connect(f"/ws/games/{human}/watch?viewer={viewer}") as ws:
                    await ws.recv()
            else:  # closed before the first message
                async with proc.ws_connect(f"/ws/games/{human}") as ws:
                    pass
        except ConnectionClosed:
            pass
        except OSError:
            return False
        return True

    opened = 0
    for start in range(0, 1000, 25):
        opened += sum(await asyncio.gather(*(one(i) for i in range(start, start + 25))))
    await asyncio.sleep(1.0)
    assert (await c.get("/api/health")).status_code == 200
    await proc.stop()
    log = proc.output()
    assert opened >= 900, f"only {opened} of 1,000 sockets opened"
    assert log.count('"WebSocket /ws/games/') >= opened
    bad = [line for line in log.splitlines() if any(e in line for e in ERROR_LINES)]
    assert not bad, "\n".join(bad[:20])


# --- one source of truth -------------------------------------------------------------


async def test_seat_socket_before_the_start_shows_the_stored_names(
        server_factory: ServerFactory) -> None:
    """A seat opens its socket on the lobby page, before the start: it waits,
    and then it, and every viewer after it, shows the names the stored game has
    (the socket used to build the game from the lobby's config, with default
    names, and every viewer in that process kept that copy)."""
    server = await server_factory(time_scale=100.0)
    c = server.client
    game_id = remember(await c.post("/api/lobbies", json={"players": 7, "seats": [
        {"slot": 1, "kind": "human"}, {"slot": 2, "kind": "human"}]}))
    t1 = (await c.post(f"/api/lobbies/{game_id}/join", json={"name": "Alice"})).json()["token"]
    t2 = (await c.post(f"/api/lobbies/{game_id}/join", json={"name": "Bruno"})).json()["token"]
    async with server.seat_connect(game_id, t1) as early:
        await early.send({"type": "ping"})
        assert (await early.recv())["type"] == "pong"  # waiting, alive
        assert not server.app.state.mirrors.mirrors     # nothing built from the lobby
        r = await c.post(f"/api/lobbies/{game_id}/start", headers=owner(game_id))
        assert r.status_code == 200, r.text
        assert (await early.recv_type("hello"))["game_id"] == game_id
        first = await early.recv_type("events")
        row = await server.store.get_game(game_id)
        names = row.config["names"]
        assert names[:2] == ["Alice", "Bruno"]
        async with server.seat_connect(game_id, t2) as seat2, server.ws_connect(
                f"/ws/games/{game_id}/watch?viewer=public") as spectator:
            streams = [first, await seat2.recv_type("events"),
                       await spectator.recv_type("events")]
        for msg in streams:
            assert [p["name"] for p in msg["state"]["roster"]] == names
    def said(e: dict[str, Any]) -> tuple[str, str, str]:
        return e["key"], e["text"], json.dumps(e["data"], sort_keys=True)

    stored = {said(e) for e in await server.store.events(game_id)}
    shown = [e for m in streams for e in m["events"]]
    for e in shown:  # every event a viewer got says what the stored log says
        assert said(e) in stored, e
    assert sum('"Alice"' in said(e)[2] for e in shown) >= 3  # game.start, for each


# --- no side channel in versions -----------------------------------------------------


async def test_hidden_events_leave_no_trace_in_a_stream(server_factory: ServerFactory) -> None:
    """A Town seat's point of view of a whole game: its events are numbered
    1, 2, 3 ... with no gap where the Mafia chose or chatted at night, and no
    message arrives that shows nothing new (its arrival would tell)."""
    server = await server_factory(pace=0.01)
    game_id = remember(await server.client.post("/api/lobbies", json={
        "players": 7, "speed": "paced", "seed": 12}))
    town = next(p.slot for p in new_game(GameConfig(players=7, seed=12)).players
                if p.role in PLAIN_TOWN)
    r = await server.client.post(f"/api/lobbies/{game_id}/start", headers=owner(game_id))
    assert r.status_code == 200, r.text
    async with server.ws_connect(f"/ws/games/{game_id}/watch?viewer={town}") as ws:
        await ws.until(lambda m: m["type"] == "events"
                       and m["state"]["phase"] == "ended", timeout=120)
    pushes = [m for m in ws.messages if m["type"] == "events"]
    numbers = [e["v"] for e in ws.events()]
    assert numbers == list(range(1, len(numbers) + 1))
    for before, after in zip(pushes, pushes[1:], strict=False):
        assert after["version"] == before["version"] + len(after["events"])
        assert after["events"] or after["state"] != before["state"], after
    game = await server.store.events(game_id)
    assert len(game) > len(numbers)  # there were hidden events to hide
