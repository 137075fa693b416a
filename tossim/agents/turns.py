"""How many turns a seat gets in a phase: the one pacing parameter of every
match (the headless driver, `tossim play`, the server's games and the
arena), so a game plays the same whichever of them runs it
(docs/agents.md#turns-per-phase).

A seat is asked once per turn; in a phase with more than one turn every
seat that may act is asked again after all of them answered, so it can
answer what was said. Phases not listed get one turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# phase value ("discussion", "voting", ...) -> turns; every phase not listed: 1
TURNS_PER_PHASE: Mapping[str, int] = MappingProxyType({})


def turns_in(phase: str, turns: Mapping[str, int] | None = None) -> int:
    """The turns a seat gets in `phase` (at least one)."""
    table = TURNS_PER_PHASE if turns is None else turns
    return max(1, int(table.get(phase, 1)))
