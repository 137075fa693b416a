"""Who has won: faction victories, neutral co-wins, draws and the stalemate table.

Win conditions are data: each role names a key of `WIN_CONDITIONS` (its
`Role.win`), which says the side it wins with (if any), the sides that side
opposes, and its co-win rule. Checked at the start of each day (after the
night's deaths are announced) and after a lynch, as the rules reference (A6)
says. There is no parity win.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tossim.engine.state import Game, Player

KILLING_SIDES = ("town", "mafia", "serial_killer", "arsonist", "werewolf", "vampire")


@dataclass(frozen=True)
class WinCondition:
    """`side`: the faction this role wins with by eliminating every opposing
    side (None: it never blocks or takes a faction win). `co_win`: how it wins
    beside whoever wins: "lynched" (Jester), "target_lynched" (Executioner),
    "alive" (Survivor, draws included), "alive_town_lost" (Witch)."""

    side: str | None
    label: str = ""
    co_win: str = ""

    @property
    def opposes(self) -> frozenset[str]:
        """Every side opposes every other one (A6): Town, Mafia, Vampires and
        each Neutral Killing role must eliminate all the others."""
        return frozenset(KILLING_SIDES) - {self.side} if self.side else frozenset()


WIN_CONDITIONS: dict[str, WinCondition] = {
    "town": WinCondition("town", "The Town"),
    "mafia": WinCondition("mafia", "The Mafia"),
    "serial_killer": WinCondition("serial_killer", "The Serial Killer"),
    "arsonist": WinCondition("arsonist", "The Arsonist"),
    "werewolf": WinCondition("werewolf", "The Werewolf"),
    "vampire": WinCondition("vampire", "The Vampires"),
    "jester": WinCondition(None, co_win="lynched"),
    "executioner": WinCondition(None, co_win="target_lynched"),
    "survivor": WinCondition(None, co_win="alive"),
    "witch": WinCondition(None, co_win="alive_town_lost"),
    # An Amnesiac wins only after remembering: it then has that role's condition.
    "amnesiac": WinCondition(None),
}

# Kept for callers that read the old name.
OPPOSES: dict[str, frozenset[str]] = {s: WIN_CONDITIONS[s].opposes for s in KILLING_SIDES}


@dataclass(frozen=True)
class Stalemate:
    roles: frozenset[str]
    winner: str
    reason: str
    when: Callable[[Game], bool] = lambda game: True


def _jailor_cannot_execute(game: Game) -> bool:
    return all(p.uses.get("executions", 0) <= 0 for p in game.living() if p.role == "jailor")


_LOWER_WIN_RATE = ("the side with the lower win rate is awarded the game, as in the "
                   "original game (A6)")

# The stalemate table (A6, A7): the last two players, on opposing sides, who
# can neither kill nor lynch each other (two players never reach a lynch
# majority), or one of whom blocks the other forever. Each pair that can occur
# with these roles is listed with its reason; `tests/test_victory.py` checks
# that every other opposing pair can kill. Pairs not listed play on (a Jailor
# with executions left will execute; a Veteran's alerts run out ...).
STALEMATES: tuple[Stalemate, ...] = (
    Stalemate(frozenset({"serial_killer", "godfather"}), "serial_killer",
              "Basic attack against Basic defense both ways; " + _LOWER_WIN_RATE),
    Stalemate(frozenset({"arsonist", "escort"}), "arsonist",
              "the Escort role blocks the Arsonist every night (it is not immune) and "
              "cannot kill; " + _LOWER_WIN_RATE),
    Stalemate(frozenset({"godfather", "escort"}), "mafia",
              "the Escort role blocks the Godfather every night and cannot kill; "
              + _LOWER_WIN_RATE),
    Stalemate(frozenset({"mafioso", "escort"}), "mafia",
              "the Escort role blocks the Mafioso every night and cannot kill; "
              + _LOWER_WIN_RATE),
    Stalemate(frozenset({"vampire", "escort"}), "vampire",
              "the Escort role blocks the Vampire every night and cannot kill; "
              + _LOWER_WIN_RATE),
    Stalemate(frozenset({"jailor", "mafioso"}), "mafia",
              "a Jailor without executions jails the Mafioso every night (jail blocks) "
              "and cannot kill; " + _LOWER_WIN_RATE, _jailor_cannot_execute),
    Stalemate(frozenset({"jailor", "godfather"}), "mafia",
              "a Jailor without executions jails the Godfather every night and cannot "
              "kill; " + _LOWER_WIN_RATE, _jailor_cannot_execute),
    Stalemate(frozenset({"jailor", "arsonist"}), "arsonist",
              "a Jailor without executions jails the Arsonist every night and cannot "
              "kill; " + _LOWER_WIN_RATE, _jailor_cannot_execute),
    Stalemate(frozenset({"jailor", "vampire"}), "vampire",
              "a Jailor without executions jails the Vampire every night and cannot "
              "kill; " + _LOWER_WIN_RATE, _jailor_cannot_execute),
)


def condition(p: Player) -> WinCondition:
    return WIN_CONDITIONS[p.spec.win]


def side(p: Player) -> str | None:
    return condition(p).side


def stalemate(game: Game) -> Stalemate | None:
    living = game.living()
    if len(living) != 2 or side(living[0]) == side(living[1]):
        return None
    roles = frozenset(p.role for p in living)
    for entry in STALEMATES:
        if entry.roles == roles and entry.when(game):
            return entry
    return None


def check(game: Game) -> str | None:
    """Return the result (a side, or "draw") if the game is over."""
    living = game.living()
    alive_sides = {s for p in living if (s := side(p)) is not None}
    if len(alive_sides) == 1:
        winner = next(iter(alive_sides))
        if winner == "town" and _vigilante_hunts_witches(living):
            return None
        return winner
    if not alive_sides:
        return "draw"
    if game.flags.stalemate_table:
        entry = stalemate(game)
        if entry is not None:
            return entry.winner
    return None


def _vigilante_hunts_witches(living: list[Player]) -> bool:
    """A6: with a Vigilante with bullets left alive, the Town plays on until
    the Witches are dead too."""
    return (any(p.role == "witch" for p in living)
            and any(p.role == "vigilante" and p.uses.get("bullets", 0) > 0 for p in living))


def timeout_draw(game: Game) -> bool:
    """Draw by timeout: from `draw_from_day`, nobody died in the last two days."""
    return game.day >= game.flags.draw_from_day and game.last_death_day <= game.day - 3


def draw_tomorrow(game: Game) -> bool:
    """At the start of a day: the next dawn is a draw by timeout unless
    someone dies before it, so the town is warned (docs/rules.md, Victory)."""
    return game.day + 1 >= game.flags.draw_from_day and game.last_death_day <= game.day - 2


def co_wins(game: Game, p: Player, result: str) -> bool:
    rule = condition(p).co_win
    if rule in ("lynched", "target_lynched"):
        return p.won_early
    if rule == "alive":
        return p.alive
    if rule == "alive_town_lost":
        return p.alive and result != "town"
    return False


def winners(game: Game, result: str) -> tuple[int, ...]:
    return tuple(p.slot for p in game.players
                 if side(p) == result or co_wins(game, p, result))


def describe(game: Game, result: str) -> str:
    if result == "draw":
        return "The game ended in a draw."
    return f"{WIN_CONDITIONS[result].label} won."
