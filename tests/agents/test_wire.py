"""What crosses the wire to an inference worker: a seat's View and a turn's
metrics. A View that went through JSON must be the same View (so a seat on a
worker plays exactly as it would in the server), and anything malformed must be
refused instead of reaching a seat or the stored metrics."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tossim.agents.match import play_match
from tossim.agents.memory import SeatMemory
from tossim.agents.metrics import AgentMetrics
from tossim.agents.prompting import build_messages
from tossim.engine import GameConfig, View, Viewer, view
from tossim.engine.legal import LegalAction
from tossim.engine.replay import rerun


def _views_through_a_game(seed: int) -> list[View]:
    played = play_match(GameConfig(players=15, seed=seed)).game
    commands = list(played.commands)
    out: list[View] = []
    for n in range(0, len(commands), max(1, len(commands) // 25)):
        game = rerun(GameConfig(players=15, seed=seed), commands[:n])
        out.extend(view(game, Viewer.player(s)) for s in (1, 5, 9, 13))
    return out


@pytest.mark.parametrize("seed", [3, 8])
def test_a_view_survives_json(seed: int) -> None:
    views = _views_through_a_game(seed)
    assert any(v.legal for v in views) and any(not r.alive for v in views for r in v.roster)
    here, there = SeatMemory(1), SeatMemory(1)
    for v in views:
        wired = View.from_dict(json.loads(json.dumps(v.to_dict())))
        assert wired.to_dict() == json.loads(json.dumps(v.to_dict())) and wired.legal == v.legal
        # and so are its typed parts (a Jailor's and a Mafia member's
        # optional keys included)
        assert list(wired.roster) == list(v.roster) and wired.you == v.you
        if v.viewer != "player 1":
            continue
        # the seat's prompt is the same in the server and on a worker
        here.update(v)
        there.update(wired)
        assert build_messages(there) == build_messages(here)


@pytest.mark.parametrize("damage", [
    lambda d: d.pop("roster"),
    lambda d: d.update(version="v3"),
    lambda d: d.update(events=[{"text": "no version"}]),
    lambda d: d.update(events="all of them"),
    lambda d: d.update(legal=[{"kind": "vote", "targets": ["Player 3"]}]),
    lambda d: d.update(legal=[{"targets": [3]}]),
    lambda d: d.update(you=["me"]),
    lambda d: d.update(roster=[["Player 1", True]]),
])
def test_a_malformed_view_is_refused(damage: Any) -> None:
    from tossim.engine import new_game

    data = view(new_game(GameConfig(players=7, seed=1)), Viewer.player(2)).to_dict()
    damage(data)
    with pytest.raises(ValueError):
        View.from_dict(data)
    with pytest.raises(ValueError):
        LegalAction.from_dict("vote")


def test_turn_metrics_from_another_process() -> None:
    one = AgentMetrics(turns=1, actions={"vote": 1}, tool_calls=2, generated_tokens=40,
                       faults={"premise": 1}, seconds=1.5, max_seconds=1.5)
    total = AgentMetrics()
    total.merge(AgentMetrics.from_fields(json.loads(json.dumps(one.fields()))))
    total.merge(AgentMetrics.from_fields(one.fields()))
    assert total.to_dict()["turns"] == 2 and total.actions == {"vote": 2}
    assert total.faults == {"premise": 2} and total.tool_calls == 4
    for bad in (None, [1], {"turns": "many"}, {"turns": -1}, {"turns": True},
                {"actions": {"vote": "x"}}, {"actions": [1]}, {"secret_role": 1}):
        with pytest.raises(ValueError):
            AgentMetrics.from_fields(bad)
