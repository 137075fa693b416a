"""Typed commands: the only way anything changes a game.

A replay is the config, the seed and the ordered list of accepted commands;
`to_dict`/`from_dict` give the stored form.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar


@dataclass(frozen=True, slots=True)
class Command:
    type: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        """The stored form: "type" first, then the fields in declaration order."""
        out: dict[str, Any] = {"type": self.type}
        for name in _fields(type(self)):
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        return out


@dataclass(frozen=True, slots=True)
class Chat(Command):
    """Talk in whatever channel the actor has now (day chat, Mafia chat, jail,
    dead chat, seance); `channel` picks one when several are open."""

    type: ClassVar[str] = "chat"
    actor: int
    text: str
    channel: str | None = None


@dataclass(frozen=True, slots=True)
class Whisper(Command):
    type: ClassVar[str] = "whisper"
    actor: int
    target: int
    text: str


@dataclass(frozen=True, slots=True)
class Vote(Command):
    """Vote to put `target` on trial; `target=None` withdraws the vote."""

    type: ClassVar[str] = "vote"
    actor: int
    target: int | None


@dataclass(frozen=True, slots=True)
class Judge(Command):
    type: ClassVar[str] = "judge"
    actor: int
    verdict: str  # guilty | innocent | abstain


@dataclass(frozen=True, slots=True)
class NightAction(Command):
    """Choose (or, with no targets, cancel) tonight's ability; may be changed
    until the night ends."""

    type: ClassVar[str] = "night"
    actor: int
    targets: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class DayAction(Command):
    """Jail (Jailor), seance (dead Medium) or reveal (Mayor). A jail or seance
    with `target=None` is cancelled."""

    type: ClassVar[str] = "day"
    actor: int
    ability: str
    target: int | None = None


@dataclass(frozen=True, slots=True)
class WriteWill(Command):
    type: ClassVar[str] = "will"
    actor: int
    text: str


@dataclass(frozen=True, slots=True)
class WriteDeathNote(Command):
    type: ClassVar[str] = "death_note"
    actor: int
    text: str


@dataclass(frozen=True, slots=True)
class PhaseTimeout(Command):
    """The current phase's timer ran out. `phase_seq` names the phase the timer
    was set for, so a late timer cannot end the wrong phase."""

    type: ClassVar[str] = "timeout"
    phase_seq: int | None = None


COMMAND_TYPES: dict[str, type[Command]] = {
    c.type: c
    for c in (Chat, Whisper, Vote, Judge, NightAction, DayAction, WriteWill,
              WriteDeathNote, PhaseTimeout)
}


# Field names per command class, in declaration order, read once: every
# command applied is stored with `to_dict` and every stored one is read back
# with `command_from_dict`, so neither asks `dataclasses.fields` per call.
_FIELDS: dict[type[Command], tuple[str, ...]] = {}


def _fields(cls: type[Command]) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in fields(cls))
    return names


_ACCEPTED: dict[type[Command], frozenset[str]] = {
    c: frozenset(_fields(c)) | {"type"} for c in COMMAND_TYPES.values()
}


class MalformedCommand(ValueError):
    """A stored or received command that does not have the shape of any command."""


def command_from_dict(data: dict[str, Any]) -> Command:
    if not isinstance(data, dict):
        raise MalformedCommand("a command must be an object")
    kind = data.get("type")
    cls = COMMAND_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise MalformedCommand(f"unknown command type {kind!r}")
    extra = data.keys() - _ACCEPTED[cls]
    if extra:
        raise MalformedCommand(f"unknown field(s) for {kind}: {', '.join(sorted(extra))}")
    kwargs = {k: v for k, v in data.items() if k != "type"}
    if "targets" in kwargs:
        targets = kwargs["targets"]
        if not isinstance(targets, list | tuple):
            raise MalformedCommand("targets must be a list of player numbers")
        kwargs["targets"] = tuple(targets)
    try:
        cmd = cls(**kwargs)
    except TypeError as exc:
        raise MalformedCommand(f"{kind}: {exc}") from None
    _check_types(cmd)
    return cmd


def _check_types(cmd: Command) -> None:
    for name in _fields(type(cmd)):
        value = getattr(cmd, name)
        if name in ("actor", "target", "phase_seq"):
            ok = value is None or (isinstance(value, int) and not isinstance(value, bool))
            if name == "actor":
                ok = isinstance(value, int) and not isinstance(value, bool)
        elif name == "targets":
            ok = all(isinstance(t, int) and not isinstance(t, bool) for t in value)
        else:  # text, verdict, ability, channel
            ok = isinstance(value, str) or (name == "channel" and value is None)
        if not ok:
            raise MalformedCommand(f"{cmd.type}: bad value for {name}: {value!r}")
