"""A seat's memory: everything it has observed, built only from its Views.

`SeatMemory.update(obs)` is called with every (incremental) observation the
seat receives; prompts and tools read the memory, never the Game, so they
can only ever show what the engine's projection let this seat see.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tossim.engine.legal import LegalAction
from tossim.engine.messages import render
from tossim.engine.view import RosterEntry, SelfView, View

CHAT_KEYS = frozenset({"chat.public", "chat.dead", "chat.mafia", "chat.jail", "chat.seance",
                       "chat.whisper", "chat.whisper_notice", "chat.spy_mafia", "chat.team",
                       "chat.overheard"})
PHASE_NAMES = {"day1": "Day", "discussion": "Discussion", "voting": "Voting",
               "defense": "Defense", "judgement": "Judgement", "last_words": "Last Words",
               "night": "Night", "ended": "Game over"}


def heard(legal: Sequence[LegalAction], roster: Sequence[RosterEntry]) -> list[LegalAction]:
    """The legal actions a seat is offered: all but a chat nobody would hear.
    A living Medium talks with the dead at night; before anyone has died that
    talk reaches nobody (seen in a lobby: a Medium model seat told an empty
    dead chat on Night 1 whom it suspected among the living)."""
    if any(not p.alive for p in roster):
        return list(legal)
    return [a for a in legal if not (a.kind == "chat" and tuple(a.options) == ("dead",))]


@dataclass
class Note:
    day: int
    phase: str
    text: str


@dataclass
class ToolRecord:
    day: int
    phase: str
    tool: str
    arg: str
    observation: str


@dataclass
class SeatMemory:
    """What one seat knows. `slot` is the seat; the rest fills in from Views."""

    slot: int
    events: list[dict[str, Any]] = field(default_factory=list)
    roster: list[RosterEntry] = field(default_factory=list)
    you: SelfView = field(default_factory=SelfView)  # blank until the first View
    legal: list[LegalAction] = field(default_factory=list)
    trial: dict[str, Any] = field(default_factory=dict)
    day: int = 1
    phase: str = "day1"
    phase_seq: int = 0
    version: int = 0
    result: str | None = None
    notes: list[Note] = field(default_factory=list)
    tool_log: list[ToolRecord] = field(default_factory=list)
    last_turn_version: int = 0  # the version seen at the seat's previous turn

    # ---- input ---------------------------------------------------------------------
    def update(self, obs: View) -> None:
        """Add one observation (its events are those since the previous one).
        Lines kept by `say_public` give way to what the engine made of them."""
        while self.events and self.events[-1].get("unsent"):
            self.events.pop()
        last = self.events[-1]["v"] if self.events else 0
        for e in obs.events:
            if e["v"] > last:
                self.events.append(dict(e))
                last = e["v"]
        self.roster = list(obs.roster)
        self.you = obs.you or SelfView()
        self.legal = heard(obs.legal, self.roster)
        self.trial = dict(obs.trial)
        self.day, self.phase, self.phase_seq = obs.day, obs.phase, obs.phase_seq
        self.version, self.result = obs.version, obs.result

    def say_public(self, text: str) -> None:
        """Keep a public line this seat has just chosen to say, until the next
        observation shows it: a phase's later turn reads its own claims and
        plans from the chat (docs/agents.md, "The phase's action"). It takes
        the version of the newest event, so it is never new to a turn."""
        self.events.append({
            "v": self.events[-1]["v"] if self.events else 0, "day": self.day,
            "phase": self.phase, "key": "chat.public", "audience": "public",
            "text": render("chat.public", {"author": self.name(self.slot), "text": text}),
            "data": {"author": self.slot, "text": text}, "unsent": True})

    def end_turn(self) -> None:
        """Mark everything seen so far as shown (the next turn's event log starts here)."""
        self.last_turn_version = self.version

    def write_note(self, text: str) -> None:
        self.notes.append(Note(self.day, self.phase, text))

    def record_tool(self, tool: str, arg: str, observation: str) -> None:
        self.tool_log.append(ToolRecord(self.day, self.phase, tool, arg, observation))

    # ---- reading -------------------------------------------------------------------
    @property
    def names(self) -> dict[int, str]:
        return {r.slot: r.name for r in self.roster}

    def name(self, slot: int | None) -> str:
        if slot is None:
            return "nobody"
        return self.names.get(slot, f"Player {slot}")

    def player(self, slot: int) -> RosterEntry | None:
        return next((r for r in self.roster if r.slot == slot), None)

    def living(self) -> list[RosterEntry]:
        return [r for r in self.roster if r.alive]

    def dead(self) -> list[RosterEntry]:
        return [r for r in self.roster if not r.alive]

    @property
    def phase_label(self) -> str:
        """"Day 3 · Voting", "Night 2", "Day 1"."""
        if self.phase == "night":
            return f"Night {self.day}"
        if self.phase == "day1":
            return "Day 1"
        if self.phase == "ended":
            return "Game over"
        return f"Day {self.day} · {PHASE_NAMES.get(self.phase, self.phase)}"

    def events_since(self, version: int) -> list[dict[str, Any]]:
        return [e for e in self.events if e["v"] > version]

    def new_events(self) -> list[dict[str, Any]]:
        """Events since the seat's previous turn."""
        return self.events_since(self.last_turn_version)

    def day_events(self, day: int) -> list[dict[str, Any]]:
        """Events of Day `day` and Night `day`."""
        return [e for e in self.events if e["day"] == day]

    def chat(self, day: int) -> list[dict[str, Any]]:
        return [e for e in self.day_events(day) if e["key"] in CHAT_KEYS]

    def public_events(self, day: int) -> list[dict[str, Any]]:
        return [e for e in self.day_events(day) if e["audience"] == "public"]

    def tool_results_today(self) -> list[ToolRecord]:
        return [t for t in self.tool_log if t.day == self.day]

    def own_choices(self) -> dict[int, dict[str, Any]]:
        """Night -> this seat's last night choice that night (`night.chosen`,
        `jail.chosen`, a Mafia member's own `night.mafia_chosen`, or
        `night.cancel`), from its own events only."""
        out: dict[int, dict[str, Any]] = {}
        for e in self.events:
            key = e["key"]
            mine = key != "night.mafia_chosen" or e.get("data", {}).get("actor") == self.slot
            if mine and key in ("night.chosen", "night.cancel", "night.mafia_chosen",
                                "jail.chosen", "jail.cancel"):
                out[e["day"]] = e
        return out

    def private_results(self) -> list[dict[str, Any]]:
        """This seat's own night results and other messages addressed to it alone."""
        return [e for e in self.events
                if e["audience"] == "players" and e["key"] not in CHAT_KEYS
                and (e["key"].startswith(("night.", "death.", "judge.private", "haunt.",
                                          "lynch.")))]
