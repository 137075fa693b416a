"""The server loads its embedded model at start-up (Settings.preload_models,
which `tossim serve` turns on), in a thread: it answers while the model
loads, and the first lobby's model seats play on the backend it loaded, not
on a second copy (tossim/server/preload.py)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tossim.inference import registry
from tossim.inference.base import GenerationRequest, GenerationResult
from tossim.server import service

from .model_fakes import GatedBackend
from .support import WAIT, ServerFactory, create_game


class Watched(GatedBackend):
    """`seat_asked` is set by the first request of a game's seat."""

    def __init__(self) -> None:
        super().__init__()
        self.seat_asked = asyncio.Event()

    async def _answer(self, r: GenerationRequest) -> GenerationResult:
        if r.key != "preload":
            self.seat_asked.set()
        return await super()._answer(r)


async def test_the_server_answers_while_its_model_loads_and_seats_play_on_it(
        server_factory: ServerFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    loading, release, loaded = threading.Event(), threading.Event(), threading.Event()
    made: list[tuple[str, Watched]] = []

    def make_backend(name: str, **_kw: Any) -> Watched:
        """A model load that lasts until the test lets it end."""
        loading.set()
        release.wait(WAIT)
        backend = Watched()
        made.append((name, backend))
        loaded.set()
        return backend

    monkeypatch.setattr(registry, "make_backend", make_backend)
    monkeypatch.setattr(registry, "_shared", {})  # this test's backends only
    monkeypatch.setattr(service, "unavailable_reason", lambda *_a: None)  # "local" runs here
    server = await server_factory(preload_models=True)
    assert await asyncio.to_thread(loading.wait, WAIT)
    # the event loop is free while the model loads in its thread
    r = await server.client.get("/api/health")
    assert r.status_code == 200 and not loaded.is_set()
    release.set()
    backend = await server.app.state.preload
    assert made == [("local", backend)]
    # the one token that readies the model's threads and buffers
    assert list(backend.seeds) == ["preload"]

    # the first lobby's model seats play on the loaded backend: no second load
    game_id = await create_game(server.client, players=7,
                                seats=[{"slot": 1, "kind": "ai", "backend": "local"}])
    await asyncio.wait_for(backend.seat_asked.wait(), WAIT)
    assert any(key.startswith(game_id) for key in backend.seeds), backend.seeds
    assert len(made) == 1


async def test_a_server_whose_model_seats_run_on_workers_loads_no_model(
        server_factory: ServerFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    def make_backend(name: str, **_kw: Any) -> Watched:
        raise AssertionError(f"a {name} model was loaded")

    monkeypatch.setattr(registry, "make_backend", make_backend)
    server = await server_factory(preload_models=True, inference="workers",
                                  worker_token="t" * 32)
    assert await server.app.state.preload is None
