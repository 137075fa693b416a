"""Win conditions as data and the stalemate table (rules reference A6, A7).

The table must list every pair of last survivors that can occur, on opposing
sides, where neither can kill the other (or one blocks the other forever),
and nothing else. "Can kill" is derived here from the registry's data
(attack against defense, a role blocker against a killer that is not
immune, a Jailor with or without executions), independently of the table.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tossim.engine import GameConfig, new_game
from tossim.engine.roles import ROLES, Role
from tossim.engine.victory import STALEMATES, WIN_CONDITIONS, side, stalemate

# The last Mafia member is always a Godfather or a Mafioso (A2.8 promotions);
# every other role with a side may be a last survivor.
LAST_SURVIVORS = sorted(k for k, r in ROLES.items()
                        if WIN_CONDITIONS[r.win].side is not None
                        and (r.faction.value != "mafia" or r.key in ("godfather", "mafioso")))


def _blocks_forever(blocker: Role, other: Role, jailor_executes: bool) -> bool:
    if blocker.key == "jailor":  # jail blocks through immunity; SK and Werewolf strike back
        return not jailor_executes and other.key not in ("serial_killer", "werewolf")
    night = blocker.night
    return night is not None and "block" in night.labels and not other.roleblock_immune


def _attacks(r: Role, jailor_executes: bool) -> bool:
    if r.key == "jailor":
        return jailor_executes
    abilities = [a for a in (r.night, *r.passives) if a is not None]
    return any("attack" in a.labels for a in abilities) and r.key != "jester"


def can_kill(a: Role, b: Role, jailor_executes: bool) -> bool:
    if _blocks_forever(b, a, jailor_executes) or not _attacks(a, jailor_executes):
        return False
    return a.attack > b.defense


def _pairs() -> list[tuple[str, str, bool]]:
    out = []
    for a, b in itertools.combinations(LAST_SURVIVORS, 2):
        if WIN_CONDITIONS[ROLES[a].win].side == WIN_CONDITIONS[ROLES[b].win].side:
            continue
        for executes in ((True, False) if "jailor" in (a, b) else (True,)):
            out.append((a, b, executes))
    return out


@pytest.mark.parametrize(("a", "b", "executes"), _pairs())
def test_stalemate_table_covers_every_deadlocked_pair(a: str, b: str, executes: bool) -> None:
    game = new_game(GameConfig(players=2, roles=(a, b)))
    for p in game.players:
        if p.role == "jailor":
            p.uses["executions"] = 3 if executes else 0
    deadlocked = not can_kill(ROLES[a], ROLES[b], executes) \
        and not can_kill(ROLES[b], ROLES[a], executes)
    entry = stalemate(game)
    if deadlocked:
        assert entry is not None, f"{a} vs {b} (jailor executes: {executes}) is a deadlock " \
                                  f"missing from the stalemate table"
        assert entry.winner in {side(p) for p in game.players}
        assert entry.reason
    else:
        assert entry is None, f"{a} vs {b} can end by a kill; the table should not award it"


def test_every_table_entry_is_a_possible_last_pair() -> None:
    for entry in STALEMATES:
        assert entry.roles <= set(LAST_SURVIVORS), sorted(entry.roles)


def test_every_role_has_a_win_condition() -> None:
    for r in ROLES.values():
        assert r.win in WIN_CONDITIONS, r.key


def test_the_rules_doc_lists_the_stalemate_table() -> None:
    """docs/rules.md's "Stalemate table" has one row per entry of STALEMATES,
    with the same two roles and the same winner."""
    doc = (Path(__file__).parent.parent / "docs" / "rules.md").read_text(encoding="utf-8")
    section = doc.split("### Stalemate table", 1)[1].split("\nAlso:", 1)[0]
    names = {r.name: k for k, r in ROLES.items()}
    rows = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) < 4 or " vs " not in cells[0]:
            continue
        pair = cells[0].replace(" without executions", "").split(" vs ")
        rows.add((frozenset(names[n] for n in pair), cells[1]))
    table = {(e.roles, WIN_CONDITIONS[e.winner].label.removeprefix("The "))
             for e in STALEMATES}
    assert rows == table
