"""Saved games and exact replays.

A saved game is the ruleset version, the config (with its seed) and the
ordered command log; the stored events are only a cache used to check that a
re-run is byte-identical (architecture rule 2). Pure like the rest of the
engine: the file a game is saved to is `tossim.tools.game_log`'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tossim.engine.commands import command_from_dict
from tossim.engine.modes import RULESET_VERSION
from tossim.engine.rules import apply, new_game
from tossim.engine.state import Game, GameConfig

LOG_FORMAT = 1


def event_lines(game: Game) -> list[str]:
    """The canonical byte form of a game's event log, one JSON line per event."""
    return [json.dumps(e.to_dict(), sort_keys=True, ensure_ascii=False) for e in game.events]


def to_record(game: Game) -> dict[str, Any]:
    return {
        "format": LOG_FORMAT,
        "ruleset": game.config.ruleset,
        "config": game.config.to_dict(),
        "commands": list(game.commands),
        "events": [e.to_dict() for e in game.events],
        "result": game.result,
        "winners": list(game.winners),
    }


def rerun(config: GameConfig, commands: list[dict[str, Any]]) -> Game:
    game = new_game(config)
    for raw in commands:
        apply(game, command_from_dict(raw))
    return game


@dataclass
class ReplayReport:
    identical: bool
    events_stored: int
    events_replayed: int
    first_difference: int | None  # 1-based event version, None when identical
    detail: str


def check_record(record: dict[str, Any]) -> ReplayReport:
    if record.get("format") != LOG_FORMAT:
        raise ValueError(f"unsupported log format {record.get('format')!r}")
    if record.get("ruleset") != RULESET_VERSION:
        raise ValueError(f"log was written for ruleset {record.get('ruleset')!r}, "
                         f"this engine is {RULESET_VERSION!r}")
    game = rerun(GameConfig.from_dict(record["config"]), record["commands"])
    replayed = event_lines(game)
    stored = [json.dumps(e, sort_keys=True, ensure_ascii=False) for e in record["events"]]
    for i, (a, b) in enumerate(zip(stored, replayed, strict=False)):
        if a != b:
            return ReplayReport(False, len(stored), len(replayed), i + 1,
                                f"stored:   {a}\nreplayed: {b}")
    if len(stored) != len(replayed):
        return ReplayReport(False, len(stored), len(replayed), min(len(stored), len(replayed)) + 1,
                            "the logs have different lengths")
    return ReplayReport(True, len(stored), len(replayed), None, "identical")
