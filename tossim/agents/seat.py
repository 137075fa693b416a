"""The seat interface: what every kind of player (scripted bot, LLM seat, human
behind a websocket) implements.

A seat sees the game only through its observations: `obs` is
`view(game, Viewer.player(slot), since=<the last version this seat saw>)`, so
`obs.events` holds only what happened (and what this seat may see) since the
seat was last asked. A seat keeps its own memory of earlier observations.
`obs.legal` lists what the seat may do now; `obs.you` describes the seat itself.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from tossim.engine.commands import Command
from tossim.engine.view import View


@runtime_checkable
class Seat(Protocol):
    def decide(self, obs: View) -> list[Command]:
        """The commands this seat sends now, in order (possibly none).

        Commands the engine rejects are counted as the seat's faults and
        skipped; commands left over after the phase changes are dropped."""
        ...
