""""Play again" for everyone (docs/api.md, "Play again"): a finished game has
one next lobby, made by the first of its players who asks, whoever asks
second (even at the same moment) gets the same lobby, and every socket still
on the finished game is told where it is."""

from __future__ import annotations

import asyncio
from typing import Any

from .support import Server, ServerFactory, create_game, is_finished, wait_game


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def two_human_game(server: Server) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A started quick game with Olga (seat 1, the creator) and Bob (seat 2)."""
    c = server.client
    r = await c.post("/api/lobbies", json={
        "players": 7, "speed": "quick", "name": "Olga",
        "seats": [{"slot": 1, "kind": "human"}, {"slot": 2, "kind": "human"}]})
    assert r.status_code == 201, r.text
    gid, olga = r.json()["id"], r.json()["seat"]
    bob = (await c.post(f"/api/lobbies/{gid}/join", json={"name": "Bob"})).json()
    r = await c.post(f"/api/lobbies/{gid}/start",
                     headers=bearer(r.json()["owner_token"]))
    assert r.status_code == 200, r.text
    return gid, olga, bob


async def test_one_next_lobby_for_every_player(server_factory: ServerFactory) -> None:
    server = await server_factory(time_scale=0.01)  # idle humans: the timers end it
    c = server.client
    gid, olga, bob = await two_human_game(server)
    # not over yet: no next lobby
    r = await c.post(f"/api/games/{gid}/next", json={}, headers=bearer(olga["token"]))
    assert r.status_code == 409, r.text
    await wait_game(c, gid, is_finished, timeout=120)
    # only the game's players ask (a spectator, a wrong token, an all-AI game's watcher)
    for headers in ({}, bearer("nope")):
        r = await c.post(f"/api/games/{gid}/next", json={}, headers=headers)
        assert r.status_code == 403, r.text
    ai_game = await create_game(c, players=7, speed="fast")
    r = await c.post(f"/api/games/{ai_game}/next", json={}, headers=bearer(olga["token"]))
    assert r.status_code == 403
    assert (await c.get(f"/api/games/{gid}")).json()["next_lobby"] is None

    async with server.seat_connect(gid, bob["token"]) as ws:
        await ws.recv_type("hello")
        # both click at once: one lobby, one creator (its owner), a seat each
        first, second = await asyncio.gather(
            c.post(f"/api/games/{gid}/next", json={}, headers=bearer(olga["token"])),
            c.post(f"/api/games/{gid}/next", json={"name": "Bobby"},
                   headers=bearer(bob["token"])))
        assert first.status_code == second.status_code == 200, (first.text, second.text)
        a, b = first.json(), second.json()
        assert a["id"] == b["id"] != gid
        assert sorted([a["created"], b["created"]]) == [False, True]
        creator = a if a["created"] else b
        assert "owner_token" in creator and "owner_token" not in (b if creator is a else a)
        assert (a["seat"]["slot"], b["seat"]["slot"]) == (1, 2)  # their old seats
        # the socket on the finished game is told
        note = await ws.recv_type("next")
        assert note["lobby"] == a["id"]

    lobby = (await c.get(f"/api/lobbies/{a['id']}")).json()
    old = (await c.get(f"/api/games/{gid}")).json()
    assert old["next_lobby"] == a["id"]
    assert lobby["status"] == "lobby"
    assert (lobby["mode"], lobby["players"], lobby["speed"]) == (old["mode"], 7, "quick")
    assert [(s["slot"], s["name"], s["claimed"]) for s in lobby["seats"][:3]] == [
        (1, "Olga", True), (2, "Bobby", True), (3, "Player 3", False)]
    assert [s["kind"] for s in lobby["seats"]] == [s["kind"] for s in old["seats"]]
    # the next lobby's seat tokens play it; the creator's owner token starts it
    r = await c.post(f"/api/lobbies/{a['id']}/start", headers=bearer(creator["owner_token"]))
    assert r.status_code == 200, r.text

    # asking again: the same lobby (started now), no second one, no new seat
    r = await c.post(f"/api/games/{gid}/next", json={}, headers=bearer(olga["token"]))
    assert r.status_code == 200 and r.json()["id"] == a["id"]
    assert r.json()["created"] is False and "seat" not in r.json()
    # a socket that joins later hears of it too
    async with server.seat_connect(gid, olga["token"]) as ws:
        assert (await ws.recv_type("next"))["lobby"] == a["id"]
