"""`tossim.timeouts.within`: a timeout that never loses a cancellation.

Seen: `./scripts/run`'s server, sent SIGTERM while its demo played, logged
"Waiting for application shutdown." and then the demo game played eleven
more days; the process never exited. The game's actor waits on its inbox
with a timeout, and on Python 3.11 `asyncio.wait_for` returns the item and
drops the cancellation when both land in one turn of the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Awaitable, Callable

import pytest

from tossim.agents.driver import WallTimer
from tossim.timeouts import stopped, within


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


def test_stopped_ends_a_task_that_swallows_its_first_cancellation(
        caplog: pytest.LogCaptureFixture) -> None:
    """A task that catches CancelledError to clean up and then waits again
    would hang a bare `cancel(); await task` forever (a server that never
    exits on SIGTERM). `stopped` cancels it again after the grace period and
    says so in the log; a task that ends on the first cancel, one already
    done with an error, and None are all fine."""
    async def stubborn() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.Event().wait()  # "cleans up" forever, until cancelled again

    async def failed() -> None:
        raise RuntimeError("boom")

    async def main() -> tuple[bool, bool, bool]:
        a = asyncio.create_task(stubborn(), name="stubborn")
        b = asyncio.create_task(asyncio.Event().wait(), name="polite")
        c = asyncio.create_task(failed())
        await asyncio.sleep(0)
        await stopped(a, None, b, c, grace=0.05)
        return a.cancelled(), b.cancelled(), c.done()

    with caplog.at_level("WARNING", logger="tossim.timeouts"):
        assert asyncio.run(main()) == (True, True, True)
    assert [r.getMessage() for r in caplog.records] == [
        "stubborn ignored a cancellation (1 of 3); cancelling it again"]


def test_stopped_gives_up_on_a_task_that_never_stops(
        caplog: pytest.LogCaptureFixture) -> None:
    """Shutdown goes on without a task that ignores every cancellation; the
    log names it."""
    released = [False]

    async def deaf() -> None:
        while not released[0]:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.01)

    async def main() -> bool:
        task = asyncio.create_task(deaf(), name="deaf")
        await asyncio.sleep(0)
        await stopped(task, grace=0.02, tries=2)
        alive = not task.done()
        released[0] = True  # (the test's own clean-up: the loop must close)
        await task
        return alive

    with caplog.at_level("WARNING", logger="tossim.timeouts"):
        assert asyncio.run(main()) is True
    assert caplog.records[-1].getMessage() == "deaf would not stop; shutting down without it"
