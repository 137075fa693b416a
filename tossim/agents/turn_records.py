"""Reading a model seat's turn records (`LLMSeat.turn_log`, `ChatSeat.turn_log`,
the server's `seat_turns`): the one place that says which turns were
abstentions and why, so the seat metrics and the arena report count the
same turns the same way (docs/agents.md, "Metrics")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tossim.agents.seat import SeatTelemetry

TIMEOUT_KINDS = frozenset({"timeout", "deadline"})

TURN_KEYS = ("day", "phase", "phase_seq", "version", "prompt", "output", "steps", "action",
             "move", "tokens", "time")
"""The fields of a turn record that travel and are stored: an inference
worker sends these, the server keeps these (`day` and `phase` as columns;
`phase_seq` and `version` are what a resumed seat is rebuilt from,
`agents.resume`; `time` the seconds the turn had, used and whether it missed)."""


def abstention(record: Mapping[str, Any]) -> str | None:
    """"timeout" or "error" when the turn ended without an action because a
    request failed (a fault step of kind "error" whose text names the error
    kind), else None (an action, or a wait the seat chose)."""
    action = record.get("action")
    if action not in (None, "wait"):
        return None
    for step in record.get("steps") or ():
        if isinstance(step, Mapping) and step.get("kind") == "fault" \
                and step.get("fault") == "error":
            return "timeout" if step.get("text") in TIMEOUT_KINDS else "error"
    return None


def abstentions(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many of the records were abstentions, by kind ("timeout", "error")."""
    out = {"timeout": 0, "error": 0}
    for r in records:
        kind = abstention(r)
        if kind is not None:
            out[kind] += 1
    return out


def seat_records(seats: Mapping[int, Any]) -> list[dict[str, Any]]:
    """Every turn record of a match's model seats, by seat then turn, in the
    shape the server stores them (`Store.turns`: slot, seq from 1, day,
    phase and the record), for `tossim play --metrics`."""
    out: list[dict[str, Any]] = []
    for slot, seat in sorted(seats.items()):
        log = seat.turn_log if isinstance(seat, SeatTelemetry) else []
        for seq, record in enumerate(log, start=1):
            out.append({**record, "slot": slot, "seq": seq})
    return out
