"""A player's card for each role: what Town of Salem shows when you look a
role up (alignment, abilities, attributes, goal, attack and defense), built
from the registry's facts so a new role gets its card with no other file
touched. The web client's role card, Roles page and death texts read these
(`GET /api/roles`, docs/api.md), never a table of their own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tossim.engine.roles.registry import (
    GROUP_OF,
    ROLES,
    Ability,
    Faction,
    Level,
    Role,
    threat,
)

ATTACK_TEXT = {Level.NONE: "None", Level.BASIC: "Basic", Level.POWERFUL: "Powerful",
               Level.UNSTOPPABLE: "Unstoppable"}
DEFENSE_TEXT = {Level.NONE: "None", Level.BASIC: "Basic", Level.POWERFUL: "Powerful",
                Level.UNSTOPPABLE: "Invincible"}
SHERIFF_TEXT = {"": "Not suspicious", "mafia": "Suspicious (Mafia)",
                "serial_killer": "Suspicious (Serial Killer)", "werewolf": "Suspicious (Werewolf)"}


@dataclass(frozen=True)
class RoleCard:
    key: str
    name: str
    faction: str
    alignment: str
    summary: str
    goal: str
    attack: str
    defense: str
    abilities: tuple[str, ...]  # "Night: heal a player", "Day: reveal"
    attributes: tuple[str, ...]  # "Cannot be role blocked", "Unstoppable attack", ...
    sheriff: str  # what a Sheriff learns when nobody framed them
    investigator: tuple[str, ...]  # the Investigator's result group (A4)
    threat: float  # the Town's view (docs/rules.md#role-facts)
    unique: bool

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "name": self.name, "faction": self.faction,
                "alignment": self.alignment, "summary": self.summary, "goal": self.goal,
                "attack": self.attack, "defense": self.defense,
                "abilities": list(self.abilities), "attributes": list(self.attributes),
                "sheriff": self.sheriff, "investigator": list(self.investigator),
                "threat": self.threat, "unique": self.unique}


def _ability(when: str, a: Ability | None) -> list[str]:
    if a is None:
        return []
    verb = a.verb or a.name.replace("_", " ")
    return [f"{when}: {verb}"]


def _team(chat: str) -> str:
    return "Mafia" if chat == "mafia" else f"{chat.title()}s"


def _attributes(r: Role) -> list[str]:
    out: list[str] = []
    if r.attack is Level.UNSTOPPABLE:
        out.append("Unstoppable attack: no defense saves its target")
    if r.unique:
        out.append("Unique: only one per game")
    if r.roleblock_immune:
        out.append("Cannot be role blocked")
    if r.control_immune:
        out.append("Cannot be controlled by a Witch")
    if r.detection_immune:
        out.append("Appears innocent to the Sheriff"
                   + (" except on a full moon" if r.detected_on_full_moon else ""))
    if r.death_note:
        out.append("Can leave a death note")
    if r.night_chat:
        out.append(f"Talks with the {_team(r.night_chat)} at night")
    if r.hears_chat:
        out.append(f"Hears the {_team(r.hears_chat)} talk at night")
    for use, n in sorted(r.uses.items()):
        out.append(f"{use.replace('_', ' ').capitalize()}: {n}")
    for use in sorted(set(r.uses_flags) - set(r.uses)):
        out.append(f"{use.replace('_', ' ').capitalize()}: limited")
    labels = r.night.labels if r.night is not None else frozenset()
    if "unblockable" in labels:
        out.append("Its night ability cannot be role blocked")
    return out


def role_card(r: Role) -> RoleCard:
    return RoleCard(
        key=r.key, name=r.name, faction=r.faction.value, alignment=r.alignment,
        summary=r.summary, goal=r.goal, attack=ATTACK_TEXT[r.attack],
        defense=DEFENSE_TEXT[r.defense],
        abilities=tuple(_ability("Night", r.night) + _ability("Day", r.day)),
        attributes=tuple(_attributes(r)),
        sheriff=SHERIFF_TEXT.get(r.suspicious, "Suspicious"),
        investigator=GROUP_OF.get(r.name, ()), threat=threat(r), unique=r.unique)


def role_cards() -> list[RoleCard]:
    """Every role's card: Town first, then Mafia, then the neutrals, as dealt
    (custom-only roles last)."""
    order = {Faction.TOWN: 0, Faction.MAFIA: 1, Faction.NEUTRAL: 2}
    return [role_card(r) for r in sorted(ROLES.values(),
                                         key=lambda r: (r.custom_only, order[r.faction]))]
