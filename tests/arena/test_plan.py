"""The arena plan: every entry plays every faction, role and seat equally
often, neighbours change, and the plan follows the engine's own deal."""

from __future__ import annotations

from collections import Counter

import pytest

from tossim.arena.plan import balance, dealt_roles, faction_of, make_plan, seat_groups
from tossim.engine import GameConfig, new_game
from tossim.engine.rules import make_config


@pytest.mark.parametrize("players", [7, 11, 15])
def test_full_blocks_balance_factions_roles_and_seats_exactly(players: int) -> None:
    plan = make_plan(["a", "b", "c"], 12, players=players, seed=5)
    assert len(plan.games) == 12
    b = balance(plan)
    # the same number of seats of every faction, role and seat number for each entry
    for counts in (b.factions, b.roles, b.slots):
        assert counts["a"] == counts["b"] == counts["c"]
    assert sum(b.factions["a"].values()) == 12 * players // 3
    # a whole game's seats are all played, each by one entry
    for g in plan.games:
        assert len(g.seats) == players and set(g.seats) == {"a", "b", "c"}
        sizes = Counter(g.seats).values()
        assert max(sizes) - min(sizes) <= 1


def test_each_game_spreads_the_scarce_factions() -> None:
    """Within one game no entry holds all the Mafia (the groups are dealt
    faction by faction)."""
    plan = make_plan(["a", "b", "c"], 6, players=15, seed=2)
    for g in plan.games:
        roles = dealt_roles("classic", 15, g.seed)
        mafia = Counter(label for label, r in zip(g.seats, roles, strict=True)
                        if faction_of(r) == "mafia")
        assert sum(mafia.values()) >= 3
        assert max(mafia.values()) - min(mafia.get(x, 0) for x in "abc") <= 1


def test_neighbours_change_between_blocks() -> None:
    plan = make_plan(["a", "b", "c", "d"], 16, players=12, seed=9)
    b = balance(plan)
    for label in "abcd":
        others = {x: n for x, n in b.neighbours[label].items() if x != label}
        assert set(others) == set("abcd") - {label}  # sits next to every other entry
        assert max(others.values()) <= 2 * min(others.values())  # and not mostly one
    # the seat pattern of an entry differs between blocks (not a fixed table)
    patterns = {tuple(i for i, s in enumerate(g.seats) if s == "a") for g in plan.games}
    assert len(patterns) > 4


def test_the_plan_uses_the_engines_deal() -> None:
    for seed in (0, 1, 77):
        game = new_game(GameConfig(players=9, seed=seed))
        assert dealt_roles("classic", 9, seed) == [p.original_role for p in game.players]


def test_partial_block_and_determinism() -> None:
    a = make_plan(["x", "y", "z"], 7, players=7, seed=1)
    assert a == make_plan(["x", "y", "z"], 7, players=7, seed=1)
    assert a != make_plan(["x", "y", "z"], 7, players=7, seed=2)
    assert len(a.games) == 7 and [g.index for g in a.games] == list(range(7))
    seeds = Counter(g.seed for g in a.games)
    assert sorted(seeds.values()) == [1, 3, 3]  # two full blocks and one game
    totals = {k: sum(v.values()) for k, v in balance(a).factions.items()}
    assert max(totals.values()) - min(totals.values()) <= 3


def test_seat_groups_sizes() -> None:
    import random

    roles = dealt_roles("classic", 15, 3)
    groups = seat_groups(roles, 4, random.Random(0))
    assert sorted(len(g) for g in groups) == [3, 4, 4, 4]
    assert sorted(s for g in groups for s in g) == list(range(1, 16))


@pytest.mark.parametrize("entries,games,players,message", [
    ([], 3, 7, "at least one entry"),
    (["a", "a"], 3, 7, "own label"),
    (list("abcdefgh"), 8, 7, "cannot share"),
    (["a", "b"], 0, 7, "at least one game"),
])
def test_bad_plans_are_refused(entries: list[str], games: int, players: int,
                               message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_plan(entries, games, players=players)


def test_a_custom_role_list_is_dealt_and_balanced_like_a_mode() -> None:
    roles = ["Sheriff", "Mafioso", "Doctor", "Random Town"]
    plan = make_plan(["a", "b"], 4, roles=roles, seed=2)
    assert (plan.players, plan.mode, plan.roles) == (4, "custom", tuple(roles))
    b = balance(plan)
    assert b.factions["a"] == b.factions["b"] and b.roles["a"] == b.roles["b"]
    for g in plan.games:  # the plan's deal is the engine's
        game = new_game(make_config("custom", 4, g.seed, roles))
        assert [p.role for p in game.players] == dealt_roles("custom", 4, g.seed, roles)
    with pytest.raises(ValueError, match="Nobody"):
        make_plan(["a"], 1, roles=["Nobody"])
