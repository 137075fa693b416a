"""Prompts and tool answers leak nothing the seat's own views did not show.

Scripted games are replayed command by command; at every phase change every
seat's memory is fed its incremental view, its prompts are rendered and every
tool is called with every argument it accepts. Then, against the game state
at that moment:

- the roster shows no living other player's true role, except the Mafia's
  teammates and a revealed Mayor;
- the memory holds only events the seat could see;
- no text of a hidden event (another faction's chat, a whisper between
  others, another player's night result or role message) appears in the
  prompt or in any tool answer, unless the same text also reached the seat.
"""

from __future__ import annotations

import re

import pytest

from tossim.agents import play_match
from tossim.agents.escape import escape_text, quote
from tossim.agents.memory import SeatMemory
from tossim.agents.personas import persona_for
from tossim.agents.prompting import render_system, render_turn
from tossim.agents.summarize import fallback_summary, summary_prompt
from tossim.agents.tools import run_tool, tool_options
from tossim.engine import (
    OMNISCIENT_VIEWER,
    Game,
    GameConfig,
    Viewer,
    apply,
    command_from_dict,
    new_game,
    view,
)
from tossim.engine.roles import Faction
from tossim.engine.view import SelfView, can_see

SEEDS = range(4)
CHAT = ("chat.mafia", "chat.jail", "chat.dead", "chat.seance", "chat.whisper",
        "chat.spy_mafia")


def hidden_texts(game: Game, slot: int) -> set[str]:
    viewer = Viewer.player(slot)
    me = game.player(slot)
    seen: set[str] = {quote(me.will), quote(me.death_note)}  # its own texts
    hidden: set[str] = set()
    for p in game.players:  # the wills and death notes of the dead are public
        if p.death is not None:
            seen.update(quote(t) for t in (p.death.will, *p.death.death_notes))
    for e in game.events:
        forms = {escape_text(e.text)}
        if e.key.startswith("chat.") and "text" in e.data:
            forms.add(quote(str(e.data["text"])))
            if can_see(e, viewer):  # the fallback summary quotes single sentences
                forms.update(quote(x) for x in re.split(r"(?<=[.!?])\s+", str(e.data["text"])))
        target = seen if can_see(e, viewer) else hidden
        if target is hidden and not (e.key in CHAT or e.key.startswith(("night.", "game.role",
                                                                          "death."))):
            continue
        target.update(forms)
    # short generic texts ("You were role blocked!") may reach several players
    return {t for t in hidden - seen if len(t) > 12}


def everything_for(memory: SeatMemory, slot: int) -> str:
    parts = [render_system(memory, "xml", persona_for(slot)),
             render_turn(memory, {d: fallback_summary(memory, d) for d in range(1, memory.day)}),
             render_turn(memory, None, "json")]
    for day in range(1, memory.day + 1):
        parts.append(summary_prompt(memory, day))
    for tool, options in tool_options(memory).items():
        for arg in options or [""]:
            if tool != "notebook":
                parts.append(run_tool(memory, tool, arg, record=False))
    memory.end_turn()
    return "\n".join(parts)


def check_seat(game: Game, memory: SeatMemory, slot: int, text: str) -> None:
    me = game.player(slot)
    visible = {e.v for e in game.events if can_see(e, Viewer.player(slot))}
    assert {e["v"] for e in memory.events} <= visible
    for p in game.players:
        if p.slot == slot or not p.alive or game.ended:  # all roles are public at the end
            continue
        allowed = p.revealed or (me.faction is Faction.MAFIA and p.faction is Faction.MAFIA)
        for line in text.splitlines():
            mine = line.startswith(f"- {p.name} ") or line == f"- {p.name}"
            if mine and "Role:" in line and not allowed:
                pytest.fail(f"seat {slot} sees the role of living {p.name}: {line}")
    for hidden in hidden_texts(game, slot):
        assert hidden not in text, f"seat {slot} sees hidden text {hidden!r}"


@pytest.mark.parametrize("seed", SEEDS)
def test_no_leaks_in_prompts_and_tools(seed: int) -> None:
    config = GameConfig(players=15, seed=seed)
    log = play_match(config).game.commands
    game = new_game(config)
    memories = {s: SeatMemory(s) for s in range(1, 16)}
    seen = dict.fromkeys(memories, 0)
    seq = -1
    checked = 0
    for entry in log:
        apply(game, command_from_dict(entry))
        if game.phase_seq == seq:
            continue
        seq = game.phase_seq
        for slot, memory in memories.items():
            obs = view(game, Viewer.player(slot), since=seen[slot])
            seen[slot] = obs.version
            memory.update(obs)
            check_seat(game, memory, slot, everything_for(memory, slot))
            checked += 1
    assert checked > 100


def test_the_checker_catches_a_leak() -> None:
    """A memory fed with the omniscient view must fail the checks."""
    config = GameConfig(players=15, seed=1)
    game = new_game(config)
    for entry in play_match(config).game.commands[:60]:
        apply(game, command_from_dict(entry))
    memory = SeatMemory(1)
    memory.update(view(game, OMNISCIENT_VIEWER))
    memory.you = view(game, Viewer.player(1)).you or SelfView()
    with pytest.raises(BaseException):  # noqa: B017 - AssertionError or pytest.fail
        check_seat(game, memory, 1, everything_for(memory, 1))
