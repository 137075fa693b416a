"""`within(awaitable, seconds)`: `asyncio.wait_for` without the flaw it has
on Python 3.11.

On 3.11, `asyncio.wait_for` loses a cancellation that lands in the same
turn of the event loop as the result it waits for: it returns the result
and the task that was cancelled runs on. A game's actor waits on its inbox
this way many times a phase, and model seats post answers into that inbox
all the time, so stopping a live game (a server shutting down, a lease
handed over) could leave it playing on: seen when `./scripts/run`'s server
was sent SIGTERM during the demo: "Waiting for application shutdown." and
then the demo game played eleven more days and the process never exited.
`asyncio.timeout` (3.11) counts cancellations and never swallows one;
`within` is built on it and keeps `wait_for`'s other rule (no time left:
the awaitable is not started, TimeoutError at once, unless it is a future
already done). Python 3.12 rebuilt `wait_for` on the same mechanism.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["within"]

T = TypeVar("T")


async def within(aw: Awaitable[T], seconds: float | None) -> T:
    """`aw`'s result if it comes within `seconds` (None: no limit), else
    TimeoutError (and `aw` is cancelled). A cancellation of the caller is
    always passed on."""
    if seconds is None:
        return await aw
    if seconds <= 0:
        if asyncio.isfuture(aw) and aw.done():
            return aw.result()
        if asyncio.iscoroutine(aw):
            aw.close()  # never started
        elif asyncio.isfuture(aw):
            aw.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await aw
        raise TimeoutError
    async with asyncio.timeout(seconds):
        return await aw
