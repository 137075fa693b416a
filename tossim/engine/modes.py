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
    key: str
    name: str
    slots: tuple[str, ...]  # role keys or a random category
    min_players: int
    max_players: int
    flags: RuleFlags = field(default_factory=RuleFlags)


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
)

MODES: dict[str, Mode] = {CLASSIC.key: CLASSIC}

# Standard phase lengths in seconds (rules reference A1). The engine never reads
# a clock: the server turns these into PhaseTimeout commands.
DURATIONS: dict[str, dict[str, int]] = {
    "current": {"day1": 15, "discussion": 45, "voting": 30, "defense": 20,
                "judgement": 20, "last_words": 7, "night": 37},
    "old": {"day1": 15, "discussion": 45, "voting": 30, "defense": 20,
            "judgement": 20, "last_words": 5, "night": 30},
}


def get_mode(key: str) -> Mode:
    try:
        return MODES[key]
    except KeyError:
        raise ValueError(f"unknown mode {key!r}; known: {', '.join(MODES)}") from None
