"""A saved game's file: `tossim play --save` writes it, `tossim replay` reads it.

The record itself (ruleset, config, commands, the events as a cache) and the
re-run that checks it are the engine's (`tossim.engine.replay`); only the file
I/O lives here, so the engine stays pure (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tossim.engine.replay import to_record
from tossim.engine.state import Game


def save(game: Game, path: Path) -> None:
    path.write_text(json.dumps(to_record(game), ensure_ascii=False) + "\n", encoding="utf-8")


def load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("a game log is a JSON object")
    return data
