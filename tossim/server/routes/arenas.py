"""Arenas: the list, and each arena's report (the figures of `tossim arena
report`, which the leaderboard page shows)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request

router = APIRouter(prefix="/api/arenas", tags=["arenas"])


@router.get("")
async def list_arenas(request: Request) -> list[dict[str, Any]]:
    """Arenas, newest first: id, status, spec (entries, games, players, mode,
    seed) and how many planned games have finished."""
    store = request.app.state.store
    out = []
    for a in await store.list_arenas():
        full = await store.get_arena(a.id)
        ids = [g.game_id for g in full.games] if full is not None else []
        statuses = await store.game_statuses(ids)
        out.append({"id": a.id, "status": a.status, "created_at": a.created_at.isoformat(),
                    "spec": a.spec, "planned": len(ids),
                    "finished": sum(1 for s in statuses.values() if s == "finished"),
                    "live": sum(1 for s in statuses.values() if s == "live")})
    return out


@router.get("/{arena_id}/report")
async def arena_report(arena_id: str, request: Request) -> dict[str, Any]:
    """The arena's figures: per entry, win rates (overall, per faction, per
    role) with 95% Wilson intervals, OpenSkill ratings, survival, votes on
    Mafia, fault rates, tokens, cost and latency."""
    from tossim.arena.report import arena_report as build

    data = await build(request.app.state.store, arena_id) if len(arena_id) <= 32 else None
    if data is None:
        raise HTTPException(404, "no such arena")
    return data
