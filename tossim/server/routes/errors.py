"""The error answers the routes give, declared in the OpenAPI schema so a
client (and schemathesis, tests/server/test_server_schema.py) knows every
status a route may answer; the details are in docs/api.md."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class Problem(BaseModel):
    """An error answer: what was wrong, for a person to read."""

    detail: str


WHY = {
    400: "The body could not be read as JSON",
    403: "Not allowed: not the lobby's owner (or the seat's player), or a view "
         "offered only once the game is over",
    404: "No such game, seat, arena or page",
    409: "The lobby or game is not in a state that allows it (already started, "
         "seat taken, name in use, not started yet)",
    413: "The request body is over the server's limit",
    429: "Too many requests from this client: try again later",
    503: "The server cannot answer this now (a broken model catalogue)",
}


def answers(*codes: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route that may answer these error statuses."""
    return {code: {"model": Problem, "description": WHY[code]} for code in codes}
