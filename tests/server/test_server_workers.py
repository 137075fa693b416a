"""Inference workers (`tossim worker`): a server with `inference=workers` loads
no model; workers connect over /ws/workers and play its model seats.

What a user would notice: a game created before any worker is up waits and
then finishes once one connects; a game whose worker leaves moves to another
worker, which rebuilds each seat's memory from everything the seat has seen;
a worker that answers garbage cannot corrupt a game or act for another seat;
only workers with the server's token (or, without one, on this machine) get in.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tossim.engine import GameConfig
from tossim.engine.replay import rerun
from tossim.worker.client import Worker, workers_url

from .support import (
    TOSSIM_BIN,
    ServeProcess,
    Server,
    ServerFactory,
    create_game,
    is_finished,
    wait_game,
)

WorkerFactory = Callable[..., Worker]
# The games a model plays take minutes; the worker path is the same on every
# store, so these run on SQLite (the store tests cover PostgreSQL).
ONE_DATABASE = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


@pytest.fixture
async def start_worker(tiny_model_dir: Path) -> AsyncIterator[WorkerFactory]:
    """`start_worker(server, name)`: a Worker on the tiny random model, running
    as a task of this loop (cancelled at teardown). All share one backend."""
    pytest.importorskip("outlines_core")
    from tossim.inference.local_backend import LocalBackend

    backend = LocalBackend(tiny_model_dir)
    tasks: dict[str, asyncio.Task[None]] = {}

    def start(server: Server, name: str, **kw: Any) -> Worker:
        worker = Worker(server.base_url, "local", backend, name=name, **kw)
        tasks[name] = asyncio.create_task(worker.run(retry=0.1, max_retry=0.5))
        worker.task = tasks[name]  # type: ignore[attr-defined]
        return worker

    try:
        yield start
    finally:
        for task in tasks.values():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        await backend.close()


async def _finish_and_check(server: Server, game_id: str, seed: int) -> dict[int, Any]:
    summary = await wait_game(server.client, game_id, is_finished, timeout=600)
    assert summary["result"] is not None
    assert [s["day"] for s in summary["summaries"]][:1] == [1]
    stored = await server.store.commands(game_id)
    game = rerun(GameConfig(players=7, seed=seed), [data for _, _, data in stored])
    assert game.ended and game.result == summary["result"]
    metrics: dict[int, Any] = await server.store.metrics(game_id)
    assert set(metrics) == set(range(1, 8))
    for slot, m in metrics.items():
        assert m["errors"] == 0 and m["timeouts"] == 0 and m["faults"] == 0, (slot, m)
        agent = m["agent"]
        assert agent["turns"] >= 2 and agent["malformed"] == 0 and agent["forced"] == 0
        assert agent["generated_tokens"] > 0
    return metrics


@ONE_DATABASE
async def test_a_worker_plays_the_model_seats_of_a_game_that_waited_for_it(
        server_factory: ServerFactory, start_worker: WorkerFactory) -> None:
    server = await server_factory(inference="workers", model_deadline=300)
    # seat 7 writes free text, so the game's summaries are its model's; the
    # others speak in moves (a small model's default), and write none
    seats = [{"slot": s, "backend": "local", **({"speech": "free"} if s == 7 else {})}
             for s in range(1, 8)]
    game_id = await create_game(server.client, players=7, speed="fast", seed=41, seats=seats)
    await asyncio.sleep(1.0)  # no worker yet: the game waits on day 1
    r = await server.client.get(f"/api/games/{game_id}")
    assert r.json()["status"] == "live" and r.json()["day"] == 1

    worker = start_worker(server, "w1")
    metrics = await _finish_and_check(server, game_id, 41)
    turns = sum(m["agent"]["turns"] for m in metrics.values())
    # a decision is one turn, or two when a will, note or speech came before
    # the phase's action (docs/agents.md, "The phase's action")
    assert 2 * worker.decisions >= turns > 0
    assert worker.summarized >= 1  # the day summaries were the model's, not extractive
    assert not worker.seats  # the server told the worker the game is over


@ONE_DATABASE
async def test_a_game_moves_to_another_worker_when_its_worker_leaves(
        server_factory: ServerFactory, start_worker: WorkerFactory) -> None:
    server = await server_factory(inference="workers", model_deadline=300)
    first = start_worker(server, "first")
    await asyncio.wait_for(first.connected.wait(), 30)
    seats = [{"slot": s, "backend": "local"} for s in range(1, 8)]
    game_id = await create_game(server.client, players=7, speed="fast", seed=43, seats=seats)
    while first.decisions < 10:
        await asyncio.sleep(0.05)
    second = start_worker(server, "second")
    await asyncio.wait_for(second.connected.wait(), 30)
    first.task.cancel()  # type: ignore[attr-defined]

    rebuilt: list[int] = []
    decide = second.decide

    async def spy(message: dict[str, Any]) -> dict[str, Any]:
        if message.get("fresh"):  # the seat's whole history came along
            rebuilt.append(message["view"]["events"][0]["v"])
        return await decide(message)

    second.decide = spy  # type: ignore[method-assign]
    await _finish_and_check(server, game_id, 43)
    assert second.decisions > 0
    assert rebuilt and set(rebuilt) == {1}


async def _raw_worker(server: Server, answer: Callable[[dict[str, Any], int], Any],
                      stop: asyncio.Event) -> None:
    """A hand-written worker: `answer(request, n)` gives the frame to send back
    (a dict is sent as JSON, str and bytes as they are, None: no answer)."""
    async with connect(workers_url(server.base_url)) as ws:
        await ws.send(json.dumps({"type": "hello", "backends": ["local"], "name": "raw"}))
        n = 0
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                message = json.loads(await asyncio.wait_for(ws.recv(), 0.2))
                if message["type"] in ("decide", "summarize"):
                    n += 1
                    frame = answer(message, n)
                    if frame is not None:
                        await ws.send(frame if isinstance(frame, str | bytes)
                                      else json.dumps(frame))


async def test_a_worker_that_answers_garbage_cannot_corrupt_the_game(
        server_factory: ServerFactory) -> None:
    server = await server_factory(inference="workers", model_deadline=1)

    def answer(req: dict[str, Any], n: int) -> Any:
        rid, slot = req["id"], req.get("slot", 1)
        other = slot % 7 + 1
        bad: list[Any] = [
            "not json at all",
            b"\x00\x01 a binary frame",
            {"type": "decided", "id": "no-such-request", "commands": []},
            {"type": "decided", "id": rid, "commands": "vote 3"},
            {"type": "decided", "id": rid, "commands": [{"type": "fly", "to": "moon"}]},
            # a command for another seat: the actor must refuse it
            {"type": "decided", "id": rid,
             "commands": [{"type": "chat", "actor": other, "text": "I am someone else"}]},
            {"type": "failed", "id": rid, "error": "out of memory"},
            {"type": "summary", "id": rid, "text": ""},
            None,  # no answer at all: the deadline
            {"type": "decided", "id": rid, "commands": [], "turn": {"turns": "many"}},
        ]
        return bad[n % len(bad)]

    stop = asyncio.Event()
    raw = asyncio.create_task(_raw_worker(server, answer, stop))
    try:
        seats = [{"slot": s, "backend": "local"} for s in range(1, 4)]
        game_id = await create_game(server.client, players=7, speed="fast", seed=45,
                                    seats=seats)
        summary = await wait_game(server.client, game_id, is_finished, timeout=300)
    finally:
        stop.set()
        await raw
    assert summary["result"] is not None
    assert all(s["text"].strip() for s in summary["summaries"])  # extractive fallbacks
    stored = await server.store.commands(game_id)
    for _, origin, data in stored:
        if origin.startswith("ai:"):
            assert data.get("actor") == int(origin[3:]), (origin, data)
    assert rerun(GameConfig(players=7, seed=45),
                 [d for _, _, d in stored]).result == summary["result"]
    metrics = await server.store.metrics(game_id)
    model = [metrics[s] for s in range(1, 4)]
    assert sum(m["errors"] for m in model) > 0
    assert sum(m["faults"] for m in model) > 0  # the commands for another seat
    assert sum(m["timeouts"] for m in model) > 0


async def test_workers_need_the_token_and_a_proper_hello(
        server_factory: ServerFactory) -> None:
    server = await server_factory(inference="workers", worker_token="s3cret")

    async def close_code(token: str | None, hello: Any, query: str = "") -> int | None:
        async with connect(workers_url(server.base_url) + query) as ws:
            with contextlib.suppress(ConnectionClosed):
                if isinstance(hello, dict) and token is not None:
                    hello = {**hello, "token": token}
                await ws.send(hello if isinstance(hello, bytes) else json.dumps(hello))
                while True:
                    reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
                    if reply.get("type") == "welcome":
                        return None
            return ws.close_code

    hello = {"type": "hello", "backends": ["local"], "name": "t"}
    assert await close_code(None, hello) == 4401
    assert await close_code("wrong", hello) == 4401
    assert await close_code("s3cret", {"type": "hello", "backends": ["gpt-9"]}) == 4400
    assert await close_code("s3cret", ["not", "an", "object"]) == 4400
    assert await close_code("s3cret", b"\x00binary hello") == 4400
    # the token travels in the hello, never in the URL (access logs keep URLs)
    assert await close_code("s3cret", hello, "?token=s3cret") == 4400
    assert await close_code("s3cret", hello) is None
    assert not server.app.state.workers.links  # every one of them left again


async def test_a_lobby_takes_model_seats_when_workers_run_the_models(
        server_factory: ServerFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    from tossim.server import service

    monkeypatch.setattr(service, "unavailable_reason", lambda name, url=None: "no torch here")
    server = await server_factory(inference="workers")
    r = await server.client.post("/api/lobbies", json={"players": 7, "seats": [
        {"slot": 1, "backend": "vllm"}]})
    assert r.status_code == 201, r.text
    local = await server_factory()
    r = await local.client.post("/api/lobbies", json={"players": 7, "seats": [
        {"slot": 1, "backend": "vllm"}]})
    assert r.status_code == 422 and "no torch here" in r.text


def test_worker_urls() -> None:
    assert workers_url("http://h:8000") == "ws://h:8000/ws/workers"
    assert workers_url("https://h/base/") == "wss://h/base/ws/workers"
    assert workers_url("h:9") == "ws://h:9/ws/workers"
    with pytest.raises(ValueError):
        workers_url("ftp://h")


async def test_tossim_worker_processes_play_a_servers_model_seat(
        serve_process: Callable[..., ServeProcess], tmp_path: Path,
        tiny_model_dir: Path) -> None:
    """The production shape: `tossim serve --inference workers` and `tossim
    worker` as separate processes, with a worker token."""
    server = serve_process(f"sqlite+aiosqlite:///{tmp_path / 'w.db'}",
                           env={"TOSSIM_INFERENCE": "workers", "TOSSIM_WORKER_TOKEN": "t0k"})
    await server.wait_ready()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOSSIM_")}
    worker_args = [str(TOSSIM_BIN), "worker", "--server", server.base_url, "--backend",
                   "local", "--model", str(tiny_model_dir), "--name", "proc"]

    refused = await asyncio.create_subprocess_exec(
        *worker_args, "--token", "wrong", env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, stdin=asyncio.subprocess.DEVNULL)
    out, _ = await asyncio.wait_for(refused.communicate(), 120)
    assert refused.returncode == 2 and b"refused" in out, out[-2000:]

    log = (tmp_path / "worker.log").open("wb")
    worker = await asyncio.create_subprocess_exec(
        *worker_args, env={**env, "TOSSIM_WORKER_TOKEN": "t0k"}, stdout=log,
        stderr=asyncio.subprocess.STDOUT, stdin=asyncio.subprocess.DEVNULL)
    try:
        game_id = await create_game(server.client, players=7, speed="fast", seed=47,
                                    seats=[{"slot": 1, "backend": "local"}])
        summary = await wait_game(server.client, game_id, is_finished, timeout=300, poll=0.5)
    finally:
        worker.terminate()
        await worker.wait()
        log.close()
    assert summary["result"] is not None
    r = await server.client.get(f"/api/games/{game_id}/replay?viewer=omniscient")
    origins = {c.get("actor") for c in r.json()["commands"]}
    assert 1 in origins  # the worker's seat acted
    assert b"connected as" in (tmp_path / "worker.log").read_bytes()
