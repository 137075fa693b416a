"""Lobbies: create, list, join (claim a human seat), start."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from tossim.server import service
from tossim.server.deps import call

router = APIRouter(prefix="/api/lobbies", tags=["lobbies"])


@router.post("", status_code=201)
async def create_lobby(spec: service.LobbyIn, request: Request) -> dict[str, Any]:
    """Create a lobby. Seats not listed are AI seats with the scripted backend."""
    row = await call(service.create_lobby(request.app.state.store, spec,
                                         settings=request.app.state.settings))
    return service.lobby_out(row)


@router.get("")
async def list_lobbies(request: Request) -> list[dict[str, Any]]:
    rows = await request.app.state.store.list_games(status="lobby")
    return [service.lobby_out(r) for r in rows]


@router.get("/{game_id}")
async def get_lobby(game_id: str, request: Request) -> dict[str, Any]:
    return service.lobby_out(await call(service.get_row(request.app.state.store, game_id)))


@router.post("/{game_id}/join")
async def join_lobby(game_id: str, body: service.JoinIn, request: Request) -> dict[str, Any]:
    """Claim a free human seat; the token in the answer is shown only once."""
    return await call(service.join(request.app.state.store, game_id, body))


@router.post("/{game_id}/start")
async def start_lobby(game_id: str, request: Request) -> dict[str, Any]:
    """Start the game; unclaimed human seats are played by scripted bots."""
    state = request.app.state
    row = await call(service.start(state.store, state.actors, game_id))
    return service.lobby_out(row)
