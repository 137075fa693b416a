"""Lobby owners, modes, quick speed and paging: only the owner token (shown
once at creation, only its SHA-256 stored) starts a lobby, changes its
settings or removes a player; a refused request changes nothing; a creator's
name claims a seat with the lobby in one request."""

from __future__ import annotations

import json

from tossim.engine.modes import MODES
from tossim.server.service import token_hash

from .support import Server, create_game, is_finished, owner, wait_game


async def test_only_the_owner_starts_changes_and_removes(server: Server) -> None:
    c = server.client
    r = await c.post("/api/lobbies", json={"players": 7, "speed": "quick", "name": "Olga",
                                           "seats": [{"slot": 1, "kind": "human"},
                                                     {"slot": 2, "kind": "human"}]})
    assert r.status_code == 201, r.text
    created = r.json()
    gid, owner_token, seat = created["id"], created["owner_token"], created["seat"]
    assert seat["slot"] == 1 and seat["game_id"] == gid
    # shown once: neither the token nor its hash is in any later answer; the hash is stored
    lobby = (await c.get(f"/api/lobbies/{gid}")).json()
    assert owner_token not in json.dumps(lobby) and token_hash(owner_token) not in json.dumps(lobby)
    assert "owner_token" not in lobby and lobby["speed"] == "quick"
    assert (await server.store.get_game(gid)).lobby["owner_hash"] == token_hash(owner_token)
    assert [(s["slot"], s["name"], s["claimed"]) for s in lobby["seats"][:2]] == [
        (1, "Olga", True), (2, "Player 2", False)]

    bob = (await c.post(f"/api/lobbies/{gid}/join", json={"name": "Bob"})).json()
    as_owner = {"Authorization": f"Bearer {owner_token}"}
    as_bob = {"Authorization": f"Bearer {bob['token']}"}
    for headers in ({}, as_bob, {"Authorization": "Bearer nope"}, {"Authorization": owner_token}):
        r = await c.post(f"/api/lobbies/{gid}/start", headers=headers)
        assert r.status_code == 403 and r.json() == {
            "detail": "only the lobby's owner can start it"}, r.text
        r = await c.patch(f"/api/lobbies/{gid}", json={"speed": "standard"}, headers=headers)
        assert r.status_code == 403 and "only the lobby's owner" in r.json()["detail"]
        r = await c.delete(f"/api/lobbies/{gid}/seats/1", headers=headers)
        assert r.status_code == 403 and "only the lobby's owner" in r.json()["detail"]
    assert (await c.get(f"/api/lobbies/{gid}")).json() == lobby | {
        "seats": [*lobby["seats"][:1], {**lobby["seats"][1], "name": "Bob", "claimed": True},
                  *lobby["seats"][2:]]}

    # settings: a refused change (a claimed seat, a fast game with humans) changes nothing
    before = (await c.get(f"/api/lobbies/{gid}")).json()
    r = await c.patch(f"/api/lobbies/{gid}", headers=as_owner,
                      json={"seats": [{"slot": 2, "kind": "ai"}]})
    assert r.status_code == 409
    r = await c.patch(f"/api/lobbies/{gid}", headers=as_owner, json={"speed": "fast"})
    assert r.status_code == 422
    assert (await c.get(f"/api/lobbies/{gid}")).json() == before
    r = await c.patch(f"/api/lobbies/{gid}", headers=as_owner,
                      json={"speed": "standard", "seats": [{"slot": 3, "kind": "human"}]})
    assert r.status_code == 200, r.text
    assert r.json()["speed"] == "standard" and r.json()["seats"][2]["kind"] == "human"

    # a player leaves with their own seat token; the owner removes anyone
    assert (await c.delete(f"/api/lobbies/{gid}/seats/2", headers=as_bob)).status_code == 200
    again = (await c.post(f"/api/lobbies/{gid}/join", json={"name": "Carl"})).json()
    assert again["slot"] == 2
    r = await c.delete(f"/api/lobbies/{gid}/seats/2", headers=as_owner)
    assert r.status_code == 200 and r.json()["seats"][1]["claimed"] is False
    assert (await c.delete(f"/api/lobbies/{gid}/seats/2", headers=as_owner)).status_code == 409

    r = await c.post(f"/api/lobbies/{gid}/start", headers=as_owner)
    assert r.status_code == 200 and r.json()["status"] == "live"
    actor = server.app.state.actors.actors[gid]
    assert actor.speed == "standard" and 3 in actor.ai and 1 not in actor.ai
    assert (await c.patch(f"/api/lobbies/{gid}", headers=as_owner,
                          json={"speed": "quick"})).status_code == 409


async def test_a_refused_create_leaves_no_lobby(server: Server) -> None:
    c = server.client
    before = (await c.get("/api/lobbies")).json()
    for body in ({"players": 7, "name": "<b>", "seats": [{"slot": 1, "kind": "human"}]},
                 {"players": 7, "name": "x" * 25, "seats": [{"slot": 1, "kind": "human"}]},
                 {"players": 7, "name": "Olga"},  # no human seat to claim
                 {"players": 7, "speed": "paced", "seats": [{"slot": 1, "kind": "human"}]}):
        r = await c.post("/api/lobbies", json=body)
        assert r.status_code == 422, (body, r.text)
    assert (await c.get("/api/lobbies")).json() == before


async def test_modes_list_every_mode_and_speed(server: Server) -> None:
    body = (await server.client.get("/api/modes")).json()
    assert [m["key"] for m in body["modes"]] == list(MODES)
    classic = body["modes"][0]
    assert classic["roles"] == list(MODES["classic"].slots)
    assert classic["role_names"][:2] == ["Sheriff", "Doctor"]
    assert "Random Town" in classic["role_names"]
    speeds = {s["key"]: s for s in body["speeds"]}
    assert set(speeds) == {"standard", "quick", "fast", "paced"}
    assert speeds["quick"]["humans"] and not speeds["fast"]["humans"]
    assert speeds["quick"]["durations"]["discussion"] * 2 == \
        speeds["standard"]["durations"]["discussion"]


async def test_quick_games_run_half_length_phases(server: Server) -> None:
    c = server.client
    gid = await create_game(c, start=False, players=7, speed="quick",
                            seats=[{"slot": 1, "kind": "human"}])
    assert (await c.post(f"/api/lobbies/{gid}/join", json={"name": "Q"})).status_code == 200
    assert (await c.post(f"/api/lobbies/{gid}/start", headers=owner(gid))).status_code == 200
    actor = server.app.state.actors.actors[gid]
    scale = server.app.state.settings.time_scale
    assert actor._duration() == 15 * scale * 0.5  # Day 1 lasts 15 s at standard speed


async def test_finished_games_are_paged(server: Server) -> None:
    c = server.client
    ids = [await create_game(c, players=7, speed="fast", seed=s) for s in (1, 2, 3)]
    for gid in ids:
        await wait_game(c, gid, is_finished)
    page1 = (await c.get("/api/games", params={"status": "finished", "limit": 2})).json()
    page2 = (await c.get("/api/games", params={"status": "finished", "limit": 2,
                                               "offset": 2})).json()
    everything = [g["id"] for g in (await c.get("/api/games",
                                                params={"status": "finished"})).json()]
    assert everything[:3] == ids[::-1]  # newest first (a shared database holds older ones)
    assert [g["id"] for g in page1] == everything[:2]
    assert [g["id"] for g in page2] == everything[2:4]
    assert (await c.get("/api/games", params={"limit": 0})).status_code == 422
