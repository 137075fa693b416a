"""Appending events: the single place that numbers them and renders their text."""

from __future__ import annotations

from typing import Any

from tossim.engine.events import Audience, Event, FrozenDict, freeze, make_event
from tossim.engine.messages import MESSAGES
from tossim.engine.state import Game, Phase

# Event data is read-only, so every event without secrets shares one empty map.
_NO_SECRET = FrozenDict()
_PHASE_VALUE = {p: p.value for p in Phase}
# Messages with nothing to fill in ("Nobody died last night.") are their own text.
_FIXED_TEXT = {k: t for k, t in MESSAGES.items() if "{" not in t and "}" not in t}


def emit(
    game: Game,
    key: str,
    audience: Audience,
    data: dict[str, Any] | None = None,
    secret: dict[str, Any] | None = None,
    **params: Any,
) -> Event:
    """Append one event. `params` fill the message text; `data` is the
    structured form clients use (it defaults to the params)."""
    text = _FIXED_TEXT.get(key)
    if text is None:  # messages.render, without copying the parameters twice
        text = MESSAGES[key].format_map({"day": game.day, **params})
    event = make_event(
        len(game.events) + 1, game.day, _PHASE_VALUE[game.phase], key, audience, text,
        freeze(params if data is None else data), freeze(secret) if secret else _NO_SECRET)
    game.events.append(event)
    return event
