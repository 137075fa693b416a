"""Live and finished games: listing, public summaries and replays."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Request

from tossim.server import service
from tossim.server.deps import call

router = APIRouter(prefix="/api/games", tags=["games"])


@router.get("")
async def list_games(request: Request,
                     status: Literal["live", "finished"] | None = None) -> list[dict[str, Any]]:
    store = request.app.state.store
    rows = []
    for s in ([status] if status else ["live", "finished"]):
        rows.extend(await store.list_games(status=s))
    out = []
    for r in rows:
        item = service.lobby_out(r)
        # a live game with human seats shows no version: its advance at
        # night would tell that hidden events happened (the summary gives
        # the public sequence)
        version = r.version if service.privileged_allowed(r) else None
        item.update({"day": r.day, "phase": r.phase, "version": version,
                     "result": r.result, "winners": r.winners})
        out.append(item)
    return out


@router.get("/{game_id}")
async def get_game(game_id: str, request: Request) -> dict[str, Any]:
    """A game's public summary: seats, status, phase, graveyard, result."""
    return await call(service.summary(request.app.state.store, game_id))


@router.get("/{game_id}/replay")
async def get_replay(game_id: str, request: Request,
                     viewer: str = Query("public", max_length=12,
                                         description="public, omniscient or a seat number"),
                     ) -> dict[str, Any]:
    """The game as this viewer may see it: events, and for omniscient viewers
    (finished or all-AI games) the config, seed and command log."""
    return await call(service.replay(request.app.state.store, game_id, viewer))
