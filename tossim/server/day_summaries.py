"""Day summaries written beside the game, never in its way.

When a day ends the game actor stores and publishes the extractive summary
(`fallback_summary`) at once, so nightfall is instant, and hands the model's
summary to a task of its own with a deadline inside the phase that follows
(docs/architecture.md, "Day summaries"). A model summary that comes in time, and
is not degenerate, replaces the fallback: in the mapping the seats read, in
the store (one row per day, so replays and a resumed game see the final one)
and on the game's channel. A late, failed or degenerate one leaves the
fallback. Summaries are not engine events: the event log is the same either
way.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from tossim.agents.chat_seat import ChatSeat
from tossim.agents.guard import repeated_sentence
from tossim.agents.llm_seat import LLMSeat
from tossim.agents.memory import SeatMemory
from tossim.agents.summarize import (
    SummaryStats,
    fallback_summary,
    write_chat_summary,
    write_summary,
)
from tossim.engine import View
from tossim.server.bus import Bus, game_channel
from tossim.server.workers import RemoteSeat
from tossim.store import Store
from tossim.timeouts import stopped, within

log = logging.getLogger(__name__)



def degenerate(text: str) -> str | None:
    """Why a model's summary is not worth showing (None when it is): empty,
    or a sentence written twice, or nearly (the text guard's check: a model
    looping; docs/agents.md, "The text guard")."""
    if not text.strip():
        return "empty"
    twice = repeated_sentence(text)
    return None if twice is None else f"a sentence repeated: {twice!r}"


def writes_summaries(seat: Any) -> bool:
    """Whether `seat`'s model may write the day summaries everyone reads: a
    free-text model may; a structured-move seat (a small model such as the
    bundled 135M one, `speech = "moves"`) may not. Its summaries passed every
    check and were still invented ("15 players voted to keep the game on the
    same day", a Sheriff "killed by a Serial Killer" who was lynched), so its
    games keep the extractive summary (docs/architecture.md, "Day summaries")."""
    if isinstance(seat, LLMSeat):
        return seat.loop.config.speech != "moves"
    if isinstance(seat, RemoteSeat):
        return seat.spec.get("speech") != "moves"
    return isinstance(seat, ChatSeat)


async def model_summary(seat: Any, game_id: str, public: View, day: int, seed: int,
                        seconds: float) -> str | None:
    """Day `day`'s summary by the game's model (the model of `seat`: in this
    process, through its chat API, or on the game's worker); None when the
    model failed or wrote nothing usable. The caller bounds the wait."""
    memory = SeatMemory(0)
    memory.update(public)
    stats = SummaryStats()
    if isinstance(seat, LLMSeat):
        text = await write_summary(seat.loop.backend, memory, day, seed=seed, stats=stats,
                                   deadline=time.monotonic() + seconds)
    elif isinstance(seat, ChatSeat):
        text = await write_chat_summary(seat.backend, memory, day, stats=stats,
                                        seconds=min(seconds, seat.config.turn_seconds))
    elif isinstance(seat, RemoteSeat):
        text = await seat.hub.summarize(game_id, seat.backend, public, day, seed)
        stats.model += 1
    else:
        return None
    if not stats.model:
        return None  # the writer fell back to the extractive summary itself
    problem = degenerate(text)
    if problem is not None:
        log.warning("game %s: the model's summary of day %d is degenerate (%s); the "
                    "extractive one stays", game_id, day, problem)
        return None
    return text


class DaySummaries:
    """The summaries of one game's days (see the module docstring).

    `texts` is the mapping the game's seats read (day -> summary); `ended(...)`
    is called by the actor when a day is over and returns at once; `settle()`
    waits for the model summaries still being written (each within its
    deadline) and `close()` cancels them."""

    def __init__(self, game_id: str, store: Store, bus: Bus, texts: dict[int, str]) -> None:
        self.game_id, self.store, self.bus = game_id, store, bus
        self.texts = texts
        self.tasks: set[asyncio.Task[None]] = set()
        self.replaced: list[int] = []  # days whose fallback a model summary replaced

    async def ended(self, public: View, day: int, version: int, *, seat: Any,
                    seed: int, seconds: float) -> str:
        """Store and publish the extractive summary of Day `day` now; start the
        model's (if `seat` plays a model) with `seconds` to finish. Returns the
        extractive text."""
        memory = SeatMemory(0)
        memory.update(public)
        text = fallback_summary(memory, day)
        self.texts[day] = text
        await self.store.add_summary(self.game_id, day, text)
        await self._publish(day, text, version, "extractive")
        if seat is not None:
            task = asyncio.get_running_loop().create_task(
                self._replace(seat, public, day, version, seed, seconds),
                name=f"summary-{self.game_id}-{day}")
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        return text

    async def _replace(self, seat: Any, public: View, day: int, version: int, seed: int,
                       seconds: float) -> None:
        started = time.monotonic()
        try:
            text = await within(
                model_summary(seat, self.game_id, public, day, seed, seconds), seconds)
        except TimeoutError:
            log.warning("game %s: the model's summary of day %d did not come within %.1f s; "
                        "the extractive one stays", self.game_id, day, seconds)
            return
        except asyncio.CancelledError:
            raise
        except Exception:  # a summary is never worth losing the game over
            log.warning("game %s: the model did not summarise day %d; the extractive one "
                        "stays", self.game_id, day, exc_info=True)
            return
        if text is None:
            return
        self.texts[day] = text
        try:
            await self.store.replace_summary(self.game_id, day, text)
            await self._publish(day, text, version, "model")
        except Exception:
            log.warning("game %s: the model's summary of day %d was not stored",
                        self.game_id, day, exc_info=True)
            return
        self.replaced.append(day)
        log.info("game %s: the model's summary of day %d replaced the extractive one "
                 "after %.1f s", self.game_id, day, time.monotonic() - started)

    async def _publish(self, day: int, text: str, version: int, source: str) -> None:
        await self.bus.publish(game_channel(self.game_id), {
            "type": "summary", "day": day, "text": text, "version": version,
            "source": source})

    async def settle(self) -> None:
        """Wait for the model summaries being written (each has its deadline)."""
        while self.tasks:
            running = list(self.tasks)
            await asyncio.gather(*running, return_exceptions=True)
            self.tasks.difference_update(running)

    async def close(self) -> None:
        await stopped(*self.tasks)
