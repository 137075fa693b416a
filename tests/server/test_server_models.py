"""The model catalogue in the server: GET /api/models, lobby seats by entry
name (`model`), and a game with chat seats on a fake provider in which the
API key is used but never reaches the database, the logs, the replay or any
websocket message."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from inference.fake_chat_provider import fake_provider
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from tossim.inference import chat_backend
from tossim.store import tables

from .support import ServerFactory, create_game, finished, wait_game

pytest.importorskip("openai")

KEY = "sk-tossim-LEAKCHECK-7c1f0e9a"  # distinctive: any occurrence is a leak
KEY_ENV = "TOSSIM_TEST_FAKE_PROVIDER_KEY"


@pytest.fixture(autouse=True)
def _fresh_backends() -> Iterator[None]:
    chat_backend.forget_shared()
    yield
    chat_backend.forget_shared()


def write_catalogue(tmp_path: Path, url: str, model: str = "good") -> Path:
    path = tmp_path / "models.toml"
    path.write_text(f"""
[models.fake]
backend = "chat"
base_url = "{url}"
model = "{model}"
api_key_env = "{KEY_ENV}"
price_prompt = 3.0
price_completion = 15.0
turn_seconds = 5

[models.needs-key]
backend = "chat"
base_url = "https://api.example.com/v1"
model = "big-model"
api_key_env = "TOSSIM_TEST_UNSET_KEY_VAR"
""")
    return path


async def test_models_lists_names_and_capabilities_only(
        server_factory: ServerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.delenv("TOSSIM_TEST_UNSET_KEY_VAR", raising=False)
    path = write_catalogue(tmp_path, "http://127.0.0.1:9/v1")
    server = await server_factory(models=str(path))
    r = await server.client.get("/api/models")
    assert r.status_code == 200
    models = {m["name"]: m for m in r.json()["models"]}
    assert list(models)[:2] == ["scripted", "smollm2"]
    assert models["scripted"]["available"] is True and models["scripted"]["reason"] is None
    assert models["fake"]["available"] is True and models["fake"]["backend"] == "chat"
    assert models["fake"]["capabilities"]["price_completion"] == 15.0
    assert models["fake"]["capabilities"]["probed_constraint"] is None  # no seat played yet
    assert models["needs-key"]["available"] is False
    assert "TOSSIM_TEST_UNSET_KEY_VAR" in models["needs-key"]["reason"]
    assert "127.0.0.1:9" not in r.text and "api.example.com" not in r.text and KEY not in r.text


async def test_lobby_seats_by_entry_and_clear_422s(
        server_factory: ServerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.delenv("TOSSIM_TEST_UNSET_KEY_VAR", raising=False)
    server = await server_factory(models=str(write_catalogue(tmp_path, "http://127.0.0.1:9/v1")))
    c = server.client

    async def lobby(*seats: dict[str, Any]) -> Any:
        return await c.post("/api/lobbies", json={"players": 7, "seats": list(seats)})

    r = await lobby({"slot": 2, "kind": "ai", "model": "gpt-9"})
    assert r.status_code == 422 and "gpt-9" in r.text and "fake" in r.text
    r = await lobby({"slot": 2, "kind": "ai", "model": "needs-key"})
    assert r.status_code == 422 and "TOSSIM_TEST_UNSET_KEY_VAR" in r.text
    r = await lobby({"slot": 2, "kind": "ai", "model": "fake", "backend": "local"})
    assert r.status_code == 422 and "chat" in r.text
    r = await lobby({"slot": 2, "kind": "human", "model": "fake"})
    assert r.status_code == 422
    r = await lobby({"slot": 2, "kind": "ai", "model": "fake"},
                    {"slot": 3, "kind": "ai", "model": "scripted"},
                    {"slot": 4, "kind": "ai", "backend": "scripted"})
    assert r.status_code == 201, r.text
    seats = {s["slot"]: s for s in r.json()["seats"]}
    assert seats[2]["backend"] == "chat" and seats[2]["model"] == "fake"
    assert seats[3]["backend"] == "scripted" and seats[3]["model"] == "scripted"
    assert seats[4]["backend"] == "scripted" and seats[4]["model"] is None


async def _dump_database(url: str) -> str:
    engine = create_async_engine(url, poolclass=NullPool)
    out = []
    try:
        async with engine.connect() as conn:
            for table in tables.metadata.sorted_tables:
                rows = (await conn.execute(sa.select(table))).all()
                out.extend(repr(tuple(r)) for r in rows)
    finally:
        await engine.dispose()
    return "\n".join(out)


async def test_chat_seats_play_and_the_key_never_leaks(
        server_factory: ServerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, db_url: str) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    caplog.set_level(logging.DEBUG)
    async with fake_provider() as (provider, url):
        server = await server_factory(models=str(write_catalogue(tmp_path, url)), pace=0.0)
        c = server.client
        seats = [{"slot": 1, "kind": "ai", "model": "fake"},
                 {"slot": 2, "kind": "ai", "model": "fake"}]
        game_id = await create_game(c, players=7, speed="paced", seed=12, seats=seats)
        async with server.ws_connect(f"/ws/games/{game_id}/watch?viewer=omniscient") as ws:
            await ws.until(finished, timeout=120)
            messages = json.dumps(ws.messages)
        summary = await wait_game(c, game_id, lambda s: s["status"] == "finished", 60)
        texts = {"ws": messages, "summary": json.dumps(summary)}
        for path in (f"/api/games/{game_id}/replay", f"/api/lobbies/{game_id}", "/api/models",
                     "/api/games"):
            r = await c.get(path)
            assert r.status_code == 200, (path, r.text)
            texts[path] = r.text
        metrics = await server.app.state.store.metrics(game_id)
        texts["metrics"] = json.dumps(metrics)
        texts["database"] = await _dump_database(db_url)
        models = {m["name"]: m for m in (await c.get("/api/models")).json()["models"]}
        assert models["fake"]["capabilities"]["probed_constraint"] == "json_schema"
    texts["logs"] = caplog.text + "\n".join(repr(r.__dict__) for r in caplog.records)

    # the key was used: every request to the provider carried it
    assert provider.requests
    assert all(r["headers"].get("authorization") == f"Bearer {KEY}" for r in provider.requests)
    for where, text in texts.items():
        assert KEY not in text, f"the API key leaked into {where}"
        if where != "logs":  # the server's own log may name the endpoint it calls
            assert url not in text, f"the provider's URL leaked into {where}"
    # the chat seats played: legal actions only, tokens and cost per seat
    for slot in (1, 2):
        m = metrics[slot]
        assert m["faults"] == 0, m
        agent = m["agent"]
        assert agent["entry"] == "fake" and agent["turns"] > 0
        assert agent["prompt_tokens"] > 0 and agent["completion_tokens"] > 0
        assert agent["cost_usd"] > 0
    assert "agent" not in metrics[3]
