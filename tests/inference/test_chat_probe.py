"""The start-up probe: a server probes its catalogue's chat entries in the
background when it starts (start-up does not wait for them, and an endpoint
that is down neither stops nor fails it), GET /api/models shows what each
endpoint honours (names and capabilities only), and a probe that failed is
tried again at the entry's first use."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from inference.fake_chat_provider import fake_provider
from tossim.inference import chat_backend
from tossim.inference.catalogue import load_catalogue
from tossim.server.app import create_app
from tossim.server.settings import Settings

pytest.importorskip("openai")


@pytest.fixture(autouse=True)
def _fresh_backends() -> Iterator[None]:
    chat_backend.forget_shared()
    yield
    chat_backend.forget_shared()


def _entry(name: str, url: str, model: str, extra: str = "") -> str:
    return f'[models.{name}]\nbackend = "chat"\nbase_url = "{url}"\nmodel = "{model}"\n{extra}\n'


async def _models(c: httpx.AsyncClient) -> dict[str, Any]:
    r = await c.get("/api/models")
    assert r.status_code == 200
    return {m["name"]: m["capabilities"] for m in r.json()["models"]}


async def test_a_server_probes_chat_entries_at_start_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chat_backend, "STARTUP_PROBE_SECONDS", 3.0)
    monkeypatch.delenv("TOSSIM_TEST_PROBE_UNSET_KEY", raising=False)
    async with fake_provider(slow_seconds=1.5) as (provider, url), \
            fake_provider() as (later, later_url):
        later.outage = True  # this endpoint is down while the server starts
        path = tmp_path / "models.toml"
        path.write_text(
            _entry("schema", url, "good") + _entry("tools-only", url, "no-rf")
            + _entry("plain", url, "no-constraints") + _entry("slowpoke", url, "slow")
            + _entry("fixed", url, "good", 'constraint = "text"')
            + _entry("nowhere", "http://127.0.0.1:9/v1", "good")
            + _entry("later", later_url, "good")
            + _entry("keyless", url, "good", 'api_key_env = "TOSSIM_TEST_PROBE_UNSET_KEY"'))
        db = f"sqlite+aiosqlite:///{tmp_path / 'p.db'}"
        app = create_app(Settings(database_url=db, models=str(path), resume=False))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
                # start-up did not wait: the slow endpoint's probe is still out
                first = await _models(c)
                assert first["slowpoke"]["probe"] == "pending"
                assert first["fixed"] == {**first["fixed"], "probe": "fixed",
                                          "probed_constraint": "text"}
                deadline = time.monotonic() + 60
                while True:  # the probes finish in the background
                    caps = await _models(c)
                    probed = {n: caps[n]["probe"] for n in
                              ("schema", "tools-only", "plain", "slowpoke", "nowhere", "later")}
                    if "pending" not in probed.values():
                        break
                    assert time.monotonic() < deadline, probed
                    await asyncio.sleep(0.1)
                modes = {n: caps[n]["probed_constraint"] for n in probed}
                assert modes == {"schema": "json_schema", "tools-only": "tools", "plain": "text",
                                 "slowpoke": "json_schema", "nowhere": None, "later": None}
                assert caps["nowhere"]["probe"] in ("failed: transport", "failed: timeout")
                assert caps["later"]["probe"] == "failed: server"
                # an entry this server cannot play (its key is not set) is not asked
                assert caps["keyless"]["probe"] == "pending"
                text = (await c.get("/api/models")).text
                assert url.split("//")[1] not in text and "127.0.0.1:9" not in text

                # the endpoint comes back: the entry's first use probes again
                later.outage = False
                entry = load_catalogue(path).get("later")
                backend = chat_backend.shared_chat_backend(entry)
                assert await backend.ensure_mode(time.monotonic() + 10) == "json_schema"
                caps = await _models(c)
                assert caps["later"] == {**caps["later"], "probe": "done",
                                         "probed_constraint": "json_schema"}


async def test_no_chat_entries_no_probe_task(tmp_path: Path) -> None:
    builtins_only = tmp_path / "empty.toml"
    builtins_only.write_text("")
    assert chat_backend.start_probes(str(builtins_only)) is None  # nothing to probe
    bad = tmp_path / "models.toml"
    bad.write_text("[models.x]\nbackend = 'nope'\n")
    assert chat_backend.start_probes(str(bad)) is None  # a broken catalogue: no probe
