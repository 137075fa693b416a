"""`tossim play` with model seats: `--model-entry NAME` (an entry of the model
catalogue) and `--ai BACKEND` (that backend's built-in entry) both play
`entry_match.play_entry_match`; the CLI keeps only the flags. The
`--metrics` file has one layout for both (docs/agents.md#the-match-driver).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from tossim.engine.state import GameConfig
from tossim.inference.catalogue import CatalogueError, ModelEntry, load_catalogue

if TYPE_CHECKING:
    from tossim.agents.entry_match import EntryMatch
    from tossim.agents.loop import LoopConfig
    from tossim.inference.base import Backend


def play_entry(config: GameConfig, name: str, models: Path | None, model_seats: int | None,
               url: str | None, model_dir: str | None,
               speech: str | None = None) -> EntryMatch:
    """`--model-entry NAME`: play the match and return it; progress on
    stderr. `speech` overrides the entry's (free text or structured moves)."""
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
    return run_entry(config, entry, model_seats, url=url, model_dir=model_dir, speech=speech,
                     hint="--model-entry")


def run_entry(config: GameConfig, entry: ModelEntry, model_seats: int | None, *,
              url: str | None = None, model_dir: str | None = None, speech: str | None = None,
              backend: Backend | None = None, loop_config: LoopConfig | None = None,
              hint: str = "--ai") -> EntryMatch:
    """Play `entry` in seats 1..model_seats (default all; the rest scripted),
    printing one progress line per phase (with the backend's figures when
    the caller made it), and close a backend the caller made."""
    from tossim.agents.entry_match import play_entry_match
    from tossim.inference.base import BackendUnavailable

    started = time.perf_counter()

    def progress(day: int, phase: str) -> None:
        figures = ""
        if backend is not None:
            st = backend.stats
            figures = f": {st.requests} requests, {st.generated_tokens} tokens generated"
        typer.echo(f"[{time.perf_counter() - started:7.1f} s] day {day} {phase}{figures}",
                   err=True)

    async def go() -> EntryMatch:
        try:
            return await play_entry_match(
                config, entry, model_seats=range(1, (model_seats or config.players) + 1),
                backend=backend, loop_config=loop_config, openai_url=url,
                model_dir=model_dir, speech=speech, on_phase=progress)
        finally:
            if backend is not None:  # stop its threads before the process exits
                await backend.close()

    try:
        return asyncio.run(go())
    except BackendUnavailable as exc:
        raise typer.BadParameter(str(exc), param_hint=hint) from None


def write_metrics(path: Path, match: EntryMatch) -> None:
    """The `--metrics` file of a match with model seats."""
    from tossim.agents.turn_records import seat_records

    result = match.result
    data: dict[str, Any] = {
        "result": result.result, "days": result.days, "seconds": round(match.seconds, 1),
        "summaries": result.summaries, "turns": seat_records(match.seats), **match.metrics()}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
