"""Role registry: the single table every other part of the engine reads, and
the night handlers of each role family (imported here so they register)."""

from tossim.engine.roles import (  # noqa: F401  (register handlers)
    mafia,
    neutral,
    town,
    vampire,
)
from tossim.engine.roles.registry import (
    FRAMER_GROUP,
    GROUP_OF,
    INVESTIGATOR_GROUPS,
    ROLES,
    Ability,
    Faction,
    Level,
    Role,
    TargetRule,
    cover_claims,
    find_role,
    role,
    threat,
    town_roles,
)

__all__ = [
    "FRAMER_GROUP",
    "GROUP_OF",
    "INVESTIGATOR_GROUPS",
    "ROLES",
    "Ability",
    "Faction",
    "Level",
    "Role",
    "TargetRule",
    "cover_claims",
    "find_role",
    "role",
    "threat",
    "town_roles",
]
