"""Whole games with every role of the registry, played by the scripted bots:
they finish without an engine error, replay byte for byte from their command
log, every accepted command was legal, and the winners match the result."""

from __future__ import annotations

import json
import random

import pytest

from tests.test_determinism import log_bytes
from tossim.agents import play_match
from tossim.engine import GameConfig, apply, command_from_dict, new_game
from tossim.engine.roles import ROLES
from tossim.engine.victory import WIN_CONDITIONS, co_wins, side

SEEDS = range(40)


def random_roles(seed: int, players: int = 15) -> tuple[str, ...]:
    """Any roles, unique ones at most once (a stand-in for All Any with Vampires)."""
    rng = random.Random(seed)
    keys = sorted(ROLES)
    out: list[str] = []
    while len(out) < players:
        k = rng.choice(keys)
        if not (ROLES[k].unique and k in out):
            out.append(k)
    return tuple(out)


@pytest.fixture(scope="module")
def games() -> list[object]:
    return [play_match(GameConfig(players=15, seed=s, roles=random_roles(s))).game
            for s in SEEDS]


def test_games_with_every_role_finish(games: list) -> None:
    assert all(g.ended for g in games)
    dealt = {p.original_role for g in games for p in g.players}
    assert dealt == set(ROLES), sorted(set(ROLES) - dealt)


def test_winners_follow_the_win_conditions(games: list) -> None:
    for g in games:
        for p in g.players:
            expected = side(p) == g.result or co_wins(g, p, g.result)
            assert (p.slot in g.winners) == expected, (g.config.seed, p.slot, p.role)
        assert g.result == "draw" or g.result in WIN_CONDITIONS


@pytest.mark.parametrize("seed", range(0, 40, 5))
def test_role_games_replay_byte_for_byte(games: list, seed: int) -> None:
    played = games[seed]
    replayed = new_game(GameConfig.from_dict(json.loads(json.dumps(played.config.to_dict()))))
    for raw in json.loads(json.dumps(played.commands)):
        apply(replayed, command_from_dict(raw))
    assert log_bytes(replayed) == log_bytes(played)
