"""`tossim worker`: plays a server's model seats in a process of its own.

A server started with `inference = "workers"` loads no model; this process
loads one (any backend: vllm on a GPU, an OpenAI-compatible fleet, the bundled
model on a CPU), connects to the server's `/ws/workers`, and plays the seats
of the games it is given (see `tossim.server.workers` for the protocol). Each
seat is the same `LLMSeat` the server would run itself, fed the seat's View,
so prompts, tools, grammar and faults are identical; all seats' turns go to
the one backend at once, which batches them. While a seat decides, its steps
(thinking, tool calls, observations, the action) stream to the server as
`step` frames, and the `decided` reply carries the turn's record, so the
server shows and stores a worker's turns as its own seats'.

The worker reconnects after a lost connection (the server moves the games on
and rebuilds a seat's memory from its events when the seat comes back); it
gives up only when the server refuses its token.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import socket
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tossim.agents.llm_seat import LLMSeat, seat_from_spec
from tossim.agents.memory import SeatMemory
from tossim.agents.metrics import AgentMetrics
from tossim.agents.resume import restore_seat
from tossim.agents.summarize import SummaryStats, write_summary
from tossim.agents.turn_records import TURN_KEYS
from tossim.engine.view import View
from tossim.inference.base import Backend
from tossim.inference.catalogue import ModelEntry
from tossim.inference.registry import for_entry

log = logging.getLogger(__name__)

MAX_FRAME = 32 * 2**20  # a late-game view with every event is a few hundred kB
REFUSALS = (4400, 4401)  # a bad hello, an unknown token: retrying won't help

# the current decide request's step sender (set by `_answer`, read by `decide`):
# a context variable, so `decide(message)` keeps its signature for subclasses
_step_sink: contextvars.ContextVar[Callable[[dict[str, Any]], None] | None] = \
    contextvars.ContextVar("step_sink", default=None)


class WorkerRefused(RuntimeError):
    """The server will not take this worker (wrong token): retrying won't help."""


def workers_url(server: str) -> str:
    """ws(s)://host/ws/workers for a server's base URL (http, https, ws, wss).
    The token travels in the hello message, never in the URL (access logs)."""
    parts = urlsplit(server if "://" in server else f"http://{server}")
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    if scheme not in ("ws", "wss") or not parts.netloc:
        raise ValueError(f"not a server URL: {server!r}")
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + "/ws/workers", "", ""))


class Worker:
    """One worker process's seats, on one backend."""

    def __init__(self, server: str, backend_name: str, backend: Backend, *,
                 token: str | None = None, name: str | None = None) -> None:
        self.url = workers_url(server)
        self.token = token
        self.backend_name = backend_name
        self.backend = backend
        self.name = name or socket.gethostname()
        self.seats: dict[tuple[str, int], LLMSeat] = {}
        # the request each seat is working on (a seat plays one turn at a time)
        self.turns: dict[tuple[str, int], tuple[str, asyncio.Task[None]]] = {}
        self.summaries: dict[str, dict[int, str]] = {}  # game -> day -> text
        self.decisions = 0
        self.summarized = 0
        self.connected = asyncio.Event()
        self.streams = False  # the server takes `step` frames (its welcome said so)
        self._send_lock = asyncio.Lock()

    async def run(self, *, retry: float = 1.0, max_retry: float = 30.0) -> None:
        """Serve until cancelled, reconnecting with backoff (WorkerRefused
        if the server rejects the token)."""
        delay = retry
        while True:
            try:
                async with connect(self.url, max_size=MAX_FRAME, open_timeout=30) as ws:
                    await self.serve(ws)
                    delay = retry
            except WorkerRefused:
                raise
            except (OSError, ConnectionClosed, InvalidStatus, TimeoutError) as exc:
                log.warning("worker: connection to %s lost or refused (%s); retrying in %.0f s",
                            self.url, exc, delay)
            finally:
                self.connected.clear()
                self.seats.clear()  # the server resends each seat's whole view
            await asyncio.sleep(delay)
            delay = min(delay * 2, max_retry)

    async def serve(self, ws: ClientConnection) -> None:
        """One connection: hello, then answer requests until it closes."""
        hello: dict[str, Any] = {"type": "hello", "backends": [self.backend_name],
                                 "name": self.name}
        if self.token:
            hello["token"] = self.token
        await ws.send(json.dumps(hello))
        tasks: set[asyncio.Task[None]] = set()
        self.turns.clear()
        try:
            async for frame in ws:
                try:
                    message = json.loads(frame)
                    kind = message.get("type")
                except (ValueError, AttributeError):
                    log.warning("worker: the server sent a frame that is not a JSON object")
                    continue
                if kind == "welcome":
                    log.info("worker %s: connected as %s", self.name, message.get("worker"))
                    self.streams = message.get("steps") is True
                    self.connected.set()
                elif kind in ("decide", "summarize"):
                    task = asyncio.create_task(self._answer(ws, message))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                    if kind == "decide":
                        self._track(message, task)
                elif kind == "cancel":
                    self._cancel(rid=str(message.get("id")))
                elif kind == "forget":
                    game = str(message.get("game"))
                    self._cancel(game=game)
                    self.forget(game)
        except ConnectionClosed:
            pass
        finally:
            for task in tasks:
                task.cancel()
        if ws.close_code in REFUSALS:
            raise WorkerRefused(f"the server refused this worker: {ws.close_reason}")
        raise ConnectionError(f"closed by the server ({ws.close_code} {ws.close_reason})")

    def _track(self, message: dict[str, Any], task: asyncio.Task[None]) -> None:
        """A new turn for a seat replaces the one it may still be playing: the
        server waits for one turn per seat, so an older one is abandoned."""
        seat = (str(message.get("game")), message.get("slot"))
        if not isinstance(seat[1], int):
            return
        key = (seat[0], seat[1])
        old = self.turns.get(key)
        if old is not None:
            old[1].cancel()
        self.turns[key] = (str(message.get("id")), task)

        def done(_: asyncio.Task[None]) -> None:
            if self.turns.get(key, (None, None))[1] is task:
                del self.turns[key]

        task.add_done_callback(done)

    def _cancel(self, *, rid: str | None = None, game: str | None = None) -> None:
        """Stop the turn answering request `rid`, or every turn of `game`."""
        for (seat_game, _slot), (turn_rid, task) in list(self.turns.items()):
            if turn_rid == rid or seat_game == game:
                task.cancel()

    async def _send(self, ws: ClientConnection, frame: dict[str, Any]) -> None:
        async with self._send_lock:
            with contextlib.suppress(ConnectionClosed):
                await ws.send(json.dumps(frame))

    async def _answer(self, ws: ClientConnection, message: dict[str, Any]) -> None:
        rid = message.get("id")
        # a decide request's steps go out as they happen (maybe reported from a
        # backend thread), in order, and all of them before the `decided` reply
        steps: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        count = 0

        def sink(step: dict[str, Any]) -> None:
            nonlocal count
            frame = {"type": "step", "id": rid, "index": count,
                     "step": {k: v for k, v in step.items() if k != "prompt"}}
            count += 1
            loop.call_soon_threadsafe(steps.put_nowait, frame)

        async def sender() -> None:
            while (frame := await steps.get()) is not None:
                await self._send(ws, frame)

        sending = asyncio.create_task(sender())
        token = _step_sink.set(sink if message["type"] == "decide" and self.streams
                               else None)
        try:
            if message["type"] == "decide":
                reply = await self.decide(message)
            else:
                reply = await self.summarize(message)
        except asyncio.CancelledError:
            sending.cancel()
            raise
        except Exception as exc:
            log.exception("worker: %s request failed", message.get("type"))
            reply = {"type": "failed", "error": f"{type(exc).__name__}: {exc}"[:500]}
        finally:
            _step_sink.reset(token)
        await asyncio.sleep(0)  # steps reported from a thread are queued by now
        steps.put_nowait(None)
        await sending
        reply["id"] = rid
        await self._send(ws, reply)

    async def decide(self, message: dict[str, Any]) -> dict[str, Any]:
        """One seat's turn: its View in, its commands and this turn's metrics out."""
        game, slot = str(message["game"]), int(message["slot"])
        obs = View.from_dict(message["view"])
        days = self.summaries.setdefault(game, {})
        days.update({int(d): str(t) for d, t in dict(message.get("summaries") or {}).items()})
        seat = self.seats.get((game, slot))
        if seat is None or message.get("fresh"):
            seat = self.make_seat(message, days)
            past = message.get("history")
            if isinstance(past, list):  # the same player: its turns so far
                restore_seat(seat, [t for t in past if isinstance(t, dict)])
            self.seats[(game, slot)] = seat
        turns, logged = seat.metrics.turns, len(seat.turn_log)
        offered, taken = dict(seat.metrics.offered), dict(seat.metrics.taken)
        sink = _step_sink.get()
        seat.on_step = (lambda _slot, step: sink(step)) if sink is not None else None
        seconds = message.get("seconds")  # the turn's time left (docs/agents.md#deadlines)
        deadline = (time.monotonic() + float(seconds)
                    if isinstance(seconds, int | float) and not isinstance(seconds, bool)
                    else None)
        try:
            commands = await seat.decide(obs, deadline)
        finally:
            seat.on_step = None
        turn = AgentMetrics()
        played = seat.metrics.turns - turns  # one turn, two after a will or speech
        results = getattr(seat, "results", None)  # a seat may keep only its last turn
        if played > 0:
            recent = results[-played:] if results is not None else [seat.last]
            for result in recent:
                if result is not None:
                    turn.add(result)
        turn.offered = _grown(offered, seat.metrics.offered)
        turn.taken = _grown(taken, seat.metrics.taken)
        self.decisions += 1
        reply: dict[str, Any] = {"type": "decided", "commands": [c.to_dict() for c in commands],
                                 "turn": turn.fields()}
        if len(seat.turn_log) > logged:  # the turns as the server stores them (`seat_turns`)
            reply["records"] = [{k: record.get(k) for k in TURN_KEYS}
                                for record in seat.turn_log[logged:]]
        return reply

    def make_seat(self, message: dict[str, Any], summaries: dict[int, str]) -> LLMSeat:
        """The seat a decide request's spec asks for, on this worker's backend
        seen through the seat's catalogue entry (its `sampling`), as the server
        would build it (`entry_seat.make_seat_for_entry`). ValueError for
        sampling settings the catalogue would refuse."""
        spec = dict(message.get("spec") or {})
        backend = self.backend
        sampling = spec.get("sampling")
        if sampling:
            # checked as the catalogue checks an entry (the server sent what it
            # checked, but a frame is no entry); rpm stays the server's business
            ModelEntry(name="worker-seat", backend="local", sampling=sampling)
            backend = for_entry(self.backend, sampling)
        return seat_from_spec(spec, int(message["slot"]), int(message["seed"]), backend,
                              game_id=str(message["game"]), summaries=summaries)

    async def summarize(self, message: dict[str, Any]) -> dict[str, Any]:
        memory = SeatMemory(0)
        memory.update(View.from_dict(message["view"]))
        stats = SummaryStats()
        text = await write_summary(self.backend, memory, int(message["day"]),
                                   seed=int(message.get("seed", 0)), stats=stats)
        self.summarized += 1
        # `fallback`: the model wrote nothing usable, this is the extractive one
        return {"type": "summary", "text": text, "fallback": bool(stats.fallback)}

    def forget(self, game: str) -> None:
        for key in [k for k in self.seats if k[0] == game]:
            del self.seats[key]
        self.summaries.pop(game, None)


def _grown(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """What each count of `after` gained since `before` (this decision's share)."""
    return {k: n - before.get(k, 0) for k, n in after.items() if n > before.get(k, 0)}
