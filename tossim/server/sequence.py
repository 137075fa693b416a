"""Each viewer's own sequence numbers.

The engine numbers events 1, 2, 3 ... for the whole game, hidden ones
included. Shown to a viewer as they are, those numbers would leave gaps where
the viewer was not told something (a Town seat saw 45 -> 47 when the Mafia
chose a target at night). So everything a client receives is numbered in that
viewer's own sequence: the n-th event this viewer may see is `v: n`, and a
message's `version` (and a client's `since`) counts the same way. Omniscient
viewers see every event, so their sequence is the game's.
"""

from __future__ import annotations

from typing import Any

from tossim.engine import Game, Viewer
from tossim.engine.view import visible_events


def seq_at(game: Game, viewer: Viewer, version: int) -> int:
    """How many events up to game version `version` this viewer may see."""
    if viewer.kind == "omniscient":
        return min(version, game.version)
    return sum(1 for e in visible_events(game, viewer) if e.v <= version)


def version_at(game: Game, viewer: Viewer, seq: int) -> int:
    """The game version of this viewer's `seq`-th event (0 for none; the
    last visible one's when `seq` is beyond what the viewer may see)."""
    if seq <= 0:
        return 0
    if viewer.kind == "omniscient":
        return min(seq, game.version)
    seen = visible_events(game, viewer)
    if not seen:
        return 0
    return seen[min(seq, len(seen)) - 1].v


def newest_at(game: Game, viewer: Viewer, version: int) -> int:
    """The game version of the newest event up to `version` this viewer may
    see (0 for none): what its timing fields may follow."""
    version = min(version, game.version)
    if viewer.kind == "omniscient":
        return version
    # look back from `version` in growing windows: the newest visible event
    # is nearly always among the last few (this runs for every push built)
    window = 64
    while True:
        since = max(0, version - window)
        seen = [e for e in visible_events(game, viewer, since) if e.v <= version]
        if seen or since == 0:
            return seen[-1].v if seen else 0
        window *= 4


def renumber(events: list[Any], first: int) -> list[dict[str, Any]]:
    """Projected events numbered first, first + 1, ... (new dicts)."""
    return [{**e, "v": first + i} for i, e in enumerate(events)]
