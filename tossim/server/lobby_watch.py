"""Lobby changes for the seat sockets that wait in a lobby.

A seat may open its socket from the lobby page; until the start it only
waits. It used to look at the store every 0.5 s, so 200 idle lobby sockets
took a third of a core. Now whoever changes a lobby (a join, a seat freed,
the settings, the start) publishes on the lobby's bus channel
(`notify_lobby`), and each waiting socket re-reads the lobby only then: an
idle lobby socket costs no query and no wake-up. One subscription per lobby
and process is shared by all of its sockets (a Redis subscription is a
connection). See docs/api.md, "Seat sockets in the lobby".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from tossim.server.bus import Bus, Subscription, lobby_channel
from tossim.timeouts import stopped

log = logging.getLogger(__name__)


async def notify_lobby(bus: Bus, game_id: str, what: str, **fields: Any) -> None:
    """Tell every process's waiting sockets that this lobby changed (`what`:
    "seats", "settings" or "started")."""
    await bus.publish(lobby_channel(game_id), {"type": what, **fields})


class WatchedLobby:
    """One lobby's subscription in this process. `changed` is replaced on
    every change: a socket takes it before reading the store, so a change
    made while it reads still wakes it."""

    def __init__(self, game_id: str) -> None:
        self.game_id = game_id
        self.changed = asyncio.Event()
        self.changes = 0
        self.users = 0
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sub: Subscription | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, bus: Bus) -> None:
        self._sub = await bus.subscribe(lobby_channel(self.game_id))
        self._task = asyncio.create_task(self._consume(), name=f"lobby-{self.game_id}")

    async def _consume(self) -> None:
        assert self._sub is not None
        async for _ in self._sub:
            self.changes += 1
            self.changed.set()
            self.changed = asyncio.Event()

    async def close(self) -> None:
        await stopped(self._task)
        if self._sub is not None:
            await self._sub.close()


class LobbyWatch:
    """The watched lobbies of this process, each shared by its sockets."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.lobbies: dict[str, WatchedLobby] = {}

    @contextlib.asynccontextmanager
    async def watch(self, game_id: str) -> AsyncIterator[WatchedLobby]:
        lobby = await self._acquire(game_id)
        try:
            yield lobby
        finally:
            lobby.users -= 1
            if lobby.users <= 0 and self.lobbies.get(game_id) is lobby:
                del self.lobbies[game_id]
                await lobby.close()

    async def _acquire(self, game_id: str) -> WatchedLobby:
        while True:
            lobby = self.lobbies.get(game_id)
            if lobby is None:
                lobby = self.lobbies[game_id] = WatchedLobby(game_id)
                lobby.users += 1
                try:
                    await lobby.start(self.bus)
                except BaseException as exc:
                    lobby.users -= 1
                    self.lobbies.pop(game_id, None)
                    if isinstance(exc, Exception):
                        lobby.ready.set_exception(exc)
                        lobby.ready.exception()  # retrieved: the waiters raise it too
                    else:  # this socket went away meanwhile: a waiter starts it again
                        lobby.ready.cancel()
                    await lobby.close()
                    raise
                lobby.ready.set_result(None)
                return lobby
            lobby.users += 1
            try:
                await asyncio.shield(lobby.ready)
            except asyncio.CancelledError:
                lobby.users -= 1
                task = asyncio.current_task()
                if lobby.ready.cancelled() and task is not None and not task.cancelling():
                    continue  # the socket starting it left, not this one
                raise
            except BaseException:
                lobby.users -= 1
                raise
            return lobby

    async def close(self) -> None:
        for lobby in list(self.lobbies.values()):
            await lobby.close()
        self.lobbies.clear()
