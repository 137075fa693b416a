"""The edges of the HTTP API a stranger probes (issue 24, item 9): a token in
a URL is refused whatever its case, API paths are never answered by the web
client's static files, and the schema declares the error answers."""

from __future__ import annotations

import pytest

from tossim.server.app import create_app
from tossim.server.settings import Settings

from .support import Server, create_game, human_game
from .test_server_ws import expect_close


async def test_a_token_in_the_url_is_refused_in_any_case(server: Server) -> None:
    game_id, token = await human_game(server, slot=2)
    seat = f"/ws/games/{game_id}"
    for key in ("token", "TOKEN", "Token", "toKen"):
        await expect_close(server, f"{seat}?{key}={token}", 4400,
                           {"type": "auth", "token": token})
        await expect_close(server, f"/ws/workers?{key}=x", 4400,
                           {"type": "hello", "backends": ["local"], "token": "x"})


async def test_api_paths_do_not_reach_the_static_files(server: Server) -> None:
    c = server.client
    game_id = await create_game(c, start=False, players=7)
    for path, allow in (("/api/lobbies", "GET, POST"),
                        (f"/api/lobbies/{game_id}", "GET, PATCH"),
                        (f"/api/lobbies/{game_id}/start", "POST"),
                        (f"/api/lobbies/{game_id}/seats/1", "DELETE"),
                        ("/api/games", "GET")):
        for method in ("OPTIONS", "PUT", "TRACE"):
            r = await c.request(method, path)
            assert r.status_code == 405, (method, path, r.status_code)
            assert r.headers["allow"] == allow, (method, path)
            assert r.json() == {"detail": "Method Not Allowed"}
    r = await c.get("/api/no-such-thing")
    assert r.status_code == 404 and r.json() == {"detail": "Not Found"}
    # the web client is still served
    r = await c.get("/")
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]


@pytest.mark.parametrize(("path", "method", "codes"), [
    ("/api/lobbies", "post", {"400", "409"}),
    ("/api/lobbies/{game_id}", "get", {"404"}),
    ("/api/lobbies/{game_id}", "patch", {"400", "403", "404", "409"}),
    ("/api/lobbies/{game_id}/seats/{slot}", "delete", {"403", "404", "409"}),
    ("/api/lobbies/{game_id}/join", "post", {"400", "404", "409"}),
    ("/api/lobbies/{game_id}/start", "post", {"403", "404", "409"}),
    ("/api/games/{game_id}", "get", {"404"}),
    ("/api/games/{game_id}/replay", "get", {"403", "404", "409"}),
    ("/api/games/{game_id}/turns", "get", {"403", "404"}),
    ("/api/arenas/{arena_id}/report", "get", {"404"}),
])
def test_schema_declares_the_error_answers(path: str, method: str, codes: set[str]) -> None:
    schema = create_app(Settings(demo=False)).openapi()
    answers = schema["paths"][path][method]["responses"]
    assert codes <= set(answers), (path, method, sorted(answers))
    for code in codes:
        ref = answers[code]["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith("/Problem")
