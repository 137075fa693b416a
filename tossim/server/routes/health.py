"""Health: the store answers, which bus is in use, how many games run here."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

router = APIRouter(prefix="/api", tags=["health"])


@router.get("/health")
async def health(request: Request) -> dict[str, Any]:
    state = request.app.state
    db = "ok"
    try:
        await state.store.list_games(limit=1)
    except Exception as exc:  # report, don't crash: this is what health is for
        db = f"error: {type(exc).__name__}"
    return {"status": "ok" if db == "ok" else "degraded", "db": db, "bus": state.bus.kind,
            "live_games": len(state.actors.actors)}
