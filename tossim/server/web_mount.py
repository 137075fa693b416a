"""The web client's static files, mounted at `/` after every API route, and
the API's own 405 answer. The mount never takes a path under `/api/`: a
request there that no route takes fully (an unknown path, or a method the path
does not have, such as OPTIONS) is answered by the API, 404, or 405 with every
method the path has in `Allow`, instead of by the static files, whose `Allow:
GET, HEAD` would describe the web client, not the API (docs/api.md, "HTTP")."""

from __future__ import annotations

import re

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.routing import Match, Mount, compile_path
from starlette.types import Scope

API_PREFIX = "/api/"


class WebMount(Mount):
    """A mount that matches nothing under /api/ (see the module's docstring)."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        path = scope.get("path", "")
        if path == API_PREFIX[:-1] or path.startswith(API_PREFIX):
            return Match.NONE, {}
        return super().matches(scope)


def path_methods(app: FastAPI) -> list[tuple[re.Pattern[str], str]]:
    """Each documented path's pattern and its methods (an `Allow` value), from
    the app's OpenAPI schema (computed once)."""
    table: list[tuple[re.Pattern[str], str]] | None = getattr(app.state, "path_methods", None)
    if table is None:
        table = [(compile_path(path)[0], ", ".join(sorted(m.upper() for m in ops)))
                 for path, ops in app.openapi()["paths"].items()]
        app.state.path_methods = table
    return table


async def method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
    """405 with every method of the path in `Allow` (Starlette names only the
    first route's)."""
    detail = exc.detail if isinstance(exc, HTTPException) else "Method Not Allowed"
    headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else {}
    assert isinstance(request.app, FastAPI)
    for pattern, allow in path_methods(request.app):
        if pattern.match(request.url.path):
            headers["Allow"] = allow
            break
    return JSONResponse({"detail": detail}, status_code=405, headers=headers)
