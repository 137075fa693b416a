"""Headless matches: a whole game played by seats with no clock, through the
one match driver (`tossim.agents.driver`; docs/agents.md#the-match-driver).

`play` is the driver's headless form (seats not given are scripted bots; day
summaries as days end); `play_match` is its synchronous wrapper for
synchronous bots (the scripted bots, test doubles), which also takes hooks
around each command.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any

from tossim.agents.driver import (
    Clock,
    Match,
    MatchResult,
    MatchSink,
    SeatTally,
    seat_command_problem,
    seats_to_ask,
)
from tossim.agents.memory import SeatMemory
from tossim.agents.seat import Bot, ScriptedSeat, Seat, SyncSeat, as_seat
from tossim.agents.summarize import fallback_summary
from tossim.engine.commands import Command
from tossim.engine.events import Event
from tossim.engine.rules import new_game
from tossim.engine.state import Game, GameConfig, Phase
from tossim.engine.view import PUBLIC_VIEWER, view

__all__ = ["HookSink", "Match", "MatchResult", "MatchSink", "ProgressSink", "SeatTally",
           "SummarySink", "play", "play_match", "seat_command_problem", "seats_to_ask"]

log = logging.getLogger(__name__)

# before(game, command) runs before each command is applied; after(game,
# command, events) runs after it, with events=None if it was rejected.
BeforeHook = Callable[[Game, Command], None]
AfterHook = Callable[[Game, Command, list[Event] | None], None]
# (public memory, day) -> the day's summary
Summarizer = Callable[[SeatMemory, int], Awaitable[str]]


class HookSink(MatchSink):
    """Plain functions around each command (checkers, recorders)."""

    def __init__(self, before: BeforeHook | None = None, after: AfterHook | None = None) -> None:
        self._before, self._after = before, after

    def before(self, game: Game, cmd: Command) -> None:
        if self._before is not None:
            self._before(game, cmd)

    def after(self, game: Game, cmd: Command, events: list[Event] | None) -> None:
        if self._after is not None:
            self._after(game, cmd, events)


class ProgressSink(MatchSink):
    """`on_phase(day, phase)` as each phase begins (progress lines)."""

    def __init__(self, on_phase: Callable[[int, str], None]) -> None:
        self.on_phase = on_phase

    async def phase_started(self, game: Game) -> None:
        self.on_phase(game.day, game.phase.value)


class SummarySink(MatchSink):
    """Once a day is over (night fell, or the game ended), its public
    discussion is summarised into `book` (day -> text), which model seats
    are shown from then on: by `summarize` (a model), else extractively,
    and extractively when the model fails."""

    def __init__(self, book: dict[int, str], summarize: Summarizer | None = None) -> None:
        self.book, self.summarize = book, summarize
        self.public = SeatMemory(0)

    async def phase_over(self, game: Game, phase: Phase, day: int) -> None:
        if not ((game.phase is Phase.NIGHT and phase is not Phase.NIGHT)
                or (game.ended and day not in self.book)):
            return
        self.public.update(view(game, PUBLIC_VIEWER, since=self.public.version))
        self.book[day] = await self._write(day)

    async def _write(self, day: int) -> str:
        if self.summarize is None:
            return fallback_summary(self.public, day)
        try:
            return await self.summarize(self.public, day)
        except Exception:
            log.exception("summary of day %d failed", day)
            return fallback_summary(self.public, day)


async def play(config: GameConfig, seats: Mapping[int, Seat] | None = None,
               sinks: Sequence[MatchSink] = (), *, max_days: int = 60,
               turns: Mapping[str, int] | None = None,
               summaries: dict[int, str] | None = None,
               summarize: Summarizer | None = None,
               until: Callable[[Game], bool] | None = None,
               clock: Clock | None = None) -> MatchResult:
    """Play one game to the end (or past `max_days`). Seats not given are
    scripted bots. `summaries` (day -> text) is filled in as days end; pass
    the same dict to the model seats so they see it. `until(game)` stops the
    match early (checked before each phase). `clock`: time limits, or real
    time (default: none, in turns)."""
    game = new_game(config)
    given = seats or {}
    table: dict[int, Seat] = {s: given.get(s) or ScriptedSeat(s, config.seed)
                              for s in range(1, config.players + 1)}
    book = summaries if summaries is not None else {}
    match = Match(game, table, [*sinks, SummarySink(book, summarize)], turns=turns,
                  clock=clock)
    await match.play(max_days, until)
    return match.result(book)


def play_match(config: GameConfig, seats: Mapping[int, Bot | Seat] | None = None,
               max_days: int = 60, *, before: BeforeHook | None = None,
               after: AfterHook | None = None) -> MatchResult:
    """`play` for synchronous callers: seats not given are
    `ScriptedBot(slot, config.seed)`; synchronous bots are wrapped in
    `SyncSeat`. No day summaries (no seat here reads them)."""
    table = {slot: as_seat(seat) for slot, seat in (seats or {}).items()}
    game = new_game(config)
    full: dict[int, Seat] = {s: table.get(s) or ScriptedSeat(s, config.seed)
                             for s in range(1, config.players + 1)}
    match = Match(game, full, [HookSink(before, after)] if before or after else [])
    if all(isinstance(seat, SyncSeat) for seat in full.values()):
        _run_at_once(match.play(max_days))  # (also from inside a running event loop)
    else:
        asyncio.run(match.play(max_days))
    return match.result()


def _run_at_once(coro: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine that never waits (every seat answers at once) to its
    end, with no event loop."""
    try:
        coro.send(None)
    except StopIteration:
        return
    coro.close()
    raise RuntimeError("a synchronous seat waited; play such seats with `play`")
