"""Role lists: slots, how they are checked, and how a role is dealt into each.

A slot is written the way players write role lists (rules reference A5):
an exact role ("Jailor"), an alignment category ("Town Investigative",
"Mafia Support", "Neutral Killing"), a faction ("Random Town", "Random Mafia",
"Random Neutral") or "Any". Keys work too ("town_killing", "random_town"),
which is how the Classic list has always been stored in game configs.

Everything here reads the role registry, so a role added there is dealt by
every list whose slots it fits, with no change in this module. The deal is
deterministic: candidates are in registry order and every random choice uses
the game's RNG, so a config and seed always give the same roles.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from tossim.engine.roles import ROLES, Faction, Role, find_role

# Order in which slot kinds are dealt: the most specific first, so a broad slot
# never takes the last unique role that a narrower slot needed.
_DEAL_ORDER = ("role", "category", "faction", "any")


class SlotKind(StrEnum):
    ROLE = "role"
    CATEGORY = "category"
    FACTION = "faction"
    ANY = "any"


class ConfigError(ValueError):
    """A game config that cannot produce a game (bad player count, unknown role ...)."""


class RoleListError(ConfigError):
    """A role list that cannot be dealt. `slot` is 1-based, None for the whole list."""

    def __init__(self, slot: int | None, text: str, reason: str) -> None:
        self.slot = slot
        self.text = text
        self.reason = reason
        where = f"slot {slot} ({text!r})" if slot is not None else "role list"
        super().__init__(f"{where}: {reason}")


def _norm(text: str) -> str:
    return " ".join(text.replace("_", " ").split()).lower()


def categories() -> dict[str, str]:
    """Every alignment category of the registry, normalised -> display name."""
    return {_norm(r.alignment): r.alignment for r in ROLES.values()}


@dataclass(frozen=True)
class Slot:
    """One slot of a role list, as written and as understood."""

    text: str
    kind: SlotKind
    value: str  # role key, alignment display name, faction value, or "any"

    def candidates(self, *, custom: bool, any_custom_only: bool = False) -> list[Role]:
        """Roles this slot may be dealt, in registry order. Custom-only roles
        (Vampire, Vampire Hunter) come only from custom lists, and from their
        Any slots only when `any_custom_only` says so."""
        if self.kind is SlotKind.ROLE:
            return [ROLES[self.value]]
        allowed = custom and (self.kind is not SlotKind.ANY or any_custom_only)
        out = []
        for r in ROLES.values():
            if r.custom_only and not allowed:
                continue
            if (self.kind is SlotKind.ANY
                    or (self.kind is SlotKind.CATEGORY and r.alignment == self.value)
                    or (self.kind is SlotKind.FACTION and r.faction.value == self.value)):
                out.append(r)
        return out

    def to_text(self) -> str:
        return self.text


def parse_slot(text: str, index: int | None = None,
               known_categories: dict[str, str] | None = None) -> Slot:
    """Understand one slot; raise RoleListError naming it when nothing fits.
    `known_categories`: `categories()`, when the caller has it already."""
    key = _norm(text)
    if not key:
        raise RoleListError(index, text, "empty slot")
    if key == "any":
        return Slot(text, SlotKind.ANY, "any")
    if key.startswith("random "):
        faction = key.removeprefix("random ")
        if faction in {f.value for f in Faction}:
            return Slot(text, SlotKind.FACTION, faction)
    category = (categories() if known_categories is None else known_categories).get(key)
    if category is not None:
        return Slot(text, SlotKind.CATEGORY, category)
    r = find_role(text)
    if r is not None:
        return Slot(text, SlotKind.ROLE, r.key)
    known = ", ".join(sorted(categories().values()))
    raise RoleListError(index, text, "not a role, a category, 'Random Town|Mafia|Neutral' "
                                     f"or 'Any' (categories: {known})")


def parse_role_list(texts: Iterable[str]) -> tuple[Slot, ...]:
    known = categories()  # read the registry once per list, not once per slot
    return tuple(parse_slot(t, i, known) for i, t in enumerate(texts, start=1))


def split_role_list(text: str) -> list[str]:
    """'Jailor, Town Investigative, Any' -> slots (commas or new lines)."""
    return [s.strip() for s in text.replace("\n", ",").split(",") if s.strip()]


def check(slots: Sequence[Slot], players: int, *, custom: bool,
          any_custom_only: bool = False) -> None:
    """Refuse a list that cannot be dealt for `players`, naming the slot.

    Non-unique roles may repeat, so a slot with one non-unique candidate can
    always be filled; the slots left need distinct unique roles, which is a
    bipartite matching (slot -> unique role) that must cover them all."""
    if len(slots) != players:
        more = "more" if len(slots) > players else "fewer"
        raise RoleListError(None, ", ".join(s.text for s in slots),
                            f"{len(slots)} slots for {players} players ({more} slots "
                            "than players)")
    seen: dict[str, int] = {}
    for i, s in enumerate(slots, start=1):
        if s.kind is SlotKind.ROLE and ROLES[s.value].unique:
            if s.value in seen:
                raise RoleListError(i, s.text, f"{ROLES[s.value].name} is unique and already "
                                               f"in slot {seen[s.value]}")
            seen[s.value] = i
    needs: list[tuple[int, list[str]]] = []
    for i, s in enumerate(slots, start=1):
        cands = s.candidates(custom=custom, any_custom_only=any_custom_only)
        if not cands:
            raise RoleListError(i, s.text, "no role can be dealt into this slot here "
                                           "(custom-only roles come only from custom lists)")
        if all(r.unique for r in cands):
            needs.append((i, [r.key for r in cands]))
    owner: dict[str, int] = {}

    def place(slot: int, options: list[str], tried: set[str]) -> bool:
        for key in options:
            if key in tried:
                continue
            tried.add(key)
            other = owner.get(key)
            if other is None or place(other, dict(needs)[other], tried):
                owner[key] = slot
                return True
        return False

    for i, options in needs:
        if not place(i, options, set()):
            names = ", ".join(ROLES[k].name for k in options)
            raise RoleListError(i, slots[i - 1].text,
                                f"no unique role left for it ({names} are unique and "
                                "needed by other slots)")


def deal(slots: Sequence[Slot], rng: random.Random, *, custom: bool,
         any_custom_only: bool = False,
         caps: Sequence[tuple[str, int]] = ()) -> list[str]:
    """Role keys in slot order. Slots are filled most specific first (exact
    roles, categories, factions, Any), each in list order, each a uniform draw
    among its candidates that are not a unique role already dealt and whose
    faction has not reached its cap (`caps`: (faction, most))."""
    limit = dict(caps)
    keys: list[str | None] = [None] * len(slots)
    for kind in _DEAL_ORDER:
        for i, s in enumerate(slots):
            if s.kind.value != kind:
                continue
            if s.kind is SlotKind.ROLE:
                keys[i] = s.value
                continue
            taken = {k for k in keys if k is not None}
            full = {f for f, most in limit.items()
                    if sum(1 for k in keys if k and ROLES[k].faction.value == f) >= most}
            pool = [r.key for r in s.candidates(custom=custom, any_custom_only=any_custom_only)
                    if not (r.unique and r.key in taken) and r.faction.value not in full]
            if not pool:  # check() refuses such lists; kept as a clear failure
                raise RoleListError(i + 1, s.text, "no role left to deal")
            keys[i] = rng.choice(pool)
    return [k for k in keys if k is not None]


def assign(keys: Sequence[str], accepts: Sequence[frozenset[str]]) -> list[int] | None:
    """A perfect matching of dealt roles to slots: for each slot, the index in
    `keys` of the role that fills it, or None when no assignment gives every
    slot a role it accepts (`accepts[i]`: the role keys slot i takes)."""
    if len(keys) != len(accepts):
        return None
    filler: dict[int, int] = {}  # slot index -> index into keys

    def place(ki: int, seen: set[int]) -> bool:
        for si, ok in enumerate(accepts):
            if keys[ki] in ok and si not in seen:
                seen.add(si)
                if si not in filler or place(filler[si], seen):
                    filler[si] = ki
                    return True
        return False

    if not all(place(ki, set()) for ki in range(len(keys))):
        return None
    return [filler[si] for si in range(len(accepts))]


def fit(slots: Sequence[Slot], keys: Sequence[str], *, custom: bool,
        any_custom_only: bool = False) -> list[str] | None:
    """Which dealt role fills which slot: role keys in slot order, or None when
    the roles cannot be the deal of this list (a wrong count, a unique role
    twice, or a role no free slot accepts). Used to check deals from outside,
    whatever order the seats were shuffled into."""
    counts: dict[str, int] = {}
    for k in keys:
        counts[k] = counts.get(k, 0) + 1
        if ROLES[k].unique and counts[k] > 1:
            return None
    accepts = [frozenset(r.key for r in s.candidates(custom=custom,
                                                     any_custom_only=any_custom_only))
               for s in slots]
    order = assign(keys, accepts)
    return None if order is None else [keys[i] for i in order]
