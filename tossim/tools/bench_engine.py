"""`tossim bench engine`'s winner distribution, with 95% Wilson intervals.

A mode is fair when no side or neutral role wins far more often than its
place in the role list warrants (the goals are in docs/rules.md, "Fairness
figures"). A few hundred games give wide intervals, so every share is printed
with its 95% Wilson score interval, which stays inside [0, 1] and behaves for
shares near 0 (draws, a rare neutral). Two tables:

- who won each game: Town, Mafia, each neutral killer and the Vampires (the
  game's result), draws, and the neutral co-winners (Jester, Executioner,
  Survivor, Witch, Amnesiac), counted once per game, by the role the player
  was dealt (an Executioner that became a Jester counts as the Executioner);
- each neutral role's wins over the games it was dealt in.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from tossim.engine import Game, GameConfig
from tossim.engine.replay import rerun
from tossim.engine.roles import ROLES, Faction
from tossim.engine.victory import KILLING_SIDES, WIN_CONDITIONS

Z95 = 1.959964  # the normal quantile of a two-sided 95% interval


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials."""
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= k <= n:
        raise ValueError(f"{k} successes in {n} trials")
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


NEUTRALS = tuple(k for k, r in ROLES.items() if r.faction is Faction.NEUTRAL)


@dataclass
class Outcomes:
    """Counts over finished games (`add` one game at a time)."""

    games: int = 0
    results: Counter[str] = field(default_factory=Counter)  # side, "draw" or "unfinished"
    won: Counter[str] = field(default_factory=Counter)      # neutral role dealt -> games won
    dealt: Counter[str] = field(default_factory=Counter)    # neutral role -> games dealt in

    def add(self, game: Game) -> None:
        self.games += 1
        self.results[game.result or "unfinished"] += 1
        winners = set(game.winners)
        dealt = {p.original_role for p in game.players if p.original_role in NEUTRALS}
        won = {p.original_role for p in game.players
               if p.original_role in NEUTRALS and p.slot in winners}
        self.dealt.update(dealt)
        self.won.update(won)


def _row(label: str, k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    share = k / n if n else 0.0
    return (f"    {label:<16} {k:>5}/{n:<5} {100 * share:5.1f}%  "
            f"[{100 * lo:5.1f}, {100 * hi:5.1f}]")


def _label(key: str) -> str:
    if key in WIN_CONDITIONS and WIN_CONDITIONS[key].label:
        return WIN_CONDITIONS[key].label.removeprefix("The ")
    return ROLES[key].name if key in ROLES else key.capitalize()


def report_lines(o: Outcomes) -> list[str]:
    n = o.games
    lines = ["  winners, share of games [95% Wilson interval]:"]
    for side in KILLING_SIDES:
        if o.results[side] or (side not in ("town", "mafia") and o.dealt[side]):
            lines.append(_row(_label(side), o.results[side], n))
    lines.append(_row("Draw", o.results["draw"], n))
    if o.results["unfinished"]:
        lines.append(_row("Unfinished", o.results["unfinished"], n))
    co_winners = [k for k in NEUTRALS if k not in KILLING_SIDES and o.dealt[k]]
    for key in co_winners:
        lines.append(_row(_label(key), o.won[key], n))
    lines.append("  neutral roles, wins over the games they were dealt in:")
    for key in NEUTRALS:
        if o.dealt[key]:
            lines.append(_row(_label(key), o.won[key], o.dealt[key]))
    return lines


def events_digest(logs: Iterable[tuple[GameConfig, list[dict[str, object]]]]) -> str:
    """A sha256 of every event (with its audience and secrets) of the games
    these command logs replay to, in order: two builds that print the same
    digest played the same games, so a speed-up that changed play shows."""
    digest = hashlib.sha256()
    for config, commands in logs:
        for e in rerun(config, commands).events:
            digest.update(json.dumps(e.to_dict(), sort_keys=True).encode())
            digest.update(b"\n")
    return digest.hexdigest()
