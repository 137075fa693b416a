"""Appending events: the single place that numbers them and renders their text."""

from __future__ import annotations

from typing import Any

from tossim.engine.events import Audience, Event, freeze
from tossim.engine.messages import render
from tossim.engine.state import Game


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
    event = Event(
        v=len(game.events) + 1,
        day=game.day,
        phase=game.phase.value,
        key=key,
        audience=audience,
        text=render(key, {"day": game.day, **params}),
        data=freeze(params if data is None else data),
        secret=freeze(secret or {}),
    )
    game.events.append(event)
    return event
