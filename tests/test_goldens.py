"""Golden playthroughs: committed games that every change is checked against.

Determinism tests compare a run with another run of the same code, so a
change of rules, bots or seats that alters every stored game and replay
passes them silently. Each golden file holds one game as it was played when
the file was written: its config, every command, every event (one JSON line
each, so a change is a readable diff). Two checks per golden:

- rules: re-running the committed commands gives the committed events (a
  rule change fails here; stored games and replays would change);
- play: playing the same config and seats again gives the committed commands
  (a change to the scripted bots, the model seats' loop, prompts or grammar
  fails here; the arena's baselines would change).

A change that is meant gets a reviewed diff: regenerate with the command in
the failure message, then read `git diff tests/golden`. See
docs/architecture.md#golden-playthroughs.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tossim.agents import play_match
from tossim.agents.entry_match import play_entry_match
from tossim.agents.loop import LoopConfig
from tossim.engine import Game, GameConfig, apply, command_from_dict, new_game
from tossim.engine.rules import make_config
from tossim.inference.catalogue import backend_entry

GOLDEN_DIR = Path(__file__).parent / "golden"
REGEN = "TOSSIM_WRITE_GOLDENS=1 .venv/bin/python -m pytest tests/test_goldens.py"


def _scripted(config: GameConfig) -> Game:
    return play_match(config).game


def _model_seats(config: GameConfig) -> Game:
    pytest.importorskip("outlines_core")
    from tests.agents.grammar_backend import GrammarWalkBackend

    match = asyncio.run(play_entry_match(
        config, backend_entry("local"), backend=GrammarWalkBackend(), model_seats=(1, 2, 3),
        max_days=3,
        loop_config=LoopConfig(max_tool_calls=2, turn_tokens=600), summaries_by_model=False))
    return match.result.game


@dataclass(frozen=True)
class Golden:
    name: str
    config: Callable[[], GameConfig]
    play: Callable[[GameConfig], Game]


GOLDENS = (
    Golden("classic-15", lambda: make_config("classic", 15, 101), _scripted),
    Golden("ranked-15", lambda: make_config("ranked", 15, 202), _scripted),
    Golden("all_any-15", lambda: make_config("all_any", 15, 303), _scripted),
    Golden("custom-7", lambda: make_config(
        roles="Jailor, Town Investigative, Town Protective, Godfather, Mafioso, Jester, Any",
        seed=404), _scripted),
    Golden("model-seats-7", lambda: make_config("classic", 7, 505), _model_seats),
)


def _lines(game: Game) -> list[str]:
    dump = lambda x: json.dumps(x, sort_keys=True, ensure_ascii=False)  # noqa: E731
    return ([dump({"config": game.config.to_dict()})]
            + [dump({"command": c}) for c in game.commands]
            + [dump({"event": e.to_dict()}) for e in game.events])


def _first_difference(kind: str, name: str, want: list[str], got: list[str]) -> str:
    for i, (a, b) in enumerate(zip(want, got, strict=False)):
        if a != b:
            return (f"golden {name}: the {kind} changed at line {i + 1}\n"
                    f"  committed: {a[:400]}\n  now:       {b[:400]}\n"
                    f"If this change is intended, regenerate and review the diff:\n  {REGEN}")
    return (f"golden {name}: the {kind} has {len(got)} lines, the committed one {len(want)}\n"
            f"If this change is intended, regenerate and review the diff:\n  {REGEN}")


@pytest.mark.parametrize("golden", GOLDENS, ids=[g.name for g in GOLDENS])
def test_golden_playthrough(golden: Golden) -> None:
    path = GOLDEN_DIR / f"{golden.name}.jsonl"
    game = golden.play(golden.config())
    lines = _lines(game)
    if os.environ.get("TOSSIM_WRITE_GOLDENS") == "1":
        GOLDEN_DIR.mkdir(exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return
    assert path.exists(), f"no golden {path.name}; write it with:\n  {REGEN}"
    stored = path.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in stored]
    config = GameConfig.from_dict(records[0]["config"])
    commands = [r["command"] for r in records if "command" in r]
    # rules: the committed commands, re-run, give the committed events
    rerun = new_game(config)
    for raw in commands:
        apply(rerun, command_from_dict(raw))
    stored_events = [line for line, r in zip(stored, records, strict=True) if "event" in r]
    rerun_events = [line for line in _lines(rerun) if line.startswith('{"event"')]
    assert rerun_events == stored_events, _first_difference(
        "event log of the committed commands (a rules change)", golden.name,
        stored_events, rerun_events)
    # play: the same seats play the same game
    assert lines == stored, _first_difference(
        "game as played now (a bots, seats or config change)", golden.name, stored, lines)
