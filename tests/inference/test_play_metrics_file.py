"""`tossim play --metrics` keeps what a user needs to check a model's play
(issue 21): the day summaries themselves (they were overwritten by their
counts) and every turn record of the model seats (only the server and the
arena kept them)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tossim.cli import app

from .fake_chat_provider import fake_provider


async def test_play_metrics_keeps_summaries_and_turn_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOSSIM_TEST_PLAY_KEY", "sk-play-test")
    async with fake_provider() as (_, url):
        catalogue = tmp_path / "models.toml"
        catalogue.write_text(f"""
[models.fake]
backend = "chat"
base_url = "{url}"
model = "good"
api_key_env = "TOSSIM_TEST_PLAY_KEY"
""")
        out = tmp_path / "m.json"
        result = await asyncio.to_thread(CliRunner().invoke, app, [
            "play", "--models", str(catalogue), "--model-entry", "fake", "--players", "7",
            "--model-seats", "2", "--seed", "3", "--quiet", "--metrics", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    # the day summaries are texts, by day; their counts are kept apart
    assert data["summaries"] and all(isinstance(t, str) and t.strip()
                                     for t in data["summaries"].values())
    assert set(data["summary_stats"]) >= {"model", "fallback", "degenerate"}
    # every turn of both model seats, numbered per seat, as the server stores them
    turns = data["turns"]
    assert {t["slot"] for t in turns} == {1, 2}
    for slot in (1, 2):
        mine = [t for t in turns if t["slot"] == slot]
        assert [t["seq"] for t in mine] == list(range(1, len(mine) + 1))
        # a seat's entry: the driver's tally, and the model's own metrics under "agent"
        assert len(mine) == data["seats"][str(slot)]["agent"]["turns"]
    assert all(t["prompt"] and t["steps"] for t in turns)
    # a hosted model's free text passes the text guard (docs/agents.md, "The text guard")
    for slot in ("1", "2"):
        agent = data["seats"][slot]["agent"]
        assert agent["degenerate"] == {} and agent["silenced"] == 0
    assert any(s["kind"] == "action" and s.get("name") == "speak" and s["args"]["text"]
               for t in turns for s in t["steps"])
    # the entry has no price: its cost is unknown, not 0
    assert data["total"]["cost_usd"] is None
    assert "sk-play-test" not in out.read_text()
