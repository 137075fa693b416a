"""Per-entry request-rate limits, shared by every seat and game of a process.

A catalogue entry's `rpm` bounds the requests its endpoint gets a minute.
Every seat of every concurrent game (the arena plays several at once, a
server many lobbies) sends through the same `RateLimiter` of its entry,
so the bound holds for the process, not per seat or per game.
"""

from __future__ import annotations

import asyncio
import math
import time


class RateLimitExceeded(RuntimeError):
    """The entry's rpm leaves no request slot before the caller's deadline."""


class RateLimiter:
    """Spaces request starts at least 60/rpm seconds apart (None: no limit),
    so no 60-second window holds more than `rpm` starts. Callers wait their
    turn in the order they asked."""

    def __init__(self, rpm: int | None) -> None:
        self.rpm = rpm
        self.interval = 60.0 / rpm if rpm else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self, deadline: float = math.inf) -> None:
        """Return when this request may start; RateLimitExceeded (taking no
        slot) when that would be at or after `deadline` (time.monotonic)."""
        if not self.interval:
            return
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            if start >= deadline:
                raise RateLimitExceeded("the entry's rpm leaves no slot before the deadline")
            self._next = start + self.interval
        await asyncio.sleep(start - now)


_shared: dict[str, RateLimiter] = {}


def shared_limiter(key: str, rpm: int | None) -> RateLimiter:
    """The process-wide limiter of one entry (`key`: the entry, as its
    backend is keyed), made on first use."""
    limiter = _shared.get(key)
    if limiter is None or limiter.rpm != rpm:
        limiter = _shared[key] = RateLimiter(rpm)
    return limiter


def forget_limiters() -> None:
    """Drop the shared limiters (tests; they hold an event loop's lock)."""
    _shared.clear()
