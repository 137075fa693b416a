"""A degenerate model summary is replaced by the extractive one and counted
(docs/agents.md, "The text guard"): the Day 1 summary shown to everyone
used to quote whatever the model wrote."""

from __future__ import annotations

import asyncio

import pytest

from tossim.agents.summarize import SummaryStats, fallback_summary, write_summary

from .fake_backend import ScriptedBackend
from .support import day3_investigator


@pytest.mark.parametrize("garbage", [
    "## Day 2 summary Dave, Guy 2: nothing happened today at all.",
    "Summarize the public discussion of Day 2 of a Town of Salem game.",
    "You are the game. You are the game. You are the game.",
])
def test_a_degenerate_summary_falls_back(garbage: str) -> None:
    memory = day3_investigator().memories[7]
    stats = SummaryStats()
    text = asyncio.run(write_summary(ScriptedBackend([garbage]), memory, 2, stats=stats))
    assert text == fallback_summary(memory, 2)
    assert stats.degenerate == 1 and stats.fallback == 1 and stats.model == 0


def test_a_summary_in_its_own_words_is_kept() -> None:
    memory = day3_investigator().memories[7]
    stats = SummaryStats()
    good = "Player 5 claimed Lookout. Nobody was put on trial."
    text = asyncio.run(write_summary(ScriptedBackend([good]), memory, 2, stats=stats))
    assert text == good and stats.model == 1 and stats.degenerate == 0


def test_the_extractive_summary_quotes_whole_thoughts() -> None:
    """Seen in the demo's Day 2 summary: 'Player 2: "They claimed Doctor."',
    cut from "Do not lynch Player 1. They claimed Doctor."; an accusation and
    its reason were two quotes of one speaker. A message's stating sentences
    are one quote, a sentence that leans on the one before keeps it, and
    small talk stays out. A claim in a person's own words is quoted too."""
    t = day3_investigator(((6, "Do not lynch Player 1. They voted for Player 2 on Day 2."),
                           (8, "Hello all. Vote Player 4! I say this because they lied."),
                           (9, "Good morning everyone. Nice weather."),
                           (1, "Player 5 is my friend. They claimed Lookout."),
                           (2, "hi all, im doc")))
    text = fallback_summary(t.memories[7], 3)
    assert 'Player 6: "Do not lynch Player 1. They voted for Player 2 on Day 2."' in text
    assert 'Player 1: "Player 5 is my friend. They claimed Lookout."' in text
    assert 'Player 8: "Vote Player 4! I say this because they lied."' in text
    assert "Hello all" not in text and "weather" not in text
    # a claim in a person's own words (seen in a lobby: "hi all, im Investigator")
    assert 'Player 2: "hi all, im doc"' in text


def test_a_voter_is_named_once_per_target_after_a_pardon() -> None:
    """Seen in a demo's Day 2 summary: "Votes against Player 5: Player 3,
    Player 2, …, Player 3, Player 2" after Player 5 was pardoned and voted up
    again. Each voter is named once under each player they voted against."""
    from tossim.engine import apply
    from tossim.engine.commands import Judge, Vote

    t = day3_investigator()
    g = t.game
    for voter in (1, 2, 5, 6):
        apply(g, Vote(voter, 4))
    t.timeout()  # Defense -> Judgement
    for judge in (1, 2, 5, 6, 7, 8):
        apply(g, Judge(judge, "innocent"))
    t.timeout()  # pardoned: back to Voting
    for voter in (1, 2):
        apply(g, Vote(voter, 4))
    apply(g, Vote(5, 8))
    t.observe()
    text = fallback_summary(t.memories[7], 3)
    assert "Votes against Player 4: Player 1, Player 2, Player 5, Player 6." in text, text
    assert "Votes against Player 8: Player 5." in text, text
