"""Stand-ins (docs/api.md, "Stand-ins"): a human seat with no socket open for
a whole phase is played by a scripted bot, labelled for everyone, its
commands stored as the stand-in's; the seat is given back when the player's
socket opens, and only the player is told what the stand-in did."""

from __future__ import annotations

import asyncio
import time

from .support import Server, ServerFactory, human_game

ACTS_ON_NIGHT_1 = {"sheriff", "investigator", "doctor"}
"""Roles of 7-player Classic whose scripted bot always uses its ability on
Night 1."""


async def standin_commands(server: Server, gid: str, slot: int,
                           timeout: float = 30) -> list[dict[str, object]]:
    """The stored commands of the seat's stand-in, once there is one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = await server.store.commands(gid)
        mine = [data for _, origin, data in rows if origin == f"standin:{slot}"]
        if mine:
            return mine
        await asyncio.sleep(0.05)
    raise AssertionError(f"no command of a stand-in for seat {slot} in {timeout} s")


async def test_an_absent_player_gets_a_stand_in_until_they_return(
        server_factory: ServerFactory) -> None:
    server = await server_factory(time_scale=0.05)
    # a role whose stand-in acts on its first night: with any deal, the
    # stand-in of a Jailor killed on Night 1 never sends a command (seen in
    # CI: one game in seven or so)
    gid, token = await human_game(server, roles=ACTS_ON_NIGHT_1, speed="quick")

    async with server.ws_connect(f"/ws/games/{gid}/watch?viewer=public") as watcher:
        # Alice never opened the game: after its first phase a stand-in plays her seat
        note = await watcher.recv_type("standins", timeout=30)
        assert note["slots"] == [1] and note["you"] is None
        done = await standin_commands(server, gid, 1)
        assert all(d.get("actor") == 1 for d in done)
        assert not [o for _, o, _ in await server.store.commands(gid) if o == "seat:1"]

        # she comes back: the seat is hers again at once, and she is told
        async with server.seat_connect(gid, token) as ws:
            back = await ws.until(lambda m: m["type"] == "standins" and m["slots"] == [])
            assert back["you"]["since"].startswith(("Day", "Night"))
            assert back["you"]["did"], back  # what the stand-in did, in words
            # everyone else sees the label go, and never what the stand-in did
            gone = await watcher.until(lambda m: m["type"] == "standins" and m["slots"] == [])
            assert gone["you"] is None
            assert not [m for m in watcher.messages if m["type"] == "standins" and m["you"]]
            count = len([o for _, o, _ in await server.store.commands(gid)
                         if o == "standin:1"])
            # from now on the seat's commands are hers: two more phases, no stand-in
            state = [m["state"] for m in ws.messages
                     if m["type"] == "events" and m.get("state")][-1]
            # (a will while she lives; a line in the dead's chat if the
            # night killed her before she came back)
            kind = "will" if state["you"]["alive"] else "chat"
            await ws.send({"type": "command", "command": {"type": kind, "text": "back"}})
            seq = state["phase_seq"]
            await ws.until(lambda m: m["type"] == "events" and bool(m.get("state")) and (
                m["state"]["phase_seq"] >= seq + 2 or m["state"]["phase"] == "ended"))
            assert not [m for m in ws.messages if m["type"] == "error"], ws.messages
            origins = [o for _, o, _ in await server.store.commands(gid)]
            assert len([o for o in origins if o == "standin:1"]) == count
            assert "seat:1" in origins


def test_a_connected_player_idle_for_two_phases_with_an_action_gets_a_stand_in() -> None:
    """The other way to be away: a socket open, but no command (not a vote,
    not a line) in `IDLE_PHASES` phases in a row in which the player had an
    action to take; phases without one do not count, and any command gives
    the seat back."""
    from tossim.server.standins import IDLE_PHASES, StandIns

    books = StandIns(frozenset({1, 2}))
    books.opened(1, "a")
    books.opened(2, "b")
    living = {1, 2, 3}
    assert books.phase_over(living, "Day 2", frozenset()) == []  # Discussion: no action
    books.command(2)  # Bob votes; Alice does nothing
    assert books.phase_over(living, "Day 2", frozenset({1, 2})) == []  # Voting
    assert books.phase_over(living, "Day 2", frozenset()) == []  # Defense: not counted
    assert IDLE_PHASES == 2
    assert books.phase_over(living, "Night 2", frozenset({1, 2})) == [1]  # Judgement
    assert books.message()["slots"] == [1]
    assert books.command(1)  # Alice acts: her seat is hers again
    assert books.message()["slots"] == [] and books.returned[1].since == "Night 2"
