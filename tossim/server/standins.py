"""Stand-ins for players who are away (docs/api.md, "Stand-ins").

A human seat whose every socket stayed closed for a whole phase of a timed
game, or whose player sent no command in `IDLE_PHASES` phases in a row in
which they had an action to take (a vote, a verdict, a night ability), is
played by a scripted bot from the next phase on, so a game with an absent
player still has someone voting and acting in that seat. Everyone is
told which seats a stand-in plays (the page labels them "(stand-in)"); the
seat is given back the moment one of the player's sockets opens again (or a
command of theirs arrives), and the player, and only the player, is told
what the stand-in did meanwhile. The stand-in's commands are stored with the
origin `standin:<slot>`.

Seat sockets say when they open and close (`presence` messages on the game's
command channel, from whichever server process holds them): this module only
keeps the books; the game's actor (tossim.server.runner) asks the bots.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from tossim.agents.seat import Seat
from tossim.engine.commands import Command
from tossim.engine.view import View

IDLE_PHASES = 2
"""Phases in a row with an action to take and no command at all (not a
vote, not a line of chat) after which a connected player counts as away."""


@dataclass
class Absence:
    """One stretch of a player's absence: when the stand-in took over (the
    phase, in words) and what it did, in words."""

    since: str
    did: list[str] = field(default_factory=list)


# What a stand-in never does for an absent player: the will and death note
# are the player's own words
KEEPS_OFF = ("will", "death_note")


class StandInSeat:
    """The seat a stand-in plays for an absent player: its bot's commands,
    less the will and death note."""

    def __init__(self, seat: Seat) -> None:
        self.seat = seat

    async def decide(self, view: View, deadline: float | None = None) -> list[Command]:
        return [cmd for cmd in await self.seat.decide(view, deadline)
                if cmd.to_dict().get("type") not in KEEPS_OFF]


class StandIns:
    """Which human seats have a socket open, and which a stand-in plays.

    `trusted`: count every human as seen in the first phase (a resumed game,
    whose sockets are reconnecting and have not said so yet)."""

    def __init__(self, humans: frozenset[int], *, trusted: bool = False) -> None:
        self.humans = humans
        self.sockets: dict[int, set[str]] = {h: set() for h in humans}
        # seats with a socket open at some moment of the current phase
        self.seen: set[int] = set(humans) if trusted else set()
        self.active: dict[int, Absence] = {}
        # each seat's last finished absence, told to that player's sockets
        self.returned: dict[int, Absence] = {}
        # seats whose player sent a command in the current phase, and each
        # seat's phases in a row with an action to take and no command
        self.commanded: set[int] = set()
        self.idle: dict[int, int] = {h: 0 for h in humans}

    def command(self, slot: int) -> bool:
        """The player sent a command. True if a stand-in gave the seat back."""
        if slot in self.humans:
            self.commanded.add(slot)
            self.idle[slot] = 0
        return self.give_back(slot)

    def opened(self, slot: int, socket_id: str) -> bool:
        """A socket of the seat opened. True if a stand-in gave the seat back."""
        if slot not in self.humans:
            return False
        self.sockets[slot].add(socket_id)
        self.seen.add(slot)
        return self.give_back(slot)

    def closed(self, slot: int, socket_id: str) -> None:
        self.sockets.get(slot, set()).discard(socket_id)

    def give_back(self, slot: int) -> bool:
        """The player is here (a socket, a command): the stand-in stops."""
        absence = self.active.pop(slot, None)
        if absence is None:
            return False
        self.returned[slot] = absence
        return True

    def phase_over(self, living: set[int], next_phase: str,
                   had_action: frozenset[int] = frozenset()) -> list[int]:
        """The phase ended: a living human seat with no socket open at any
        moment of it, or idle for `IDLE_PHASES` phases in which it had an
        action to take (`had_action`: the seats that had one in the phase
        that ended), gets a stand-in from `next_phase` on. Returns those seats."""
        for s in had_action & self.humans:
            if s not in self.commanded:
                self.idle[s] += 1
        new = [s for s in sorted(self.humans)
               if s in living and s not in self.active
               and (s not in self.seen or self.idle[s] >= IDLE_PHASES)]
        for slot in new:
            self.active[slot] = Absence(since=next_phase)
            self.idle[slot] = 0
        self.seen = {s for s in self.humans if self.sockets[s]}
        self.commanded = set()
        return new

    def did(self, slot: int, what: str) -> None:
        if slot in self.active:
            self.active[slot].did.append(what)

    def message(self) -> dict[str, Any]:
        """For the game's channel (the mirror forwards `away` to each seat
        itself only, never to anyone else)."""
        return {"type": "standins", "slots": sorted(self.active),
                "away": {str(s): asdict(a) for s, a in self.returned.items()}}


def describe(command: dict[str, Any], names: dict[int, str]) -> str:
    """A stand-in's command in words, for the player it stood in for."""
    def name(slot: Any) -> str:
        return names.get(slot, f"Player {slot}") if isinstance(slot, int) else "nobody"

    kind = command.get("type")
    if kind == "vote":
        target = command.get("target")
        return f"voted against {name(target)}" if target else "took its vote back"
    if kind == "judge":
        return f"voted {command.get('verdict')} at the trial"
    if kind == "night":
        targets = command.get("targets") or []
        return ("used its night ability on " + " and ".join(name(t) for t in targets)
                if targets else "cancelled its night action")
    if kind == "chat":
        return f"said: {command.get('text', '')}"
    if kind == "whisper":
        return f"whispered to {name(command.get('target'))}"
    if kind == "day":
        return f"used {command.get('ability')}"
    if kind in ("will", "death_note"):
        return f"wrote a {'will' if kind == 'will' else 'death note'}"
    return str(kind)
