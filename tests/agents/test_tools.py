"""Tools answer only from the seat's memory; bad calls give fault observations."""

from __future__ import annotations

from tossim.agents.tools import TOOLS, run_tool, tool_options

from .support import day3_investigator


def test_tools_on_day3() -> None:
    m = day3_investigator().memories[7]
    assert set(TOOLS) == {"check_will", "graveyard", "chat_history", "role_info", "notebook",
                          "my_results", "votes"}
    assert run_tool(m, "check_will", "Player 3") == \
        "Player 3's will: \"I am the Doctor. / N1 heal Player 5. / N2 heal Player 1.\""
    assert run_tool(m, "check_will", "player 9") == "Player 9 left no last will."
    assert run_tool(m, "check_will", "Player 4").startswith("[premise fault] Player 4 is alive")
    assert "Candidates: Player 3, Player 9." in run_tool(m, "check_will", "Player 4")
    assert run_tool(m, "check_will", "Playr").startswith("[expression fault]")
    assert run_tool(m, "check_will", "").startswith("[parameter fault]")
    grave = run_tool(m, "graveyard")
    assert "Player 3 - Doctor - died Night 2" in grave and "Player 9 - Vigilante" in grave
    assert run_tool(m, "graveyard", "x").startswith("[parameter fault]")
    assert run_tool(m, "chat_history", "2") == 'Chat of Day 2:\nPlayer 5: "I am the Lookout."'
    assert run_tool(m, "chat_history", "Day 1").startswith("Chat of Day 1:")
    assert run_tool(m, "chat_history", "7").startswith("[premise fault]")
    assert run_tool(m, "role_info", "doc").startswith("Doctor (Town Protective)")
    assert run_tool(m, "role_info", "Wizard").startswith("[expression fault]")
    assert "Night 2] Your target could be a Bodyguard, Godfather, or Arsonist." in \
        run_tool(m, "my_results")
    assert run_tool(m, "votes") == "No votes today yet."
    assert run_tool(m, "nope").startswith("[intention fault] There is no tool")
    assert run_tool(m, "notebook") == "Your notebook is empty."
    assert run_tool(m, "notebook", "Player 4 fake Doctor") == "Noted (1 note(s))."
    assert run_tool(m, "notebook") == "[Day 3] Player 4 fake Doctor"
    # notebook calls are not "tool results"; the others are kept for the day
    assert {r.tool for r in m.tool_results_today()} >= {"check_will", "graveyard"}
    assert all(r.tool != "notebook" for r in m.tool_log)


def test_tool_options() -> None:
    m = day3_investigator().memories[7]
    opts = tool_options(m)
    assert opts["check_will"] == ["Player 3", "Player 9"]
    assert opts["chat_history"] == ["1", "2", "3"]
    assert opts["notebook"] is None and opts["graveyard"] == []
    assert "Serial Killer" in (opts["role_info"] or [])


def test_mafia_chat_only_for_the_mafia() -> None:
    t = day3_investigator()
    assert '(mafia) Player 2: "Let\'s kill Player 9."' in run_tool(t.memories[4], "chat_history",
                                                                   "1")
    assert "kill Player 9" not in run_tool(t.memories[7], "chat_history", "1")
