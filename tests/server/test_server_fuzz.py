"""Malformed websocket messages: random bytes and text, huge messages, deeply
nested or oversized JSON, wrong types, commands with an actor, unknown command
types, text the store cannot hold, floods. Every one is answered with an
`error`, the game does not change (its version, its public replay and the
stored logs are the same before and after) and the socket still works."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

from .support import (
    PLAIN_TOWN,
    WS,
    Server,
    ServerFactory,
    human_game,
    quiet,
    snapshot,
)

N_RANDOM = 120  # random byte and text messages of each kind


def malformed_messages(rng: random.Random, max_bytes: int) -> list[str | bytes]:
    """Messages that must all be answered with an error (for a seat in Day 1
    whose role has no day ability)."""
    out: list[Any] = []

    def cmd(command: Any) -> None:
        out.append({"type": "command", "command": command})

    # random bytes (binary frames) and random text (text frames)
    for _ in range(N_RANDOM):
        out.append(rng.randbytes(rng.randrange(0, 300)))
    alphabet = [chr(c) for c in range(0x20, 0x7F)] + list("\n\t\x00\x7f{}[]\":,é✓\u2028")
    for _ in range(N_RANDOM):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 200)))
        out.append(text)
    # almost-JSON and not-an-object JSON
    out += ["", " ", "{", "}", "{'type': 'ping'}", '{"type": "ping"', '{"type": ping}',
            "null", "true", "1", "-0.5", '"ping"', "[]", '[{"type": "ping"}]', "NaN",
            '{"type": "ping"} {"type": "ping"}', "\ufeff{\"type\": \"ping\"}"]
    # too big: over the limit, and far over it
    out.append(json.dumps({"type": "ping", "pad": "x" * max_bytes}))
    out.append("y" * (max_bytes + 1))
    out.append(b"\x00" * (max_bytes + 1))
    out.append(json.dumps({"type": "command", "command": {"type": "chat",
                                                          "text": "é" * (max_bytes // 2)}}))
    out.append("z" * 300_000)
    # JSON that Python's parser refuses in other ways: too deep, too many digits
    out.append("[" * 4000 + "]" * 4000)
    out.append('{"type": "resume", "since": ' + "9" * 5000 + "}")
    out.append('{"a":' * 1300 + "1" + "}" * 1300)
    # wrong message types
    for kind in (None, 5, 1.5, True, [], {}, "", "PING", "Ping", "pong", "hello", "events",
                 "error", "commands", "resume ", "ping\x00", "subscribe", "sync"):
        out.append({"type": kind})
    out.append({})
    out.append({"typ": "ping"})
    # resume without a usable version
    for since in (None, "5", -1, 1.5, True, False, [3], {"v": 3}, float("inf")):
        out.append({"type": "resume", "since": since})
    out.append({"type": "resume"})
    # commands that are not objects, or carry an actor
    for command in (None, "vote", 5, [], [{"type": "chat", "text": "hi"}], True):
        cmd(command)
    out.append({"type": "command"})
    for actor in (1, 2, 0, -1, "1", None, True):
        cmd({"type": "chat", "text": "I am someone else", "actor": actor})
        cmd({"type": "vote", "target": 3, "actor": actor})
    # unknown command types, and the timer's
    for kind in ("kill", "Chat", "CHAT", "", None, 7, "timeout", "night_action", "lynch",
                 "__class__", "to_dict"):
        cmd({"type": kind, "text": "hi", "target": 2})
    cmd({"type": "timeout", "phase_seq": 1})
    cmd({"type": "timeout"})
    cmd({"text": "no type"})
    # wrong field types, missing or extra fields
    for bad in ({"type": "chat", "text": 5}, {"type": "chat", "text": None},
                {"type": "chat", "text": ["hi"]}, {"type": "chat", "text": {"t": 1}},
                {"type": "chat", "text": "hi", "channel": 3},
                {"type": "chat", "text": "hi", "channel": "mafia"},
                {"type": "chat", "text": "hi", "channel": "dead"},
                {"type": "chat", "text": "hi", "channel": "nonsense"},
                {"type": "chat"}, {"type": "chat", "text": "hi", "color": "red"},
                {"type": "chat", "text": "   "}, {"type": "chat", "text": ""},
                {"type": "chat", "text": "x" * 501},
                {"type": "whisper", "target": "2", "text": "psst"},
                {"type": "whisper", "target": 2.0, "text": "psst"},
                {"type": "whisper", "target": True, "text": "psst"},
                {"type": "whisper", "target": 2}, {"type": "whisper", "text": "psst"},
                {"type": "whisper", "target": 99, "text": "psst"},
                {"type": "whisper", "target": 1, "text": "to myself"},
                {"type": "whisper", "target": -3, "text": "psst"},
                {"type": "whisper", "target": 2**70, "text": "psst"},
                {"type": "vote", "target": 2}, {"type": "vote", "target": None},
                {"type": "vote", "target": 1.5}, {"type": "vote"},
                {"type": "vote", "target": [2]},
                {"type": "judge", "verdict": "guilty"}, {"type": "judge", "verdict": 1},
                {"type": "judge", "verdict": "GUILTY"}, {"type": "judge"},
                {"type": "night", "targets": [2]}, {"type": "night", "targets": "2"},
                {"type": "night", "targets": [True]}, {"type": "night", "targets": 2},
                {"type": "night", "targets": [None]}, {"type": "night", "targets": {}},
                {"type": "day", "ability": "jail", "target": 2},
                {"type": "day", "ability": "reveal"}, {"type": "day", "ability": "seance"},
                {"type": "day", "ability": 3}, {"type": "day", "ability": "jail",
                                                "target": "2"},
                {"type": "day", "ability": "nuke", "target": 2}, {"type": "day"},
                {"type": "will", "text": "w" * 401}, {"type": "will", "text": 401},
                {"type": "will"}, {"type": "will", "text": "ok", "extra": 1},
                {"type": "death_note", "text": "I am not a killer"},
                {"type": "death_note", "text": None}):
        cmd(bad)
    # text that no database can store: NUL, lone surrogates (as JSON escapes)
    for field, extra in (("chat", {}), ("will", {}), ("whisper", {"target": 2})):
        for text in ("nul\\u0000byte", "lone \\ud800 surrogate", "\\udfff", "\\u0000"):
            body = ", ".join(f'"{k}": {json.dumps(v)}' for k, v in extra.items())
            body = (body + ", ") if body else ""
            out.append(f'{{"type": "command", "command": {{"type": "{field}", {body}'
                       f'"text": "{text}"}}}}')
    rng.shuffle(out)
    return [m if isinstance(m, str | bytes) else json.dumps(m) for m in out]


async def send_and_expect_error(ws: WS, message: str | bytes) -> dict[str, Any]:
    await ws.send(message)
    reply = await ws.recv(30)
    assert reply["type"] == "error", (message[:200], reply)
    assert isinstance(reply["error"], str) and reply["error"]
    assert isinstance(reply["version"], int)
    return reply


async def test_malformed_messages_change_nothing(server_factory: ServerFactory) -> None:
    # no rate limit here (floods have their own test); Day 1 lasts 25 minutes
    server = await server_factory(time_scale=100.0, rate_limit_messages=1_000_000,
                                  chat_limit_messages=1_000_000)
    game_id, token = await human_game(server, roles=PLAIN_TOWN)
    messages = malformed_messages(random.Random(1234), server.settings.max_message_bytes)
    assert len(messages) > 350
    async with server.seat_connect(game_id, token) as ws:
        assert (await ws.recv())["type"] == "hello"
        await quiet(ws)  # the AI seats' Day 1 chat
        before = await snapshot(server, game_id)
        replies = []
        for message in messages:
            replies.append(await send_and_expect_error(ws, message))
        # versions count in the seat's own sequence (the last events it got)
        seen = max(m["version"] for m in ws.messages if m["type"] == "events")
        assert {r["version"] for r in replies} == {seen}
        faults = {r.get("fault") for r in replies}
        assert {"intention", "premise", "parameter"} <= faults
        assert any(r.get("candidates") for r in replies)
        assert await snapshot(server, game_id) == before
        # still usable: ping, and a legal command goes through
        await ws.send({"type": "ping"})
        assert (await ws.recv()) == {"type": "pong", "version": seen}
        await ws.send({"type": "command", "command": {"type": "chat", "text": "still here"}})
        msg = await ws.recv_type("events")
        assert [e["data"] for e in msg["events"]] == [{"author": 1, "text": "still here"}]
    assert (await snapshot(server, game_id))[0] == before[0] + 1


async def test_spectator_socket_survives_malformed_messages(server: Server) -> None:
    game_id, _token = await human_game(server, slot=3)
    messages = malformed_messages(random.Random(99), server.settings.max_message_bytes)
    async with server.ws_connect(f"/ws/games/{game_id}/watch?viewer=public") as ws:
        assert (await ws.recv())["type"] == "hello"
        for message in messages[:19]:  # within the rate limit
            await ws.send(message)
            await ws.recv_type("error")  # (events of the running game may come between)
        await ws.send({"type": "ping"})
        await ws.recv_type("pong")


async def test_flood_is_rate_limited(server_factory: ServerFactory) -> None:
    window = 3.0
    server = await server_factory(time_scale=100.0, rate_limit_messages=10,
                                  rate_limit_seconds=window)
    game_id, token = await human_game(server, roles=PLAIN_TOWN)
    async with server.seat_connect(game_id, token) as ws:
        assert (await ws.recv())["type"] == "hello"
        await quiet(ws)
        before = await snapshot(server, game_id)
        n = 60
        flood: list[dict[str, Any]] = [
            {"type": "ping"} if i % 2 else
            {"type": "command", "command": {"type": "vote", "target": 2}}  # illegal in Day 1
            for i in range(n)]
        for message in flood:  # as fast as the socket takes them
            await ws.send(message)
        replies = [await ws.recv() for _ in range(n)]
        assert {r["type"] for r in replies} <= {"pong", "error"}
        limited = [r for r in replies if r["type"] == "error" and "too many" in r["error"]]
        assert limited, "a flood is cut off"
        assert len(replies) - len(limited) <= 10 * 2  # (however slowly they were read)
        assert await snapshot(server, game_id) == before
        # after the window the socket works again
        await asyncio.sleep(window + 0.2)
        await ws.send({"type": "ping"})
        assert (await ws.recv())["type"] == "pong"
