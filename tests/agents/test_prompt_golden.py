"""Golden prompts for seed 003's example: the Investigator on Day 3 (Voting),
after the Doctor died. Regenerate with TOSSIM_UPDATE_GOLDEN=1 pytest tests/agents."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tossim.agents.personas import PERSONAS, persona_for
from tossim.agents.prompting import build_messages, render_system, render_turn, shared_prefix
from tossim.agents.tools import run_tool

from .support import day3_investigator

GOLDEN = Path(__file__).with_name("golden")
UPDATE = os.environ.get("TOSSIM_UPDATE_GOLDEN") == "1"
SUMMARIES = {1: "Player 1 greeted the town. Player 9 died that night.",
             2: "Player 5 claimed Lookout. Nobody was put on trial."}


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    if not path.exists():
        pytest.fail(f"{path} is missing: run with TOSSIM_UPDATE_GOLDEN=1")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from the golden file"


def day3_prompts(protocol: str) -> tuple[str, str]:
    m = day3_investigator().memories[7]
    run_tool(m, "check_will", "Player 3")
    return (render_system(m, protocol, PERSONAS["rational"]),
            render_turn(m, SUMMARIES, protocol))


@pytest.mark.parametrize("protocol", ["xml", "json"])
def test_golden(protocol: str) -> None:
    system, turn = day3_prompts(protocol)
    check(f"investigator_day3_{protocol}_system.txt", system)
    check(f"investigator_day3_{protocol}_turn.txt", turn)


def test_prompt_structure() -> None:
    system, turn = day3_prompts("xml")
    assert system.index("## Tools") < system.index("## Action format") \
        < system.index("## Who you are") < system.index("## Your style")
    assert "You are Player 7, the Investigator" in system
    # stable parts first (prefix cache), the phase and the actions last
    assert turn.index("**Earlier days:**") < turn.index("**Player Roster:**") \
        < turn.index("**Today's Live Chat:**") < turn.index("**Public Event Log**") \
        < turn.index("**Now: Day 3 · Voting.** Available now:")
    for line in ("- Player 3 [DEAD] - Role: Doctor", "- Player 7 (you) - Role: Investigator",
                 '- Player 4: "I\'m the real Doctor! I healed Player 1 last night. '
                 "Player 3's will is probably fake.\"",
                 "- Day 2: Player 5 claimed Lookout. Nobody was put on trial.",
                 "- check_will(Player 3): Player 3's will:",
                 # Player 4's Doctor claim after the Doctor's death: the vote example
                 # names them (`moves.exposed`)
                 "- <vote>Player 4</vote> - put on trial: Player 1, Player 2, Player 4, Player 5,"):
        assert line in turn, line
    # every private result so far, with its night and the target the seat chose
    results = turn.split("**Your results so far**")[1].split("**Today's Live Chat:**")[0]
    assert "- Night 1 - you chose to investigate Player 4: Your target could be a " in results
    assert ("- Night 2 - you chose to investigate Player 2: Your target could be a Bodyguard, "
            "Godfather, or Arsonist.") in results
    # no placeholder word in the action list
    actions = turn.split("Available now:")[1]
    for placeholder in (">text<", ">message<", ">NAME<"):
        assert placeholder not in actions
    assert "Player 9 died" not in turn.split("**Public Event Log**")[1]  # seen on Night 2


def test_shared_prefix_is_the_same_for_every_seat() -> None:
    t = day3_investigator()
    prefixes = {shared_prefix(render_system(m, "xml", persona_for(s)))
                for s, m in t.memories.items()}
    assert len(prefixes) == 1
    systems = {render_system(m, "xml", persona_for(s)) for s, m in t.memories.items()}
    assert len(systems) == len(t.memories)


def test_messages_and_mafia_identity() -> None:
    t = day3_investigator()
    msgs = build_messages(t.memories[4], SUMMARIES, "xml", persona_for(4))
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert "Your fellow Mafia members: Player 2 (Godfather)." in msgs[0]["content"]
    assert "- Player 2 (Mafia teammate) - Role: Godfather" in msgs[1]["content"]
