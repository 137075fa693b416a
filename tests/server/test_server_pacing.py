"""Pacing of standard games: AI seats are asked at seeded moments spread over
a phase, and with a human seat no AI majority puts anyone on trial before the
human has had `min_human_vote_s` to vote (the trial starts when that time is
up, if the majority still holds)."""

from __future__ import annotations

import asyncio

import pytest

from tossim.engine import Command, View, Vote
from tossim.server import runner
from tossim.server.settings import Settings

from .support import ServerFactory, human_game

HUMAN, TARGET = 1, 7


class EagerVoter:
    """An AI seat that votes Player 7 the moment it is asked in Voting."""

    def __init__(self, slot: int) -> None:
        self.slot = slot

    async def decide(self, obs: View, deadline: float | None = None) -> list[Command]:
        vote = next((a for a in obs.legal if a.kind == "vote"), None)
        if vote is None:
            return []
        target = TARGET if self.slot != TARGET else 6
        return [Vote(self.slot, target)] if target in vote.targets else []


async def test_human_votes_before_an_ai_majority_starts_a_trial(
        server_factory: ServerFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "make_ai_seat",
                        lambda spec, slot, seed, **kw: EagerVoter(slot))
    # voting lasts 3 s; the humans' time covers all of it
    server = await server_factory(time_scale=0.1, min_human_vote_s=100.0)
    game_id, token = await human_game(server, players=7, slot=HUMAN, seed=1)
    async with server.seat_connect(game_id, token) as seat:
        await seat.until(lambda m: m["type"] == "events"
                         and m.get("state", {}).get("phase") == "voting", timeout=60)
        # a slow human: by now every AI seat has been asked and has voted
        await asyncio.sleep(2.0)
        await seat.send({"type": "command", "command": {"type": "vote", "target": 2}})
        trial = await seat.until(lambda m: m["type"] == "events" and any(
            e["key"] == "trial.start" for e in m["events"]), timeout=60)
    events = seat.events()
    keys = [(e["key"], e["data"].get("voter")) for e in events]
    mine = keys.index(("vote.cast", HUMAN))
    start = next(i for i, e in enumerate(events) if e["key"] == "trial.start")
    assert mine < start  # the human's vote went in while Voting was open
    accused = next(e for e in trial["events"] if e["key"] == "trial.start")["data"]["accused"]
    assert accused == TARGET  # the held majority still held when the time was up
    ai_votes = [e for e in events[:start] if e["key"] == "vote.cast"
                and e["data"]["voter"] != HUMAN and e["data"]["target"] == TARGET]
    assert len(ai_votes) >= 4  # votes were collected, then the trial started


def test_ai_seats_are_asked_at_spread_seeded_moments() -> None:
    """In Voting a scripted seat is asked twice, at seeded moments inside the
    window, different for different seats; at night it is asked at once."""
    from tossim.agents.driver import ask_moments

    times = {slot: ask_moments(4, 9, slot, "voting", model=False) for slot in range(1, 8)}
    assert all(len(t) == 2 and 0.1 <= t[0] <= t[1] <= 0.9 for t in times.values())
    assert len({t[0] for t in times.values()}) == 7
    assert times == {slot: ask_moments(4, 9, slot, "voting", model=False)
                     for slot in range(1, 8)}
    assert ask_moments(4, 10, 1, "night", model=False) == [0.0]
    assert Settings().min_human_vote_s > 0
