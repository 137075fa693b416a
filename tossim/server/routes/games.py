"""Live and finished games: listing, public summaries and replays."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, HTTPException, Query, Request

from tossim.server import service
from tossim.server.bus import game_channel
from tossim.server.deps import call
from tossim.server.lobby_watch import notify_lobby
from tossim.server.routes.errors import answers

router = APIRouter(prefix="/api/games", tags=["games"])


@router.get("")
async def list_games(request: Request,
                     status: Literal["live", "finished"] | None = None,
                     limit: int = Query(100, ge=1, le=100,
                                        description="at most this many games, newest first"),
                     offset: int = Query(0, ge=0, le=1_000_000,
                                         description="skip this many (paging)"),
                     ) -> list[dict[str, Any]]:
    store = request.app.state.store
    rows = []
    for s in ([status] if status else ["live", "finished"]):
        rows.extend(await store.list_games(status=s, limit=limit, offset=offset))
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


@router.get("/{game_id}", responses=answers(404))
async def get_game(game_id: str, request: Request) -> dict[str, Any]:
    """A game's public summary: seats, status, phase, graveyard, result."""
    return await call(service.summary(request.app.state.store, game_id))


@router.get("/{game_id}/replay", responses=answers(403, 404, 409))
async def get_replay(game_id: str, request: Request,
                     viewer: str = Query("public", max_length=12,
                                         description="public, omniscient or a seat number"),
                     ) -> dict[str, Any]:
    """The game as this viewer may see it: events, and for omniscient viewers
    (finished or all-AI games) the config, seed and command log."""
    return await call(service.replay(request.app.state.store, game_id, viewer))


@router.get("/{game_id}/turns", responses=answers(403, 404))
async def get_turns(game_id: str, request: Request,
                    slot: int | None = Query(None, ge=1, le=15,
                                             description="only this seat's turns"),
                    ) -> dict[str, Any]:
    """Model seats' stored turns (thinking, tool calls, observations, action),
    offered where the omniscient view is (finished or all-AI games), else 403.
    Prompts are kept in the store but not served."""
    store = request.app.state.store
    row = await call(service.get_row(store, game_id))
    if not service.privileged_allowed(row):
        raise HTTPException(403, "model seats' turns are offered for all-AI or finished games")
    turns = await store.turns(game_id, slot)
    keys = ("slot", "seq", "day", "phase", "steps", "action", "move")
    return {"turns": [{k: t.get(k) for k in keys} for t in turns]}


@router.post("/{game_id}/next", responses=answers(400, 403, 404, 409, 413))
async def play_again(game_id: str, body: service.NextIn, request: Request,
                     authorization: Annotated[str | None, Header(
                         description="Bearer <this game's seat token>")] = None,
                     ) -> dict[str, Any]:
    """"Play again" for a finished game's players: the game's one next lobby
    (same settings, a new deal), made by the first player who asks (who gets
    its `owner_token`), with a `seat` claimed for each player who asks. Every
    socket still on the finished game is told (`{"type": "next", "lobby"}`),
    and its summary's `next_lobby` points there."""
    state = request.app.state
    row, shown, created = await call(service.play_again(
        state.store, game_id, body, authorization, settings=state.settings))
    if created:
        await state.bus.publish(game_channel(game_id), {"type": "next", "lobby": row.id})
    if "seat" in shown:
        await notify_lobby(state.bus, row.id, "seats", slot=shown["seat"]["slot"])
    return {**service.lobby_out(row), **shown, "created": created}
