"""Mirrors: the read side of a live game, one per game per server process.

A mirror is a replica of the engine state built from the store and then
advanced only by the commands the game's actor has stored and published on the
bus. Websockets read mirrors, never the actor's own game, so a viewer can only
ever see what is already stored, and a process that does not run a game (a
second server behind a load balancer) serves it exactly like the one that does.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import struct
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from tossim.engine import Game, GameConfig, apply, command_from_dict
from tossim.engine.replay import rerun
from tossim.server.bus import Bus, Subscription, command_channel, game_channel
from tossim.store import Store
from tossim.timeouts import stopped, within

log = logging.getLogger(__name__)


def text_frame(payload: bytes) -> bytes:
    """One unfragmented, unmasked websocket text frame (RFC 6455 section 5.2):
    what a server writes for a message without extensions. A server's frames
    are not masked, so the bytes are the same for every socket they go to."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x81, n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x81, 126, n)
    else:
        head = struct.pack("!BBQ", 0x81, 127, n)
    return head + payload


@dataclass(slots=True)
class Push:
    """One events message for every socket of one viewer class at one point:
    how many events it carries (in the viewer's own sequence), the state it
    shows, its JSON text, and that text framed once for direct writes."""

    count: int
    state: Any
    text: str
    _frame: bytes | None = None

    @property
    def frame(self) -> bytes:
        if self._frame is None:
            self._frame = text_frame(self.text.encode("utf-8"))
        return self._frame


class GameMirror:
    def __init__(self, game_id: str, store: Store, bus: Bus) -> None:
        self.game_id = game_id
        self.store = store
        self.bus = bus
        self.game: Game | None = None
        self.seq = 0  # commands applied
        self.deadline: float | None = None
        # (game version after a batch, when the actor published it; None: loaded
        # from the store), in order: each viewer's `published_at` is that of
        # the batch of the newest event it may see (`published_for`), never of
        # a later batch of hidden events
        self.batches: list[tuple[int, float | None]] = []
        self.finished = False
        self.users = 0
        self.changed = asyncio.Event()
        # the sockets following this mirror: each is called, synchronously, on
        # every change. A socket that can take a frame now writes its push
        # there and then (no task wakes, no await); the others wake their task.
        self.listeners: set[Callable[[], None]] = set()
        # pushes already built for this state: (viewer, from, to, deadline,
        # delayed) -> Push. Every socket of one viewer class at one point gets
        # the same message, so it is built, serialised and framed once, not
        # once per socket (cleared on every change).
        self.pushes: dict[tuple[Any, ...], Push] = {}
        # (version, wall time it became visible): for delayed spectators
        self.history: list[tuple[int, float]] = []
        # day summaries published while this mirror ran (the extractive one at
        # nightfall, a model's when it replaces it), in order: each socket
        # forwards the ones after its own count as {"type": "summary"}, so a
        # page shows a new summary without polling for it
        self.summaries: list[int] = []  # the day of each summary notice
        # a finished game's next lobby ("Play again"), once its players were
        # offered one: each socket forwards it once as {"type": "next"}
        self.next_lobby: str | None = None
        # seats a stand-in plays now, and each seat's last absence (what its
        # stand-in did: forwarded to that seat's own sockets only)
        self.standins: list[int] = []
        self.away: dict[str, Any] = {}
        self._sub: Subscription | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        # Subscribe before loading, so nothing published in between is lost.
        self._sub = await self.bus.subscribe(game_channel(self.game_id))
        await self.reload()
        self._task = asyncio.create_task(self._consume(), name=f"mirror-{self.game_id}")
        if not self.finished:
            # the phase deadline is not in the store: ask the game's actor for it
            await self.bus.publish(command_channel(self.game_id), {"type": "sync"})

    async def reload(self) -> None:
        row = await self.store.get_game(self.game_id)
        if row is None or row.status == "lobby":
            # a lobby's config has no names and no deal yet: a mirror is only
            # ever built from a started game's stored config and log
            raise KeyError(self.game_id)
        commands = await self.store.commands(self.game_id)
        game = rerun(GameConfig.from_dict(row.config), [c for _, _, c in commands])
        self.game = game
        self.seq = len(commands)
        if not self.batches or game.version > self.batches[-1][0]:
            self.batches.append((game.version, None))
        self.finished = row.status == "finished" or game.ended
        self.next_lobby = row.lobby.get("next") or self.next_lobby
        self._mark()

    def _mark(self) -> None:
        if self.game is not None:
            self.history.append((self.game.version, time.time()))
        self.pushes.clear()
        self.changed.set()
        self.changed = asyncio.Event()
        for notify in tuple(self.listeners):
            try:
                notify()
            except Exception:  # one socket's failure must not starve the others
                log.exception("mirror %s: a listener failed", self.game_id)

    async def _consume(self) -> None:
        assert self._sub is not None
        async for msg in self._sub:
            try:
                await self._on_message(msg)
            except Exception:  # a bad message must not kill the mirror
                log.exception("mirror %s: reloading after a bad message", self.game_id)
                await self.reload()

    async def _on_message(self, msg: dict[str, Any]) -> None:
        if msg.get("type") == "ended":
            self.finished = True
            self._mark()
            return
        if msg.get("type") == "standins":
            self.standins = [s for s in msg.get("slots") or [] if isinstance(s, int)]
            away = msg.get("away")
            self.away = dict(away) if isinstance(away, dict) else {}
            self._mark()
            return
        if msg.get("type") == "next":
            if isinstance(msg.get("lobby"), str):
                self.next_lobby = msg["lobby"]
                self._mark()
            return
        if msg.get("type") == "summary":
            if isinstance(msg.get("day"), int):
                self.summaries.append(int(msg["day"]))
                self._mark()
            return
        if msg.get("type") == "deadline":
            if self.game is not None and msg.get("phase_seq") == self.game.phase_seq:
                self.deadline = msg.get("deadline")
                self._mark()
            return
        if msg.get("type") != "commands":
            return
        first = int(msg["first_seq"])
        commands = msg["commands"]
        if first > self.seq + 1:  # we missed a batch: the store has it
            await self.reload()
        else:
            assert self.game is not None
            for i, data in enumerate(commands):
                if first + i <= self.seq:
                    continue  # already loaded from the store
                apply(self.game, command_from_dict(data))
                self.seq = first + i
        self.deadline = msg.get("deadline")
        assert self.game is not None
        if not self.batches or self.game.version > self.batches[-1][0]:
            t = msg.get("t")
            self.batches.append((self.game.version,
                                 float(t) if isinstance(t, int | float) else None))
        self._mark()

    def published_for(self, version: int) -> float | None:
        """When the actor published the batch that brought game version
        `version` (a viewer's newest visible event): the `published_at` a
        viewer sees. A batch of events hidden from the viewer never moves it
        (docs/api.md, "Server -> client"). None: loaded from the store."""
        if version <= 0:
            return None
        i = bisect.bisect_left(self.batches, version, key=lambda b: b[0])
        return self.batches[i][1] if i < len(self.batches) else None

    def version_at(self, when: float) -> int:
        """The game's version as it stood at wall time `when` (delayed spectators)."""
        version = 0
        for v, t in self.history:
            if t > when:
                break
            version = v
        return version

    async def wait_change(self, timeout: float | None = None) -> None:
        event = self.changed
        with contextlib.suppress(TimeoutError):
            await within(event.wait(), timeout)

    async def close(self) -> None:
        await stopped(self._task)
        if self._sub is not None:
            await self._sub.close()


class MirrorHub:
    """The mirrors of this process, shared by all the websockets of a game.

    Acquiring and releasing are serialised per game, not for the whole
    process: loading a mirror reads the store, and with one lock for all games
    every new websocket waited for every other game's load (`tossim bench
    server` on PostgreSQL, 1,000 spectators joining 100 live games: a median
    2.8 s in `acquire`, 0.12 s with a lock per game)."""

    def __init__(self, store: Store, bus: Bus) -> None:
        self.store, self.bus = store, bus
        self.mirrors: dict[str, GameMirror] = {}
        # game id -> (its lock, how many tasks hold it or wait for it)
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}

    @contextlib.asynccontextmanager
    async def _locked(self, game_id: str) -> AsyncIterator[None]:
        entry = self._locks.setdefault(game_id, (asyncio.Lock(), [0]))
        lock, count = entry
        count[0] += 1
        try:
            async with lock:
                yield
        finally:
            count[0] -= 1
            if count[0] == 0 and self._locks.get(game_id) is entry:
                del self._locks[game_id]

    async def acquire(self, game_id: str) -> GameMirror:
        async with self._locked(game_id):
            mirror = self.mirrors.get(game_id)
            if mirror is None:
                mirror = GameMirror(game_id, self.store, self.bus)
                try:
                    await mirror.start()
                except BaseException:
                    await mirror.close()  # its subscription, if it got that far
                    raise
                self.mirrors[game_id] = mirror
            mirror.users += 1
            return mirror

    async def release(self, mirror: GameMirror) -> None:
        async with self._locked(mirror.game_id):
            mirror.users -= 1
            if mirror.users <= 0 and self.mirrors.get(mirror.game_id) is mirror:
                del self.mirrors[mirror.game_id]
                await mirror.close()

    async def close(self) -> None:
        for mirror in list(self.mirrors.values()):
            await mirror.close()
        self.mirrors.clear()
