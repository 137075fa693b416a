"""The one check of a model seat's final action, made by the tool loop
(`loop.play_turn`) for token-ID and chat seats alike, so both refuse the same
actions with the same observations and count them the same way
(docs/agents.md, "The tool loop" and "The text guard").

An action is checked by the engine's rules first (`actions.to_command`: an
impossible action is a fault of its kind, answered with the likely
candidates), then, for text the model wrote itself, by the text guard (a
degenerate speech, will or note). What follows a refusal (retry, fall back
to structured moves, wait) is the loop's, by the seat's `TurnRules`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tossim.agents.actions import fault_observation, to_command
from tossim.agents.escape import escape_text
from tossim.agents.guard import reason_kind
from tossim.agents.lines import guard_action, guard_observation
from tossim.agents.memory import SeatMemory
from tossim.agents.turn import TurnStats
from tossim.engine.commands import Command
from tossim.engine.legal import IllegalCommand


@dataclass(frozen=True)
class Refused:
    """A final action refused: the fault (the engine's kind, or
    "degenerate" for the guard's) and the observation the model gets."""

    fault: str
    text: str


def refuse_illegal(exc: IllegalCommand, memory: SeatMemory, stats: TurnStats) -> Refused:
    """An action the rules refuse, counted as a fault of its kind."""
    stats.fault(exc.fault)
    return Refused(exc.fault, fault_observation(exc, memory.names))


def check_final(memory: SeatMemory, name: str, args: Mapping[str, Any], stats: TurnStats,
                *, prompt: str, summaries: Mapping[int, str] | None,
                guard: bool = True) -> Command | None | Refused:
    """The command for the final action `name(args)` (None: wait), or why it
    is refused. `guard`: the text is the model's own (a speech move the seat
    renders itself is not guarded); `prompt` is the turn's prompt text, which
    a guarded text may not copy."""
    try:
        cmd = to_command(memory.slot, name, args, memory.legal, memory.names, memory.roster)
    except IllegalCommand as exc:
        return refuse_illegal(exc, memory, stats)
    reason = guard_action(memory, name, args, prompt=prompt,
                          summaries=summaries) if guard else None
    if reason is not None:
        kind = reason_kind(reason)
        stats.degenerate[kind] = stats.degenerate.get(kind, 0) + 1
        return Refused("degenerate", guard_observation(escape_text(reason)))
    return cmd
