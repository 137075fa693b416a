"""Arenas: the list, and each arena's report (the figures of `tossim arena
report`, which the leaderboard page shows)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request

from tossim.server.routes.errors import answers

router = APIRouter(prefix="/api/arenas", tags=["arenas"])
CACHED_REPORTS = 32


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


@router.get("/{arena_id}/report", responses=answers(404))
async def arena_report(arena_id: str, request: Request) -> dict[str, Any]:
    """The arena's figures: per entry, win rates (overall, per faction, per
    role) with 95% Wilson intervals, OpenSkill ratings, survival, votes on
    Mafia, fault rates, tokens, cost and latency."""
    from tossim.analysis.arena_report import arena_report as build

    store = request.app.state.store
    arena = await store.get_arena(arena_id) if len(arena_id) <= 32 else None
    if arena is None:
        raise HTTPException(404, "no such arena")
    # the report re-runs every finished game: keep it until a game changes status
    statuses = await store.game_statuses([g.game_id for g in arena.games])
    key = (arena.status, tuple(sorted(statuses.items())))
    cache: dict[str, tuple[Any, dict[str, Any]]] | None = getattr(
        request.app.state, "arena_reports", None)
    if cache is None:
        cache = request.app.state.arena_reports = {}
    hit = cache.get(arena_id)
    if hit is not None and hit[0] == key:
        return hit[1]
    data = await build(store, arena_id)
    if data is None:
        raise HTTPException(404, "no such arena")
    if len(cache) >= CACHED_REPORTS:
        cache.pop(next(iter(cache)))
    cache[arena_id] = (key, data)
    return data
