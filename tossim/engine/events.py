"""Events: everything that happens, each with the audience allowed to see it.

The audience is fixed when the event is emitted (a player who dies later does
not gain the dead chat of earlier nights, exactly as in the game). `view.py`
is the only code that decides what a viewer sees, and it only reads this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Audience:
    """`kind` says why these players may see it (for filters and docs);
    `players` says who, concretely. Omniscient viewers see every event."""

    kind: str  # public | players | mafia | dead | jail | seance | omniscient
    players: frozenset[int] = frozenset()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "players": sorted(self.players)}


PUBLIC = Audience("public")
OMNISCIENT = Audience("omniscient")


def to(*slots: int) -> Audience:
    return Audience("players", frozenset(slots))


@dataclass(frozen=True, slots=True)
class Event:
    v: int  # the game's event version: 1, 2, 3 ... with no gaps
    day: int
    phase: str
    key: str  # stable message key, e.g. "night.healed"
    audience: Audience
    text: str  # the message as the game would print it
    data: dict[str, Any] = field(default_factory=dict)
    # Facts only omniscient viewers may read (who the anonymous Jailor is, ...).
    secret: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, *, include_secret: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "v": self.v,
            "day": self.day,
            "phase": self.phase,
            "key": self.key,
            "audience": self.audience.to_dict(),
            "text": self.text,
            "data": self.data,
        }
        if include_secret and self.secret:
            out["secret"] = self.secret
        return out
