"""Fan-out: in-process by default, Redis pub/sub when TOSSIM_REDIS_URL is set.

Channels carry JSON-able dicts. Game channels carry the accepted commands of a
game (every process keeps a mirror of the games it serves and applies them);
command channels carry seat commands to the process that runs the game, and
reply channels carry the answer back. Lobby channels say that a lobby
changed (its waiting seat sockets re-read it). Thinking channels carry model seats'
steps (thinking, tool calls, observations) to omniscient spectators.

Inference workers are shared by all the processes (`tossim.server.workers`):
the workers channel is their directory (each process with workers announces
them there), a process's worker-request channel carries requests for its
workers from the processes that run games, and its worker-reply channel the
answers back.

A Redis bus may put a prefix before every channel name (`redis_prefix`), so
deployments or test runs that share one Redis never hear each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any, Protocol


def game_channel(game_id: str) -> str:
    return f"tossim:game:{game_id}"


def command_channel(game_id: str) -> str:
    return f"tossim:cmd:{game_id}"


def lobby_channel(game_id: str) -> str:
    """A lobby's changes (a seat claimed or freed, its settings, the start):
    the seat sockets waiting in the lobby re-read it then, instead of polling
    the store (docs/api.md, "Seat sockets in the lobby")."""
    return f"tossim:lobby:{game_id}"


def thinking_channel(game_id: str) -> str:
    """Model seats' thinking, tool calls and observations as they happen; read
    only by omniscient spectators (never by seats or public viewers)."""
    return f"tossim:think:{game_id}"


WORKERS_CHANNEL = "tossim:workers"


def worker_request_channel(process: str) -> str:
    """Requests for the workers connected to server process `process`."""
    return f"tossim:wreq:{process}"


def worker_reply_channel(process: str) -> str:
    """Answers to the worker requests server process `process` sent."""
    return f"tossim:wreply:{process}"


class Subscription(Protocol):
    def __aiter__(self) -> AsyncIterator[dict[str, Any]]: ...
    async def close(self) -> None: ...


class Bus(Protocol):
    kind: str

    async def publish(self, channel: str, message: dict[str, Any]) -> None: ...
    async def subscribe(self, channel: str) -> Subscription: ...
    async def close(self) -> None: ...


class _QueueSubscription:
    def __init__(self, bus: MemoryBus, channel: str) -> None:
        self.bus, self.channel = bus, channel
        self.queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            item = await self.queue.get()
            if item is None:
                return
            yield item

    async def close(self) -> None:
        subs = self.bus.subs.get(self.channel)
        if subs is not None:
            subs.discard(self)
            if not subs:
                del self.bus.subs[self.channel]
        self.queue.put_nowait(None)


class MemoryBus:
    """One process: every subscriber gets its own queue."""

    kind = "memory"

    def __init__(self) -> None:
        self.subs: dict[str, set[_QueueSubscription]] = {}

    async def publish(self, channel: str, message: dict[str, Any]) -> None:
        for sub in list(self.subs.get(channel, ())):
            sub.queue.put_nowait(message)

    async def subscribe(self, channel: str) -> Subscription:
        sub = _QueueSubscription(self, channel)
        self.subs.setdefault(channel, set()).add(sub)
        return sub

    async def close(self) -> None:
        for subs in list(self.subs.values()):
            for sub in list(subs):
                await sub.close()


class _RedisSubscription:
    def __init__(self, pubsub: Any) -> None:
        self.pubsub = pubsub

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        async for msg in self.pubsub.listen():
            if msg.get("type") == "message":
                yield json.loads(msg["data"])

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.pubsub.unsubscribe()
            await self.pubsub.aclose()


class RedisBus:
    """Several processes: Redis pub/sub, one channel per game."""

    kind = "redis"

    def __init__(self, url: str, prefix: str = "") -> None:
        import redis.asyncio as redis

        self.client = redis.from_url(url)
        self.prefix = prefix  # before every channel name (and the limiter's keys)

    async def publish(self, channel: str, message: dict[str, Any]) -> None:
        await self.client.publish(self.prefix + channel,
                                  json.dumps(message, separators=(",", ":")))

    async def subscribe(self, channel: str) -> Subscription:
        pubsub = self.client.pubsub()
        await pubsub.subscribe(self.prefix + channel)
        return _RedisSubscription(pubsub)

    async def ping(self) -> bool:
        return bool(await self.client.ping())

    async def close(self) -> None:
        await self.client.aclose()


def make_bus(redis_url: str | None, prefix: str = "") -> Bus:
    return RedisBus(redis_url, prefix) if redis_url else MemoryBus()
