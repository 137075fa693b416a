"""Game state. Plain dataclasses, mutated only by `apply` (rules.py) and, for
a prior state before a scenario's first step, `setup.apply_prior_state`.

The RNG lives in the state so that the same config and command log always give
the same game: nothing outside the state influences an outcome.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from tossim.engine.events import Event
from tossim.engine.modes import RULESET_VERSION, RuleFlags, get_mode
from tossim.engine.roles import ROLES, Faction, Role


class Phase(StrEnum):
    DAY1 = "day1"
    DISCUSSION = "discussion"
    VOTING = "voting"
    DEFENSE = "defense"
    JUDGEMENT = "judgement"
    LAST_WORDS = "last_words"
    NIGHT = "night"
    ENDED = "ended"


DAY_PHASES = frozenset({Phase.DAY1, Phase.DISCUSSION, Phase.VOTING, Phase.DEFENSE,
                        Phase.JUDGEMENT, Phase.LAST_WORDS})

MAX_WILL = 400
MAX_DEATH_NOTE = 400
MAX_CHAT = 500


@dataclass(frozen=True)
class GameConfig:
    """Everything needed, with the seed, to recreate a game from its command log."""

    mode: str = "classic"
    players: int = 15
    seed: int = 0
    names: tuple[str, ...] = ()
    # Fixed roles in slot order (scenarios, tests); empty means "deal from the mode".
    roles: tuple[str, ...] = ()
    flags: dict[str, Any] = field(default_factory=dict)
    ruleset: str = RULESET_VERSION
    # A custom role list (mode "custom"): slots as written, e.g. ("Jailor",
    # "Town Investigative", "Random Mafia", "Any"); see engine/role_lists.py.
    role_list: tuple[str, ...] = ()

    def rule_flags(self) -> RuleFlags:
        defaults = get_mode(self.mode).flags.to_dict()
        defaults.update(self.flags)
        return RuleFlags.from_dict(defaults)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode, "players": self.players, "seed": self.seed,
            "names": list(self.names), "roles": list(self.roles),
            "flags": dict(self.flags), "ruleset": self.ruleset,
            # Only when set, so configs stored before custom lists read the same.
            **({"role_list": list(self.role_list)} if self.role_list else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GameConfig:
        return cls(
            mode=data.get("mode", "classic"), players=int(data["players"]),
            seed=int(data.get("seed", 0)), names=tuple(data.get("names", ())),
            roles=tuple(data.get("roles", ())), flags=dict(data.get("flags", {})),
            ruleset=data.get("ruleset", RULESET_VERSION),
            role_list=tuple(data.get("role_list", ())),
        )


# Player effects and their lifetimes. "next_day": set at night, dropped when
# the next night begins (so it covers that night and the following day);
# "until_ignited": until the Arsonist ignites; "game": for the rest of the game.
EFFECTS: dict[str, str] = {
    "blackmailed": "next_day",  # cannot talk or whisper (A1, A2.7)
    "disguised": "next_day",  # value: role key shown to Investigators and on the body
    "doused": "until_ignited",  # value: the douser's role key (what investigators see)
    "remembered": "game",  # an Amnesiac that took a role (wins with it)
}


@dataclass
class Death:
    day: int
    at_night: bool
    causes: list[str]
    will: str
    death_notes: list[str]
    role_shown: str  # what the town sees: the role, a disguise, or "Cleaned"
    cleaned: bool = False  # a Janitor hid the role and the will
    forged: bool = False  # `will` is a Forger's forgery


@dataclass
class Player:
    slot: int  # 1-based seat number, also the lobby join order used for tie-breaks
    name: str
    role: str  # current role key (a Mafioso may become Godfather, ...)
    original_role: str
    uses: dict[str, int]
    alive: bool = True
    will: str = ""
    death_note: str = ""
    revealed: bool = False  # a revealed Mayor
    death: Death | None = None
    target: int | None = None  # Executioner's target
    framed: bool = False
    guilty_conscience: bool = False  # a Vigilante that killed Town: dies next night
    lynched: bool = False
    won_early: bool = False  # Jester lynched / Executioner target lynched
    # Effects that outlive a night, keyed by EFFECTS (value: True, or data such
    # as the disguise's role key). Night-only effects live in the night resolver.
    effects: dict[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> Role:
        return ROLES[self.role]

    @property
    def faction(self) -> Faction:
        return ROLES[self.role].faction


@dataclass
class Game:
    config: GameConfig
    flags: RuleFlags
    players: list[Player]
    rng: random.Random
    day: int = 1
    phase: Phase = Phase.DAY1
    phase_seq: int = 0
    events: list[Event] = field(default_factory=list)
    commands: list[dict[str, Any]] = field(default_factory=list)
    # day state
    votes: dict[int, int] = field(default_factory=dict)
    trials: int = 0
    accused: int | None = None
    verdicts: dict[int, str] = field(default_factory=dict)
    jail_choice: int | None = None  # chosen by the Jailor during the day
    seance_choice: int | None = None  # chosen by a dead Medium during the day
    seance_medium: int | None = None  # ... by this dead Medium
    # night state
    prisoner: int | None = None
    seance: tuple[int, int] | None = None  # (medium, living player)
    night_actions: dict[int, tuple[int, ...]] = field(default_factory=dict)
    haunter: int | None = None  # a Jester lynched today haunts tonight
    haunt_candidates: tuple[int, ...] = ()
    night_deaths: list[int] = field(default_factory=list)
    night_revived: list[int] = field(default_factory=list)
    # role families' state that spans nights (the Vampires' last bite ...)
    memo: dict[str, Any] = field(default_factory=dict)
    # bookkeeping
    last_death_day: int = 0
    result: str | None = None  # "town", "mafia", "serial_killer", "draw"
    winners: tuple[int, ...] = ()

    # ---- lookups used everywhere -------------------------------------------------
    def player(self, slot: int) -> Player:
        return self.players[slot - 1]

    def has_slot(self, slot: object) -> bool:
        return isinstance(slot, int) and not isinstance(slot, bool) \
            and 1 <= slot <= len(self.players)

    def living(self) -> list[Player]:
        return [p for p in self.players if p.alive]

    def name(self, slot: int) -> str:
        return self.players[slot - 1].name

    @property
    def ended(self) -> bool:
        return self.phase is Phase.ENDED

    @property
    def version(self) -> int:
        return len(self.events)
