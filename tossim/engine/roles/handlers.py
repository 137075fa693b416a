"""The table of night handlers: ability key -> function.

A role module (`roles/town.py`, `roles/mafia.py`, ...) registers its handlers
with `@handler("heal")`; the registry's `Ability.handler_key` names one; the
night queue (`engine/night.py`) calls it. Role modules may also contribute
message texts (`messages(...)`), so adding a role edits its own module only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tossim.engine import messages as _messages
from tossim.engine.roles.registry import Ability, Level

if TYPE_CHECKING:
    from tossim.engine.night import Night
    from tossim.engine.state import Game, Player


@dataclass(slots=True)
class Act:
    """One queued ability use: the actor's choice (empty for passives)."""

    actor: int
    ability: Ability
    targets: tuple[int, ...] = ()
    chosen: bool = False
    controlled_by: int | None = None  # the Witch that forced this action

    @property
    def target(self) -> int:
        return self.targets[0]


@dataclass(slots=True)
class Attack:
    attacker: int
    target: int
    level: Level
    cause: str
    visiting: bool
    on_kill: Callable[[Night, int, int], None] | None = field(default=None)



Handler = Callable[["Night", Act], None]
HANDLERS: dict[str, Handler] = {}


def handler(*keys: str) -> Callable[[Handler], Handler]:
    """Register `fn` as the night handler of these ability keys."""
    def register(fn: Handler) -> Handler:
        for key in keys:
            if key in HANDLERS:
                raise ValueError(f"two night handlers for {key!r}")
            HANDLERS[key] = fn
        return fn
    return register


def messages(texts: dict[str, str], causes: dict[str, str] | None = None) -> None:
    """Add a role module's message texts (and death-cause texts) to the table."""
    for key, text in texts.items():
        if _messages.MESSAGES.get(key, text) != text:
            raise ValueError(f"message {key!r} defined twice with different texts")
        _messages.MESSAGES[key] = text
    for key, text in (causes or {}).items():
        _messages.CAUSE_TEXT[key] = text


# Reactions: what a role does when a role blocker visits it while immune
# (`Role.on_block`): fn(night, slot, blocker).
Reaction = Callable[["Night", int, int], None]
REACTIONS: dict[str, Reaction] = {}


def reaction(key: str) -> Callable[[Reaction], Reaction]:
    def register(fn: Reaction) -> Reaction:
        REACTIONS[key] = fn
        return fn
    return register


# Availability predicates (`Ability.available`): fn(game, player) -> bool,
# read by legal.py; registered by role modules with `@available("key")`.
Available = Callable[["Game", "Player"], bool]
AVAILABLE: dict[str, Available] = {}


def available(key: str) -> Callable[[Available], Available]:
    def register(fn: Available) -> Available:
        AVAILABLE[key] = fn
        return fn
    return register


# Role changes after deaths (`Role.becomes`): fn(game, player) -> bool, read
# by phases.after_deaths; the player then takes the role named in `becomes`.
Condition = Callable[["Game", "Player"], bool]
CONDITIONS: dict[str, Condition] = {}


def condition(key: str) -> Callable[[Condition], Condition]:
    def register(fn: Condition) -> Condition:
        CONDITIONS[key] = fn
        return fn
    return register
