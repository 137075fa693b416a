"""A whole match with model seats: the backend, the seats, their summaries and
metrics wired together (used by `tossim play --ai`, `tossim bench agents` and
the model tests)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tossim.agents.async_match import AsyncMatchResult, AsyncSeat, play_match_async
from tossim.agents.llm_seat import AgentMetrics, LLMSeat
from tossim.agents.loop import LoopConfig, ToolLoop
from tossim.agents.memory import SeatMemory
from tossim.agents.personas import persona_for
from tossim.agents.summarize import SummaryStats, write_summary
from tossim.engine.commands import Command
from tossim.engine.state import Game, GameConfig
from tossim.engine.view import View
from tossim.inference.base import Backend
from tossim.inference.seeds import derive_seed

# a match is "discussion" heavy: one round of speeches, then a second round in
# which players can answer what was said
DEFAULT_ROUNDS = {"discussion": 2}


class _Timed:
    """A model seat whose every turn has `seconds(phase)` to act in, from the
    moment it is asked (docs/agents.md#deadlines)."""

    def __init__(self, seat: LLMSeat, seconds: Callable[[str], float]) -> None:
        self.seat, self.seconds = seat, seconds

    async def decide(self, obs: View) -> list[Command]:
        return await self.seat.decide(obs, time.monotonic() + self.seconds(obs.phase))


@dataclass
class ModelMatch:
    result: AsyncMatchResult
    seats: dict[int, LLMSeat]
    seconds: float
    summary_stats: SummaryStats = field(default_factory=SummaryStats)

    def total(self) -> AgentMetrics:
        out = AgentMetrics()
        for s in self.seats.values():
            out.merge(s.metrics)
        return out

    def metrics(self) -> dict[str, Any]:
        """Per-seat metrics (engine faults included) and totals, as stored."""
        per_seat = {}
        for slot, seat in sorted(self.seats.items()):
            d = seat.metrics_dict()
            d["engine_faults"] = self.result.faults.get(slot, 0)
            d["errors"] = self.result.errors.get(slot, 0)
            per_seat[str(slot)] = d
        return {"seats": per_seat, "total": self.total().to_dict(),
                "summary_stats": self.summary_stats.to_dict()}


async def play_model_match(config: GameConfig, backend: Backend, *,
                           model_seats: Iterable[int] | None = None,
                           loop_config: LoopConfig | None = None,
                           rounds: dict[str, int] | None = None,
                           max_days: int = 60, summaries_by_model: bool = True,
                           on_phase: Callable[[int, str], None] | None = None,
                           until: Callable[[Game], bool] | None = None,
                           turn_seconds: Callable[[str], float] | None = None) -> ModelMatch:
    """Play a match; with `turn_seconds` (phase -> seconds) every model turn
    has a deadline that long after it is asked (`tossim bench agents`)."""
    loop = ToolLoop(backend, loop_config)
    book: dict[int, str] = {}
    slots = list(model_seats) if model_seats is not None else range(1, config.players + 1)
    seats = {s: LLMSeat(s, loop, persona=persona_for(s, config.seed), summaries=book,
                        key=f"match{config.seed}:{s}", seed=derive_seed(config.seed, s))
             for s in slots}

    summary_stats = SummaryStats()

    async def summarize(memory: SeatMemory, day: int) -> str:
        return await write_summary(backend, memory, day,
                                   seed=derive_seed(config.seed, "summary", day),
                                   stats=summary_stats)

    start = getattr(backend, "start", None)
    if start is not None:  # e.g. the openai backend's structured-output self-test
        await start()
    started = time.perf_counter()
    table: dict[int, AsyncSeat] = (dict(seats) if turn_seconds is None else
                                   {s: _Timed(seat, turn_seconds) for s, seat in seats.items()})
    result = await play_match_async(
        config, table, max_days=max_days,
        rounds=DEFAULT_ROUNDS if rounds is None else rounds, summaries=book,
        summarize=summarize if summaries_by_model else None, on_phase=on_phase, until=until)
    return ModelMatch(result, seats, time.perf_counter() - started, summary_stats)
