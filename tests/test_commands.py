"""Bad input of every kind gets a specific rejection and changes nothing."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tossim.engine import (
    Chat,
    DayAction,
    Game,
    GameConfig,
    IllegalCommand,
    Judge,
    MalformedCommand,
    NightAction,
    PhaseTimeout,
    Vote,
    Whisper,
    WriteDeathNote,
    WriteWill,
    apply,
    command_from_dict,
    new_game,
)
from tossim.engine.state import MAX_WILL, Phase

ROLES = ("Sheriff", "Doctor", "Investigator", "Jailor", "Medium", "Godfather", "Framer",
         "Executioner", "Escort", "Mafioso", "Lookout", "Serial Killer", "Vigilante",
         "Jester", "Mayor")


def fixed_game() -> Game:
    return new_game(GameConfig(players=15, seed=3, roles=ROLES))


def to_voting(g: Game) -> None:
    apply(g, PhaseTimeout())  # day 1 -> night 1
    apply(g, PhaseTimeout())  # night 1 -> day 2 discussion
    apply(g, PhaseTimeout())  # -> voting
    assert g.phase is Phase.VOTING


def snapshot(g: Game) -> str:
    state = {k: v for k, v in vars(g).items() if k != "rng"}
    return repr(copy.deepcopy(state)) + repr(g.rng.getstate())


def rejected(g: Game, cmd: Any) -> IllegalCommand:
    before = snapshot(g)
    with pytest.raises(IllegalCommand) as info:
        apply(g, cmd)
    assert snapshot(g) == before, "a rejected command changed the game"
    return info.value


def test_wrong_phase_is_an_intention_fault() -> None:
    g = fixed_game()
    err = rejected(g, Vote(1, 2))
    assert err.fault == "intention"
    assert "Day 1" in err.reason


def test_vote_for_a_dead_or_unknown_player_is_a_premise_fault_with_candidates() -> None:
    g = fixed_game()
    to_voting(g)
    g.player(5).alive = False
    err = rejected(g, Vote(1, 5))
    assert err.fault == "premise" and "dead" in err.reason
    assert 5 not in err.candidates and 2 in err.candidates
    err = rejected(g, Vote(1, 99))
    assert err.fault == "premise" and "no player 99" in err.reason
    err = rejected(g, Vote(1, 1))
    assert err.fault == "premise" and "yourself" in err.reason


def test_dead_players_cannot_vote_or_act() -> None:
    g = fixed_game()
    to_voting(g)
    g.player(2).alive = False
    assert rejected(g, Vote(2, 3)).fault == "intention"
    assert rejected(g, WriteWill(2, "too late")).fault == "intention"


def test_oversized_will_and_empty_chat_are_parameter_faults() -> None:
    g = fixed_game()
    err = rejected(g, WriteWill(1, "x" * (MAX_WILL + 1)))
    assert err.fault == "parameter" and str(MAX_WILL) in err.reason
    assert rejected(g, Chat(1, "   ")).fault == "parameter"
    apply(g, WriteWill(1, "x" * MAX_WILL))
    assert g.player(1).will == "x" * MAX_WILL


def test_text_that_cannot_be_stored_is_refused() -> None:
    g = fixed_game()
    for bad in ("a\x00b", "bell\x07", "lone \ud800 surrogate", "c1 \x85"):
        err = rejected(g, Chat(1, bad))
        assert err.fault == "parameter" and "control character" in err.reason
    assert rejected(g, WriteWill(1, "nul\x00")).fault == "parameter"
    apply(g, WriteWill(1, "N1: Player 2 visited.\n\tN2: nobody"))
    apply(g, Chat(1, "ünïcödé and emoji 🎭 are fine"))


def test_night_action_argument_count_and_targets() -> None:
    g = fixed_game()
    apply(g, PhaseTimeout())  # night 1
    assert rejected(g, NightAction(1, (2, 3))).fault == "parameter"  # sheriff takes one
    assert rejected(g, NightAction(1, (1,))).fault == "premise"  # not yourself
    assert rejected(g, NightAction(6, (7,))).fault == "premise"  # godfather vs framer
    assert rejected(g, NightAction(13, (2,))).fault == "intention"  # no vigilante shot N1
    apply(g, NightAction(1, (2,)))
    apply(g, NightAction(1, ()))  # cancel
    assert 1 not in g.night_actions


def test_stale_timer_and_commands_after_the_end() -> None:
    g = fixed_game()
    seq = g.phase_seq
    apply(g, PhaseTimeout(seq))
    assert rejected(g, PhaseTimeout(seq)).fault == "premise"
    g.phase = Phase.ENDED
    assert "over" in rejected(g, Chat(1, "hi")).reason


def test_whisper_rules() -> None:
    g = fixed_game()
    apply(g, DayAction(15, "reveal"))
    assert "Mayor" in rejected(g, Whisper(1, 15, "hi")).reason
    assert rejected(g, Whisper(15, 1, "hi")).fault == "intention"
    apply(g, Whisper(1, 2, "hi"))


@pytest.mark.parametrize("raw", [
    [], "vote", {"type": "explode"}, {"type": "vote", "actor": 1},
    {"type": "vote", "actor": "1", "target": 2}, {"type": "vote", "actor": True, "target": 2},
    {"type": "night", "actor": 1, "targets": 3}, {"type": "night", "actor": 1,
                                                  "targets": ["a"]},
    {"type": "chat", "actor": 1, "text": 5}, {"type": "chat", "actor": 1, "text": "x",
                                             "extra": 1},
])
def test_malformed_commands_are_rejected_with_a_reason(raw: Any) -> None:
    with pytest.raises(MalformedCommand):
        command_from_dict(raw)


def test_every_command_round_trips_through_its_dict_form() -> None:
    cmds = [Chat(1, "hi", "public"), Whisper(1, 2, "psst"), Vote(1, None), Judge(2, "guilty"),
            NightAction(3, (4, 5)), DayAction(4, "jail", 6), WriteWill(1, "w"),
            WriteDeathNote(6, "n"), PhaseTimeout(7)]
    for cmd in cmds:
        assert command_from_dict(json.loads(json.dumps(cmd.to_dict()))) == cmd


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 20) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                               max_size=4),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["type", "actor", "target", "targets", "text",
                                        "verdict", "ability", "channel", "phase_seq", "x"]),
                       json_values, max_size=5),
       st.sampled_from(["chat", "whisper", "vote", "judge", "night", "day", "will",
                        "death_note", "timeout"]))
def test_fuzzed_command_dicts_never_corrupt_a_game(raw: dict[str, Any], kind: str) -> None:
    g = fixed_game()
    raw.setdefault("type", kind)
    before = snapshot(g)
    try:
        cmd = command_from_dict(raw)
    except MalformedCommand:
        assert snapshot(g) == before
        return
    try:
        apply(g, cmd)
    except IllegalCommand:
        assert snapshot(g) == before
