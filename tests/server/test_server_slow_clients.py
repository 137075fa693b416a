"""Cheap ways to tie a server up: creating lobbies in a loop, and
connections that never finish a request (slow headers, a body at a byte
every few seconds) or simply many of them. Each is bounded by a setting
(docs/api.md, "Limits"); the tests set small bounds and wait for the server
to answer and close the connection."""

from __future__ import annotations

import asyncio
import contextlib

from .support import WAIT, Server, ServerFactory


async def read_until_closed(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends until it closes the connection."""
    return await asyncio.wait_for(reader.read(), WAIT)


async def trickle(writer: asyncio.StreamWriter, chunks: list[bytes], every: float) -> None:
    """Send one chunk every `every` seconds (a slow client), until the server
    has closed the connection."""
    with contextlib.suppress(ConnectionError, OSError):
        for chunk in chunks:
            writer.write(chunk)
            await writer.drain()
            await asyncio.sleep(every)


async def answer_to(server: Server, head: bytes = b"", chunks: list[bytes] | None = None,
                    every: float = 0.0) -> bytes:
    """Open a raw connection, send `head` at once and then `chunks` one every
    `every` seconds (a slow client), and return all the server sends until it
    closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(head)
    slow = asyncio.create_task(trickle(writer, chunks or [], every))
    try:
        return await read_until_closed(reader)
    finally:
        slow.cancel()
        writer.close()


async def lobbies(server: Server) -> int:
    """How many lobbies the store holds (the database may be shared)."""
    return len(await server.store.list_games(status="lobby", limit=1_000_000))


async def test_lobby_creation_is_rate_limited_per_client(server_factory: ServerFactory) -> None:
    server = await server_factory(lobby_rate_limit=3, lobby_rate_seconds=60)
    c = server.client
    before = await lobbies(server)
    for _ in range(3):
        assert (await c.post("/api/lobbies", json={"players": 7})).status_code == 201
    r = await c.post("/api/lobbies", json={"players": 7})
    assert r.status_code == 429, r.text
    assert r.json()["detail"] == ("too many new lobbies from this address: at most 3 in "
                                  "60 seconds; try again later")
    assert r.headers["retry-after"] == "60"
    # the refused one stored nothing
    assert await lobbies(server) == before + 3
    # other requests from the address still work
    assert (await c.get("/api/health")).status_code == 200


async def test_slow_headers_are_cut_off(server_factory: ServerFactory) -> None:
    server = await server_factory(header_timeout_s=0.5)
    # a slowloris: a header line now and then, never the blank line that ends them
    lines = [b"GET /api/health HTTP/1.1\r\nHost: x\r\n"] + [
        f"X-Slow-{i}: {i}\r\n".encode() for i in range(1000)]
    answer = await answer_to(server, chunks=lines, every=0.1)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert answer.endswith(b"the request headers did not arrive within 0.5 s")


async def test_a_silent_connection_is_cut_off(server_factory: ServerFactory) -> None:
    server = await server_factory(header_timeout_s=0.5)
    answer = await answer_to(server)
    assert answer.startswith(b"HTTP/1.1 408 "), answer


async def test_a_slow_body_is_cut_off(server_factory: ServerFactory) -> None:
    server = await server_factory(body_timeout_s=0.5)
    before = await lobbies(server)
    body = b'{"players": 7}'
    head = (b"POST /api/lobbies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n")
    answer = await answer_to(server, head + b"\r\n", [bytes([b]) for b in body], 0.2)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert answer.endswith(b"the request body did not arrive within 0.5 s")
    # nothing was created
    assert await lobbies(server) == before
    # a whole request in time is answered as usual
    answer = await answer_to(server, head + b"Connection: close\r\n\r\n" + body)
    assert answer.startswith(b"HTTP/1.1 201 "), answer


async def test_connections_per_client_are_bounded(server_factory: ServerFactory) -> None:
    server = await server_factory(max_connections_per_client=3)
    r = await server.client.post("/api/lobbies", json={
        "players": 7, "name": "Olga", "seats": [{"slot": 1, "kind": "human"}]})
    seat = r.json()["seat"]
    held = []
    # a seat socket waiting in the lobby: a websocket counts too
    async with server.seat_connect(seat["game_id"], seat["token"]) as ws:
        await ws.send({"type": "ping"})
        await ws.recv_type("pong")
        for _ in range(2):
            held.append(await asyncio.open_connection("127.0.0.1", server.port))
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        try:
            answer = await read_until_closed(reader)
        finally:
            writer.close()
        assert answer.startswith(b"HTTP/1.1 429 "), answer
        assert answer.endswith(b"too many connections from this address: at most 3 at once")
    for _, w in held:
        w.close()
    # the websocket and the idle connections are gone: the address may connect again
    async with asyncio.timeout(WAIT):
        while True:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = await reader.read()
            writer.close()
            if answer.startswith(b"HTTP/1.1 200 "):
                break
            assert answer.startswith(b"HTTP/1.1 429 "), answer
