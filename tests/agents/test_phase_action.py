"""A will, a note or a chat line never uses up the phase's action
(docs/agents.md, "The phase's action"): the runner asks a seat once per
phase, so the seat gets a second turn for its vote or night ability."""

from __future__ import annotations

import asyncio
import time

from tossim.agents.llm_seat import LLMSeat
from tossim.agents.loop import LoopConfig, ToolLoop
from tossim.engine import GameConfig, Viewer, apply, new_game, view
from tossim.engine.commands import Chat, NightAction, PhaseTimeout, Vote, WriteWill
from tossim.engine.state import Game

from .fake_backend import ScriptedBackend
from .support import DAY3_ROLES, day3_investigator

CFG = LoopConfig(max_tool_calls=2, action_tokens=60, turn_tokens=400)


def night1() -> Game:
    g = new_game(GameConfig(players=9, seed=3, roles=DAY3_ROLES))
    apply(g, PhaseTimeout(g.phase_seq))  # Day 1 -> Night 1
    assert g.phase.value == "night"
    return g


def test_a_will_written_at_night_is_followed_by_the_night_ability() -> None:
    g = night1()
    backend = ScriptedBackend(["<thinking>Will first.</thinking>",
                               "<will>I am the Investigator. Nothing checked yet.</will>",
                               "<thinking>Now check someone.</thinking>",
                               "<night>Player 4</night>"])
    seat = LLMSeat(7, ToolLoop(backend, CFG))
    cmds = asyncio.run(seat.decide(view(g, Viewer.player(7))))
    assert cmds == [WriteWill(7, "I am the Investigator. Nothing checked yet."),
                    NightAction(7, (4,))]
    # the second turn offered only the night ability (or waiting)
    action_regex = backend.requests[-1].regex or ""
    assert "<night>" in action_regex and "<will>" not in action_regex
    assert 'Your last will: "I am the Investigator. Nothing checked yet."' in \
        seat.turn_log[-1]["prompt"]
    for cmd in cmds:  # the engine takes both
        apply(g, cmd)
    assert g.player(7).will == "I am the Investigator. Nothing checked yet."
    assert seat.metrics.turns == 2 and len(seat.turn_log) == 2


def test_a_speech_in_voting_is_followed_by_a_vote() -> None:
    t = day3_investigator()
    g = t.game
    backend = ScriptedBackend(["<thinking>Speak.</thinking>",
                               "<speak>Player 4 lied about the Doctor, vote them.</speak>",
                               "<thinking>Vote.</thinking>", "<vote>Player 4</vote>"])
    seat = LLMSeat(7, ToolLoop(backend, CFG))
    cmds = asyncio.run(seat.decide(view(g, Viewer.player(7))))
    assert cmds == [Chat(7, "Player 4 lied about the Doctor, vote them."), Vote(7, 4)]


def test_no_second_turn_once_the_phase_action_is_taken() -> None:
    t = day3_investigator()
    g = t.game
    apply(g, Vote(7, 4))
    backend = ScriptedBackend(["<thinking>Speak.</thinking>",
                               "<speak>Player 4 lied about the Doctor, vote them.</speak>"])
    seat = LLMSeat(7, ToolLoop(backend, CFG))
    cmds = asyncio.run(seat.decide(view(g, Viewer.player(7))))
    assert cmds == [Chat(7, "Player 4 lied about the Doctor, vote them.")]
    assert backend.outputs == [] and seat.metrics.turns == 1


def test_a_will_may_be_the_example_will_but_a_speech_may_not_copy_it() -> None:
    """A will that writes down the seat's results is what a will is for: the
    guard lets the example will through (the play-quality figures do not
    credit it); a speech that copies it is refused."""
    from tossim.agents.lines import guard_action
    from tossim.agents.loop import prompt_text
    from tossim.agents.prompting import build_messages, will_example

    memory = day3_investigator().memories[7]
    will = will_example(memory)
    assert "Night 2 investigate Player 2" in will
    prompt = prompt_text(build_messages(memory))
    assert guard_action(memory, "will", {"text": will}, prompt=prompt) is None
    assert guard_action(memory, "speak", {"text": will}, prompt=prompt) is not None


def test_a_second_turn_that_runs_past_the_deadline_keeps_the_first_turns_action() -> None:
    """The driver drops a decision that comes after its deadline; a speech
    turn that runs over must not take the vote decided before it along."""
    from tossim.agents.llm_seat import SIDE_TURN_MIN_S, play_phase
    from tossim.agents.memory import SeatMemory

    g = day3_investigator().game
    memory = SeatMemory(7)
    memory.update(view(g, Viewer.player(7)))
    vote = Vote(7, 4)
    calls = []

    async def turn() -> Vote | Chat | None:
        calls.append(len(calls))
        if len(calls) == 1:
            return vote
        await asyncio.Event().wait()  # a speech turn that never ends by itself
        return Chat(7, "never said")

    async def go() -> list:
        deadline = time.monotonic() + SIDE_TURN_MIN_S + 0.5
        return await play_phase(memory, turn, act_first=True, deadline=deadline)

    assert any(a.kind == "vote" and 4 in a.targets for a in memory.legal)
    assert asyncio.run(go()) == [vote]
    assert len(calls) == 2  # the speech turn was played, and stopped at the deadline


def test_a_second_turn_knows_the_line_its_first_turn_said() -> None:
    """Seen in a lobby: a Mafia seat said "I am the Investigator." and, in
    the same Discussion, wrote the will "I am the Medium.": the will's turn
    read the chat before the engine had the line. The second turn sees the
    line as said; the next View replaces it with the engine's, once."""
    from tossim.agents.llm_seat import play_phase
    from tossim.agents.memory import SeatMemory
    from tossim.agents.moves import own_claim, own_public_lines

    g = new_game(GameConfig(players=9, seed=3, roles=DAY3_ROLES))
    memory = SeatMemory(7)
    memory.update(view(g, Viewer.player(7)))
    assert own_claim(memory) is None
    seen: list[tuple[str | None, list[tuple[int, str]]]] = []

    async def turn() -> Chat | WriteWill:
        if memory.legal and all(a.kind == "chat" for a in memory.legal):
            return Chat(7, "I am the Investigator.")
        seen.append((own_claim(memory), own_public_lines(memory, 1)))
        return WriteWill(7, "I am the Investigator.")

    cmds = asyncio.run(play_phase(memory, turn, act_first=True))
    assert cmds == [Chat(7, "I am the Investigator."), WriteWill(7, "I am the Investigator.")]
    assert seen == [("Investigator", [(1, "I am the Investigator.")])]
    for cmd in cmds:
        apply(g, cmd)
    memory.update(view(g, Viewer.player(7)))
    assert own_public_lines(memory, 1) == [(1, "I am the Investigator.")]
    assert not any(e.get("unsent") for e in memory.events)


def test_a_structured_jailor_says_its_piece_then_jails_every_day() -> None:
    """Seen in a lobby: a Jailor model seat never jailed anyone in three
    days (it may wait, and a small model does). A structured-move seat (one
    that may not abstain) that is a Jailor speaks first while it owes the
    day a line, then gets a turn offering only the jail, with no `wait`;
    once it owes no line, the jail comes first; once it has jailed, no
    such turn. The prisoner is a suspect: never a player the seat stands by
    while others are left."""
    from tossim.agents.grammar import turn_choices
    from tossim.agents.llm_seat import play_phase
    from tossim.agents.memory import SeatMemory
    from tossim.agents.moves import held_choice
    from tossim.engine.commands import DayAction

    g = new_game(GameConfig(players=7, seed=4, roles=(
        "jailor", "godfather", "doctor", "mafioso", "lookout", "escort", "sheriff")))
    apply(g, Chat(3, "I am the Doctor."))
    memory = SeatMemory(1)
    memory.update(view(g, Viewer.player(1)))
    offered: list[tuple[str, ...]] = []

    async def turn() -> Chat | DayAction | Vote | None:
        kinds = tuple(sorted({a.kind for a in memory.legal}))
        offered.append(kinds)
        if kinds == ("vote",):
            return Vote(1, 5)
        if kinds == ("chat",):
            return Chat(1, "Leave Player 3 alone: they claimed Doctor.")
        if kinds == ("jail",):
            from tossim.agents.actions import may_wait
            assert not may_wait(memory, False)
            return DayAction(1, "jail", 5)
        return None

    cmds = asyncio.run(play_phase(memory, turn, act_first=True))
    assert offered == [("chat",), ("jail",)]
    assert cmds == [Chat(1, "Leave Player 3 alone: they claimed Doctor."),
                    DayAction(1, "jail", 5)]
    jail = next(c for c in turn_choices(memory.legal, memory.names) if c.tag == "jail")
    assert "Player 3" in jail.options and "Player 3" not in held_choice(memory, jail).options
    # a later ask the same day, the line said and no prisoner chosen: the jail first
    apply(g, cmds[0])
    offered.clear()
    memory.update(view(g, Viewer.player(1)))
    assert asyncio.run(play_phase(memory, turn, act_first=True)) == [DayAction(1, "jail", 5)]
    assert offered[0] == ("jail",)
    # once it has jailed: no such turn (the seat's one turn is offered everything)
    apply(g, DayAction(1, "jail", 5))
    offered.clear()
    memory.update(view(g, Viewer.player(1)))
    assert asyncio.run(play_phase(memory, turn, act_first=True)) == []
    assert len(offered) == 1 and len(offered[0]) > 1
    # in a Voting the vote comes first, then the jail (seen in a lobby: a
    # Jailor seat's line took its Discussion, and it jailed nobody that day)
    while g.phase.value != "voting":  # Day 2's Voting, nobody jailed yet
        apply(g, PhaseTimeout(g.phase_seq))
    memory.update(view(g, Viewer.player(1)))
    offered.clear()
    asyncio.run(play_phase(memory, turn, act_first=True))
    assert offered == [("vote",), ("jail",)]
