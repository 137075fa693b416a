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

`stopped(*tasks)`: how every long-lived task (a game's actor, its listeners,
a mirror, the demo) is stopped on shutdown. A bare `task.cancel(); await
task` waits forever on a task that swallows the cancellation (code that
catches CancelledError to clean up and then waits again); `stopped` cancels
again after each grace period, says so in the log, and gives up after a few
tries rather than hanging the server's shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from typing import Any, TypeVar

__all__ = ["stopped", "within"]

log = logging.getLogger(__name__)

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


async def stopped(*tasks: asyncio.Future[Any] | None, grace: float = 5.0,
                  tries: int = 3) -> None:
    """Cancel `tasks` (None: skipped) and wait until they have ended, each
    one's outcome (a result, an error, the cancellation) retrieved and
    dropped. A task still running `grace` seconds after a cancel is
    cancelled again, up to `tries` times; one that outlives that is named in
    the log and left behind. A cancellation of the caller is passed on."""
    live = {t for t in tasks if t is not None and not t.done()}
    for attempt in range(1, tries + 1):
        if not live:
            break
        for running in live:
            running.cancel()
        _done, live = await asyncio.wait(live, timeout=grace)
        for running in live if attempt < tries else ():
            log.warning("%s ignored a cancellation (%d of %d); cancelling it again",
                        _name(running), attempt, tries)
    for running in live:
        log.error("%s would not stop; shutting down without it", _name(running))
    for task in tasks:
        if task is not None and task.done():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                task.result()


def _name(task: asyncio.Future[Any]) -> str:
    return task.get_name() if isinstance(task, asyncio.Task) else repr(task)
