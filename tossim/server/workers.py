"""Inference workers: model seats played in another process (`tossim worker`).

With `inference = "workers"` the server loads no model. A worker connects to
`/ws/workers` of any server process, says which backends it runs, and is
given whole games: every seat of a game goes to the same worker (its prompts
share a prefix cache), and a new game goes to the worker with the fewest
games. The server stays the only writer of the game: a worker gets the seat's
View (the same projection a browser gets) and answers with commands, which
the game's actor checks and applies like any seat's.

If a worker disconnects, its games move to another worker (or wait for one,
within the seat's deadline) and each seat's memory is rebuilt there from all
the events that seat has seen. A reply that does not parse fails that one
decision (the seat abstains, counted as an error); nothing reaches the game
that the actor has not checked. A worker's steps reach the game's thinking
channel (omniscient spectators only) through `RemoteSeat.on_step`, and its
records are stored as `seat_turns` through `RemoteSeat.turn_log`, as for a
seat the server plays; steps are bounded per request (MAX_STEPS of at most
MAX_STEP_CHARS; the rest dropped and counted in `WorkerHub.steps_dropped`)
and a step for a request that is not open is ignored.

Protocol (JSON text frames), worker → server first (the token, if the server
has one, travels in the hello, never in the URL):
    {"type": "hello", "token": "…", "backends": ["local"], "name": "gpu-1"}
    server: {"type": "welcome", "worker": "<id>", "steps": true}
            (steps: the server takes step frames; a worker streams only then)
    server: {"type": "decide", "id", "game", "slot", "seed", "spec", "fresh",
             "view", "summaries", "history" (fresh only: the seat's turn records
             so far, `agents.resume.history`)}
                                    worker, while deciding, per step of the seat's
                                    turn (LLMSeat.on_step's dicts, no prompt):
                                      {"type": "step", "id", "index", "step"}
                                    worker: {"type": "decided", "id", "commands",
                                      "turn" (metrics), "records" (the turns of
                                      this decision as LLMSeat.turn_log has them:
                                      day, phase, phase_seq, version, prompt,
                                      output, steps, action, tokens; "record",
                                      one turn, is also read)}
    server: {"type": "summarize", "id", "game", "backend", "day", "seed", "view"}
                                    worker: {"type": "summary", "id", "text",
                                      "fallback" (true: extractive, the model failed)}
    worker, on failure: {"type": "failed", "id", "error"}
    server: {"type": "cancel", "id"} (the server stopped waiting for that turn)
    server: {"type": "forget", "game"} (the game ended)

One fleet of workers for several server processes (a Redis bus): the
process that runs a game's actor need not be the one a worker connected to.
Each process's `WorkerHub` knows its own workers (`WorkerLink`) and, from the
bus, every other process's (`RemoteWorker`), and picks the least busy of all.
A request for a worker of another process travels over the bus and the
worker sees no difference (the frames above are unchanged). Bus messages
(channels in `tossim.server.bus`; `P` is a process's name, `ActorHub.owner`):

    workers channel (all processes):
      {"type": "workers", "process": P, "workers": [{"id", "name", "backends",
       "games"}]}   P's workers, whole, on every change and every lease_s/3;
                    an empty list when P shuts down
      {"type": "query", "process": P}   P just started: everyone announces
    P's worker-request channel (to P, which holds the worker):
      {"type": "request", "rid", "worker", "reply_to", "message"}  `message` is
                    a decide or summarize frame without its id
      {"type": "cancel", "rid"}         the asker stopped waiting (P cancels
                    the worker's turn as for its own requests)
      {"type": "forget", "worker", "game"}   the game ended
    the asker's worker-reply channel:
      {"rid", "step"}                   a step the worker streamed (bounded at P;
                                        all of them before the answer)
      {"rid", "reply"}                  the worker's answer frame
      {"rid", "gone": true}             the worker left before answering

A process that hears nothing from P for `ttl` (lease_s) seconds drops P's
workers and fails the requests it sent there (WorkerGone): the seat asks
another worker, within its deadline, exactly as when a worker disconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hmac
import itertools
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from tossim.agents.metrics import AgentMetrics, SeatMetrics
from tossim.agents.resume import history
from tossim.agents.seat import ModelSeat
from tossim.agents.turn_records import TURN_KEYS
from tossim.engine import Command, MalformedCommand, View, command_from_dict
from tossim.inference.registry import MODEL_BACKENDS
from tossim.server.bus import (
    WORKERS_CHANNEL,
    Bus,
    Subscription,
    worker_reply_channel,
    worker_request_channel,
)
from tossim.server.worker_wire import Cancel, Forget, Welcome, WorkerHello
from tossim.timeouts import stopped, within

log = logging.getLogger(__name__)
_background: set[asyncio.Task[None]] = set()  # fire-and-forget sends, kept alive

router = APIRouter()

CLOSE_UNAUTHORIZED = 4401
CLOSE_PROTOCOL = 4400
HELLO_TIMEOUT = 10.0
LOOPBACK = {"127.0.0.1", "::1"}
# a worker streams a turn's steps; what one request may send (the rest is
# dropped and counted: a worker cannot flood the spectators or the bus)
MAX_STEPS = 64
MAX_STEP_CHARS = 16_000
MAX_RECORD_CHARS = 2 * 2**20  # a turn record (its prompt included) stored per turn

StepHook = Callable[[dict[str, Any]], None]


def _in_background(coro: Any) -> None:
    task = asyncio.get_running_loop().create_task(coro)
    _background.add(task)
    task.add_done_callback(_background.discard)


class WorkerGone(ConnectionError):
    """The worker holding a request disconnected before answering."""


class WorkerReplyError(ValueError):
    """A worker's answer that does not follow the protocol."""


class StepSink:
    """Where one request's streamed steps go, within the bounds: at most
    MAX_STEPS steps of at most MAX_STEP_CHARS (as JSON) each; the rest are
    dropped and counted (`WorkerHub.steps_dropped`)."""

    def __init__(self, hook: StepHook, hub: WorkerHub | None) -> None:
        self.hook = hook
        self.hub = hub
        self.count = 0

    def offer(self, step: Any) -> None:
        if not isinstance(step, dict):
            return self._drop()
        if self.count >= MAX_STEPS:
            return self._drop()
        try:
            size = len(json.dumps(step))
        except (TypeError, ValueError):
            return self._drop()
        if size > MAX_STEP_CHARS:
            return self._drop()
        self.count += 1
        try:
            self.hook(step)
        except Exception:  # a spectator's trouble must not fail the turn
            log.warning("workers: a step could not be passed on", exc_info=True)

    def _drop(self) -> None:
        if self.hub is not None:
            self.hub.steps_dropped += 1


class Route(Protocol):
    """A worker a request can go to: connected here, or to another process.
    `on_step`, for a decide request, gets each step the worker streams."""

    id: str
    name: str
    backends: set[str]
    closed: bool

    async def request(self, message: dict[str, Any],
                      on_step: StepHook | None = None) -> dict[str, Any]: ...


class WorkerLink:
    """One worker connected to this process: its backends and open requests."""

    def __init__(self, ws: WebSocket, backends: set[str], name: str,
                 hub: WorkerHub | None = None) -> None:
        self.ws = ws
        self.hub = hub
        self.sinks: dict[str, StepSink] = {}  # request id -> where its steps go
        self.id = uuid.uuid4().hex[:12]
        self.name = name
        self.backends = backends
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._send_lock = asyncio.Lock()
        self.closed = False

    async def send(self, message: dict[str, Any]) -> None:
        async with self._send_lock:
            await self.ws.send_text(json.dumps(message))

    async def request(self, message: dict[str, Any],
                      on_step: StepHook | None = None) -> dict[str, Any]:
        """Send a request and wait for its answer (WorkerGone if the link drops)."""
        if self.closed:
            raise WorkerGone(f"worker {self.name} is gone")
        rid = f"{self.id}-{next(self._ids)}"
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        if on_step is not None:
            self.sinks[rid] = StepSink(on_step, self.hub)
        try:
            await self.send({**message, "id": rid})
            return await fut
        except (WebSocketDisconnect, RuntimeError, OSError) as exc:
            raise WorkerGone(f"worker {self.name} is gone") from exc
        except asyncio.CancelledError:
            # the phase ended or the deadline passed: the worker may stop the turn
            if not self.closed:
                _in_background(self._cancel(rid))
            raise
        finally:
            self.pending.pop(rid, None)
            self.sinks.pop(rid, None)

    async def _cancel(self, rid: str) -> None:
        with contextlib.suppress(Exception):
            await self.send(Cancel(id=rid).data())

    def answer(self, message: dict[str, Any]) -> None:
        if message.get("type") == "step":
            # a step of an open decide request; one of a request that is not
            # open (answered, cancelled, never sent) is ignored
            sink = self.sinks.get(str(message.get("id")))
            if sink is not None:
                sink.offer(message.get("step"))
            return
        fut = self.pending.get(str(message.get("id")))
        if fut is None or fut.done():  # e.g. a turn the server stopped waiting for
            log.debug("worker %s: answer to no open request (%s)", self.name,
                      str(message.get("id"))[:40])
            return
        fut.set_result(message)

    def close(self) -> None:
        self.closed = True
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(WorkerGone(f"worker {self.name} disconnected"))


class RemoteWorker:
    """A worker connected to another server process, reached over the bus."""

    def __init__(self, hub: WorkerHub, process: str, worker_id: str, name: str,
                 backends: set[str], games: int) -> None:
        self.hub = hub
        self.process = process
        self.id = worker_id
        self.name = f"{name} (at {process})"
        self.backends = backends
        self.games = games  # as its process last announced
        self.closed = False
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.sinks: dict[str, StepSink] = {}

    async def request(self, message: dict[str, Any],
                      on_step: StepHook | None = None) -> dict[str, Any]:
        """Send a request through the worker's process and wait for the answer
        (WorkerGone if the worker or its process goes); the worker's steps
        come back on this process's reply channel, before the answer."""
        if self.closed:
            raise WorkerGone(f"worker {self.name} is gone")
        hub = self.hub
        rid = f"{hub.process}-{next(hub._rids)}"
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        if on_step is not None:
            self.sinks[rid] = StepSink(on_step, hub)
        hub._asked[rid] = self
        channel = worker_request_channel(self.process)
        try:
            assert hub.bus is not None
            await hub.bus.publish(channel, {
                "type": "request", "rid": rid, "worker": self.id,
                "reply_to": worker_reply_channel(hub.process), "message": message})
            return await fut
        except asyncio.CancelledError:
            if not self.closed:
                _in_background(self._cancel(channel, rid))
            raise
        finally:
            self.pending.pop(rid, None)
            self.sinks.pop(rid, None)
            hub._asked.pop(rid, None)

    async def _cancel(self, channel: str, rid: str) -> None:
        with contextlib.suppress(Exception):
            assert self.hub.bus is not None
            await self.hub.bus.publish(channel, {"type": "cancel", "rid": rid})

    async def forget(self, game_id: str) -> None:
        with contextlib.suppress(Exception):
            assert self.hub.bus is not None
            await self.hub.bus.publish(worker_request_channel(self.process), {
                "type": "forget", "worker": self.id, "game": game_id})

    def answer(self, rid: str, message: dict[str, Any]) -> None:
        if "step" in message:
            sink = self.sinks.get(rid)
            if sink is not None:
                sink.offer(message["step"])
            return
        fut = self.pending.get(rid)
        if fut is None or fut.done():
            return
        if message.get("gone") or not isinstance(message.get("reply"), dict):
            fut.set_exception(WorkerGone(f"worker {self.name} is gone"))
        else:
            fut.set_result(message["reply"])

    def close(self) -> None:
        self.closed = True
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(WorkerGone(f"worker {self.name} is gone"))


class WorkerHub:
    """The workers this server process can use: those connected to it, and,
    with a bus shared by several processes, those connected to the others.

    `process` names this process on the bus (the `ActorHub`'s lease owner);
    `ttl`: seconds after which another process's workers are dropped if it
    has not announced them again (it announces every ttl/3)."""

    def __init__(self, bus: Bus | None = None, process: str | None = None, *,
                 ttl: float = 10.0) -> None:
        self.bus = bus
        self.process = process or uuid.uuid4().hex[:12]
        self.ttl = ttl
        self.links: dict[str, WorkerLink] = {}
        # (process, worker id) -> a worker of another process
        self.remote: dict[tuple[str, str], RemoteWorker] = {}
        self._heard: dict[str, float] = {}  # process -> when it last announced (monotonic)
        # (game id, backend) -> the worker playing that game's seats on that backend
        self.assigned: dict[tuple[str, str], Route] = {}
        # link id -> games other processes sent to that worker of ours
        self.forwarded: dict[str, set[str]] = {}
        self._changed = asyncio.Condition()
        self._rids = itertools.count(1)
        self._asked: dict[str, RemoteWorker] = {}  # request id -> where it went
        self._serving: dict[str, asyncio.Task[None]] = {}  # requests from other processes
        self._subs: list[Subscription] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.steps_dropped = 0  # streamed steps over the bounds (StepSink)

    # ---- the fleet over the bus ---------------------------------------------------
    async def start(self) -> None:
        """Join the fleet: listen for other processes' workers and for
        requests to ours, and ask who has workers."""
        if self.bus is None or self._tasks:
            return
        for channel, handler in ((WORKERS_CHANNEL, self._on_directory),
                                 (worker_request_channel(self.process), self._on_request),
                                 (worker_reply_channel(self.process), self._on_reply)):
            sub = await self.bus.subscribe(channel)
            self._subs.append(sub)
            self._tasks.append(asyncio.create_task(self._consume(sub, handler),
                                                   name=f"workers-{channel}"))
        self._tasks.append(asyncio.create_task(self._tick(), name="workers-tick"))
        await self.bus.publish(WORKERS_CHANNEL, {"type": "query", "process": self.process})

    async def close(self) -> None:
        """Leave the fleet: the others drop this process's workers at once."""
        await stopped(*self._tasks, *self._serving.values())
        self._tasks.clear()
        for sub in self._subs:
            await sub.close()
        self._subs.clear()
        for worker in self.remote.values():
            worker.close()
        if self.bus is not None and self.links:
            with contextlib.suppress(Exception):
                await self.bus.publish(WORKERS_CHANNEL, {
                    "type": "workers", "process": self.process, "workers": []})

    async def _consume(self, sub: Subscription, handler: Any) -> None:
        async for msg in sub:
            try:
                await handler(msg)
            except Exception:  # one bad message must not end the listener
                log.exception("workers: a bus message could not be handled")

    async def _tick(self) -> None:
        """Announce this process's workers and drop those of silent processes."""
        while True:
            await asyncio.sleep(self.ttl / 3)
            if self.links:
                await self._announce()
            silent = [p for p, t in self._heard.items()
                      if time.monotonic() - t > self.ttl]
            for process in silent:
                log.warning("workers: no news from process %s for %.0f s; its workers "
                            "are dropped", process, self.ttl)
                await self._set_remote(process, [])

    def _load(self, route: Route) -> int:
        """How many games a worker plays (as far as this process knows)."""
        mine = sum(1 for w in self.assigned.values() if w is route)
        if isinstance(route, RemoteWorker):
            return max(route.games, mine)
        return len({g for (g, _), w in self.assigned.items() if w is route}
                   | self.forwarded.get(route.id, set()))

    async def _announce(self) -> None:
        if self.bus is None:
            return
        workers = [{"id": w.id, "name": w.name, "backends": sorted(w.backends),
                    "games": self._load(w)} for w in self.links.values() if not w.closed]
        with contextlib.suppress(Exception):
            await self.bus.publish(WORKERS_CHANNEL, {"type": "workers",
                                                     "process": self.process,
                                                     "workers": workers})

    async def _on_directory(self, msg: dict[str, Any]) -> None:
        process = msg.get("process")
        if not isinstance(process, str) or process == self.process:
            return
        if msg.get("type") == "query":
            if self.links:
                await self._announce()
            return
        if msg.get("type") == "workers" and isinstance(msg.get("workers"), list):
            await self._set_remote(process, [w for w in msg["workers"] if isinstance(w, dict)])

    async def _set_remote(self, process: str, workers: list[dict[str, Any]]) -> None:
        """Another process's workers, as it announced them (all of them)."""
        async with self._changed:
            if workers:
                self._heard[process] = time.monotonic()
            else:
                self._heard.pop(process, None)
            ids = set()
            for w in workers:
                wid = str(w.get("id"))
                ids.add(wid)
                backends = {b for b in w.get("backends") or [] if b in MODEL_BACKENDS}
                games = w.get("games")
                known = self.remote.get((process, wid))
                if known is None:
                    self.remote[(process, wid)] = RemoteWorker(
                        self, process, wid, str(w.get("name") or "worker")[:64], backends,
                        games if isinstance(games, int) else 0)
                    log.info("worker %s of process %s is available here", wid, process)
                else:
                    known.backends = backends
                    known.games = games if isinstance(games, int) else known.games
            for key in [k for k in self.remote if k[0] == process and k[1] not in ids]:
                worker = self.remote.pop(key)
                worker.close()
                for game in [g for g, w in self.assigned.items() if w is worker]:
                    del self.assigned[game]
            self._changed.notify_all()

    async def _on_request(self, msg: dict[str, Any]) -> None:
        kind, rid = msg.get("type"), str(msg.get("rid"))
        if kind == "request":
            task = asyncio.create_task(self._serve(rid, msg), name=f"wreq-{rid}")
            self._serving[rid] = task
            task.add_done_callback(lambda _t: self._drop_serving(rid))
        elif kind == "cancel":
            serving = self._serving.pop(rid, None)
            if serving is not None:
                serving.cancel()
        elif kind == "forget":
            link = self.links.get(str(msg.get("worker")))
            game = str(msg.get("game"))
            for games in self.forwarded.values():
                games.discard(game)
            if link is not None:
                with contextlib.suppress(Exception):
                    await link.send(Forget(game=game).data())

    def _drop_serving(self, rid: str) -> None:
        self._serving.pop(rid, None)

    async def _serve(self, rid: str, msg: dict[str, Any]) -> None:
        """Pass another process's request to our worker; send back the answer."""
        assert self.bus is not None
        reply_to, message = msg.get("reply_to"), msg.get("message")
        if not isinstance(reply_to, str) or not isinstance(message, dict):
            return
        link = self.links.get(str(msg.get("worker")))
        answer: dict[str, Any] = {"rid": rid, "gone": True}
        # the worker's steps go back to the asker in order, then the answer
        out: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        async def forward() -> None:
            assert self.bus is not None
            while (item := await out.get()) is not None:
                with contextlib.suppress(Exception):
                    await self.bus.publish(reply_to, item)

        forwarding = asyncio.create_task(forward(), name=f"wsteps-{rid}")
        try:
            if link is not None and not link.closed:
                if isinstance(message.get("game"), str):
                    self.forwarded.setdefault(link.id, set()).add(message["game"])
                on_step = ((lambda step: out.put_nowait({"rid": rid, "step": step}))
                           if message.get("type") == "decide" else None)
                with contextlib.suppress(WorkerGone):
                    answer = {"rid": rid, "reply": await link.request(message, on_step)}
            out.put_nowait(None)
            await forwarding
        finally:
            forwarding.cancel()
        await self.bus.publish(reply_to, answer)

    async def _on_reply(self, msg: dict[str, Any]) -> None:
        rid = str(msg.get("rid"))
        worker = self._asked.get(rid)
        if worker is not None:
            worker.answer(rid, msg)

    # ---- this process's workers -----------------------------------------------------
    async def add(self, link: WorkerLink) -> None:
        async with self._changed:
            self.links[link.id] = link
            self._changed.notify_all()
        log.info("worker %s (%s) connected: %s", link.name, link.id, sorted(link.backends))
        await self._announce()

    async def remove(self, link: WorkerLink) -> None:
        link.close()
        async with self._changed:
            self.links.pop(link.id, None)
            self.forwarded.pop(link.id, None)
            games = self.games_of(link)
            for key in [k for k, w in self.assigned.items() if w is link]:
                del self.assigned[key]
            self._changed.notify_all()
        log.info("worker %s (%s) disconnected; its %d game(s) move", link.name, link.id,
                 len(games))
        await self._announce()

    def games_of(self, link: Route) -> set[str]:
        return {game for (game, _), w in self.assigned.items() if w is link}

    async def link_for(self, game_id: str, backend: str) -> Route:
        """The game's worker; a new game (or one whose worker left) goes to
        the least busy worker offering `backend`, here or at another process
        (this process's first when equally busy), waiting for one to connect."""
        async with self._changed:
            while True:
                link = self.assigned.get((game_id, backend))
                if link is not None and not link.closed:
                    return link
                everyone: list[Route] = [*self.links.values(), *self.remote.values()]
                able = [w for w in everyone if backend in w.backends and not w.closed]
                if able:
                    link = min(able, key=lambda w: (self._load(w),
                                                    isinstance(w, RemoteWorker), w.id))
                    self.assigned[(game_id, backend)] = link
                    return link
                await self._changed.wait()

    async def forget(self, game_id: str) -> None:
        """The game ended: its worker may drop the game's seats and caches."""
        links = {self.assigned.pop(k) for k in [k for k in self.assigned if k[0] == game_id]}
        for games in self.forwarded.values():
            games.discard(game_id)
        for link in links:
            if isinstance(link, RemoteWorker):
                await link.forget(game_id)
            elif isinstance(link, WorkerLink):
                with contextlib.suppress(Exception):
                    await link.send(Forget(game=game_id).data())

    async def summarize(self, game_id: str, backend: str, public: View, day: int,
                        seed: int) -> str:
        """Day `day`'s summary, written by the game's worker from the public
        view (only that day's events travel)."""
        view = replace(public, events=[e for e in public.events if e.get("day") == day])
        link = await self.link_for(game_id, backend)
        reply = await link.request({"type": "summarize", "game": game_id, "backend": backend,
                                    "day": day, "seed": seed, "view": view.to_dict()})
        text = reply.get("text")
        if reply.get("type") != "summary" or not isinstance(text, str) or not text.strip():
            raise WorkerReplyError(f"worker {link.name}: no summary ({reply.get('error')!r})")
        if reply.get("fallback") is True:  # the worker's model failed: not a model summary
            raise WorkerReplyError(f"worker {link.name}: its model wrote no usable summary")
        return text


class RemoteSeat(ModelSeat):
    """A model seat played by a worker. It keeps every
    event its seat has been shown, so a worker that takes the game over can
    rebuild the seat's memory, and sums the worker's per-turn metrics."""

    def __init__(self, hub: WorkerHub, game_id: str, slot: int, seed: int,
                 spec: dict[str, Any], summaries: dict[int, str]) -> None:
        self.hub = hub
        self.game_id, self.slot, self.seed = game_id, slot, seed
        self.backend = str(spec.get("backend"))
        self.spec = {"backend": self.backend, "persona": spec.get("persona"),
                     "protocol": spec.get("protocol") or "xml",
                     "speech": spec.get("speech") or "free"}
        if spec.get("entry"):  # the catalogue entry: the worker applies its sampling
            self.spec.update(entry=spec["entry"], sampling=dict(spec.get("sampling") or {}))
        self.summaries = summaries
        self.events: list[dict[str, Any]] = []
        self.link_id: str | None = None  # the worker that holds this seat's memory
        self.metrics = AgentMetrics()
        # as `LLMSeat`: the runner streams the worker's steps to omniscient
        # spectators (`on_step(slot, step)`) and stores each `turn_log` entry
        self.on_step: Callable[[int, dict[str, Any]], None] | None = None
        self.turn_log: list[dict[str, Any]] = []
        self.records_dropped = 0

    async def decide(self, obs: View, deadline: float | None = None) -> list[Command]:
        """The worker's turn for this seat; the `deadline` (time.monotonic())
        travels as the seconds left (clocks differ between machines)."""
        last = self.events[-1]["v"] if self.events else 0
        self.events.extend(e for e in obs.events if e["v"] > last)
        while True:
            link = await self.hub.link_for(self.game_id, self.backend)
            fresh = link.id != self.link_id
            data = obs.to_dict()
            request: dict[str, Any] = {
                "type": "decide", "game": self.game_id, "slot": self.slot,
                "seed": self.seed, "spec": self.spec, "fresh": fresh, "view": data,
                "summaries": {str(d): t for d, t in self.summaries.items()}}
            if fresh:  # a new worker: everything this seat has seen and done so far
                data["events"] = self.events
                if self.turn_log:  # its turns, so it goes on as the same player
                    request["history"] = history(self.turn_log)
            if deadline is not None:
                request["seconds"] = max(0.0, deadline - time.monotonic())
            try:
                reply = await link.request(request, self._step)
            except WorkerGone:
                self.link_id = None
                continue  # the game moves to another worker
            self.link_id = link.id
            commands = self._commands(reply, link)
            records = reply.get("records")
            for record in records if isinstance(records, list) else [reply.get("record")]:
                self._record(record, link)
            return commands

    def _step(self, step: dict[str, Any]) -> None:
        if self.on_step is not None:
            self.on_step(self.slot, step)

    def _record(self, record: Any, link: Route) -> None:
        """The worker's record of the turn (`LLMSeat.turn_log`'s shape), kept
        for the runner to store; one that is not a bounded object is dropped."""
        if record is None:
            return
        try:
            ok = isinstance(record, dict) and len(json.dumps(record)) <= MAX_RECORD_CHARS
        except (TypeError, ValueError):
            ok = False
        if not ok:
            self.records_dropped += 1
            log.warning("worker %s: seat %d's turn record dropped", link.name, self.slot)
            return
        self.turn_log.append({k: record.get(k) for k in TURN_KEYS})

    def _commands(self, reply: dict[str, Any], link: Route) -> list[Command]:
        if reply.get("type") == "failed":
            raise WorkerReplyError(f"worker {link.name} failed: {reply.get('error')!r}"[:300])
        raw, turn = reply.get("commands"), reply.get("turn")
        if reply.get("type") != "decided" or not isinstance(raw, list):
            raise WorkerReplyError(f"worker {link.name}: not a decision")
        try:
            self.metrics.merge(AgentMetrics.from_fields(turn))
        except ValueError:
            log.warning("worker %s: unreadable turn metrics for seat %d", link.name, self.slot)
        try:
            return [command_from_dict(c) for c in raw]
        except MalformedCommand as exc:
            raise WorkerReplyError(f"worker {link.name}: {exc}") from exc

    def seat_metrics(self) -> SeatMetrics:
        return SeatMetrics(copy.deepcopy(self.metrics))


def worker_allowed(ws: WebSocket, token: str, expected: str | None) -> bool:
    """With a configured token, only a worker that presents it; without one,
    only workers on this machine."""
    if expected:
        return hmac.compare_digest(token.encode(), expected.encode())
    host = ws.client.host if ws.client is not None else ""
    return host in LOOPBACK


@router.websocket("/ws/workers")
async def worker_socket(ws: WebSocket) -> None:
    hub: WorkerHub = ws.app.state.workers
    settings = ws.app.state.settings
    await ws.accept()
    if any(k.lower() == "token" for k in ws.query_params):  # ?TOKEN= too
        await ws.close(code=CLOSE_PROTOCOL, reason="the worker token goes in the hello "
                                                   "message, never in the URL")
        return
    try:
        frame = json.loads(await within(ws.receive_text(), HELLO_TIMEOUT))
        if not isinstance(frame, dict):
            raise ValueError("not an object")
        token = frame.get("token")  # checked first: a stranger learns nothing more
        if not worker_allowed(ws, token if isinstance(token, str) else "",
                              settings.worker_token):
            await ws.close(code=CLOSE_UNAUTHORIZED, reason="unknown worker token")
            return
        if frame.get("type") != "hello":
            raise ValueError("the first frame must be of type 'hello'")
        hello = WorkerHello.model_validate(frame)  # ValidationError is a ValueError
        backends = {b for b in hello.backends if b in MODEL_BACKENDS}
        name = (hello.name or "worker")[:64]
        if not backends:
            raise ValueError(f"expected hello with one of {', '.join(MODEL_BACKENDS)}")
    except (TimeoutError, ValueError, AttributeError, TypeError, KeyError) as exc:
        # KeyError: a binary frame (receive_text finds no text)
        await ws.close(code=CLOSE_PROTOCOL, reason=f"bad hello: {type(exc).__name__}: "
                                                   f"{exc}"[:120])
        return
    except WebSocketDisconnect:
        return
    link = WorkerLink(ws, backends, name, hub)
    await hub.add(link)
    try:
        # "steps": this server takes `step` frames (an older one would read a
        # step as the answer, so a worker streams only when told)
        await link.send(Welcome(worker=link.id, steps=True).data())
        while True:
            try:
                message = json.loads(await ws.receive_text())
                if not isinstance(message, dict):
                    raise ValueError("not an object")
            except (ValueError, KeyError):  # KeyError: a binary frame
                log.warning("worker %s sent a frame that is not a JSON object", name)
                continue
            link.answer(message)
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        await hub.remove(link)
