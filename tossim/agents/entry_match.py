"""A headless match whose model seats play one catalogue entry: the one
function behind `tossim play --model-entry NAME` and `--ai BACKEND` (the
backend's built-in entry), `tossim bench agents` and the model tests. Seats
are built by `entry_seat.make_seat_for_entry`, as the server and the arena
build them, and the game is played by the one match driver
(docs/agents.md#the-match-driver), so the same entry plays the same way
everywhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tossim.agents.chat_seat import ChatSeat
from tossim.agents.driver import Clock
from tossim.agents.entry_seat import make_seat_for_entry
from tossim.agents.llm_seat import LLMSeat
from tossim.agents.loop import LoopConfig
from tossim.agents.match import MatchResult, MatchSink, ProgressSink, play
from tossim.agents.memory import SeatMemory
from tossim.agents.metrics import AgentMetrics, SeatMetrics
from tossim.agents.seat import ModelSeat, Seat
from tossim.agents.summarize import (
    SummaryStats,
    fallback_summary,
    write_chat_summary,
    write_summary,
)
from tossim.engine.commands import Command
from tossim.engine.state import Game, GameConfig
from tossim.engine.view import View
from tossim.inference.base import Backend
from tossim.inference.catalogue import ModelEntry
from tossim.inference.seeds import derive_seed


def seat_metrics(result: MatchResult, seats: Mapping[int, Seat]) -> dict[str, Any]:
    """Per seat, what the server stores for it (docs/agents.md, metrics):
    the driver's tally (decisions, commands, faults, timeouts, errors,
    seconds, fault_kinds) and, for a model seat, its own metrics as `agent`."""
    out: dict[str, Any] = {}
    for slot, seat in sorted(seats.items()):
        tally = result.tallies.get(slot)
        data = tally.to_dict() if tally is not None else {}
        if isinstance(seat, ModelSeat):
            data["agent"] = seat.seat_metrics().to_dict()
        out[str(slot)] = data
    return out


@dataclass
class EntryMatch:
    entry: ModelEntry
    result: MatchResult
    seats: dict[int, Seat]  # the entry's seats (model seats, or scripted ones)
    seconds: float
    summary_stats: SummaryStats = field(default_factory=SummaryStats)

    def total(self) -> AgentMetrics:
        """The model seats' metrics, summed."""
        out = AgentMetrics()
        for seat in self.seats.values():
            if isinstance(seat, LLMSeat | ChatSeat):
                out.merge(seat.metrics)
        return out

    def metrics(self) -> dict[str, Any]:
        """Per-seat metrics (as the server stores them) and totals over the
        entry's model seats (`tossim play --metrics`)."""
        per_seat = seat_metrics(self.result, self.seats)
        totals: dict[str, float] = {}
        latency = 0.0
        for data in per_seat.values():
            agent = data.get("agent", {})
            for k, v in agent.items():
                if k.endswith("rate") or k.startswith(("mean_", "max_")):
                    continue  # ratios and extremes do not add up
                if isinstance(v, int | float) and not isinstance(v, bool):
                    totals[k] = totals.get(k, 0) + v
                elif isinstance(v, dict) and k in ("faults", "errors"):
                    for kk, n in v.items():
                        totals[f"{k}.{kk}"] = totals.get(f"{k}.{kk}", 0) + n
            latency += agent.get("mean_latency_seconds", 0) * agent.get("requests", 0)
        for k in ("faults", "timeouts", "errors"):  # the driver's, over every seat
            totals[f"seat_{k}"] = sum(d.get(k, 0) for d in per_seat.values())
        totals["cost_usd"] = round(totals.get("cost_usd", 0.0), 6)
        totals["mean_latency_seconds"] = round(latency / max(totals.get("requests", 0), 1), 3)
        totals["cache_hit_rate"] = round(totals.get("cached_tokens", 0)
                                         / max(totals.get("requested_tokens", 0), 1), 3)
        out: dict[str, Any] = {"entry": self.entry.public(), "seats": per_seat,
                               "summary_stats": self.summary_stats.to_dict(),
                               "total": {**totals, "cost_usd": totals["cost_usd"]
                                         if self.entry.priced else None}}
        for seat in self.seats.values():
            if isinstance(seat, ChatSeat):  # the chat backend's per-model figures
                out["model"] = seat.backend.stats_dict()
                break
        return out


class _Timed(ModelSeat):
    """A model seat whose every turn has `seconds(phase)` to act in, from the
    moment it is asked (`tossim bench agents`; docs/agents.md#deadlines)."""

    def __init__(self, seat: LLMSeat, seconds: Callable[[str], float]) -> None:
        self.seat, self.seconds = seat, seconds
        self.turn_log = seat.turn_log
        self.on_step = None

    async def decide(self, obs: View, deadline: float | None = None) -> list[Command]:
        return await self.seat.decide(obs, time.monotonic() + self.seconds(obs.phase))

    def seat_metrics(self) -> SeatMetrics:
        return self.seat.seat_metrics()


async def play_entry_match(config: GameConfig, entry: ModelEntry, *,
                           model_seats: Iterable[int] | None = None,
                           backend: Backend | None = None,
                           loop_config: LoopConfig | None = None,
                           turns: Mapping[str, int] | None = None, max_days: int = 60,
                           openai_url: str | None = None, model_dir: str | None = None,
                           protocol: str | None = None, speech: str | None = None,
                           summaries_by_model: bool = True,
                           sinks: Iterable[MatchSink] = (),
                           on_phase: Callable[[int, str], None] | None = None,
                           until: Callable[[Game], bool] | None = None,
                           turn_seconds: Callable[[str], float] | None = None,
                           clock: Clock | None = None) -> EntryMatch:
    """Play one game: `model_seats` (default all) play `entry`, the rest are
    scripted. `backend` (with `loop_config`) plays the entry's model seats on
    that backend instead of the process's shared one (a backend made by the
    caller, a test's fake). Day summaries are written by the entry's model
    (the token loop's or the chat API's) unless `summaries_by_model` is
    off, and extractively when it fails (`summary_stats`). With
    `turn_seconds` (phase -> seconds) every model turn has a deadline that
    long after it is asked. `until(game)` stops early. `clock`: the match's
    (default: no time limits, in turns; with `RealTime`, as the server's
    timed games)."""
    slots = list(model_seats) if model_seats is not None else range(1, config.players + 1)
    book: dict[int, str] = {}
    seats = {s: make_seat_for_entry(entry, s, config.seed, game_id=f"match{config.seed}",
                                    summaries=book, openai_url=openai_url,
                                    model_dir=model_dir, protocol=protocol, speech=speech,
                                    backend=backend, loop_config=loop_config)
             for s in slots}
    for seat in seats.values():
        if isinstance(seat, LLMSeat):  # e.g. the openai backend's structured-output self-test
            await seat.loop.backend.start()
            break
    stats = SummaryStats()
    first = seats[min(seats)] if seats else None

    async def summarize(memory: SeatMemory, day: int) -> str:
        if isinstance(first, ChatSeat):
            return await write_chat_summary(first.backend, memory, day, stats=stats,
                                            seconds=first.config.turn_seconds)
        if isinstance(first, LLMSeat):
            return await write_summary(first.loop.backend, memory, day,
                                       seed=derive_seed(config.seed, "summary", day), stats=stats)
        return fallback_summary(memory, day)

    table: dict[int, Seat] = dict(seats)
    if turn_seconds is not None:
        table = {s: _Timed(seat, turn_seconds) if isinstance(seat, LLMSeat) else seat
                 for s, seat in seats.items()}
    extra = [*sinks, *([ProgressSink(on_phase)] if on_phase is not None else [])]
    started = time.perf_counter()
    result = await play(config, table, extra, max_days=max_days, turns=turns, summaries=book,
                        summarize=summarize if summaries_by_model else None, until=until,
                        clock=clock)
    return EntryMatch(entry, result, dict(seats), time.perf_counter() - started, stats)
