"""A headless match whose model seats play one catalogue entry (`tossim play
--model-entry NAME`): seats built by `entry_seat.make_seat_for_entry`, so the
same entry plays the same way here, in the server and in the arena."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tossim.agents.async_match import AsyncMatchResult, AsyncSeat, play_match_async
from tossim.agents.chat_seat import ChatSeat
from tossim.agents.entry_seat import make_seat_for_entry
from tossim.agents.llm_seat import LLMSeat
from tossim.agents.memory import SeatMemory
from tossim.agents.model_match import DEFAULT_ROUNDS
from tossim.agents.summarize import (
    SummaryStats,
    fallback_summary,
    write_chat_summary,
    write_summary,
)
from tossim.engine.state import GameConfig
from tossim.inference.catalogue import ModelEntry
from tossim.inference.seeds import derive_seed


@dataclass
class EntryMatch:
    entry: ModelEntry
    result: AsyncMatchResult
    seats: dict[int, Any]  # the entry's seats (ChatSeat or LLMSeat)
    seconds: float
    summary_stats: SummaryStats = field(default_factory=SummaryStats)

    def metrics(self) -> dict[str, Any]:
        """Per-seat metrics (engine faults included) and totals over the entry's seats."""
        per_seat: dict[str, Any] = {}
        totals: dict[str, float] = {}
        for slot, seat in sorted(self.seats.items()):
            d = seat.metrics_dict() if hasattr(seat, "metrics_dict") else {}
            d["engine_faults"] = self.result.faults.get(slot, 0)
            d["seat_errors"] = self.result.errors.get(slot, 0)
            per_seat[str(slot)] = d
            for k, v in d.items():
                if k.endswith("rate") or k.startswith(("mean_", "max_")):
                    continue  # ratios and extremes do not add up
                if isinstance(v, int | float) and not isinstance(v, bool):
                    totals[k] = totals.get(k, 0) + v
                elif isinstance(v, dict) and k in ("faults", "errors"):
                    for kk, n in v.items():
                        totals[f"{k}.{kk}"] = totals.get(f"{k}.{kk}", 0) + n
        totals["cost_usd"] = round(totals.get("cost_usd", 0.0), 6)
        requests = max(totals.get("requests", 0), 1)
        totals["mean_latency_seconds"] = round(
            sum(seat.metrics_dict().get("mean_latency_seconds", 0) * seat.metrics_dict().get(
                "requests", 0) for seat in self.seats.values()) / requests, 3)
        totals["cache_hit_rate"] = round(totals.get("cached_tokens", 0)
                                         / max(totals.get("requested_tokens", 0), 1), 3)
        out: dict[str, Any] = {"entry": self.entry.public(), "seats": per_seat,
                               "summary_stats": self.summary_stats.to_dict(),
                               "total": {**totals, "cost_usd": totals["cost_usd"]
                                         if self.entry.priced else None}}
        for seat in self.seats.values():
            stats = getattr(getattr(seat, "backend", None), "stats_dict", None)
            if stats is not None:  # the chat backend's per-model figures
                out["model"] = stats()
                break
        return out


async def play_entry_match(config: GameConfig, entry: ModelEntry, *,
                           model_seats: Iterable[int] | None = None,
                           rounds: dict[str, int] | None = None, max_days: int = 60,
                           openai_url: str | None = None, model_dir: str | None = None,
                           protocol: str | None = None, speech: str | None = None,
                           on_phase: Callable[[int, str], None] | None = None) -> EntryMatch:
    """Play one game: `model_seats` (default all) play `entry`, the rest are
    scripted. Day summaries are written by the entry's model (the token loop's
    or the chat API's), or extractively when it fails (`summary_stats`)."""
    slots = list(model_seats) if model_seats is not None else range(1, config.players + 1)
    book: dict[int, str] = {}
    seats = {s: make_seat_for_entry(entry, s, config.seed, game_id=f"play{config.seed}",
                                    summaries=book, openai_url=openai_url,
                                    model_dir=model_dir, protocol=protocol, speech=speech)
             for s in slots}
    for seat in seats.values():
        backend = getattr(getattr(seat, "loop", None), "backend", None)
        start = getattr(backend, "start", None)
        if start is not None:  # e.g. the openai backend's structured-output self-test
            await start()
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

    table: dict[int, AsyncSeat] = dict(seats)
    started = time.perf_counter()
    result = await play_match_async(config, table, max_days=max_days,
                                    rounds=DEFAULT_ROUNDS if rounds is None else rounds,
                                    summaries=book, on_phase=on_phase, summarize=summarize)
    return EntryMatch(entry, result, dict(seats), time.perf_counter() - started, stats)
