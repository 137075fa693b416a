"""A headless match with seats that answer asynchronously (model seats).

Like `match.play_match`, but every seat asked in a phase is asked at the same
time (so a backend can decode them in one batch) and their commands are then
applied in slot order; a phase with `rounds[phase] > 1` asks again, so
players can answer what was said in the round before. At the end of each day
the day's public discussion is summarised (by the model, through
`summarize.write_summary`, or extractively) and the summary is shown to every
model seat from then on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from tossim.agents.match import (
    AfterHook,
    MatchResult,
    apply_seat_commands,
    end_phase,
    seats_to_ask,
)
from tossim.agents.memory import SeatMemory
from tossim.agents.scripted import ScriptedBot
from tossim.agents.summarize import fallback_summary
from tossim.engine.commands import Command
from tossim.engine.rules import new_game
from tossim.engine.state import Game, GameConfig, Phase
from tossim.engine.view import PUBLIC_VIEWER, View, Viewer, view

log = logging.getLogger(__name__)

# (public memory, day) -> the day's summary
Summarizer = Callable[[SeatMemory, int], Awaitable[str]]


class AsyncSeat(Protocol):
    async def decide(self, obs: View) -> list[Command]: ...


class TimedSeat(Protocol):
    """A seat that takes a turn deadline (time.monotonic(); model seats act
    before it, docs/agents.md#deadlines)."""

    async def decide(self, obs: View, deadline: float | None = None) -> list[Command]: ...


class ScriptedSeat:
    """A scripted bot behind the async seat interface (matches and the server)."""

    def __init__(self, slot: int, seed: int) -> None:
        self.bot = ScriptedBot(slot, seed)

    async def decide(self, obs: View, deadline: float | None = None) -> list[Command]:
        return self.bot.decide(obs)  # a bot answers at once: it needs no deadline


@dataclass
class AsyncMatchResult(MatchResult):
    summaries: dict[int, str] = field(default_factory=dict)
    errors: dict[int, int] = field(default_factory=dict)  # seats that raised (they waited)


async def _summarize(summarize: Summarizer | None, memory: SeatMemory, day: int) -> str:
    if summarize is None:
        return fallback_summary(memory, day)
    try:
        return await summarize(memory, day)
    except Exception:
        log.exception("summary of day %d failed", day)
        return fallback_summary(memory, day)


async def play_match_async(
    config: GameConfig,
    seats: Mapping[int, AsyncSeat] | None = None,
    *,
    max_days: int = 60,
    rounds: Mapping[str, int] | None = None,
    summaries: dict[int, str] | None = None,
    summarize: Summarizer | None = None,
    after: AfterHook | None = None,
    on_phase: Callable[[int, str], None] | None = None,
    until: Callable[[Game], bool] | None = None,
) -> AsyncMatchResult:
    """Play one game to the end (or past `max_days`). Seats not given are
    scripted bots. `summaries` (day -> text) is filled in as days end; pass
    the same dict to the model seats so they see it. `until(game)` stops the
    match early (checked before each phase)."""
    game = new_game(config)
    table: dict[int, AsyncSeat] = {s: (seats or {}).get(s) or ScriptedSeat(s, config.seed)
                                   for s in range(1, config.players + 1)}
    seen = dict.fromkeys(table, 0)
    faults = dict.fromkeys(table, 0)
    errors = dict.fromkeys(table, 0)
    reasons: dict[int, list[str]] = {}
    book = summaries if summaries is not None else {}
    public = SeatMemory(0)
    per_phase = dict(rounds or {})
    views = 0
    while not game.ended and game.day <= max_days and not (until and until(game)):
        seq, phase, day = game.phase_seq, game.phase, game.day
        if on_phase is not None:
            on_phase(day, phase.value)
        for _ in range(max(1, per_phase.get(phase.value, 1))):
            asked = seats_to_ask(game)
            observations = {}
            for slot in asked:
                observations[slot] = view(game, Viewer.player(slot), since=seen[slot])
                seen[slot] = observations[slot].version
            views += len(asked)
            answers = await asyncio.gather(*(table[s].decide(observations[s]) for s in asked),
                                           return_exceptions=True)
            for slot, answer in zip(asked, answers, strict=True):
                if isinstance(answer, BaseException):
                    errors[slot] += 1
                    log.error("seat %d failed: %r; it waits", slot, answer)
                    continue
                apply_seat_commands(game, slot, answer, faults, reasons,
                                    checked=not isinstance(table[slot], ScriptedSeat), after=after)
                if game.phase_seq != seq or game.ended:
                    break
            if game.phase_seq != seq or game.ended:
                break
        if game.phase_seq == seq and not game.ended:
            end_phase(game, after=after)
        if (game.phase is Phase.NIGHT and phase is not Phase.NIGHT) or (
                game.ended and day not in book):
            public.update(view(game, PUBLIC_VIEWER, since=public.version))
            book[day] = await _summarize(summarize, public, day)
    return AsyncMatchResult(game=game, faults=faults, days=game.day, winners=game.winners,
                            result=game.result, views=views, fault_reasons=reasons,
                            summaries=book, errors=errors)
