"""Inference workers: model seats played in another process (`tossim worker`).

With `inference = "workers"` the server loads no model. A worker connects to
`/ws/workers`, says which backends it runs, and is given whole games: every
seat of a game goes to the same worker (its prompts share a prefix cache), and
a new game goes to the connected worker with the fewest games. The server
stays the only writer of the game: a worker gets the seat's View (the same
projection a browser gets) and answers with commands, which the game's actor
checks and applies like any seat's.

If a worker disconnects, its games move to another worker (or wait for one,
within the seat's deadline) and each seat's memory is rebuilt there from all
the events that seat has seen. A reply that does not parse fails that one
decision (the seat abstains, counted as an error); nothing reaches the game
that the actor has not checked.

Protocol (JSON text frames), worker → server first (the token, if the server
has one, travels in the hello, never in the URL):
    {"type": "hello", "token": "…", "backends": ["local"], "name": "gpu-1"}
    server: {"type": "welcome", "worker": "<id>"}
    server: {"type": "decide", "id", "game", "slot", "seed", "spec", "fresh",
             "view", "summaries"}   worker: {"type": "decided", "id", "commands", "turn"}
    server: {"type": "summarize", "id", "game", "backend", "day", "seed", "view"}
                                    worker: {"type": "summary", "id", "text"}
    worker, on failure: {"type": "failed", "id", "error"}
    server: {"type": "cancel", "id"} (the server stopped waiting for that turn)
    server: {"type": "forget", "game"} (the game ended)
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import itertools
import json
import logging
import uuid
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from tossim.agents.llm_seat import AgentMetrics
from tossim.engine import Command, MalformedCommand, View, command_from_dict
from tossim.inference.registry import MODEL_BACKENDS

log = logging.getLogger(__name__)
_background: set[asyncio.Task[None]] = set()  # fire-and-forget sends, kept alive

router = APIRouter()

CLOSE_UNAUTHORIZED = 4401
CLOSE_PROTOCOL = 4400
HELLO_TIMEOUT = 10.0
LOOPBACK = {"127.0.0.1", "::1"}


class WorkerGone(ConnectionError):
    """The worker holding a request disconnected before answering."""


class WorkerReplyError(ValueError):
    """A worker's answer that does not follow the protocol."""


class WorkerLink:
    """One connected worker: its backends and its open requests."""

    def __init__(self, ws: WebSocket, backends: set[str], name: str) -> None:
        self.ws = ws
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

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send a request and wait for its answer (WorkerGone if the link drops)."""
        if self.closed:
            raise WorkerGone(f"worker {self.name} is gone")
        rid = f"{self.id}-{next(self._ids)}"
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        try:
            await self.send({**message, "id": rid})
            return await fut
        except (WebSocketDisconnect, RuntimeError, OSError) as exc:
            raise WorkerGone(f"worker {self.name} is gone") from exc
        except asyncio.CancelledError:
            # the phase ended or the deadline passed: the worker may stop the turn
            if not self.closed:
                task = asyncio.get_running_loop().create_task(self._cancel(rid))
                _background.add(task)
                task.add_done_callback(_background.discard)
            raise
        finally:
            self.pending.pop(rid, None)

    async def _cancel(self, rid: str) -> None:
        with contextlib.suppress(Exception):
            await self.send({"type": "cancel", "id": rid})

    def answer(self, message: dict[str, Any]) -> None:
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


class WorkerHub:
    """The workers connected to this server process."""

    def __init__(self) -> None:
        self.links: dict[str, WorkerLink] = {}
        # (game id, backend) -> the worker playing that game's seats on that backend
        self.assigned: dict[tuple[str, str], WorkerLink] = {}
        self._changed = asyncio.Condition()

    async def add(self, link: WorkerLink) -> None:
        async with self._changed:
            self.links[link.id] = link
            self._changed.notify_all()
        log.info("worker %s (%s) connected: %s", link.name, link.id, sorted(link.backends))

    async def remove(self, link: WorkerLink) -> None:
        link.close()
        async with self._changed:
            self.links.pop(link.id, None)
            games = self.games_of(link)
            for key in [k for k, w in self.assigned.items() if w is link]:
                del self.assigned[key]
            self._changed.notify_all()
        log.info("worker %s (%s) disconnected; its %d game(s) move", link.name, link.id,
                 len(games))

    def games_of(self, link: WorkerLink) -> set[str]:
        return {game for (game, _), w in self.assigned.items() if w is link}

    async def link_for(self, game_id: str, backend: str) -> WorkerLink:
        """The game's worker; a new game (or one whose worker left) goes to
        the least busy worker offering `backend`, waiting for one to connect."""
        async with self._changed:
            while True:
                link = self.assigned.get((game_id, backend))
                if link is not None and not link.closed:
                    return link
                able = [w for w in self.links.values() if backend in w.backends and not w.closed]
                if able:
                    link = min(able, key=lambda w: (len(self.games_of(w)), w.id))
                    self.assigned[(game_id, backend)] = link
                    return link
                await self._changed.wait()

    async def forget(self, game_id: str) -> None:
        """The game ended: its worker may drop the game's seats and caches."""
        links = {self.assigned.pop(k) for k in [k for k in self.assigned if k[0] == game_id]}
        for link in links:
            with contextlib.suppress(Exception):
                await link.send({"type": "forget", "game": game_id})

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
        return text


class RemoteSeat:
    """A model seat played by a worker (the runner's `AISeat`). It keeps every
    event its seat has been shown, so a worker that takes the game over can
    rebuild the seat's memory, and sums the worker's per-turn metrics."""

    def __init__(self, hub: WorkerHub, game_id: str, slot: int, seed: int,
                 spec: dict[str, Any], summaries: dict[int, str]) -> None:
        self.hub = hub
        self.game_id, self.slot, self.seed = game_id, slot, seed
        self.backend = str(spec.get("backend"))
        self.spec = {"backend": self.backend, "persona": spec.get("persona"),
                     "protocol": spec.get("protocol") or "xml"}
        self.summaries = summaries
        self.events: list[dict[str, Any]] = []
        self.link_id: str | None = None  # the worker that holds this seat's memory
        self.metrics = AgentMetrics()

    async def decide(self, obs: View) -> list[Command]:
        last = self.events[-1]["v"] if self.events else 0
        self.events.extend(e for e in obs.events if e["v"] > last)
        while True:
            link = await self.hub.link_for(self.game_id, self.backend)
            fresh = link.id != self.link_id
            data = obs.to_dict()
            if fresh:  # a new worker: everything this seat has seen so far
                data["events"] = self.events
            try:
                reply = await link.request({
                    "type": "decide", "game": self.game_id, "slot": self.slot,
                    "seed": self.seed, "spec": self.spec, "fresh": fresh, "view": data,
                    "summaries": {str(d): t for d, t in self.summaries.items()}})
            except WorkerGone:
                self.link_id = None
                continue  # the game moves to another worker
            self.link_id = link.id
            return self._commands(reply, link)

    def _commands(self, reply: dict[str, Any], link: WorkerLink) -> list[Command]:
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

    def metrics_dict(self) -> dict[str, Any]:
        return self.metrics.to_dict()


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
    if "token" in ws.query_params:
        await ws.close(code=CLOSE_PROTOCOL, reason="the worker token goes in the hello "
                                                   "message, never in the URL")
        return
    try:
        hello = json.loads(await asyncio.wait_for(ws.receive_text(), HELLO_TIMEOUT))
        if not isinstance(hello, dict):
            raise ValueError("not an object")
        token = hello.get("token")
        if not worker_allowed(ws, token if isinstance(token, str) else "",
                              settings.worker_token):
            await ws.close(code=CLOSE_UNAUTHORIZED, reason="unknown worker token")
            return
        backends = {b for b in hello.get("backends", []) if b in MODEL_BACKENDS}
        name = str(hello.get("name") or "worker")[:64]
        if hello.get("type") != "hello" or not backends:
            raise ValueError(f"expected hello with one of {', '.join(MODEL_BACKENDS)}")
    except (TimeoutError, ValueError, AttributeError, TypeError, KeyError) as exc:
        # KeyError: a binary frame (receive_text finds no text)
        await ws.close(code=CLOSE_PROTOCOL, reason=f"bad hello: {type(exc).__name__}: "
                                                   f"{exc}"[:120])
        return
    except WebSocketDisconnect:
        return
    link = WorkerLink(ws, backends, name)
    await hub.add(link)
    try:
        await link.send({"type": "welcome", "worker": link.id})
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
