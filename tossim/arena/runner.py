"""Running an arena: its planned games, through the server's own machinery.

Every game is made and played the way the server makes and plays a lobby
(`service.create_lobby`, `service.start`, one `GameActor` per game, speed
"fast"), against the arena's database and bus, so the games are stored like
any other (a `tossim serve` on the same database, and the same Redis, shows
them live and replays them).

Restarting is safe. The plan, with the game id of every planned game, is
stored when the arena is made; a run looks each planned game up by id and
continues from what it finds: no game row (start it), a lobby (a run stopped
between making and starting it: start it), live (a run stopped while it was
being played: its actor resumes it from the stored command log, exactly as
`tossim serve` resumes live games), finished (done). So a game is never
started twice and none is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tossim.arena.entries import NO_MODEL, ArenaEntry
from tossim.arena.plan import make_plan
from tossim.server import service
from tossim.server.bus import Bus
from tossim.server.runner import ActorHub, GameActor
from tossim.server.settings import Settings
from tossim.store import ArenaGameRow, ArenaRow, ConflictError, Store
from tossim.timeouts import stopped

log = logging.getLogger(__name__)


class ArenaHub(ActorHub):
    """The server's `ActorHub`, keeping each actor it started until the
    arena has seen it end (a fast game may end, and leave the hub, before
    `service.start` returns)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.started: dict[str, GameActor] = {}

    async def start_game(self, game_id: str,
                         stored: list[tuple[int, str, dict[str, Any]]] | None = None
                         ) -> GameActor:
        actor = await super().start_game(game_id, stored)
        self.started[game_id] = actor
        return actor


def new_arena_id() -> str:
    return uuid.uuid4().hex[:12]


def arena_spec(entries: Sequence[ArenaEntry], games: int, players: int, mode: str,
               seed: int, roles: Sequence[str] | None = None) -> dict[str, Any]:
    """What an arena is, as stored (and compared when a run resumes it). A
    custom role list (`roles`) makes the mode "custom" and the player count
    its length."""
    spec: dict[str, Any] = {
        "entries": [{"label": e.label, "entry": e.entry, "backend": e.backend}
                    for e in entries],
        "games": games, "players": players, "mode": mode, "seed": seed, "speed": "fast"}
    if roles:
        spec.update(players=len(roles), mode="custom", roles=list(roles))
    return spec


async def open_arena(store: Store, arena_id: str, entries: Sequence[ArenaEntry], *,
                     games: int, players: int, mode: str = "classic",
                     seed: int = 0, roles: Sequence[str] | None = None) -> ArenaRow:
    """The arena `arena_id`: made (with its plan) if it is new, else the
    stored one, which must have the same spec (ValueError otherwise).
    `roles`: a custom role list instead of the mode's (short games)."""
    spec = arena_spec(entries, games, players, mode, seed, roles)
    row = await store.get_arena(arena_id)
    if row is None:
        plan = make_plan([e.label for e in entries], games, players=players, mode=mode,
                         seed=seed, roles=roles)
        rows = [ArenaGameRow(idx=g.index, game_id=uuid.uuid4().hex, seed=g.seed,
                             seats=list(g.seats)) for g in plan.games]
        with contextlib.suppress(ConflictError):  # made meanwhile by another run
            await store.create_arena(arena_id, spec, rows)
        row = await store.get_arena(arena_id)
        assert row is not None
    if row.spec != spec:
        raise ValueError(f"arena {arena_id} exists with another spec ({_describe(row.spec)}); "
                         f"resume it with the same entries and options, or pick a new id")
    return row


def _describe(spec: dict[str, Any]) -> str:
    names = " ".join(f"{e['label']}={e['entry']}" for e in spec.get("entries", []))
    roles = f" ({', '.join(spec['roles'])})" if spec.get("roles") else ""
    return (f"entries {names}, {spec.get('games')} games, {spec.get('players')} players, "
            f"mode {spec.get('mode')}{roles}, seed {spec.get('seed')}")


def game_limit(entry: ArenaEntry, players: int, entries: int) -> int | None:
    """How many of the arena's games may play this entry at once (None: no
    limit of its own). An entry's `max_concurrency` bounds the requests its
    endpoint takes at once; each game asks all of the entry's seats of a
    phase together, so a game may need up to ceil(players / entries) of them."""
    if entry.backend in NO_MODEL or not entry.max_concurrency:
        return None
    per_game = -(-players // entries)
    return max(1, entry.max_concurrency // per_game)


@dataclass
class ArenaProgress:
    total: int
    done: int = 0  # finished games (this run and earlier runs)
    errors: int = 0  # games that failed in this run (they resume on the next)
    running: int = 0
    resumed: int = 0  # live games found and resumed
    aborted: int = 0  # games someone aborted (status "aborted"): not played again
    started_at: float = field(default_factory=time.monotonic)
    done_at_start: int = 0

    @property
    def finished(self) -> bool:
        """Every planned game has ended (finished, or aborted by someone)."""
        return self.done + self.aborted >= self.total


ProgressHook = Callable[[ArenaProgress], None]


async def play_arena(store: Store, bus: Bus, settings: Settings, arena: ArenaRow,
                     entries: Sequence[ArenaEntry], *, parallel: int = 2,
                     on_update: ProgressHook | None = None) -> ArenaProgress:
    """Play the arena's games that are not finished, at most `parallel` at a
    time (and within each entry's own limit); return the tally. The arena is
    marked finished once every planned game is."""
    by_label = {e.label: e for e in entries}
    spec = arena.spec
    players, k = int(spec["players"]), len(spec["entries"])
    limits = {label: game_limit(e, players, k) for label, e in by_label.items()}
    statuses = await store.game_statuses([g.game_id for g in arena.games])
    progress = ArenaProgress(total=len(arena.games))
    todo = []
    for g in arena.games:
        if statuses.get(g.game_id) == "finished":
            progress.done += 1
        elif statuses.get(g.game_id) == "aborted":
            progress.aborted += 1
        else:
            todo.append(g)
    progress.done_at_start = progress.done
    hub = ArenaHub(store, bus, settings)
    running: dict[asyncio.Task[bool], ArenaGameRow] = {}
    busy: Counter[str] = Counter()

    def update() -> None:
        progress.running = len(running)
        if on_update is not None:
            on_update(progress)

    update()
    try:
        while todo or running:
            for g in list(todo):
                if len(running) >= max(1, parallel):
                    break
                labels = set(g.seats)
                if any(limits[lb] is not None and busy[lb] >= (limits[lb] or 0)
                       for lb in labels):
                    continue
                todo.remove(g)
                busy.update(labels)
                running[asyncio.create_task(_play_game(store, hub, settings, spec, g,
                                                       by_label, progress))] = g
            update()
            finished, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                g = running.pop(task)
                busy.subtract(set(g.seats))
                ok = False
                try:
                    ok = task.result()
                except Exception:
                    log.exception("arena %s: game %d (%s) failed", arena.id, g.idx, g.game_id)
                if ok:
                    progress.done += 1
                else:
                    progress.errors += 1
            update()
    finally:
        await stopped(*running)
        await hub.stop_all()
    if progress.finished:
        await store.set_arena_status(arena.id, "finished")
    return progress


async def _play_game(store: Store, hub: ArenaHub, settings: Settings, spec: dict[str, Any],
                     g: ArenaGameRow, entries: dict[str, ArenaEntry],
                     progress: ArenaProgress) -> bool:
    """Play (or resume) one planned game to its end; True if it finished."""
    row = await store.get_game(g.game_id)
    if row is None:
        fields: dict[str, Any] = {"mode": spec["mode"], "players": spec["players"]}
        if spec.get("roles"):  # a custom list: its length is the player count
            fields = {"mode": "custom", "roles": spec["roles"]}
        lobby = service.LobbyIn.model_validate({
            **fields, "speed": "fast", "seed": g.seed,
            "seats": [entries[label].seat_spec(slot)
                      for slot, label in enumerate(g.seats, start=1)]})
        with contextlib.suppress(ConflictError):  # made by a run that stopped right after
            await service.create_lobby(store, lobby, settings=settings, game_id=g.game_id)
        row = await store.get_game(g.game_id)
        assert row is not None
    if row.status == "lobby":
        # (a game started meanwhile elsewhere is not this run's: it counts as
        # not finished here, and the next run resumes it if it is still live)
        with contextlib.suppress(service.ServiceError):
            await service.start(store, hub, g.game_id)
    elif row.status == "live":
        progress.resumed += 1
        await hub.start_game(g.game_id, await store.commands(g.game_id))
    actor = hub.started.pop(g.game_id, None)
    if actor is not None:
        try:
            await actor.done.wait()
        finally:
            await actor.stop()  # its command subscription too
        if actor.task is not None and actor.task.done() and not actor.task.cancelled():
            exc = actor.task.exception()
            if exc is not None:
                raise exc
    final = await store.get_game(g.game_id)
    return final is not None and final.status == "finished"
