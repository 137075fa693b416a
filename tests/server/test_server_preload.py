"""The server loads its embedded model at start-up (Settings.preload_models,
which `tossim serve` turns on), in a thread: it answers while the model
loads, a lobby started meanwhile gets its game once the model is ready, and
its model seats play on the backend the server loaded, not on a second copy
(tossim/server/preload.py)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tossim.inference import registry
from tossim.inference.base import GenerationRequest, GenerationResult
from tossim.server import service
from tossim.server.settings import Settings

from .model_fakes import GatedBackend
from .support import WAIT, ServerFactory, create_game, owner, wait_game


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
    # a lobby started during the load starts its game once the model is ready
    game_id = await create_game(server.client, start=False, players=7,
                                seats=[{"slot": 1, "kind": "ai", "backend": "local"}])
    starting = asyncio.create_task(server.client.post(f"/api/lobbies/{game_id}/start",
                                                      headers=owner(game_id)))
    await wait_game(server.client, game_id, lambda g: g["status"] != "lobby")
    # the event loop is free while the model loads in its thread (an actor
    # made now would wait for it on the loop: these would not be answered)
    for _ in range(3):
        r = await server.client.get("/api/health")
        assert r.status_code == 200 and not loaded.is_set()
    assert not starting.done()
    release.set()
    backend = await server.app.state.actors.models_ready
    assert made == [("local", backend)]
    # the one token that readies the model's threads and buffers
    assert "preload" in backend.seeds

    # the lobby's model seat plays on the loaded backend: no second load
    assert (await asyncio.wait_for(starting, WAIT)).status_code == 200
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
    assert await server.app.state.actors.models_ready is None


@pytest.mark.parametrize(("args", "env", "preloads"), [
    ([], {}, True),
    (["--no-preload"], {}, False),
    ([], {"TOSSIM_PRELOAD_MODELS": "false"}, False),
    (["--preload"], {"TOSSIM_PRELOAD_MODELS": "false"}, True),
])
def test_tossim_serve_preloads_its_model_unless_told_not_to(
        monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str],
        preloads: bool) -> None:
    import uvicorn
    from typer.testing import CliRunner

    from tossim.cli import app
    from tossim.server import app as server_app

    served: list[Settings] = []
    monkeypatch.setattr(server_app, "create_app", lambda settings: served.append(settings))
    monkeypatch.setattr(server_app, "tune_gc", lambda: None)
    monkeypatch.setattr(uvicorn, "run", lambda *_a, **_kw: None)
    result = CliRunner().invoke(app, ["serve", *args], env=env)
    assert result.exit_code == 0, (result.output, result.exception)
    assert [s.preload_models for s in served] == [preloads]
