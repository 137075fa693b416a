"""Lobbies: create, list, join (claim a human seat), change settings, remove a
player, start. Changing, removing and starting take the owner token that
`POST /api/lobbies` returned, as `Authorization: Bearer <owner_token>`."""

from __future__ import annotations

from pathlib import Path as PathLib
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, HTTPException, Path, Request
from fastapi.responses import PlainTextResponse

from tossim.server import service
from tossim.server.deps import call
from tossim.server.lobby_watch import notify_lobby
from tossim.server.routes.errors import answers
from tossim.store import GameRow

router = APIRouter(prefix="/api/lobbies", tags=["lobbies"])
modes_router = APIRouter(prefix="/api", tags=["lobbies"])

Authorization = Annotated[str | None, Header(description="Bearer <owner_token>")]


@modes_router.get("/modes")
async def list_modes() -> dict[str, Any]:
    """Every mode the engine deals (with its role list) and the speeds a lobby may choose."""
    return service.modes_out()


@router.post("", status_code=201, responses=answers(400, 409, 413, 429))
async def create_lobby(spec: service.LobbyIn, request: Request) -> dict[str, Any]:
    """Create a lobby. Seats not listed are AI seats with the scripted backend.
    The answer's `owner_token` (and, with `name`, the creator's `seat`) is shown
    only once; only its SHA-256 is stored. A client address creates at most
    `lobby_rate_limit` lobbies per `lobby_rate_seconds` (429 beyond)."""
    rate = request.app.state.lobby_rate
    if not await rate.allow(request.client.host if request.client else ""):
        raise HTTPException(429, rate.message(),
                            headers={"Retry-After": str(int(rate.seconds))})
    row, shown = await call(service.open_lobby(request.app.state.store, spec,
                                               settings=request.app.state.settings))
    return {**service.lobby_out(row), **shown}


@router.get("")
async def list_lobbies(request: Request) -> list[dict[str, Any]]:
    rows = await request.app.state.store.list_games(status="lobby")
    return [service.lobby_out(r) for r in rows]


@router.get("/{game_id}", responses=answers(404))
async def get_lobby(game_id: str, request: Request) -> dict[str, Any]:
    return service.lobby_out(await call(service.get_row(request.app.state.store, game_id)))


@router.patch("/{game_id}", responses=answers(400, 403, 404, 409, 413))
async def update_lobby(game_id: str, body: service.LobbySettingsIn, request: Request,
                       authorization: Authorization = None) -> dict[str, Any]:
    """The owner changes the speed or the seats nobody has claimed."""
    row = await call(service.update_lobby(request.app.state.store, game_id, body,
                                          authorization, settings=request.app.state.settings))
    await notify_lobby(request.app.state.bus, game_id, "settings")
    return service.lobby_out(row)


@router.delete("/{game_id}/seats/{slot}", responses=answers(403, 404, 409))
async def remove_seat(game_id: str, request: Request,
                      slot: Annotated[int, Path(ge=1, le=15)],
                      authorization: Authorization = None) -> dict[str, Any]:
    """Free a claimed human seat: the owner removes anyone (Bearer owner token),
    a player leaves with their own seat token (Bearer seat token)."""
    row = await call(service.remove_seat(request.app.state.store, game_id, slot,
                                         authorization))
    # the freed claim's sockets close (4401) when they read this
    await notify_lobby(request.app.state.bus, game_id, "seats", slot=slot)
    return service.lobby_out(row)


@router.post("/{game_id}/join", responses=answers(400, 404, 409, 413))
async def join_lobby(game_id: str, body: service.JoinIn, request: Request) -> dict[str, Any]:
    """Claim a free human seat; the token in the answer is shown only once."""
    seat = await call(service.join(request.app.state.store, game_id, body))
    await notify_lobby(request.app.state.bus, game_id, "seats", slot=seat["slot"])
    return seat


@router.post("/{game_id}/start", responses=answers(403, 404, 409))
async def start_lobby(game_id: str, request: Request,
                      authorization: Authorization = None) -> dict[str, Any]:
    """Start the game (the owner only); unclaimed human seats are played by scripted bots."""
    state = request.app.state
    row = await call(service.get_row(state.store, game_id))
    await call(_owner(row, authorization, "start it"))
    row = await call(service.start(state.store, state.actors, game_id))
    return service.lobby_out(row)


async def _owner(row: GameRow, authorization: str | None, what: str) -> None:
    service.check_owner(row, authorization, what)


DOCS_DIR = PathLib(__file__).resolve().parents[3] / "docs"
DOC_PAGES = {"rules": "rules.md", "roles": "roles.md"}


@modes_router.get("/docs/{page}", response_class=PlainTextResponse,
                    responses=answers(404))
async def doc_page(page: Literal["rules", "roles"]) -> PlainTextResponse:
    """The rules or the role list (docs/*.md, Markdown) for the web client's rules page."""
    try:
        text = (DOCS_DIR / DOC_PAGES[page]).read_text(encoding="utf-8")
    except OSError:
        raise HTTPException(404, "this server has no docs folder") from None
    return PlainTextResponse(text)  # Markdown, served as text/plain (as the schema says)
