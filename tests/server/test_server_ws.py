"""Websockets against real SQLite and PostgreSQL: a human seat's flow (hello,
events with state and legal actions, a legal command applied, an illegal one
refused with its fault and candidates, chat stored verbatim), reconnecting
without gaps or duplicates, refusals with close codes, and the leak test:
what each player's socket and a public spectator's socket carry in a whole
all-AI game."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tossim.engine import OMNISCIENT_VIEWER, PUBLIC_VIEWER, Game, GameConfig, Viewer, new_game
from tossim.engine.replay import rerun
from tossim.engine.roles import ROLES, Faction
from tossim.engine.view import project_event, visible_events
from tossim.server import ws as ws_module

from .support import (
    PLAIN_TOWN,
    WAIT,
    WS,
    Server,
    ServerFactory,
    create_game,
    finished,
    human_game,
    is_finished,
    quiet,
    snapshot,
    wait_game,
)

PROJECTED_KEYS = {"v", "day", "phase", "key", "audience", "text", "data"}
STATE_KEYS = {"day", "phase", "phase_seq", "deadline", "roster", "you", "legal", "trial",
              "result", "winners"}
async def test_seat_socket_flow(server_factory: ServerFactory) -> None:
    # time_scale 100: Day 1 lasts 25 minutes, so the game waits for us
    server = await server_factory(time_scale=100.0)
    game_id, token = await human_game(server, roles=PLAIN_TOWN)
    async with server.seat_connect(game_id, token) as ws:
        hello = await ws.recv()
        assert hello["type"] == "hello" and hello["game_id"] == game_id
        assert hello["viewer"] == "player 1" and isinstance(hello["version"], int)
        first = await ws.recv_type("events")
        assert set(first["state"]) == STATE_KEYS
        state = first["state"]
        assert state["day"] == 1 and state["phase"] == "day1" and state["result"] is None
        # the phase deadline (asked from the game's actor when the socket's mirror
        # starts) comes with the first state or right after it
        while state["deadline"] is None:
            state = (await ws.recv_type("events"))["state"]
        assert isinstance(state["deadline"], float) and state["deadline"] > time.time()
        assert state["you"]["slot"] == 1 and state["you"]["name"] == "Alice"
        assert state["you"]["role_key"] in PLAIN_TOWN
        assert {a["kind"] for a in state["legal"]} >= {"chat", "whisper", "will"}
        assert [e["v"] for e in first["events"]][:2] == [1, 2]
        assert first["events"][0]["key"] == "game.start"
        mine = [e for e in first["events"] if e["key"] == "game.role"]
        assert len(mine) == 1  # only our own role card
        for e in first["events"]:
            assert set(e) == PROJECTED_KEYS
        await quiet(ws)
        before = await snapshot(server, game_id)
        # the seat's own sequence (tossim.server.sequence): its role card
        # counts, the others' do not
        version = max(m["version"] for m in ws.messages if m["type"] == "events")
        assert version == len(ws.events())

        # a legal command: its event arrives, verbatim, and is stored
        text = "<script>alert('hi')</script> & <b>bold</b> \"quoted\" é ✓"
        await ws.send({"type": "command", "command": {"type": "chat", "text": text}})
        msg = await ws.recv_type("events")
        assert msg["version"] == version + 1
        (event,) = msg["events"]
        assert event["key"] == "chat.public" and event["v"] == version + 1
        assert event["data"] == {"author": 1, "text": text}
        assert event["text"] == f"Alice: {text}"
        replay = (await server.client.get(f"/api/games/{game_id}/replay")).json()
        # the public replay numbers in the public sequence
        assert {**replay["events"][-1], "v": 0} == {**event, "v": 0}
        stored = await server.store.commands(game_id)
        assert stored[-1][1:] == ("seat:1", {"type": "chat", "actor": 1, "text": text,
                                             "channel": None})
        assert (await server.store.events(game_id))[-1]["data"]["text"] == text

        # illegal commands: an error with the engine's fault and candidates; no change
        before = await snapshot(server, game_id)
        await ws.send({"type": "command", "command": {"type": "whisper", "target": 99,
                                                      "text": "psst"}})
        err = await ws.recv()
        assert err["type"] == "error" and err["version"] == version + 1
        assert err["fault"] == "premise" and err["candidates"] == [2, 3, 4, 5, 6, 7]
        assert "99" in err["error"]
        await ws.send({"type": "command", "command": {"type": "vote", "target": 2}})
        err = await ws.recv()
        assert err["type"] == "error" and err["fault"] == "intention"
        await ws.send({"type": "command", "command": {"type": "chat", "text": "x" * 501}})
        err = await ws.recv()
        assert err["type"] == "error" and err["fault"] == "parameter"
        await ws.send({"type": "command", "command": {"type": "vote", "target": 2,
                                                      "actor": 2}})
        err = await ws.recv()
        assert err["type"] == "error" and "actor" in err["error"]
        await ws.send({"type": "ping"})
        assert (await ws.recv()) == {"type": "pong", "version": version + 1}
        assert await snapshot(server, game_id) == before

        # a spectator of the same game may not send commands
        async with server.ws_connect(f"/ws/games/{game_id}/watch?viewer=public") as spec:
            assert (await spec.recv())["type"] == "hello"
            pub = await spec.recv_type("events")
            assert pub["state"]["you"] is None and pub["state"]["legal"] == []
            # the same event, numbered in the public sequence (no role card)
            assert pub["events"][-1] == {**event, "v": event["v"] - 1}
            await spec.send({"type": "command", "command": {"type": "chat", "text": "hi"}})
            err = await spec.recv_type("error")
            assert "spectator" in err["error"]
        assert await snapshot(server, game_id) == before


async def expect_close(server: Server, path: str, code: int,
                       first: dict[str, Any] | None = None) -> None:
    """The socket at `path` (sending `first` once open) is closed with `code`."""
    try:
        async with server.ws_connect(path) as ws:
            if first is not None:
                await ws.send(first)
            await ws.recv(WAIT)
            await ws.recv(WAIT)
    except ConnectionClosed as exc:
        assert exc.rcvd is not None and exc.rcvd.code == code, (path, exc)
        return
    except InvalidStatus as exc:  # refused at the handshake: no close code at all
        raise AssertionError(f"{path}: refused with HTTP {exc.response.status_code}, "
                             f"not close code {code}") from None
    raise AssertionError(f"{path}: not closed")


async def test_refusals_have_close_codes(server: Server) -> None:
    game_id, token = await human_game(server, slot=2)
    lobby = await create_game(server.client, start=False, players=7)
    seat = f"/ws/games/{game_id}"
    await expect_close(server, seat, 4401, {"type": "auth", "token": "wrong"})
    await expect_close(server, seat, 4401, {"type": "auth"})
    await expect_close(server, seat, 4401, {"type": "auth", "token": ["x"]})
    await expect_close(server, seat, 4400, {"type": "auth", "token": "t" * 100_000})
    await expect_close(server, f"/ws/games/{lobby}", 4401,  # another game's
                       {"type": "auth", "token": token})
    # the first message must be the auth; a token in the URL is refused outright
    await expect_close(server, seat, 4400, {"type": "ping"})
    await expect_close(server, seat, 4400, {"type": "auth", "token": token, "since": "x"})
    await expect_close(server, f"{seat}?token={token}", 4400)
    # a live game with a human seat: no omniscient or player view for spectators
    await expect_close(server, f"/ws/games/{game_id}/watch?viewer=omniscient", 4403)
    await expect_close(server, f"/ws/games/{game_id}/watch?viewer=3", 4403)
    await expect_close(server, f"/ws/games/{game_id}/watch?viewer=99", 4403)
    await expect_close(server, "/ws/games/nope/watch?viewer=public", 4404)
    await expect_close(server, f"/ws/games/{lobby}/watch?viewer=public", 4404)
    async with server.ws_connect(f"/ws/games/{game_id}/watch?viewer=public") as ws:
        assert (await ws.recv())["type"] == "hello"


async def test_delayed_omniscient_spectator(server_factory: ServerFactory) -> None:
    """With TOSSIM_SPECTATOR_DELAY the omniscient view of a human game is offered,
    late and without the present state."""
    server = await server_factory(time_scale=100.0, spectator_delay=30.0)
    game_id, _token = await human_game(server)
    async with server.ws_connect(f"/ws/games/{game_id}/watch?viewer=omniscient") as ws:
        hello = await ws.recv()
        assert hello["type"] == "hello" and hello["viewer"] == "omniscient"
        msg = await ws.recv_type("events")
        assert "state" not in msg
        assert msg["events"] == []  # nothing is 30 seconds old yet


def visible(game: Game, viewer: Viewer, since: int = 0) -> list[dict[str, Any]]:
    """What `viewer` may see after `since`, numbered in its own sequence."""
    shown = [{**project_event(e, viewer), "v": n}
             for n, e in enumerate(visible_events(game, viewer), 1)]
    return json.loads(json.dumps(shown[since:]))


async def test_reconnect_gets_exactly_the_missing_events(server_factory: ServerFactory) -> None:
    """A seat reads up to version v, disconnects, reconnects and resumes from v:
    it receives exactly the missing events (no gap, no duplicate)."""
    server = await server_factory(time_scale=0.01)
    game_id, token = await human_game(server, players=7, seed=3)
    async with server.seat_connect(game_id, token) as ws:
        await ws.until(lambda m: m["type"] == "events" and m["version"] >= 40)
        first = ws.events()
    v = max(e["v"] for e in first)
    await wait_game(server.client, game_id, lambda s: s["version"] > v + 20 or is_finished(s))

    # resume in the auth message: the first push starts after v
    async with server.seat_connect(game_id, token, since=v) as ws2:
        assert (await ws2.recv())["type"] == "hello"
        await ws2.until(finished)
        second = ws2.events()
    assert second and second[0]["v"] > v
    got = first + second
    versions = [e["v"] for e in got]
    # the seat's own sequence: no gap where a hidden event was
    assert versions == list(range(1, len(versions) + 1))

    # the union is what a fresh connection sees
    async with server.seat_connect(game_id, token) as fresh:
        await fresh.until(finished)
        full = fresh.events()
    assert got == full
    await wait_game(server.client, game_id, is_finished)
    rp = (await server.client.get(f"/api/games/{game_id}/replay",
                                  params={"viewer": "omniscient"})).json()
    game = rerun(GameConfig.from_dict(rp["config"]), rp["commands"])
    assert full == visible(game, Viewer.player(1))

    # a resume message on an open connection re-sends exactly the tail after since
    async with server.seat_connect(game_id, token) as ws3:
        await ws3.until(finished)
        for since in (v, len(full) - 1, 0):
            await ws3.send({"type": "resume", "since": since})
            msg = await ws3.recv_type("events")
            assert msg["events"] == visible(game, Viewer.player(1), since)
            assert msg["version"] == len(full)


# --- leaks ---------------------------------------------------------------------------


def chat_audiences(game: Game) -> dict[int, frozenset[int]]:
    """For each private-channel chat event: who may read it, from the game state
    when it was said (tests/test_leaks.py's rule), by re-playing the log."""
    from test_leaks import CHANNEL_KEYS, expected_audience

    from tossim.engine import apply, command_from_dict

    replay = new_game(game.config)
    allowed: dict[int, frozenset[int]] = {}
    for raw in game.commands:
        for e in apply(replay, command_from_dict(raw)):
            if e.key in CHANNEL_KEYS:
                who = expected_audience(replay, e)
                assert who is not None
                allowed[e.v] = who
    assert [e.to_dict() for e in replay.events] == [e.to_dict() for e in game.events]
    return allowed


class SocketLeakCheck:
    def __init__(self, game: Game) -> None:
        self.game = game
        self.allowed = chat_audiences(game)
        self.problems: list[str] = []
        self.coverage: dict[str, int] = {}

    def fail(self, who: str, what: str) -> None:
        self.problems.append(f"{who}: {what}")

    def check_player(self, slot: int, messages: list[dict[str, Any]]) -> None:
        me = self.game.player(slot)
        who = f"player {slot} ({me.role})"
        for msg in messages:
            if msg["type"] != "events":
                continue
            state = msg["state"]
            ended = state["phase"] == "ended"
            # a promoted Mafia member (Framer -> Mafioso) shows its role at the time
            assert state["you"]["slot"] == slot
            assert state["you"]["role_key"] in (me.original_role, me.role)
            for entry in state["roster"]:
                other = self.game.player(entry["slot"])
                if other.slot == slot or not entry["alive"] or entry["role"] is None or ended:
                    continue
                both_mafia = me.faction is Faction.MAFIA and other.faction is Faction.MAFIA
                mayor = entry["revealed_mayor"] and entry["role"] == ROLES["mayor"].name
                if not (both_mafia or mayor):
                    self.fail(who, f"v{msg['version']} roster shows living player "
                                   f"{other.slot}'s role {entry['role']}")
            you = state["you"]
            if "teammates" in you and me.faction is not Faction.MAFIA:
                self.fail(who, "sees a Mafia team")
            for e in msg["events"]:
                self.check_event(slot, who, e)

    def raw_event(self, viewer: Viewer, who: str, pe: dict[str, Any]) -> Any:
        """The game's event a projected one stands for: events are numbered in
        the viewer's own sequence, so the n-th event this viewer may see; one
        that is not that event (a hidden one sent instead) is a failure."""
        seen = visible_events(self.game, viewer)
        if not 1 <= pe["v"] <= len(seen):
            self.fail(who, f"event numbered {pe['v']} beyond its {len(seen)} visible ones")
            return None
        raw = seen[pe["v"] - 1]
        if pe["key"] != raw.key or pe["data"] != json.loads(json.dumps(raw.data)):
            self.fail(who, f"its event {pe['v']} ({pe['key']}) is not the stored {raw.key}")
        return raw

    def check_event(self, slot: int, who: str, pe: dict[str, Any]) -> None:
        raw = self.raw_event(Viewer.player(slot), who, pe)
        if raw is None:
            return
        self.coverage[raw.key] = self.coverage.get(raw.key, 0) + 1
        if set(pe) != PROJECTED_KEYS:
            self.fail(who, f"{raw.key} carries {sorted(set(pe) - PROJECTED_KEYS)}")
        if pe["key"] != raw.key or pe["data"] != json.loads(json.dumps(raw.data)):
            self.fail(who, f"v{raw.v} is not the stored event")
        aud = raw.audience
        if aud.kind != "public" and slot not in aud.players:
            self.fail(who, f"sees {raw.key} addressed to {sorted(aud.players)}")
        if raw.v in self.allowed and slot not in self.allowed[raw.v]:
            self.fail(who, f"reads {raw.key} said to {sorted(self.allowed[raw.v])}")
        if raw.key.startswith("night.") and aud.kind == "players" and aud.players \
                and slot not in aud.players:
            self.fail(who, f"sees another player's night result {raw.key}")
        if raw.secret and any(pe["data"].get(k) == v for k, v in raw.secret.items()):
            self.fail(who, f"{raw.key} data reveals its secret")

    def check_public(self, messages: list[dict[str, Any]]) -> None:
        for msg in messages:
            if msg["type"] != "events":
                continue
            state = msg["state"]
            assert state["you"] is None and state["legal"] == []
            if state["phase"] != "ended":
                for entry in state["roster"]:
                    if entry["alive"] and entry["role"] is not None \
                            and not entry["revealed_mayor"]:
                        self.fail("public", f"v{msg['version']} sees living player "
                                            f"{entry['slot']}'s role")
            for pe in msg["events"]:
                raw = self.raw_event(PUBLIC_VIEWER, "public", pe)
                if raw is not None and raw.audience.kind != "public" or set(pe) != PROJECTED_KEYS:
                    self.fail("public", f"sees {raw.key} ({raw.audience.kind})")


async def watch_all(server: Server, game_id: str, viewers: list[str]) -> dict[str, WS]:
    """One socket per viewer, each read to the end of the game. Every other
    one negotiates no compression: the server writes its pushes as shared
    frames straight to the transport; the others (permessage-deflate) get
    theirs through ASGI sends."""
    out: dict[str, WS] = {}

    async def one(i: int, viewer: str) -> None:
        async with server.ws_connect(f"/ws/games/{game_id}/watch?viewer={viewer}",
                                     compression=None if i % 2 else "deflate") as ws:
            hello = await ws.recv()
            assert hello["type"] == "hello"
            await ws.until(finished, timeout=120)
            out[viewer] = ws

    await asyncio.gather(*(one(i, v) for i, v in enumerate(viewers)))
    return out


@pytest.mark.parametrize("seed", [5, 17])
async def test_sockets_leak_nothing(server_factory: ServerFactory, seed: int) -> None:
    """A paced 15-seat all-AI game watched from every seat and by the public."""
    server = await server_factory(pace=0.004)
    game_id = await create_game(server.client, players=15, speed="paced", seed=seed)
    sent = dict(ws_module.PUSHES_SENT)
    sockets = await watch_all(server, game_id, ["public", *map(str, range(1, 16))])
    # both ways of sending a push were taken (and are checked below)
    for path in ("frame", "asgi"):
        assert ws_module.PUSHES_SENT[path] > sent.get(path, 0), path
    await wait_game(server.client, game_id, is_finished)
    rp = (await server.client.get(f"/api/games/{game_id}/replay",
                                  params={"viewer": "omniscient"})).json()
    game = rerun(GameConfig.from_dict(rp["config"]), rp["commands"])
    assert game.ended
    check = SocketLeakCheck(game)
    for slot in range(1, 16):
        ws = sockets[str(slot)]
        check.check_player(slot, ws.messages)
        # and it got every event it may see, once, in order
        assert ws.events() == visible(game, Viewer.player(slot))
        states = [m for m in ws.messages if m["type"] == "events"]
        assert len(states) > 5, "the socket followed the game as it went"
    check.check_public(sockets["public"].messages)
    assert sockets["public"].events() == visible(game, PUBLIC_VIEWER)
    assert not check.problems, check.problems[:20]
    for key in ("chat.mafia", "game.mafia_team", "game.role", "night.mafia_chosen"):
        assert check.coverage.get(key), f"no {key} event went through the check"
    # the omniscient socket of an all-AI game sees everything
    async with server.ws_connect(f"/ws/games/{game_id}/watch?viewer=omniscient") as ws:
        await ws.until(finished)
        assert ws.events() == visible(game, OMNISCIENT_VIEWER)


async def test_a_change_during_a_push_is_not_missed(server_factory: ServerFactory,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The game moves on while a push is being sent: the socket still follows
    (it must not wait for the next change, which in a quiet phase may be the
    phase's end)."""
    server = await server_factory(time_scale=100.0)
    game_id, token = await human_game(server, roles=PLAIN_TOWN)
    await wait_game(server.client, game_id, lambda s: s["version"] >= 2)  # public events
    # the AI seats answer at moments spread over the phase (minutes away at this
    # time scale): the game is quiet now
    await asyncio.sleep(0.5)
    actor = server.app.state.actors.actors[game_id]
    original = ws_module.Connection.send_raw
    armed = [True]

    async def send(self: Any, message: str) -> None:
        if armed[0] and json.loads(message)["type"] == "events":
            armed[0] = False
            mirror = server.app.state.mirrors.mirrors[game_id]
            target = mirror.game.version + 1
            await actor.queue.put({"type": "seat", "slot": 2,
                                   "command": {"type": "chat", "text": "meanwhile"}})
            while mirror.game.version < target:  # the mirror has it before this push is out
                await asyncio.sleep(0.01)
        await original(self, message)

    monkeypatch.setattr(ws_module.Connection, "send_raw", send)
    async with server.seat_connect(game_id, token) as ws:
        assert (await ws.recv())["type"] == "hello"
        first = await ws.recv_type("events")
        assert all(e["data"].get("text") != "meanwhile" for e in first["events"])
        msg = await ws.until(lambda m: m["type"] == "events" and m["events"] != [], timeout=10)
        assert [e["data"] for e in msg["events"]] == [{"author": 2, "text": "meanwhile"}]


async def test_a_slow_reader_gets_its_backlog_coalesced(server_factory: ServerFactory) -> None:
    """A spectator that stops reading while the game runs on: its buffers fill,
    the server stops writing to it (and never drops or blocks the others),
    and when it reads again it gets everything it missed, each event once and
    in order, in fewer messages than a spectator that kept up."""
    server = await server_factory(pace=0.004)
    game_id = await create_game(server.client, players=15, speed="paced", seed=11)
    path = f"/ws/games/{game_id}/watch?viewer=omniscient"
    host, port = server.ws_base.removeprefix("ws://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window
    sock.connect((host, int(port)))
    sock.setblocking(False)
    async with server.ws_connect(path, sock=sock, max_queue=1, compression=None) as slow, \
            server.ws_connect(path, compression=None) as fast:
        assert (await slow.recv())["type"] == "hello"  # and then it stops reading
        # small buffers on the server's side of the slow socket too, so that
        # what the game sends does not all fit in them
        mine = sock.getsockname()[1]
        deadline = time.monotonic() + WAIT
        while True:
            mirror = server.app.state.mirrors.mirrors[game_id]
            conns = [f.__self__ for f in mirror.listeners if f.__self__.ws.client[1] == mine]
            if conns or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.01)
        transport = conns[0].direct.transport
        transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        transport.set_write_buffer_limits(high=4096)
        await fast.until(finished, timeout=120)
        await wait_game(server.client, game_id, is_finished)
        await slow.until(finished, timeout=60)
    rp = (await server.client.get(f"/api/games/{game_id}/replay",
                                  params={"viewer": "omniscient"})).json()
    game = rerun(GameConfig.from_dict(rp["config"]), rp["commands"])
    assert fast.events() == slow.events() == visible(game, OMNISCIENT_VIEWER)
    pushes = {name: sum(m["type"] == "events" for m in ws.messages)
              for name, ws in (("slow", slow), ("fast", fast))}
    assert pushes["slow"] < pushes["fast"], pushes
