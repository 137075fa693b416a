"""A seat socket belongs to the claim it authenticated: a kick, a player
leaving, and the seat going to someone else or to a bot close it (4401, with
a reason the client shows); it never sees the next occupant's view, never
plays for them and holds none of their sockets. Sockets waiting in a lobby
are told of changes over the bus instead of polling the store
(docs/api.md, "Seat sockets in the lobby")."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import sqlalchemy as sa
from websockets.exceptions import ConnectionClosed

from .support import WAIT, WS, Server, ServerFactory, owner, remember


async def lobby_with_two_humans(server: Server) -> tuple[str, dict[str, Any]]:
    """A quick lobby: Olga (the owner) on seat 1, Bob joined on seat 2."""
    c = server.client
    r = await c.post("/api/lobbies", json={"players": 7, "speed": "quick", "name": "Olga",
                                           "seats": [{"slot": 1, "kind": "human"},
                                                     {"slot": 2, "kind": "human"}]})
    gid = remember(r)
    bob = (await c.post(f"/api/lobbies/{gid}/join", json={"name": "Bob", "slot": 2})).json()
    assert bob["slot"] == 2, bob
    return gid, bob


async def waiting(ws: WS) -> None:
    """The socket is authenticated and waits in the lobby (it answers a ping)."""
    await ws.send({"type": "ping"})
    assert (await ws.recv_type("pong"))["version"] == 0


async def closed_with(ws: WS) -> tuple[int | None, str | None, list[str]]:
    """Read until the server closes the socket: (code, reason, the types of
    the messages it got before)."""
    with_types = []
    try:
        while True:
            with_types.append((await ws.recv(WAIT))["type"])
    except ConnectionClosed as exc:
        assert exc.rcvd is not None, "the client closed, not the server"
        return exc.rcvd.code, exc.rcvd.reason, with_types


async def test_a_kicked_socket_is_closed_and_never_plays_the_next_occupant(
        server: Server) -> None:
    c = server.client
    gid, bob = await lobby_with_two_humans(server)
    limit = server.settings.max_sockets_per_seat
    async with server.seat_connect(gid, bob["token"]) as old, \
            server.seat_connect(gid, bob["token"]) as old2:
        await waiting(old)
        await waiting(old2)
        r = await c.delete(f"/api/lobbies/{gid}/seats/2", headers=owner(gid))
        assert r.status_code == 200, r.text
        for ws in (old, old2):
            code, reason, got = await closed_with(ws)
            assert code == 4401 and reason and "seat was given up or removed" in reason
            assert "events" not in got and "hello" not in got
        # the seat goes to Carol: all of her sockets open, and Bob's token is dead
        carol = (await c.post(f"/api/lobbies/{gid}/join",
                              json={"name": "Carol", "slot": 2})).json()
        async with server.seat_connect(gid, bob["token"]) as again:
            code, _, _ = await closed_with(again)
            assert code == 4401
        sockets = [server.seat_connect(gid, carol["token"]) for _ in range(limit)]
        opened = [await s.__aenter__() for s in sockets]
        try:
            for ws in opened:
                await waiting(ws)
            r = await c.post(f"/api/lobbies/{gid}/start", headers=owner(gid))
            assert r.status_code == 200, r.text
            hello = await opened[0].recv_type("hello")
            assert hello["viewer"] == "player 2"
            first = await opened[0].recv_type("events")
            assert first["state"]["you"]["slot"] == 2
            assert first["state"]["roster"][1]["name"] == "Carol"
        finally:
            for s in reversed(sockets):
                await s.__aexit__(None, None, None)
        # the old socket cannot send a command for seat 2: it is closed
        try:
            await old.send({"type": "command", "command": {"type": "chat", "text": "hi"}})
        except ConnectionClosed:
            pass
        else:
            raise AssertionError("a kicked socket accepted a message")


async def test_a_departed_socket_is_closed_when_a_bot_takes_the_seat(server: Server) -> None:
    c = server.client
    gid, bob = await lobby_with_two_humans(server)
    as_bob = {"Authorization": f"Bearer {bob['token']}"}
    async with server.seat_connect(gid, bob["token"]) as old:
        await waiting(old)
        r = await c.delete(f"/api/lobbies/{gid}/seats/2", headers=as_bob)  # Bob leaves
        assert r.status_code == 200, r.text
        code, reason, got = await closed_with(old)
        assert code == 4401 and reason and "given up or removed" in reason
        # nobody takes seat 2: a bot plays it after the start
        r = await c.post(f"/api/lobbies/{gid}/start", headers=owner(gid))
        assert r.status_code == 200, r.text
        assert got == []
    async with server.seat_connect(gid, bob["token"]) as again:
        code, _, got = await closed_with(again)
        assert code == 4401 and got == []


async def test_a_claim_freed_unannounced_is_caught_at_the_start(server: Server) -> None:
    """Even when no lobby message said so (a lost bus message), the start
    re-reads the claim: the socket closes instead of playing the bot's seat."""
    c = server.client
    gid, bob = await lobby_with_two_humans(server)
    async with server.seat_connect(gid, bob["token"]) as old:
        await waiting(old)
        assert await server.store.release_seat(gid, 2)  # straight in the store: no message
        r = await c.post(f"/api/lobbies/{gid}/start", headers=owner(gid))
        assert r.status_code == 200, r.text
        code, reason, got = await closed_with(old)
        assert code == 4401 and reason and "given up or removed" in reason
        assert got == []


async def test_lobby_sockets_wait_without_polling_the_store(server: Server) -> None:
    """Idle lobby sockets make no queries (they used to read the lobby every
    0.5 s each); a change reaches them over the bus, and the start too."""
    c = server.client
    players = 7
    r = await c.post("/api/lobbies", json={
        "players": players, "speed": "quick", "name": "Olga",
        "seats": [{"slot": s, "kind": "human"} for s in range(1, players + 1)]})
    gid = remember(r)
    tokens = [r.json()["seat"]["token"]]
    for slot in range(2, players + 1):
        j = await c.post(f"/api/lobbies/{gid}/join", json={"name": f"P{slot}", "slot": slot})
        tokens.append(j.json()["token"])
    queries = [0]

    def count(*_: Any) -> None:
        queries[0] += 1

    engine = server.store.engine.sync_engine
    sa.event.listen(engine, "before_cursor_execute", count)
    sockets = [server.seat_connect(gid, t) for t in tokens for _ in range(2)]
    opened = [await s.__aenter__() for s in sockets]
    try:
        for ws in opened:
            await waiting(ws)
        before = queries[0]
        # a window of several former polling periods with nothing happening:
        # 14 polling sockets made ~40 queries in it
        await asyncio.sleep(1.5)
        assert queries[0] == before, f"{queries[0] - before} queries from idle lobby sockets"
        r = await c.post(f"/api/lobbies/{gid}/start", headers=owner(gid))
        assert r.status_code == 200, r.text
        for ws, slot in zip(opened, [s for s in range(1, players + 1) for _ in range(2)],
                            strict=True):
            assert (await ws.recv_type("hello"))["viewer"] == f"player {slot}"
    finally:
        sa.event.remove(engine, "before_cursor_execute", count)
        for s in reversed(sockets):
            await s.__aexit__(None, None, None)


async def test_a_kick_on_another_process_closes_the_socket(
        server_factory: ServerFactory, redis_url: str) -> None:
    """Two server processes on one database and Redis: the kick goes through
    one, the kicked socket waits on the other, and is closed all the same."""
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    a = await server_factory(redis_url=redis_url, redis_prefix=prefix)
    b = await server_factory(redis_url=redis_url, redis_prefix=prefix)
    gid, bob = await lobby_with_two_humans(a)
    async with b.seat_connect(gid, bob["token"]) as old:
        await waiting(old)
        r = await a.client.delete(f"/api/lobbies/{gid}/seats/2", headers=owner(gid))
        assert r.status_code == 200, r.text
        code, reason, got = await closed_with(old)
        assert code == 4401 and reason and "given up or removed" in reason and got == []
