"""A deterministic headless match driver: seats play a whole game, no clock.

Per phase the driver asks the seats that can do something now, in slot order,
for their commands (each seat gets `view(game, Viewer.player(slot),
since=<its last version>)`), applies them, and then ends the phase with a
`PhaseTimeout`. A command the engine rejects counts as a fault of that seat
and is skipped, and so does a command a seat may not send at all (one acting
for another player, a PhaseTimeout, something that is not a well-formed
command). When the phase changes in the middle of a round (a vote put someone
on trial), the round stops and the new phase gets its own round.

Who is asked (to keep games fast, a seat is only asked when it has something
it could do in this phase):
  Day 1, Discussion, Voting: every living player (and a dead Medium who may
      still hold a seance, during Discussion).
  Defense, Last Words: the accused.
  Judgement: every living player but the accused.
  Night: living players with a night ability or a night chat (Mafia, jail,
      a living Medium, a seance), the Jester who haunts, a dead Medium in a
      seance, and the dead on their first night (so dead chat stays rare).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tossim.agents.scripted import ScriptedBot
from tossim.agents.seat import Seat
from tossim.engine.commands import Command, MalformedCommand, PhaseTimeout, command_from_dict
from tossim.engine.events import Event
from tossim.engine.legal import IllegalCommand, chat_channels, day_ability, night_ability
from tossim.engine.rules import apply, new_game
from tossim.engine.state import Game, GameConfig, Phase, Player
from tossim.engine.view import Viewer, view

# before(game, command) runs before each command is applied; after(game,
# command, events) runs after it, with events=None if it was rejected.
BeforeHook = Callable[[Game, Command], None]
AfterHook = Callable[[Game, Command, list[Event] | None], None]


@dataclass
class MatchResult:
    game: Game
    faults: dict[int, int]  # rejected commands per seat
    days: int
    winners: tuple[int, ...]
    result: str | None  # "town", "mafia", "serial_killer", "draw"; None if unfinished
    views: int = 0  # observations handed out
    fault_reasons: dict[int, list[str]] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.game.ended


def _dead_asked(game: Game, p: Player) -> bool:
    """A dead seat is asked at night only for a haunt, a seance, or its first
    night in the dead chat."""
    if p.slot == game.haunter:
        return True
    if game.seance is not None and p.slot == game.seance[0]:
        return True
    d = p.death
    if d is None:
        return False
    return (d.at_night and d.day == game.day - 1) or (not d.at_night and d.day == game.day)


def seat_command_problem(slot: int, cmd: object, checked: bool) -> str | None:
    """Why a seat may not send `cmd` at all (None: it may): a seat only acts for
    itself and never ends a phase. Commands from seats other than the built-in
    bots are also checked for their shape."""
    if not isinstance(cmd, Command) or isinstance(cmd, PhaseTimeout):
        return f"not a command a seat can send: {cmd!r}"
    if getattr(cmd, "actor", None) != slot:
        return f"a seat can only act for itself (player {slot})"
    if checked:
        try:
            command_from_dict(cmd.to_dict())
        except (MalformedCommand, TypeError, ValueError) as exc:
            return str(exc)
    return None


def seats_to_ask(game: Game) -> list[int]:
    """The seats asked in this phase, in slot order."""
    phase = game.phase
    players = game.players
    if phase in (Phase.DEFENSE, Phase.LAST_WORDS):
        accused = game.accused
        return [accused] if accused is not None and game.player(accused).alive else []
    if phase is Phase.JUDGEMENT:
        return [p.slot for p in players if p.alive and p.slot != game.accused]
    if phase is Phase.NIGHT:
        return [p.slot for p in players
                if (p.alive and (night_ability(game, p) is not None
                                 or chat_channels(game, p)))
                or (not p.alive and _dead_asked(game, p))]
    if phase is Phase.DISCUSSION:
        return [p.slot for p in players
                if p.alive or (p.role == "medium" and day_ability(game, p) is not None)]
    if phase is Phase.ENDED:
        return []
    return [p.slot for p in players if p.alive]


def apply_seat_commands(game: Game, slot: int, cmds: list[Command], faults: dict[int, int],
                        reasons: dict[int, list[str]], *, checked: bool,
                        before: BeforeHook | None = None,
                        after: AfterHook | None = None) -> None:
    """Apply one seat's commands in order; a rejected one is counted as a fault
    and skipped; what is left when the phase changes is dropped."""
    seq = game.phase_seq
    for cmd in cmds:
        if game.phase_seq != seq or game.ended:
            return  # what is left was meant for the phase that just ended
        problem = seat_command_problem(slot, cmd, checked=checked)
        if problem is not None:
            faults[slot] += 1
            reasons.setdefault(slot, []).append(problem)
            continue
        if before is not None:
            before(game, cmd)
        try:
            events = apply(game, cmd)
        except IllegalCommand as exc:
            faults[slot] += 1
            reasons.setdefault(slot, []).append(exc.reason)
            if after is not None:
                after(game, cmd, None)
            continue
        if after is not None:
            after(game, cmd, events)


def end_phase(game: Game, before: BeforeHook | None = None,
              after: AfterHook | None = None) -> None:
    """The phase's timer runs out."""
    timeout = PhaseTimeout(game.phase_seq)
    if before is not None:
        before(game, timeout)
    events = apply(game, timeout)
    if after is not None:
        after(game, timeout, events)


def play_match(
    config: GameConfig,
    seats: dict[int, Seat] | None = None,
    max_days: int = 60,
    *,
    before: BeforeHook | None = None,
    after: AfterHook | None = None,
) -> MatchResult:
    """Play one game to the end (or until `max_days` is passed). Seats not
    given are filled with `ScriptedBot(slot, config.seed)`."""
    game = new_game(config)
    n = config.players
    given = seats or {}
    table: dict[int, Seat] = {s: given.get(s) or ScriptedBot(s, config.seed)
                              for s in range(1, n + 1)}
    viewers = {s: Viewer.player(s) for s in table}
    seen = dict.fromkeys(table, 0)
    faults = dict.fromkeys(table, 0)
    reasons: dict[int, list[str]] = {}
    views = 0
    while not game.ended and game.day <= max_days:
        seq = game.phase_seq
        for slot in seats_to_ask(game):
            obs = view(game, viewers[slot], since=seen[slot])
            views += 1
            seen[slot] = obs.version
            seat = table[slot]
            apply_seat_commands(game, slot, seat.decide(obs), faults, reasons,
                                checked=not isinstance(seat, ScriptedBot), before=before,
                                after=after)
            if game.phase_seq != seq:
                break
        if game.phase_seq != seq or game.ended:
            continue  # a trial started: the new phase gets its own round
        end_phase(game, before, after)
    return MatchResult(game=game, faults=faults, days=game.day, winners=game.winners,
                       result=game.result, views=views, fault_reasons=reasons)
