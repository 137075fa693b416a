"""Role facts for players: every role's card and the death causes' texts,
from the registry (tossim/engine/roles/cards.py), so the web client keeps no
table of its own."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from tossim.engine.messages import CAUSE_TEXT
from tossim.engine.roles.cards import RoleCard, role_cards

router = APIRouter(prefix="/api", tags=["roles"])


class RolesOut(BaseModel):
    roles: list[RoleCard]
    causes: dict[str, str]  # death cause key -> "killed by a member of the Mafia"


@router.get("/roles")
async def list_roles() -> RolesOut:
    """Every role's card (alignment, abilities, attributes, goal, attack and
    defense, what a Sheriff and an Investigator learn) and the death causes'
    texts: public facts, the same for everyone."""
    return RolesOut(roles=role_cards(), causes=dict(CAUSE_TEXT))
