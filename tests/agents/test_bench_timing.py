"""`tossim bench agents`' timing figures (docs/agents.md#deadlines): a turn
acted in time when it was no miss and fit its phase's time; a phase's share
is its slowest model seat's turns over the phase's length."""

from __future__ import annotations

from typing import Any

from tossim.agents.driver import MatchResult
from tossim.agents.entry_match import EntryMatch
from tossim.agents.llm_seat import LLMSeat
from tossim.agents.loop import ToolLoop
from tossim.engine.rules import new_game
from tossim.engine.state import GameConfig
from tossim.inference.catalogue import backend_entry
from tossim.tools.bench_agents import PhaseClock, timing, timing_lines

from .fake_backend import ScriptedBackend


def turn(day: int, phase: str, seconds: float, missed: bool = False) -> dict[str, Any]:
    return {"day": day, "phase": phase, "time": {"seconds": seconds, "missed": missed}}


def match_with(logs: dict[int, list[dict[str, Any]]]) -> EntryMatch:
    loop = ToolLoop(ScriptedBackend([]))
    seats = {}
    for slot, entries in logs.items():
        seats[slot] = LLMSeat(slot, loop)
        seats[slot].turn_log.extend(entries)
    game = new_game(GameConfig(players=7, seed=1))
    result = MatchResult(game=game, faults={}, days=1, winners=(), result=None)
    return EntryMatch(backend_entry("local"), result, dict(seats), seconds=60.0)


def test_turns_in_time_seconds_and_phase_shares() -> None:
    clock = PhaseClock(time_scale=1.0)
    # a discussion (45 s, one turn: agents.turns) gives a turn 45 s less the 2 s margin
    assert clock.turn_seconds("discussion") == 43.0
    match = match_with({
        1: [turn(1, "discussion", 10.0), turn(1, "discussion", 44.0)],  # the 2nd too slow
        2: [turn(1, "discussion", 5.0), turn(1, "voting", 3.0, missed=True)],
    })
    t = timing(match, clock)
    assert (t.turns, t.in_time) == (4, 2)
    assert t.seconds == 62.0 and t.max_seconds == 44.0
    # seat 1 used 54 of the discussion's 45 s; seat 2 3 of voting's 30 s
    assert t.shares["discussion"] == [54.0 / 45.0]
    assert t.shares["voting"] == [3.0 / 30.0]
    lines = timing_lines(match, clock)
    assert "50% of 4 turns acted in time" in lines[0] and "15.5 s per turn" in lines[0]
    assert lines[1].endswith("discussion 120%, voting 10%")


def test_shorter_phases_give_shorter_turns() -> None:
    quick = PhaseClock(time_scale=0.2)
    assert quick.phase_seconds("voting") == 6.0
    assert quick.turn_seconds("voting") == 6.0 - 1.2  # the margin: 20% of a short phase
