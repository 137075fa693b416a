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
