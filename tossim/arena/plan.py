"""The plan of an arena: which entry plays which seat of which seeded game.

Pure (no I/O, no clock): the same entries, games, players, mode and seed
always give the same plan, so a stored arena can be checked against its spec.

The plan is a *duplicate* tournament. Games come in blocks of K (the number
of entries). Every game of a block has the same seed, hence (the engine deals
roles from the seed) the same roles in the same seats. The seats are split
into K groups, each with as even a share of Town, Mafia and Neutral seats as
the deal allows, and within the block the groups rotate through the entries:
in the block's game r, entry i plays group (i + r) mod K. Over a full block
every entry has played every seat of the deal exactly once, so every entry
plays every faction, role and seat number equally often, and the luck of the
deal cancels out. Groups are drawn afresh (seeded) for each block's deal, so
an entry's neighbours at the table change from block to block. A number of
games that is not a multiple of K leaves one partial block, balanced as far
as it goes.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from tossim.engine.roles import ROLES
from tossim.engine.rules import deal, make_config
from tossim.engine.state import GameConfig

# seats dealt out first when groups are formed: the scarce factions
FACTION_ORDER = ("neutral", "mafia", "town")


@dataclass(frozen=True)
class PlannedGame:
    index: int  # 0-based position in the plan
    seed: int  # the game's seed (it fixes the role deal)
    seats: tuple[str, ...]  # the entry label of each slot, slot 1 first


@dataclass(frozen=True)
class ArenaPlan:
    entries: tuple[str, ...]
    players: int
    mode: str
    seed: int
    games: tuple[PlannedGame, ...]
    roles: tuple[str, ...] = ()  # a custom role list (mode "custom"), else the mode's


def dealt_roles(mode: str, players: int, seed: int,
                roles: Sequence[str] | None = None) -> list[str]:
    """The role keys the engine deals for this seed (and custom role list),
    slot 1 first (the same call `new_game` makes with the same RNG)."""
    if roles:
        config = make_config("custom", len(roles), seed, list(roles))
    else:
        config = GameConfig(mode=mode, players=players, seed=seed)
    return deal(config, random.Random(seed))


def faction_of(role: str) -> str:
    return ROLES[role].faction.value


def seat_groups(roles: Sequence[str], k: int, rng: random.Random) -> list[list[int]]:
    """Split the slots into k groups of near-equal size (sizes differ by at
    most one), each with as even a share of every faction as possible: the
    scarce factions are dealt first, each seat to the group holding the
    fewest of that faction (then the fewest seats), slots shuffled within a
    faction so that neighbours differ between deals."""
    n = len(roles)
    sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
    groups: list[list[int]] = [[] for _ in range(k)]
    by_faction: dict[str, list[int]] = {f: [] for f in FACTION_ORDER}
    for slot, role in enumerate(roles, start=1):
        by_faction[faction_of(role)].append(slot)
    for faction in FACTION_ORDER:
        slots = by_faction[faction]
        rng.shuffle(slots)
        held = [0] * k
        for slot in slots:
            open_groups = [g for g in range(k) if len(groups[g]) < sizes[g]]
            best = min(open_groups, key=lambda g: (held[g], len(groups[g]), rng.random()))
            groups[best].append(slot)
            held[best] += 1
    return [sorted(g) for g in groups]


def make_plan(entries: Sequence[str], games: int, *, players: int = 7, mode: str = "classic",
              seed: int = 0, roles: Sequence[str] | None = None) -> ArenaPlan:
    """The arena's games (see the module docstring); `roles`: a custom role
    list (its length is the player count). Raises ValueError for a plan that
    cannot be played: no entries, a label used twice, more entries than
    seats, no games, or a role list that cannot be dealt."""
    labels = tuple(entries)
    if roles:
        players, mode = len(roles), "custom"
    k = len(labels)
    if k == 0:
        raise ValueError("an arena needs at least one entry")
    if len(set(labels)) != k:
        raise ValueError("every entry of an arena needs its own label")
    if k > players:
        raise ValueError(f"{k} entries cannot share {players} seats")
    if games < 1:
        raise ValueError("an arena plays at least one game")
    rng = random.Random(f"arena:{seed}")
    planned: list[PlannedGame] = []
    for block in range((games + k - 1) // k):
        game_seed = seed + block
        dealt = dealt_roles(mode, players, game_seed, roles)
        groups = seat_groups(dealt, k, rng)
        # which entry starts on which group also varies between blocks
        order = list(range(k))
        rng.shuffle(order)
        for r in range(min(k, games - block * k)):
            seats = [""] * players
            for i, label in enumerate(labels):
                for slot in groups[(order[i] + r) % k]:
                    seats[slot - 1] = label
            planned.append(PlannedGame(index=len(planned), seed=game_seed, seats=tuple(seats)))
    return ArenaPlan(entries=labels, players=players, mode=mode, seed=seed,
                     games=tuple(planned), roles=tuple(roles or ()))


@dataclass(frozen=True)
class Balance:
    """How often each entry sat where, over a plan."""

    factions: dict[str, Counter[str]]  # entry -> faction -> seats
    roles: dict[str, Counter[str]]  # entry -> role -> seats
    slots: dict[str, Counter[int]]  # entry -> slot -> seats
    neighbours: dict[str, Counter[str]]  # entry -> entry on its left or right -> times


def balance(plan: ArenaPlan) -> Balance:
    """Count, per entry, the factions, roles, slots and neighbours of its seats."""
    factions: dict[str, Counter[str]] = {e: Counter() for e in plan.entries}
    roles: dict[str, Counter[str]] = {e: Counter() for e in plan.entries}
    slots: dict[str, Counter[int]] = {e: Counter() for e in plan.entries}
    neighbours: dict[str, Counter[str]] = {e: Counter() for e in plan.entries}
    deals: dict[int, list[str]] = {}
    for g in plan.games:
        dealt = deals.setdefault(g.seed, dealt_roles(plan.mode, plan.players, g.seed,
                                                     plan.roles))
        n = len(g.seats)
        for i, label in enumerate(g.seats):
            factions[label][faction_of(dealt[i])] += 1
            roles[label][dealt[i]] += 1
            slots[label][i + 1] += 1
            for j in (i - 1, (i + 1) % n):  # the table is a circle
                neighbours[label][g.seats[j]] += 1
    return Balance(factions, roles, slots, neighbours)
