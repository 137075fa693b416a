"""Role registry: the single table every other part of the engine reads."""

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
    find_role,
    role,
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
    "find_role",
    "role",
    "town_roles",
]
