"""Game modes (role lists) and the rule flags on which sources disagree.

Every [VER] point of the rules reference is a field of `RuleFlags` with the
default documented in `docs/rules.md`; a scenario or a lobby can override any
of them, and the flags travel with the game config so a replay uses the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

RULESET_VERSION = "tossim-classic-1"

TOWN_KILLING = "town_killing"
RANDOM_TOWN = "random_town"


@dataclass(frozen=True)
class RuleFlags:
    # A2.7 Framer: "night" (old: the frame lasts that night) or
    # "until_investigated" (new: until a Sheriff/Investigator checks the target).
    frame_duration: str = "until_investigated"
    # A2.8 Jester haunt candidates: "guilty" (old) or "guilty_or_abstain".
    haunt_voters: str = "guilty_or_abstain"
    # A2.4 Serial Killer vs role blocker: "in_addition" (post-2017, the SK still
    # attacks its target) or "instead" (pre-2017, the blocker replaces the target).
    sk_blocker: str = "in_addition"
    # A2.4 Cautious Serial Killer: stays home when blocked or jailed.
    sk_cautious: bool = False
    # A6/A7 Executioner must be alive when its target is lynched to win.
    executioner_must_survive: bool = True
    # A7 Whether a role-blocked Vigilante spends its bullet.
    vigilante_blocked_spends_bullet: bool = False
    # A2.1 Retributionist priority: 1 (current, not role-blockable) or 3 (old Classic).
    retributionist_priority: int = 1
    # A4 Sheriff wording: "classic" ("Your target is a member of the Mafia!") or
    # "modern" ("Your target is suspicious!").
    sheriff_wording: str = "classic"
    # A3 Spy: the old Spy also read the Mafia's night chat (anonymised).
    spy_reads_mafia_chat: bool = False
    # A1 Last Words / Night lengths: "current" (7 s / 37 s) or "old" (5 s / 30 s).
    durations: str = "current"
    # A1 At most this many trials per day.
    max_trials_per_day: int = 3
    # A6 Draw when nobody has died for two whole days, from this day on.
    draw_from_day: int = 7
    # A6 Apply the stalemate table (see victory.py) when two opposing players remain.
    stalemate_table: bool = True
    # A5 Custom lists: whether their "Any" slots may deal the custom-only roles
    # (Vampire, Vampire Hunter); their exact, category and faction slots always may.
    any_deals_custom_only: bool = False
    # A2.9 Amnesiac and unique roles: "allowed_if_none_living" (new) or "barred" (old).
    amnesiac_unique: str = "allowed_if_none_living"
    # A2.8 Arsonist douse: the old client told the target "You were doused in gas!".
    douse_message: bool = False
    # A7 Whether a Janitor spends a cleaning when its target survives (unconfirmed).
    janitor_spends_on_survivor: bool = False
    # A2.7 Forger uses: 3 (original) or 2 (later).
    forger_uses: int = 3

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RuleFlags:
        data = dict(data or {})
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"unknown rule flag(s): {', '.join(unknown)}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Mode:
    """A mode deals `slots` (role-list slots, see role_lists.py); with fewer
    than `max_players` players, only the first N. `custom` modes take their
    slots from the game config instead."""

    key: str
    name: str
    slots: tuple[str, ...]  # role keys, categories, "random_town", "Any" ...
    min_players: int
    max_players: int
    flags: RuleFlags = field(default_factory=RuleFlags)
    custom: bool = False
    description: str = ""
    # At most this many roles of a faction (All Any: "0 to 5 Mafia", A5).
    faction_caps: tuple[tuple[str, int], ...] = ()


CLASSIC = Mode(
    key="classic",
    name="Classic",
    slots=(
        "sheriff", "doctor", "investigator", "jailor", "medium", "godfather", "framer",
        "executioner", "escort", "mafioso", "lookout", "serial_killer", TOWN_KILLING,
        "jester", RANDOM_TOWN,
    ),
    min_players=7,
    max_players=15,
    description="The original 15-slot list; smaller games use its first N slots.",
)

# A5: 9 Town, 4 Mafia, 2 Neutral.
RANKED_PRACTICE = Mode(
    key="ranked",
    name="Ranked Practice",
    slots=(
        "Jailor", "Town Investigative", "Town Investigative", "Town Protective",
        "Town Killing", "Town Support", "Random Town", "Random Town", "Random Town",
        "Godfather", "Mafioso", "Random Mafia", "Random Mafia", "Neutral Killing",
        "Neutral Evil",
    ),
    min_players=15,
    max_players=15,
    description="Ranked's list: 9 Town, 4 Mafia, 2 Neutral.",
)

# A5: every slot Any, unique roles at most once; a game with no opposing
# factions ends at the start of Day 2 (victory.py's ordinary check does that).
ALL_ANY = Mode(
    key="all_any",
    name="All Any",
    slots=("Any",) * 15,
    min_players=7,
    max_players=15,
    description="Every slot Any (unique roles at most once); 0 to 5 Mafia.",
    faction_caps=(("mafia", 5),),
)

# A custom list: the slots come from GameConfig.role_list.
CUSTOM = Mode(
    key="custom",
    name="Custom",
    slots=(),
    min_players=1,
    max_players=15,
    custom=True,
    description="Your own list of slots: roles, categories, Random Town/Mafia/Neutral, Any.",
)

MODES: dict[str, Mode] = {m.key: m for m in (CLASSIC, RANKED_PRACTICE, ALL_ANY, CUSTOM)}
# Names people type for the same modes.
_ALIASES = {"ranked_practice": "ranked", "ranked practice": "ranked", "allany": "all_any",
            "all any": "all_any", "all-any": "all_any"}

# Standard phase lengths in seconds (rules reference A1). The engine never reads
# a clock: the server turns these into PhaseTimeout commands.
DURATIONS: dict[str, dict[str, int]] = {
    "current": {"day1": 15, "discussion": 45, "voting": 30, "defense": 20,
                "judgement": 20, "last_words": 7, "night": 37},
    "old": {"day1": 15, "discussion": 45, "voting": 30, "defense": 20,
            "judgement": 20, "last_words": 5, "night": 30},
}


def get_mode(key: str) -> Mode:
    norm = key.strip().lower()
    try:
        return MODES[_ALIASES.get(norm, norm)]
    except KeyError:
        raise ValueError(f"unknown mode {key!r}; known: {', '.join(MODES)}") from None
