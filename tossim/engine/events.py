"""Events: everything that happens, each with the audience allowed to see it.

The audience is fixed when the event is emitted (a player who dies later does
not gain the dead chat of earlier nights, exactly as in the game). `view.py`
is the only code that decides what a viewer sees, and it only reads this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class FrozenDict(dict[str, Any]):
    """Event data: one object shared by every viewer of the event, so it must
    refuse changes (a seat editing its observation would rewrite the log).
    Still a dict for `json.dumps` and readers; `dict(d)` gives a mutable copy."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("event data is read-only")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


# Values that are already immutable (most event data: slots, names, texts).
_ATOMS = frozenset({str, int, float, bool, type(None)})


def freeze(value: Any) -> Any:
    """Lists become tuples and dicts FrozenDicts, all the way down. Every event
    freezes its data, so plain values skip the recursion."""
    if type(value) in _ATOMS:
        return value
    if isinstance(value, dict):
        if _ATOMS.issuperset(map(type, value.values())):  # flat: copied in one step
            return FrozenDict(value)
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        if _ATOMS.issuperset(map(type, value)):
            return tuple(value)
        return tuple([freeze(v) for v in value])
    return value


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


_TO: dict[tuple[int, ...], Audience] = {}


def to(*slots: int) -> Audience:
    """The audience of these players (one shared value per group: most private
    events go to one player, and an Audience is frozen)."""
    audience = _TO.get(slots)
    if audience is None:
        if len(_TO) > 4096:
            _TO.clear()
        audience = _TO[slots] = Audience("players", frozenset(slots))
    return audience


@dataclass(frozen=True)
class Event:
    v: int  # the game's event version: 1, 2, 3 ... with no gaps
    day: int
    phase: str
    key: str  # stable message key, e.g. "night.healed"
    audience: Audience
    text: str  # the message as the game would print it
    data: dict[str, Any] = field(default_factory=FrozenDict)
    # Facts only omniscient viewers may read (who the anonymous Jailor is, ...).
    secret: dict[str, Any] = field(default_factory=FrozenDict)
    # The form every non-omniscient viewer receives (see view.project_event),
    # built once here instead of once per viewer.
    shared: FrozenDict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shared", FrozenDict(
            v=self.v, day=self.day, phase=self.phase, key=self.key,
            audience=self.audience.kind, text=self.text, data=self.data))

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


_new = object.__new__


def make_event(v: int, day: int, phase: str, key: str, audience: Audience, text: str,
               data: FrozenDict, secret: FrozenDict) -> Event:
    """`Event(...)` for the engine's hot path (`log.emit`, some 500 events a
    game): the new object's `__dict__` is filled in one step instead of
    through the frozen dataclass's `__init__` (a guarded setattr per field
    cost more than the rest of an event). The same object `Event(...)` makes,
    `shared` included (`tests/test_view_typed.py` checks it)."""
    event = _new(Event)
    event.__dict__.update(
        v=v, day=day, phase=phase, key=key, audience=audience, text=text, data=data,
        secret=secret, shared=FrozenDict(v=v, day=day, phase=phase, key=key,
                                         audience=audience.kind, text=text, data=data))
    return event
