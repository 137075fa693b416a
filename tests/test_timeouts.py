"""`tossim.timeouts.within`: a timeout that never loses a cancellation.

Seen: `./scripts/run`'s server, sent SIGTERM while its demo played, logged
"Waiting for application shutdown." and then the demo game played eleven
more days; the process never exited. The game's actor waits on its inbox
with a timeout, and on Python 3.11 `asyncio.wait_for` returns the item and
drops the cancellation when both land in one turn of the event loop.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable

import pytest

from tossim.agents.driver import WallTimer
from tossim.timeouts import within


async def _cancel_as_an_item_arrives(
        wait: Callable[[asyncio.Queue[int]], Awaitable[object]]) -> tuple[bool, int]:
    """A task that takes items with `wait(queue)` in a loop is cancelled in
    the same turn as an item arrives: (whether it stopped, items taken)."""
    inbox: asyncio.Queue[int] = asyncio.Queue()
    taken = [0]

    async def consume() -> None:
        while True:
            await wait(inbox)
            taken[0] += 1

    task = asyncio.create_task(consume())
    await asyncio.sleep(0)  # it waits on the empty inbox
    inbox.put_nowait(1)
    task.cancel()
    await asyncio.wait([task], timeout=1.0)
    stopped = task.done()
    task.cancel()
    await asyncio.wait([task], timeout=1.0)
    return stopped, taken[0]


async def test_wait_for_on_this_python_can_lose_the_cancellation() -> None:
    """The flaw `within` exists for (if a later Python fixes `wait_for`,
    this test says so, and `within` may become `wait_for` again)."""
    stopped, taken = await _cancel_as_an_item_arrives(
        lambda q: asyncio.wait_for(q.get(), 10))
    assert stopped == (sys.version_info >= (3, 12)), (stopped, taken)


async def test_within_passes_every_cancellation_on() -> None:
    assert await _cancel_as_an_item_arrives(lambda q: within(q.get(), 10)) == (True, 0)


async def test_a_real_time_game_stops_when_its_actor_is_cancelled() -> None:
    """The actor's inbox wait (`WallTimer.next`): a game told to stop stops,
    even while answers keep arriving."""
    timer = WallTimer()
    stopped, _taken = await _cancel_as_an_item_arrives(
        lambda q: timer.next(q, time.time() + 10, ()))
    assert stopped


async def test_within_gives_the_result_or_times_out() -> None:
    assert await within(asyncio.sleep(0, "done"), 1.0) == "done"
    assert await within(asyncio.sleep(0, "no limit"), None) == "no limit"
    with pytest.raises(TimeoutError):
        await within(asyncio.sleep(5), 0.01)


async def test_with_no_time_left_nothing_starts_unless_it_is_done() -> None:
    """`wait_for`'s rule for no time left, kept: a coroutine is never run, a
    future already done gives its result, one not done is cancelled."""
    started = []

    async def work() -> str:
        started.append(1)
        return "ran"

    with pytest.raises(TimeoutError):
        await within(work(), 0)
    assert started == []
    done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    done.set_result("ready")
    assert await within(done, -1.0) == "ready"
    pending: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    with pytest.raises(TimeoutError):
        await within(pending, 0)
    assert pending.cancelled()
