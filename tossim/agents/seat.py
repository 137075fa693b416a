"""The seat interface: what every kind of player (scripted bot, model seat,
chat seat, a worker's seat) implements, and what it may report besides.

A seat sees the game only through its observations: `view` is
`view(game, Viewer.player(slot), since=<the last version this seat saw>)`, so
`view.events` holds only what happened (and what this seat may see) since
the seat was last asked. A seat keeps its own memory of earlier observations.
`view.legal` lists what the seat may do now; `view.you` describes the seat.

There is one protocol, `Seat`, asynchronous for every seat (the server, the
headless driver and the arena ask seats the same way, docs/agents.md#seats).
Telemetry is optional and typed: a seat that records its turns or streams
its steps is a `SeatTelemetry`; a seat played by a model is a `ModelSeat`
(it thinks while the others play, gets a turn deadline, and reports
metrics). A synchronous bot (the scripted bots, test doubles) is adapted by
one wrapper, `SyncSeat`.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from tossim.agents.metrics import SeatMetrics
from tossim.agents.scripted import ScriptedBot
from tossim.engine.commands import Command
from tossim.engine.view import View

# on_step(slot, step): one step of a turn as it completes (thinking, a tool
# call, a fault, the action), maybe from a backend's thread
StepHook = Callable[[int, dict[str, Any]], None]


@runtime_checkable
class Seat(Protocol):
    async def decide(self, view: View, /, deadline: float | None = None) -> list[Command]:
        """The commands this seat sends now, in order (possibly none).
        `deadline` (time.monotonic()) is when a model seat's turn must have
        acted (docs/agents.md#deadlines); a seat that answers at once ignores it.

        Commands the engine rejects are counted as the seat's faults and
        skipped; commands left over after the phase changes are dropped."""
        ...


@runtime_checkable
class Bot(Protocol):
    """A synchronous seat (the scripted bots, test doubles): it answers at
    once, so it is asked through `SyncSeat`."""

    def decide(self, view: View, /) -> list[Command]: ...


class SeatTelemetry:
    """What a seat may report besides its commands: `turn_log` gets one dict
    per finished turn (`turn_records.TURN_KEYS`; the server stores them, a
    resumed seat is rebuilt from them), and `on_step`, when the server sets
    it, gets each step of a turn as it happens (streamed to omniscient
    spectators). Subclasses set both in their __init__."""

    turn_log: list[dict[str, Any]]
    on_step: StepHook | None


class ModelSeat(SeatTelemetry, ABC):
    """A seat played by a model (here, on a worker, or through a chat API).
    Such seats think while the others play: a match asks all of a round's
    model seats at once (one batch for the backend) and applies their answers
    in seat order, each with a turn deadline; their metrics are stored."""

    @abstractmethod
    def seat_metrics(self) -> SeatMetrics:
        """The seat's metrics so far (`to_dict()`: as stored; docs/agents.md,
        "Metrics")."""

    def still_meant(self, obs: View, commands: list[Command]) -> list[Command]:
        """The answer's commands that still hold now that the game has moved on
        while the seat thought (`obs`: its view now; it may repeat events the
        seat has seen). By default all of them; a seat that knows why it says
        something withdraws a line that no longer holds (docs/agents.md, "Real
        time")."""
        return commands


class SyncSeat:
    """A synchronous `Bot` behind the `Seat` protocol: it answers at once,
    so it needs no deadline."""

    def __init__(self, bot: Bot) -> None:
        self.bot = bot

    async def decide(self, view: View, deadline: float | None = None) -> list[Command]:
        return self.bot.decide(view)


class ScriptedSeat(SyncSeat):
    """The scripted bot of `slot`, seeded by the game (the default seat)."""

    def __init__(self, slot: int, seed: int) -> None:
        super().__init__(ScriptedBot(slot, seed))


def as_seat(seat: Seat | Bot) -> Seat:
    """`seat` itself if it answers asynchronously, else wrapped in `SyncSeat`."""
    if inspect.iscoroutinefunction(seat.decide):
        return seat  # type: ignore[return-value]
    return SyncSeat(seat)  # type: ignore[arg-type]
