"""Who has won: faction victories, neutral co-wins, draws and the stalemate table.

Checked at the start of each day (after the night's deaths are announced) and
after a lynch, as the rules reference (A6) says. There is no parity win.
"""

from __future__ import annotations

from tossim.engine.state import Game, Player

# Sides that win by eliminating every opposing side (A6). Neutral Evil roles
# (Jester, Executioner) oppose nobody and only ever co-win.
KILLING_SIDES = ("town", "mafia", "serial_killer")
OPPOSES: dict[str, frozenset[str]] = {
    "town": frozenset({"mafia", "serial_killer"}),
    "mafia": frozenset({"town", "serial_killer"}),
    "serial_killer": frozenset({"town", "mafia"}),
}

# The stalemate table (A6, A7): two opposing players left who can neither kill
# nor lynch each other (two players can never reach a lynch majority). The
# game awards these to one side instead of waiting for the timeout draw. Each
# entry: the two roles -> the winning side, with the reason.
STALEMATES: dict[frozenset[str], tuple[str, str]] = {
    frozenset({"serial_killer", "godfather"}): (
        "serial_killer",
        "Basic attack against Basic defense both ways; the side with the lower win "
        "rate (the Serial Killer) is awarded the game, as in the original game.",
    ),
}


def side(p: Player) -> str | None:
    win = p.spec.win
    return win if win in KILLING_SIDES else None


def check(game: Game) -> str | None:
    """Return the result ("town", "mafia", "serial_killer", "draw") if the game is over."""
    living = game.living()
    alive_sides = {s for p in living if (s := side(p)) is not None}
    if len(alive_sides) == 1:
        return next(iter(alive_sides))
    if not alive_sides:
        return "draw"
    if game.flags.stalemate_table and len(living) == 2:
        entry = STALEMATES.get(frozenset(p.role for p in living))
        if entry is not None:
            return entry[0]
    return None


def timeout_draw(game: Game) -> bool:
    """Draw by timeout: from `draw_from_day`, nobody died in the last two days."""
    return game.day >= game.flags.draw_from_day and game.last_death_day <= game.day - 3


def winners(game: Game, result: str) -> tuple[int, ...]:
    out: list[int] = []
    for p in game.players:
        co_win = p.spec.win in ("jester", "executioner") and p.won_early
        if side(p) == result or co_win:
            out.append(p.slot)
    return tuple(out)


def describe(game: Game, result: str) -> str:
    if result == "draw":
        return "The game ended in a draw."
    label = {"town": "The Town", "mafia": "The Mafia", "serial_killer": "The Serial Killer"}
    return f"{label[result]} won."
