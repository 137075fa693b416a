"""The model catalogue as the lobby form and the leaderboard see it: entry
names, backends and capabilities, and whether this server can play each one
now. No base URL and no key (nor the name of its variable's value) leaves
the server."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel

from tossim.inference.catalogue import CatalogueError, cached_catalogue
from tossim.inference.chat_backend import probe_state
from tossim.server.routes.errors import answers
from tossim.server.service import entry_unavailable

router = APIRouter(prefix="/api", tags=["models"])


class ModelOut(BaseModel):
    name: str
    backend: str
    model: str | None
    protocol: str
    builtin: bool
    available: bool
    reason: str | None
    capabilities: dict[str, Any]


class ModelsOut(BaseModel):
    models: list[ModelOut]


@router.get("/models", response_model=ModelsOut, responses=answers(503))
async def list_models(request: Request) -> ModelsOut:
    """Every catalogue entry a lobby seat may name in `model`."""
    settings = request.app.state.settings
    try:
        catalogue = cached_catalogue(settings.models)
    except CatalogueError as exc:
        raise HTTPException(503, f"the server's model catalogue is broken: {exc}") from None
    out = []
    for e in catalogue.entries:
        why = entry_unavailable(e, settings)
        caps = e.capabilities()
        caps.update(probe_state(e))  # chat: the constraint its endpoint honours (start-up probe)
        out.append(ModelOut(**e.public(), available=why is None, reason=why,
                            capabilities=caps))
    return ModelsOut(models=out)
