"""The FastAPI application: routes, websockets, the static web client, and the
start-up that opens the store (running migrations), resumes live games and,
with --demo, keeps an all-AI match running for first-time visitors."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from tossim import __version__
from tossim.inference.chat_backend import start_probes, stop_probes
from tossim.inference.registry import close_shared_backends
from tossim.server import service
from tossim.server.bus import make_bus
from tossim.server.limits import BodyLimit, LobbyRate, make_limiter
from tossim.server.lobby_watch import LobbyWatch
from tossim.server.mirror import MirrorHub
from tossim.server.preload import preload_models
from tossim.server.routes import arenas, games, health, lobbies, models, roles
from tossim.server.runner import ActorHub, process_name
from tossim.server.settings import Settings
from tossim.server.web_mount import WebMount, method_not_allowed
from tossim.server.workers import WorkerHub
from tossim.server.workers import router as workers_router
from tossim.server.ws import router as ws_router
from tossim.store import Store
from tossim.timeouts import stopped

log = logging.getLogger(__name__)

WEB_DIR = Path(__file__).resolve().parents[2] / "web"
DEMO_PAUSE = 15.0  # seconds between the end of a demo game and the next
# apps of this process between start-up and shutdown (tests run several): the
# process-wide model backends are closed when the last one shuts down
_apps_open = [0]


def demo_lobby(settings: Settings) -> service.LobbyIn:
    """The demo match: paced, 15 seats, the first `demo_model_seats` (4) played
    by the demo backend (the bundled model) when it can run here, the others by
    scripted bots (all of them when the backend cannot run)."""
    backend = settings.demo_backend
    if backend != "scripted":
        why = service.backend_unavailable(backend, settings)
        if why is not None:
            log.warning("demo: backend %s is not available (%s); scripted seats play", backend,
                        why)
            backend = "scripted"
    seats = [service.SeatSpec(slot=slot, backend=backend)
             for slot in range(1, min(settings.demo_model_seats, 15) + 1)]
    return service.LobbyIn(players=15, speed="paced", seats=seats)


async def demo_loop(app: FastAPI) -> None:
    """Keep one paced 15-seat all-AI match running."""
    state = app.state
    while True:
        actor = None
        for candidate in list(state.actors.actors.values()):  # a resumed demo game
            row = await state.store.get_game(candidate.game_id)
            if row is not None and row.lobby.get("demo"):
                actor = candidate
                break
        if actor is None:
            row = await service.create_lobby(state.store, demo_lobby(state.settings),
                                             demo=True, settings=state.settings)
            await service.start(state.store, state.actors, row.id)
            actor = state.actors.actors.get(row.id)
            log.info("demo game %s started", row.id)
        if actor is not None:
            await actor.done.wait()
        await asyncio.sleep(DEMO_PAUSE)


def tune_gc() -> None:
    """Garbage collection for a server process (`tossim serve` calls this
    before it starts serving).

    The process holds every live game twice (its actor's and its mirror's)
    and every websocket's objects. With CPython's default thresholds
    (700, 10, 10) a full collection walks all of it every few seconds: at 100
    paced games and 1,000 spectators (`tossim bench server`) that was 12 full
    collections of up to 0.4 s each in 75 s, stalling the event loop and
    every delivery, plus 177 middle ones. Games themselves make no reference
    cycles (reference counting frees them), so collect far less often: the
    young generation every 50,000 net allocations, the older ones rarely. The
    objects of start-up (modules, the app) live as long as the process and
    are frozen out of collections altogether."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 10)


_SECRET_IN_URL = re.compile(r"((?:^|[?&;])(?:token|owner_token|key|secret)=)[^&\s\"' ]*",
                            re.IGNORECASE)


class RedactSecrets(logging.Filter):
    """Blanks `token=...` (and the like) in log lines. Tokens never belong in a
    URL (seats and workers send theirs in their first message, and a URL with
    one is refused), but the access log is written before a request is
    refused, so a client that puts a token in a URL must not get it logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        # redact in place, keeping the arguments' shape (uvicorn's access
        # formatter unpacks exactly five of them)
        if isinstance(record.msg, str) and "=" in record.msg:
            record.msg = _redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_redact(a) if isinstance(a, str) and "=" in a else a
                                for a in record.args)
        return True


def _redact(text: str) -> str:
    return _SECRET_IN_URL.sub(r"\1[redacted]", text)


def redact_logs() -> None:
    """Put the redaction on uvicorn's loggers (its access lines, and its
    websocket lines, which go to uvicorn.error); idempotent."""
    for name in ("uvicorn.access", "uvicorn.error", "uvicorn"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactSecrets) for f in logger.filters):
            logger.addFilter(RedactSecrets())


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    redact_logs()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        settings.check_start()  # StartRefused: a secret or token others could have
        if (old := settings.old_secret_file()) is not None:
            log.warning("%s is an old deal secret, no longer read (and the one the "
                        "repository once held is public): delete it", old)
        store = await Store.open(settings.database_url)
        bus = make_bus(settings.redis_url, settings.redis_prefix)
        # this process's name in the fleet: its leases and its workers
        process = process_name()
        app.state.settings = settings
        app.state.store = store
        app.state.bus = bus
        app.state.process = process
        app.state.workers = WorkerHub(bus, process, ttl=settings.lease_s)
        app.state.actors = ActorHub(store, bus, settings, app.state.workers, owner=process)
        app.state.mirrors = MirrorHub(store, bus)
        app.state.lobbies = LobbyWatch(bus)
        app.state.limiter = make_limiter(bus, settings.max_sockets_per_seat,
                                         settings.chat_limit_messages,
                                         settings.chat_limit_seconds)
        app.state.lobby_rate = LobbyRate(settings.lobby_rate_limit,
                                         settings.lobby_rate_seconds, bus)
        _apps_open[0] += 1
        demo = preload = None
        probes = start_probes(settings.models)  # chat entries: constraint modes, in background
        try:
            if settings.preload_models:
                preload = asyncio.create_task(preload_models(settings))
            app.state.actors.models_ready = preload
            await app.state.workers.start()
            log.info("server process %s", process)
            resumed = await app.state.actors.start(takeover=settings.resume)
            if resumed:
                log.info("resumed %d live game(s)", len(resumed))
            demo = asyncio.create_task(demo_loop(app)) if settings.demo else None
            yield
        finally:
            await stop_probes(probes)
            if preload is not None:  # a load in its thread runs to its end
                with contextlib.suppress(Exception):
                    await preload
            await stopped(demo)
            await app.state.actors.stop_all()
            await app.state.workers.close()
            await app.state.mirrors.close()
            await app.state.lobbies.close()
            await app.state.limiter.aclose()
            await bus.close()
            await store.close()
            _apps_open[0] -= 1
            if not _apps_open[0]:
                # the models this process loaded for its model seats (shared by
                # every app in the process: only the last one closes them)
                await close_shared_backends()

    # FastAPIOffline: FastAPI whose /docs and /redoc take Swagger UI's and
    # ReDoc's assets from the fastapi-offline package, not a CDN (they work
    # with the network cut)
    app = FastAPIOffline(title="ToSSim", version=__version__, lifespan=lifespan,
                  description="Town of Salem with human and AI seats: lobbies, live games "
                              "over websockets, replays. See docs/api.md for the websocket "
                              "protocol.")
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.include_router(health.router)
    app.include_router(lobbies.router)
    app.include_router(lobbies.modes_router)
    app.include_router(models.router)
    app.include_router(roles.router)
    app.include_router(games.router)
    app.include_router(arenas.router)
    app.include_router(ws_router)
    app.include_router(workers_router)
    app.add_exception_handler(405, method_not_allowed)
    if WEB_DIR.is_dir():
        # never under /api/: the API answers its own 404s and 405s (web_mount.py)
        app.router.routes.append(WebMount("/", StaticFiles(directory=WEB_DIR, html=True),
                                          name="web"))
    return app
