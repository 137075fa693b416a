"""`tossim play --model-entry NAME`: a match whose model seats play one entry
of the model catalogue (the CLI keeps only the flags)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import typer

from tossim.engine.state import GameConfig
from tossim.inference.catalogue import CatalogueError, load_catalogue


def play_entry(config: GameConfig, name: str, models: Path | None, model_seats: int | None,
               metrics: Path | None, url: str | None, model_dir: str | None,
               speech: str | None = None) -> Any:
    """Play the match and return its AsyncMatchResult; progress on stderr.
    `speech` overrides the entry's (free text or structured moves)."""
    from tossim.agents.entry_match import play_entry_match
    from tossim.agents.turn_records import seat_records
    from tossim.inference.base import BackendUnavailable

    try:
        entry = load_catalogue(models).get(name)
    except CatalogueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--models") from None
    except KeyError as exc:
        raise typer.BadParameter(str(exc.args[0]), param_hint="--model-entry") from None
    if speech == "moves" and entry.backend == "chat":
        raise typer.BadParameter(f"entry {name!r} is a chat entry: it writes free text",
                                 param_hint="--speech")
    why = entry.unavailable_reason(openai_url=url)
    if why is not None:
        raise typer.BadParameter(f"entry {name!r} cannot run here: {why}",
                                 param_hint="--model-entry")
    started = time.perf_counter()

    def progress(day: int, phase: str) -> None:
        typer.echo(f"[{time.perf_counter() - started:7.1f} s] day {day} {phase}", err=True)

    seats = range(1, (model_seats or config.players) + 1)
    try:
        match = asyncio.run(play_entry_match(config, entry, model_seats=seats, openai_url=url,
                                             model_dir=model_dir, on_phase=progress,
                                             speech=speech))
    except BackendUnavailable as exc:
        raise typer.BadParameter(str(exc), param_hint="--model-entry") from None
    result = match.result
    if metrics is not None:
        metrics.write_text(json.dumps({
            "result": result.result, "days": result.days, "seconds": round(match.seconds, 1),
            "summaries": result.summaries, "turns": seat_records(match.seats),
            **match.metrics()}, indent=1, sort_keys=True) + "\n")
    return result
