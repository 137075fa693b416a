"""Schemathesis against the served OpenAPI schema: for requests generated from
the schema (valid and invalid; its examples, coverage and fuzzing phases),
the server never answers 5xx, and every conformance check passes (status
codes, content types, response schemas, `Allow` on undeclared methods...).
Bounded: ~30 examples per operation and phase, well under 3 minutes."""

from __future__ import annotations

import os
import subprocess
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from tossim.server.app import create_app
from tossim.server.settings import Settings

from .support import REPO, TOSSIM_BIN, WAIT, free_port


@pytest.fixture(scope="module")
def api_server(tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[tuple[str, list[str]]]:
    """`tossim serve` on a SQLite file, in a subprocess, with some games: its
    URL and the games' ids."""
    folder = tmp_path_factory.mktemp("schema")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOSSIM_")}
    log_path = folder / "serve.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [str(TOSSIM_BIN), "serve", "--port", str(port),
             "--db", f"sqlite+aiosqlite:///{folder / 'api.db'}"],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + WAIT
            while True:
                try:
                    if httpx.get(f"{base}/api/health", timeout=5).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"tossim serve did not start:\n{_tail(log_path)}")
                time.sleep(0.1)
            yield base, _games(base)
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(15)
    # the server logged no unhandled error for anything it was sent
    assert "Traceback" not in _tail(log_path, 10**7), _tail(log_path)


def _games(base: str) -> list[str]:
    """A lobby with a human seat, a finished fast game and a live game with a
    joined human seat (so generated requests also reach real games)."""
    with httpx.Client(base_url=base, timeout=WAIT) as c:
        human = [{"slot": 2, "kind": "human"}]
        lobby = c.post("/api/lobbies", json={"players": 7, "seats": human}).json()["id"]
        fast_lobby = c.post("/api/lobbies", json={"players": 7, "speed": "fast"}).json()
        live_lobby = c.post("/api/lobbies", json={"players": 7, "seats": human}).json()
        fast, live = fast_lobby["id"], live_lobby["id"]
        assert c.post(f"/api/lobbies/{fast}/start", headers={
            "Authorization": f"Bearer {fast_lobby['owner_token']}"}).status_code == 200
        assert c.post(f"/api/lobbies/{live}/join", json={"name": "H"}).status_code == 200
        assert c.post(f"/api/lobbies/{live}/start", headers={
            "Authorization": f"Bearer {live_lobby['owner_token']}"}).status_code == 200
        deadline = time.monotonic() + WAIT
        while c.get(f"/api/games/{fast}").json()["status"] != "finished":
            assert time.monotonic() < deadline
            time.sleep(0.05)
    return [lobby, fast, live]


def _tail(path: Path, n: int = 4000) -> str:
    return path.read_text(errors="replace")[-n:]


# Every check, in the examples, coverage and fuzzing phases (5xx: not_a_server_error
# judges those). A valid request
# may still be refused 422 for what a schema cannot say (a role name the deal
# does not know, a seat's backend this server does not run), and 404/409 for
# a game that does not exist or is past that point.
CONFIG = schemathesis.Config.from_str("""
[phases.examples]
enabled = true
[phases.coverage]
enabled = true
[phases.fuzzing]
enabled = true
[phases.stateful]
enabled = false
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
""")

# The schema is the app's own (no server needed to collect the tests); the
# requests go to a real `tossim serve` process.
schema = schemathesis.openapi.from_dict(create_app(Settings(demo=False)).openapi(),
                                        config=CONFIG)


@schema.parametrize()
@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case: Any, api_server: tuple[str, list[str]]) -> None:
    base, games = api_server
    if case.path_parameters and "game_id" in case.path_parameters:
        # most requests name a real game (deterministically chosen)
        pick = zlib.crc32(repr((case.path_parameters, case.query, case.body)).encode())
        if pick % 4:
            case.path_parameters["game_id"] = games[pick % 3]
    case.call_and_validate(base_url=base, timeout=WAIT)  # every check


def test_served_schema_is_the_apps(api_server: tuple[str, list[str]]) -> None:
    served = httpx.get(f"{api_server[0]}/openapi.json", timeout=WAIT).json()
    assert served == create_app(Settings(demo=False)).openapi()
    assert set(served["paths"]) >= {"/api/health", "/api/lobbies", "/api/lobbies/{game_id}",
                                    "/api/lobbies/{game_id}/join",
                                    "/api/lobbies/{game_id}/start", "/api/games",
                                    "/api/games/{game_id}", "/api/games/{game_id}/replay"}
