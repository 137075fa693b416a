"""Several server processes, one fleet of workers.

What a user would notice:
- kill -9 one of two `tossim serve` processes (PostgreSQL + Redis, for
  real): every game it ran goes on in the other (its lease expires, the
  other takes the game over and resumes it from the stored log) and
  finishes; the stored logs are exact; spectators connected to the survivor
  keep receiving every event once;
- a model seat is played by a worker connected to another process than the
  one running the game: requests travel over the bus;
- a worker, or the process it is connected to, that goes away does not stall
  a game: its requests fail and the seat asks another worker;
- chat limits and the cap on sockets per seat hold across processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from websockets.exceptions import ConnectionClosed

from tossim.agents.scripted import ScriptedBot
from tossim.engine import GameConfig, PhaseTimeout, View, apply
from tossim.engine.replay import event_lines, rerun
from tossim.inference import registry
from tossim.server.app import create_app
from tossim.server.bus import MemoryBus, command_channel
from tossim.server.settings import Settings
from tossim.server.workers import RemoteWorker, WorkerGone, WorkerHub, WorkerLink
from tossim.store import ConflictError, Store
from tossim.worker.client import Worker

from .support import (
    PLAIN_TOWN,
    WS,
    ServeProcess,
    ServerFactory,
    create_game,
    finished,
    human_game,
    is_finished,
    running_worker,
    wait_game,
)


class ScriptedWorker(Worker):
    """A real `tossim worker` client (hello, reconnects, cancels, forget)
    whose seats are played by scripted bots instead of a model: every
    decision is fast and legal, so a test can watch a game go on."""

    def __init__(self, server: str, name: str) -> None:
        super().__init__(server, "local", cast(Any, None), name=name)
        self.bots: dict[tuple[str, int], ScriptedBot] = {}
        self.per_game: dict[str, int] = {}

    async def decide(self, message: dict[str, Any]) -> dict[str, Any]:
        game, slot = str(message["game"]), int(message["slot"])
        if (game, slot) not in self.bots or message.get("fresh"):
            self.bots[(game, slot)] = ScriptedBot(slot, int(message["seed"]))
        commands = self.bots[(game, slot)].decide(View.from_dict(message["view"]))
        self.decisions += 1
        self.per_game[game] = self.per_game.get(game, 0) + 1
        return {"type": "decided", "commands": [c.to_dict() for c in commands], "turn": {}}

    async def summarize(self, message: dict[str, Any]) -> dict[str, Any]:
        self.summarized += 1
        return {"type": "summary", "text": f"Day {message['day']}, as the worker saw it."}

    def forget(self, game: str) -> None:
        super().forget(game)
        for key in [k for k in self.bots if k[0] == game]:
            del self.bots[key]


# --- one fleet of workers, at the hub level (a bus shared by two processes) --------


class FakeSocket:
    """What a WorkerLink writes to: the frames a worker would receive."""

    def __init__(self) -> None:
        self.frames: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def send_text(self, text: str) -> None:
        self.frames.put_nowait(json.loads(text))


async def two_hubs(ttl: float = 0.6) -> tuple[WorkerHub, WorkerHub, WorkerLink, FakeSocket]:
    """Hubs of processes A and B on one bus; a worker connected to B."""
    bus = MemoryBus()
    a, b = WorkerHub(bus, "proc-a", ttl=ttl), WorkerHub(bus, "proc-b", ttl=ttl)
    await a.start()
    await b.start()
    sock = FakeSocket()
    link = WorkerLink(cast(Any, sock), {"local"}, "w1")
    await b.add(link)
    return a, b, link, sock


async def test_a_request_reaches_a_worker_connected_to_another_process() -> None:
    a, b, link, sock = await two_hubs()
    try:
        route = await asyncio.wait_for(a.link_for("g1", "local"), 5)
        assert isinstance(route, RemoteWorker) and route.id == link.id
        assert await asyncio.wait_for(b.link_for("g2", "local"), 5) is link  # B's own
        asking = asyncio.create_task(route.request({"type": "decide", "game": "g1",
                                                    "slot": 3}))
        frame = await asyncio.wait_for(sock.frames.get(), 5)
        assert frame["type"] == "decide" and frame["game"] == "g1" and frame["slot"] == 3
        link.answer({"type": "decided", "id": frame["id"], "commands": []})
        assert (await asyncio.wait_for(asking, 5))["type"] == "decided"

        # the asker stops waiting (the seat's deadline): the worker is told
        asking = asyncio.create_task(route.request({"type": "decide", "game": "g1",
                                                    "slot": 4}))
        frame = await asyncio.wait_for(sock.frames.get(), 5)
        asking.cancel()
        cancel = await asyncio.wait_for(sock.frames.get(), 5)
        assert cancel == {"type": "cancel", "id": frame["id"]}

        # the game ended: the worker may drop it
        await a.forget("g1")
        assert await asyncio.wait_for(sock.frames.get(), 5) == {"type": "forget",
                                                                "game": "g1"}

        # the worker disconnects from B: A's open request fails (the seat moves on)
        asking = asyncio.create_task(route.request({"type": "decide", "game": "g3",
                                                    "slot": 1}))
        await asyncio.wait_for(sock.frames.get(), 5)
        await b.remove(link)
        with pytest.raises(WorkerGone):
            await asyncio.wait_for(asking, 5)
        for _ in range(100):
            if not a.remote:
                break
            await asyncio.sleep(0.02)
        assert not a.remote  # B announced that it has no worker left
    finally:
        await a.close()
        await b.close()


async def test_a_silent_process_s_workers_are_dropped_and_its_requests_fail() -> None:
    """B dies without a word (kill -9): after `ttl` A drops B's workers, and a
    request A was waiting on fails instead of stalling the seat."""
    a, b, link, sock = await two_hubs(ttl=0.6)
    try:
        route = await asyncio.wait_for(a.link_for("g1", "local"), 5)
        asking = asyncio.create_task(route.request({"type": "decide", "game": "g1",
                                                    "slot": 1}))
        await asyncio.wait_for(sock.frames.get(), 5)
        for task in b._tasks:  # B stops dead: no goodbye, no more announcements
            task.cancel()
        with pytest.raises(WorkerGone):
            await asyncio.wait_for(asking, 10)
        assert not a.remote and not a.assigned
        # a game that wants a worker now waits for one (within its seat's deadline)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(a.link_for("g1", "local"), 0.3)
    finally:
        await a.close()
        b._tasks.clear()
        await b.close()


# --- limits across processes ---------------------------------------------------------


async def test_seat_limits_hold_across_two_processes_on_one_redis(
        server_factory: ServerFactory, redis_url: str) -> None:
    """Sockets of one seat on two processes count together (the cap is
    shared), and so do its chats."""
    prefix = f"t-{uuid.uuid4().hex[:10]}:"
    options: dict[str, Any] = {"time_scale": 100.0, "chat_limit_messages": 5,
                               "chat_limit_seconds": 600.0, "max_sockets_per_seat": 3,
                               "redis_url": redis_url, "redis_prefix": prefix}
    a = await server_factory(**options)
    b = await server_factory(**options)
    game_id, token = await human_game(a, roles=PLAIN_TOWN)
    async with contextlib.AsyncExitStack() as stack:
        sockets = [await stack.enter_async_context(srv.seat_connect(game_id, token))
                   for srv in (a, b, b)]
        for ws in sockets:
            await ws.recv_type("events")
        for srv in (a, b):  # a fourth socket, on either process, is refused
            async with srv.seat_connect(game_id, token) as extra:
                with pytest.raises(ConnectionClosed) as closed:
                    await extra.recv_type("events")
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 4429
        for ws in sockets:
            for i in range(3):
                await ws.send({"type": "command", "command": {"type": "chat",
                                                              "text": f"hello {i}"}})
        refused = 0
        for ws in sockets:
            await ws.send({"type": "ping"})
            while (msg := await ws.until(lambda m: m["type"] in ("pong", "error")))[
                    "type"] == "error":
                assert "too many chat messages from this seat" in msg["error"], msg
                refused += 1
    chats = [c for _, origin, c in await a.store.commands(game_id)
             if origin == "seat:1" and c["type"] == "chat"]
    assert len(chats) == 5 and refused == 9 - 5
    # the sockets closed: the seat may open new ones, on either process
    for srv in (a, b):
        async with srv.seat_connect(game_id, token) as ws:
            assert (await ws.recv())["type"] == "hello"
            await ws.recv_type("events")


# --- two real processes, one killed --------------------------------------------------


async def _spectate(ws: WS, done: asyncio.Event) -> None:
    with contextlib.suppress(ConnectionClosed):
        await ws.until(finished, timeout=300)
    done.set()


@pytest.mark.redis
@pytest.mark.postgres
async def test_kill_one_of_two_processes_and_every_game_goes_on_in_the_other(
        serve_process: Callable[..., ServeProcess], pg_url: str, redis_url: str) -> None:
    prefix = f"fleet-{uuid.uuid4().hex[:10]}:"
    env = {"TOSSIM_PACE": "0.03",  # paced games: ~30 ms between decisions
           "TOSSIM_LEASE_S": "2",  # a dead process's games move after ~2 s
           "TOSSIM_INFERENCE": "workers", "TOSSIM_MODEL_DEADLINE": "20",
           "TOSSIM_REDIS_PREFIX": prefix}
    a = serve_process(pg_url, redis=redis_url, env=env)
    b = serve_process(pg_url, redis=redis_url, env=env)
    await a.wait_ready()
    await b.wait_ready()
    model_seats = [{"slot": s, "backend": "local"} for s in (2, 5)]

    async with running_worker(ScriptedWorker(b.base_url, "at-b")) as worker, \
            contextlib.AsyncExitStack() as stack:
        assert isinstance(worker, ScriptedWorker)
        # A runs three games (one with model seats, played by the worker at B);
        # B runs one
        on_a = [await create_game(a.client, players=15, speed="paced", seed=s)
                for s in (11, 12)]
        model_game = await create_game(a.client, players=15, speed="paced", seed=13,
                                       seats=model_seats)
        on_a.append(model_game)
        on_b = [await create_game(b.client, players=15, speed="paced", seed=14)]
        games = on_a + on_b
        # spectators on B, for every game
        watchers: dict[str, tuple[WS, asyncio.Event]] = {}
        tasks = []
        for g in games:
            ws = await stack.enter_async_context(
                b.ws_connect(f"/ws/games/{g}/watch?viewer=omniscient"))
            done = asyncio.Event()
            watchers[g] = (ws, done)
            tasks.append(asyncio.create_task(_spectate(ws, done)))

        store = await Store.open(pg_url, migrate=False)
        stack.push_async_callback(store.close)
        for g in on_a:
            lease = await store.lease(g)
            assert lease is not None and f":{a.proc.pid}:" in lease.owner
        lease = await store.lease(on_b[0])
        assert lease is not None and f":{b.proc.pid}:" in lease.owner

        # the worker at B plays the model seats of A's game, through the bus
        deadline = time.monotonic() + 120
        while worker.per_game.get(model_game, 0) < 6 or min(
                [(await store.get_game(g)).version for g in games]) < 60:  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the games did not get going"
            await asyncio.sleep(0.05)
        before = await store.commands(model_game)
        assert {o for _s, o, _d in before} >= {"ai:2", "ai:5"}
        assert (await a.client.get("/api/health")).json()["live_games"] == 3
        assert not watchers[on_a[0]][1].is_set(), "A's games ended before the kill"
        decided_at_kill = worker.per_game[model_game]
        killed_at = {g: len(await store.commands(g)) for g in games}

        a.kill()

        for g in games:
            await asyncio.wait_for(watchers[g][1].wait(), 300)
            await wait_game(b.client, g, is_finished, timeout=60)
        await asyncio.gather(*tasks)
        assert worker.per_game[model_game] > decided_at_kill  # it went on playing there

        out = b.output()
        assert "resumed" in out and "diverged" not in out
        for g in games:
            commands = await store.commands(g)
            assert len(commands) > killed_at[g]
            # no hole, no repeat: seqs 1..n, events exactly a re-run's
            assert [s for s, _o, _d in commands] == list(range(1, len(commands) + 1))
            row = await store.get_game(g)
            assert row is not None and row.status == "finished"
            game = rerun(GameConfig.from_dict(row.config), [d for _s, _o, d in commands])
            assert game.ended and row.result == game.result
            stored = await store.events(g)
            assert [json.dumps(e, sort_keys=True, ensure_ascii=False) for e in stored] == \
                event_lines(game)[stored[0]["v"] - 1:]
            # the spectator on B got every event once, in order: the replay's
            replay = (await b.client.get(f"/api/games/{g}/replay",
                                         params={"viewer": "omniscient"})).json()
            ws, _ = watchers[g]
            assert ws.events() == replay["events"], g
            assert await store.lease(g) is None  # released when the game ended
        # A's games were taken over by B; the model game's seats kept playing
        # on the worker at B, none of their turns lost to a timeout there
        metrics = await store.metrics(model_game)
        for slot in (2, 5):
            assert metrics[slot]["timeouts"] == 0 and metrics[slot]["errors"] == 0
            assert metrics[slot]["decisions"] > 0
        after = [o for s, o, _d in await store.commands(model_game)
                 if s > killed_at[model_game]]
        assert {"ai:2", "ai:5"} <= set(after)


# --- a game's end, a process's end ---------------------------------------------------


async def test_a_finished_game_leaves_no_subscription_and_no_lease(
        server_factory: ServerFactory) -> None:
    """When a game ends its actor closes its command subscription (nothing
    listens on a dead game's channel) and releases its lease."""
    server = await server_factory()
    bus = server.app.state.bus
    game_id = await create_game(server.client, players=7, speed="fast", seed=5)
    await wait_game(server.client, game_id, is_finished)
    for _ in range(200):
        if command_channel(game_id) not in bus.subs and await server.store.lease(
                game_id) is None:
            break
        await asyncio.sleep(0.02)
    assert command_channel(game_id) not in bus.subs
    assert await server.store.lease(game_id) is None
    assert game_id not in server.app.state.actors.leased


async def test_shared_backends_are_closed_by_the_last_app_of_the_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The models a process loaded are closed at shutdown, but only when the
    last app of the process shuts down (tests run several in one process)."""
    closed: list[object] = []

    class Model:
        async def close(self) -> None:
            closed.append(self)

    model = Model()
    monkeypatch.setitem(registry._shared, ("local", "test"), cast(Any, model))
    apps = [create_app(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / f'{n}.db'}",
                                resume=False)) for n in range(2)]
    async with apps[0].router.lifespan_context(apps[0]):
        async with apps[1].router.lifespan_context(apps[1]):
            pass
        assert closed == [] and ("local", "test") in registry._shared  # one app still runs
    assert closed == [model] and ("local", "test") not in registry._shared


async def test_a_process_that_lost_a_game_s_lease_stops_running_it(
        server_factory: ServerFactory) -> None:
    """Another process took the game over (this one stalled past its lease):
    at its next renewal this process finds out and stops its actor, so the
    game has one writer again."""
    server = await server_factory(lease_s=0.6, time_scale=100.0)
    hub = server.app.state.actors
    game_id = await create_game(server.client, players=7, seed=9)  # standard speed
    assert game_id in hub.actors
    lease = await server.store.lease(game_id)
    assert lease is not None and lease.owner == hub.owner
    # as another process would, once the lease looked expired to it
    later = datetime.now(UTC) + timedelta(hours=1)
    assert await server.store.acquire_lease(game_id, "the-other-process", 60, now=later)
    for _ in range(200):
        if game_id not in hub.actors:
            break
        await asyncio.sleep(0.02)
    assert game_id not in hub.actors and game_id not in hub.leased
    lease = await server.store.lease(game_id)
    assert lease is not None and lease.owner == "the-other-process"  # left alone
    assert (await server.client.get("/api/health")).json()["live_games"] == 0


async def test_a_write_from_a_stale_process_is_fenced_and_the_game_goes_on(
        server_factory: ServerFactory, caplog: pytest.LogCaptureFixture) -> None:
    """A process that lost its lease without noticing stores one more batch:
    the lease holder's next write conflicts, its actor restarts from the
    store (the stale batch included) and the game ends with one history."""
    caplog.set_level(logging.INFO, logger="tossim.server.runner")
    server = await server_factory(pace=0.05)
    hub = server.app.state.actors
    game_id = await create_game(server.client, players=7, speed="paced", seed=21)
    await wait_game(server.client, game_id, lambda s: s["version"] > 20)
    store = server.store
    for _ in range(50):  # as the stale process would: one command after the log
        row = await store.get_game(game_id)
        commands = await store.commands(game_id)
        game = rerun(GameConfig.from_dict(row.config), [d for _s, _o, d in commands])
        events = apply(game, PhaseTimeout(game.phase_seq))
        try:
            await store.append(game_id, [(len(commands) + 1, "stale", game.commands[-1])],
                               [e.to_dict() for e in events], day=game.day,
                               phase=game.phase.value)
            break
        except ConflictError:
            continue  # the actor stored first: try again after it
    else:
        raise AssertionError("the stale write never got in")
    final = await wait_game(server.client, game_id, is_finished, timeout=120)
    assert "restarted from the store after a write conflict" in caplog.text
    commands = await store.commands(game_id)
    assert [s for s, _o, _d in commands] == list(range(1, len(commands) + 1))
    assert [o for _s, o, _d in commands].count("stale") == 1
    game = rerun(GameConfig.from_dict((await store.get_game(game_id)).config),
                 [d for _s, _o, d in commands])
    assert game.ended and game.result == final["result"]
    stored = await store.events(game_id)
    assert [json.dumps(e, sort_keys=True, ensure_ascii=False) for e in stored] == \
        event_lines(game)[stored[0]["v"] - 1:]
    assert await store.lease(game_id) is None and not hub.leased
