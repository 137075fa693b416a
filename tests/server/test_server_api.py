"""The HTTP API against real SQLite and PostgreSQL: health, lobbies (create,
validate, join, start), game listings and summaries, replays and who may see
which view; a whole fast all-AI game whose stored command log re-runs to the
same event log."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tossim.agents.match import play_match
from tossim.analysis.quality import game_quality
from tossim.engine import OMNISCIENT_VIEWER, PUBLIC_VIEWER, GameConfig, Viewer, view
from tossim.engine.replay import LOG_FORMAT, event_lines, rerun
from tossim.engine.view import project_event, visible_events
from tossim.server.service import token_hash

from .support import Server, ServerFactory, create_game, is_finished, owner, wait_game


async def test_health(server: Server) -> None:
    r = await server.client.get("/api/health")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok" and body["db"] == "ok" and body["bus"] == "memory"
    assert body["live_games"] == 0


async def test_create_lobby_and_validation(server: Server) -> None:
    c = server.client
    bad: list[Any] = [
        {"players": 6}, {"players": 16}, {"players": "many"}, {"players": None},
        {"mode": "nonsense"}, {"speed": "ludicrous"}, {"seed": -1}, {"seed": 2**64},
        {"players": 7, "seats": [{"slot": 1}, {"slot": 1}]},  # duplicate seat
        {"players": 7, "seats": [{"slot": 8}]},  # beyond the table
        {"seats": [{"slot": 0}]}, {"seats": [{"slot": 3, "kind": "robot"}]},
        {"seats": [{"slot": 2, "kind": "ai", "backend": "gpt-17"}]},  # unknown backend
        {"seats": [{"slot": 2, "protocol": "yaml"}]},
        {"speed": "fast", "seats": [{"slot": 1, "kind": "human"}]},  # humans in fast games
        {"speed": "paced", "seats": [{"slot": 1, "kind": "human"}]},
        {"seats": [{"slot": s} for s in range(1, 17)]},
        [], "lobby", None,
    ]
    for body in bad:
        r = await c.post("/api/lobbies", json=body)
        assert r.status_code == 422, (body, r.status_code, r.text)
        assert "detail" in r.json()
    # the server's own 422s have FastAPI's form (as the OpenAPI schema says)
    r = await c.post("/api/lobbies", json={"players": 7, "seats": [{"slot": 2}, {"slot": 2}]})
    (err,) = r.json()["detail"]
    assert err["loc"] == ["body", "seats"] and "unique" in err["msg"]
    # a custom role list that cannot be dealt: 422 naming the slot, nothing created
    before = len((await c.get("/api/lobbies")).json())
    for roles, loc, text in (
            (["Jailor", "Sheriff", "Jailor", "Godfather", "Jester", "Doctor", "Mafioso"],
             ["body", "roles", 2], "slot 3 ('Jailor'): Jailor is unique"),
            (["Jailor", "Sherif", "Godfather", "Jester", "Doctor", "Mafioso", "Any"],
             ["body", "roles", 1], "slot 2 ('Sherif'): not a role")):
        r = await c.post("/api/lobbies", json={"mode": "custom", "roles": roles})
        assert r.status_code == 422, r.text
        (err,) = r.json()["detail"]
        assert err["loc"] == loc and text in err["msg"], err
    r = await c.post("/api/lobbies", json={"mode": "ranked", "players": 9})
    assert r.status_code == 422 and "needs 15 players" in r.text
    assert len((await c.get("/api/lobbies")).json()) == before
    r = await c.post("/api/lobbies", json={"mode": "custom", "roles": [
        "Jailor", "Town Investigative", "Random Town", "Godfather", "Random Mafia",
        "Neutral Evil", "Any"]})
    assert r.status_code == 201, r.text
    assert r.json()["players"] == 7 and r.json()["mode"] == "custom"

    r = await c.post("/api/lobbies", content=b"{not json", headers={"content-type":
                                                                      "application/json"})
    assert r.status_code == 422

    r = await c.post("/api/lobbies", json={"players": 9, "seed": 5, "seats": [
        {"slot": 2, "kind": "human"},
        {"slot": 4, "kind": "ai", "backend": "scripted", "persona": "rational",
         "protocol": "json"}]})
    assert r.status_code == 201, r.text
    lobby = r.json()
    assert lobby["players"] == 9 and lobby["mode"] == "classic" and lobby["status"] == "lobby"
    assert lobby["speed"] == "standard" and not lobby["demo"]
    seats = lobby["seats"]
    assert [s["slot"] for s in seats] == list(range(1, 10))
    assert seats[1] == {"slot": 2, "name": "Player 2", "kind": "human", "claimed": False,
                        "backend": None, "model": None, "persona": None, "label": "human"}
    assert seats[3]["kind"] == "ai" and seats[3]["backend"] == "scripted"
    assert seats[3]["label"] == "scripted bot"
    assert seats[3]["persona"] == "rational"
    assert all(s["kind"] == "ai" for i, s in enumerate(seats) if i != 1)

    # the owner token is in the creation answer only
    owner_token = lobby.pop("owner_token")
    assert len(owner_token) >= 32 and "seat" not in lobby
    r = await c.get(f"/api/lobbies/{lobby['id']}")
    assert r.status_code == 200 and r.json() == lobby
    listed = (await c.get("/api/lobbies")).json()
    assert lobby["id"] in [x["id"] for x in listed]
    assert all(x["status"] == "lobby" for x in listed)
    for missing in ("nope", "0" * 32, "x" * 200):
        assert (await c.get(f"/api/lobbies/{missing}")).status_code == 404
        assert (await c.post(f"/api/lobbies/{missing}/start")).status_code == 404
        assert (await c.post(f"/api/lobbies/{missing}/join",
                             json={"name": "A"})).status_code == 404
    # an un-started lobby is not a game yet
    assert (await c.get(f"/api/games/{lobby['id']}/replay")).status_code == 409


async def test_join_and_start(server: Server) -> None:
    c = server.client
    game_id = await create_game(c, start=False, players=7, seats=[
        {"slot": 1, "kind": "human"}, {"slot": 2, "kind": "human"}, {"slot": 3, "kind": "human"}])
    join = f"/api/lobbies/{game_id}/join"
    for name in ("<b>", "a>b", "x<script>", "", "   ", "n" * 25, "tab\there\x00", None, 7):
        r = await c.post(join, json={"name": name})
        assert r.status_code == 422, (name, r.text)
    assert (await c.post(join, json={"name": "Zed", "slot": 4})).status_code == 409  # an AI seat
    assert (await c.post(join, json={"name": "Zed", "slot": 0})).status_code == 422

    r = await c.post(join, json={"name": "  Alice   Smith ", "slot": 1})
    assert r.status_code == 200, r.text
    alice = r.json()
    assert alice["slot"] == 1 and alice["game_id"] == game_id
    token = alice["token"]
    assert isinstance(token, str) and len(token) >= 24

    again = await c.post(join, json={"name": "Mallory", "slot": 1})
    assert again.status_code == 409
    assert (await c.post(join, json={"name": "alice smith"})).status_code == 409  # name taken

    bob = (await c.post(join, json={"name": "Bob"})).json()  # the first free human seat
    assert bob["slot"] == 2 and bob["token"] != token

    # the token is shown once: neither it nor its hash is in any answer, only the
    # hash is stored
    lobby = (await c.get(f"/api/lobbies/{game_id}")).json()
    text = json.dumps(lobby)
    assert token not in text and token_hash(token) not in text
    assert [(s["slot"], s["name"], s["claimed"]) for s in lobby["seats"][:3]] == [
        (1, "Alice Smith", True), (2, "Bob", True), (3, "Player 3", False)]
    row = await server.store.get_game(game_id)
    assert row.seats[0].token_hash == token_hash(token)
    assert token not in json.dumps([s.__dict__ for s in row.seats])
    seat = await server.store.seat_for_token(game_id, token_hash(token))
    assert seat is not None and seat.slot == 1

    r = await c.post(f"/api/lobbies/{game_id}/start", headers=owner(game_id))
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "live"
    r = await c.post(f"/api/lobbies/{game_id}/start", headers=owner(game_id))
    assert r.status_code == 409, r.text
    assert (await c.post(join, json={"name": "Late"})).status_code == 409
    summary = (await c.get(f"/api/games/{game_id}")).json()
    assert summary["status"] == "live"
    assert summary["names"][:3] == ["Alice Smith", "Bob", "Player 3"]
    # the unclaimed human seat is played by a scripted bot; the lobby list drops it
    assert game_id in server.app.state.actors.actors
    assert 3 in server.app.state.actors.actors[game_id].ai
    assert 1 not in server.app.state.actors.actors[game_id].ai
    assert game_id not in [x["id"] for x in (await c.get("/api/lobbies")).json()]
    health = (await c.get("/api/health")).json()
    assert health["live_games"] >= 1


async def test_list_games_and_summary_with_graveyard(server: Server) -> None:
    c = server.client
    done_id = await create_game(c, players=15, speed="fast", seed=11)
    live_id = await create_game(c, start=False, players=7, seats=[{"slot": 7, "kind": "human"}])
    assert (await c.post(f"/api/lobbies/{live_id}/join", json={"name": "Hu"})).status_code == 200
    r = await c.post(f"/api/lobbies/{live_id}/start", headers=owner(live_id))
    assert r.status_code == 200, r.text
    summary = await wait_game(c, done_id, is_finished)

    live = (await c.get("/api/games", params={"status": "live"})).json()
    fin = (await c.get("/api/games", params={"status": "finished"})).json()
    both = (await c.get("/api/games")).json()
    assert live_id in [g["id"] for g in live] and done_id not in [g["id"] for g in live]
    assert done_id in [g["id"] for g in fin] and live_id not in [g["id"] for g in fin]
    assert {live_id, done_id} <= {g["id"] for g in both}
    assert all(g["status"] == "live" for g in live) and all(g["status"] == "finished"
                                                            for g in fin)
    assert (await c.get("/api/games", params={"status": "lobby"})).status_code == 422
    listed = next(g for g in fin if g["id"] == done_id)
    for key in ("version", "result", "winners", "day", "phase", "seats", "mode"):
        assert listed[key] == summary[key], key

    assert summary["result"] in ("town", "mafia", "serial_killer", "draw", "neutral") \
        or isinstance(summary["result"], str)
    assert summary["winners"] and all(1 <= w <= 15 for w in summary["winners"])
    assert summary["phase"] == "ended"
    assert summary["mode"] == "classic" and summary["players"] == 15
    assert len(summary["names"]) == 15
    # the graveyard is the public roster's dead, with roles, causes and wills
    rp = (await c.get(f"/api/games/{done_id}/replay", params={"viewer": "omniscient"})).json()
    game = rerun(GameConfig.from_dict(rp["config"]), rp["commands"])
    expected = [e.to_dict() for e in view(game, PUBLIC_VIEWER).roster if not e.alive]
    assert summary["graveyard"] == json.loads(json.dumps(expected))
    assert summary["graveyard"], "a finished 15-player game has dead players"
    for entry in summary["graveyard"]:
        assert entry["role"] and "death" in entry and entry["death"]["causes"]
    assert summary["result"] == game.result and summary["winners"] == list(game.winners)
    row = await server.store.get_game(done_id)
    assert row.status == "finished" and row.result == game.result
    assert row.winners == list(game.winners) and row.version == game.version

    lsum = (await c.get(f"/api/games/{live_id}")).json()
    assert lsum["status"] == "live" and lsum["result"] is None and lsum["winners"] == []
    # every seat says what plays it (the demo mixes model seats and scripted bots)
    assert {s["label"] for s in summary["seats"]} == {"scripted bot"}
    assert [s["label"] for s in lsum["seats"] if s["slot"] == 7] == ["human"]
    assert (await c.get("/api/games/nope")).status_code == 404


async def test_replay_views_and_access(server_factory: ServerFactory) -> None:
    # pace 30 s: the paced all-AI game stays live for the whole test
    server = await server_factory(pace=30.0)
    c = server.client
    human_id = await create_game(c, start=False, players=7, seats=[{"slot": 3, "kind": "human"}])
    assert (await c.post(f"/api/lobbies/{human_id}/join", json={"name": "H"})).status_code == 200
    r = await c.post(f"/api/lobbies/{human_id}/start", headers=owner(human_id))
    assert r.status_code == 200, r.text
    paced_id = await create_game(c, players=7, speed="paced", seed=4)
    fast_id = await create_game(c, players=7, speed="fast", seed=4)
    await wait_game(c, fast_id, is_finished)

    async def replay(game_id: str, viewer: str) -> Any:
        return await c.get(f"/api/games/{game_id}/replay", params={"viewer": viewer})

    # live game with a human seat: public only
    pub = await replay(human_id, "public")
    assert pub.status_code == 200
    body = pub.json()
    assert body["format"] == LOG_FORMAT and body["status"] == "live"
    assert body["seed"] is None and body["commands"] == []
    assert "seed" not in body["config"] and "roles" not in body["config"]
    assert all(e["audience"] == "public" for e in body["events"])
    assert body["events"] and body["events"][0]["key"] == "game.start"
    for viewer in ("omniscient", "1", "3", "7"):
        r = await replay(human_id, viewer)
        assert r.status_code == 403, (viewer, r.text)
    for viewer in ("0", "8", "everyone", "-1", "1.5", "x" * 13):
        r = await replay(human_id, viewer)
        assert r.status_code == 422, viewer
        assert r.json()["detail"][0]["loc"] == ["query", "viewer"]
    assert (await c.get("/api/games/nope/replay")).status_code == 404

    # a live all-AI game: every view
    omni = await replay(paced_id, "omniscient")
    assert omni.status_code == 200 and omni.json()["status"] == "live"
    assert omni.json()["seed"] == 4 and omni.json()["config"]["seed"] == 4
    assert (await replay(paced_id, "5")).status_code == 200

    # a finished game: every view, each with exactly its visible events
    omni_body = (await replay(fast_id, "omniscient")).json()
    assert omni_body["status"] == "finished"
    game = rerun(GameConfig.from_dict(omni_body["config"]), omni_body["commands"])
    assert omni_body["events"] == json.loads(json.dumps(
        [project_event(e, OMNISCIENT_VIEWER) for e in game.events]))
    for viewer, who in [("public", PUBLIC_VIEWER), ("2", Viewer.player(2)),
                        ("7", Viewer.player(7))]:
        body = (await replay(fast_id, viewer)).json()
        assert body["events"] == json.loads(json.dumps(
            [{**project_event(e, who), "v": n}  # in the viewer's own sequence
             for n, e in enumerate(visible_events(game, who), 1)]))
        assert body["commands"] == [] and body["seed"] is None
        assert all("to" not in e and "secret" not in e for e in body["events"])
    p2 = (await replay(fast_id, "2")).json()["events"]
    p7 = (await replay(fast_id, "7")).json()["events"]
    assert [e["v"] for e in p2] == list(range(1, len(p2) + 1))  # no gaps in its own sequence
    assert p2 != p7  # each sees its own role card at least

    # once finished, the human game's privileged views open up
    await server.app.state.actors.actors[human_id].stop()
    await server.store.set_status(human_id, "finished")
    assert (await replay(human_id, "omniscient")).status_code == 200
    assert (await replay(human_id, "3")).status_code == 200


async def test_fast_game_replays_to_the_identical_event_log(server: Server) -> None:
    c = server.client
    game_id = await create_game(c, players=15, speed="fast", seed=20240)
    summary = await wait_game(c, game_id, is_finished)
    rp = (await c.get(f"/api/games/{game_id}/replay", params={"viewer": "omniscient"})).json()
    assert rp["status"] == "finished" and rp["seed"] == 20240
    config = GameConfig.from_dict(rp["config"])
    assert config.seed == 20240 and config.players == 15
    assert rp["commands"]

    stored_commands = await server.store.commands(game_id)
    assert [data for _seq, _origin, data in stored_commands] == rp["commands"]
    assert [seq for seq, _o, _d in stored_commands] == list(range(1, len(stored_commands) + 1))
    origins = {o.split(":")[0] for _s, o, _d in stored_commands}
    assert origins <= {"ai", "timer"}

    # re-running the stored commands gives the stored events, byte for byte
    game = rerun(config, rp["commands"])
    assert game.ended and game.result == summary["result"]
    assert list(game.winners) == summary["winners"] and game.version == summary["version"]
    stored = await server.store.events(game_id)
    assert stored, "the events are stored"
    replayed = event_lines(game)
    stored_lines = [json.dumps(e, sort_keys=True, ensure_ascii=False) for e in stored]
    # the events new_game() deals (before the first command) may be left out of
    # the store; everything after them is there, identical
    first = stored[0]["v"]
    assert replayed[first - 1:] == stored_lines
    assert all(e.key in ("game.start", "game.role", "game.mafia_team", "phase.day1",
                         "game.executioner_target") or e.v >= first
               for e in game.events[:first - 1])
    # and the omniscient replay's events are the full log
    assert [e["v"] for e in rp["events"]] == list(range(1, game.version + 1))
    assert [e["key"] for e in rp["events"]] == [e.key for e in game.events]
    metrics = await server.store.metrics(game_id)
    assert sorted(metrics) == list(range(1, 16))
    assert sum(m["commands"] for m in metrics.values()) == sum(
        1 for _s, o, _d in stored_commands if o.startswith("ai:"))
    # each seat's play quality, computed from the whole event log, is stored too
    quality = game_quality(game)
    assert all(m["quality"] == quality[slot] for slot, m in metrics.items())


@pytest.mark.parametrize("seed", [3, 18])
async def test_fast_games_equal_the_match_driver(server: Server, seed: int) -> None:
    """The server's actor asks the same bots in the same order as play_match and,
    like it, drops what is left of a seat's answer once the phase has changed (in
    these seeds a Jailor's vote starts a trial and its jail order must not follow)."""
    game_id = await create_game(server.client, players=15, speed="fast", seed=seed)
    await wait_game(server.client, game_id, is_finished)
    rp = (await server.client.get(f"/api/games/{game_id}/replay",
                                  params={"viewer": "omniscient"})).json()
    config = GameConfig.from_dict(rp["config"])
    match = play_match(config).game
    assert rp["commands"] == list(match.commands)
    assert event_lines(rerun(config, rp["commands"])) == event_lines(match)
