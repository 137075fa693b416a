"""Prompt examples a copy of which is visible (issue 21; docs/agents.md,
"Prompt"): they name real living players, never the seat itself, and change
from turn to turn."""

from __future__ import annotations

import re

from tossim.agents.memory import SeatMemory
from tossim.agents.prompting import action_lines, render_system
from tossim.engine import GameConfig, Viewer, new_game, view

from .support import day3_investigator

_NAMED = re.compile(r"Player \d+")


def _speak_line(lines: list[str]) -> str:
    return next(line for line in lines if line.startswith("<speak>"))


def test_examples_name_living_players_other_than_the_seat() -> None:
    m = day3_investigator().memories[7]
    living = {p.name for p in m.roster if p.alive} - {"Player 7"}
    speeches = set()
    for seed in range(30):
        lines = action_lines(m, "xml", seed=seed)
        speech = _speak_line(lines)
        speeches.add(speech)
        example = speech.split(" - ", 1)[0]
        assert set(_NAMED.findall(example)) <= living, example
        assert "Player 7" not in " ".join(line.split(" - ", 1)[0] for line in lines)
    assert len(speeches) > 5  # differs per turn: a copy shows
    assert action_lines(m, "xml", seed=4) == action_lines(m, "xml", seed=4)  # seeded


def test_a_speech_example_without_targets_still_names_a_living_player() -> None:
    # the old example named the literal "Player 1" whenever an action had no targets
    m = day3_investigator().memories[1]
    for seed in range(10):
        example = _speak_line(action_lines(m, "xml", seed=seed)).split(" - ", 1)[0]
        assert "Player 1" not in example and "Player 3" not in example


def test_system_examples_use_the_games_names() -> None:
    g = new_game(GameConfig(players=7, seed=1, names=("Ann", "Bob", "Cid", "Dee", "Eve",
                                                         "Fay", "Gus")))
    m = SeatMemory(1)
    m.update(view(g, Viewer.player(1)))
    system = render_system(m)
    assert "Player 4" not in system and "<vote>Dee</vote>" in system
