"""The winner distribution of `tossim bench engine` (tossim/tools/bench_engine.py)."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from tossim.cli import app
from tossim.engine import GameConfig, apply, new_game
from tossim.engine.commands import PhaseTimeout
from tossim.tools.bench_engine import Outcomes, report_lines, wilson


def test_wilson_interval_matches_the_textbook_values() -> None:
    lo, hi = wilson(5, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.2366, 0.7634)
    lo, hi = wilson(0, 10)
    assert round(lo, 4) == 0.0 and round(hi, 4) == 0.2775
    lo, hi = wilson(10, 10)
    assert round(lo, 4) == 0.7225 and round(hi, 4) == 1.0
    with pytest.raises(ValueError):
        wilson(11, 10)


def test_outcomes_count_results_and_neutral_roles_by_the_games_they_are_in() -> None:
    outcomes = Outcomes()
    for seed in range(2):  # Classic 7 players: no neutral; a draw by timeout
        game = new_game(GameConfig(players=8, seed=seed))
        while not game.ended:
            apply(game, PhaseTimeout(game.phase_seq))
        outcomes.add(game)
    assert outcomes.games == 2
    assert outcomes.results["draw"] == 2
    assert outcomes.dealt["executioner"] == 2
    lines = report_lines(outcomes)
    assert any(line.split()[:2] == ["Draw", "2/2"] for line in lines), lines
    assert any(line.split()[:2] == ["Executioner", "0/2"] for line in lines), lines


def test_bench_engine_prints_the_winner_distribution_with_intervals() -> None:
    result = CliRunner().invoke(app, ["bench", "engine", "--games", "4", "--mode", "classic"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "95% Wilson interval" in out
    winners = out.split("winners, share of games")[1].split("neutral roles")[0]
    rows = {m[1]: int(m[2]) for m in ROW.finditer(winners)}
    results = sum(v for k, v in rows.items()
                  if k in ("Town", "Mafia", "Serial Killer", "Draw"))
    assert results == 4, out  # every game has exactly one result
    assert "Jester" in rows and "Executioner" in rows


ROW = re.compile(r"^\s+(\S.*?)\s+(\d+)/4\s", re.M)


def test_bench_engine_prints_a_digest_of_the_games_it_played() -> None:
    """Two runs of the same seeds print the same events digest (a build that
    plays differently prints another); other seeds print another."""
    def digest(*args: str) -> str:
        result = CliRunner().invoke(app, ["bench", "engine", "--games", "2", *args])
        assert result.exit_code == 0, result.output
        found = re.search(r"events sha256 \(untimed replay\): ([0-9a-f]{64})", result.output)
        assert found, result.output
        return found[1]

    assert digest() == digest()
    assert digest("--seed", "5") != digest()
