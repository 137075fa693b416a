"""The `tossim` command line as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from tossim.cli import app
from tossim.tools.docs_gen import roles_markdown

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent


def test_play_prints_a_transcript_and_a_final_json_line() -> None:
    result = runner.invoke(app, ["play", "--players", "15", "--seed", "4", "--json"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    summary = json.loads(lines[-1])
    assert summary["seed"] == 4
    assert summary["result"] in ("town", "mafia", "serial_killer", "draw")
    assert summary["days"] >= 2
    assert summary["events"] > 50
    assert all(1 <= w <= 15 for w in summary["winners"])
    assert {"player", "role", "day", "causes"} <= set(summary["deaths"][0])
    text = "\n".join(lines[:-1])
    assert "== Day 1 ==" in text and "== Night 1 ==" in text
    assert "Game over" in text


def test_python_m_tossim_runs_the_same_command_line() -> None:
    """For an environment whose scripts folder is not on PATH."""
    done = subprocess.run([sys.executable, "-m", "tossim", "play", "--players", "7",
                           "--seed", "4", "--quiet", "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["seed"] == 4


def test_public_transcript_hides_living_roles_until_the_end() -> None:
    result = runner.invoke(app, ["play", "--seed", "4", "--view", "public"])
    assert result.exit_code == 0, result.output
    before_end = result.output.split("== Game over ==")[0]
    assert "Your role is" not in before_end  # private role cards are not public
    assert "[Mafia]" not in before_end


def test_player_view_and_bad_view() -> None:
    ok = runner.invoke(app, ["play", "--seed", "4", "--view", "3"])
    assert ok.exit_code == 0
    assert ok.output.count("Your role is") == 1
    bad = runner.invoke(app, ["play", "--seed", "4", "--view", "nobody"])
    assert bad.exit_code != 0
    assert "unknown viewer" in bad.output


def test_save_then_replay_is_identical_and_tampering_is_detected(tmp_path: Path) -> None:
    log = tmp_path / "game.json"
    played = runner.invoke(app, ["play", "--seed", "9", "--quiet", "--save", str(log)])
    assert played.exit_code == 0, played.output
    same = runner.invoke(app, ["replay", str(log)])
    assert same.exit_code == 0, same.output
    assert same.output.startswith("identical:")

    record = json.loads(log.read_text())
    record["events"][40]["text"] = "something else"
    log.write_text(json.dumps(record))
    changed = runner.invoke(app, ["replay", str(log)])
    assert changed.exit_code == 1
    assert "DIFFERENT at event 41" in changed.output


def test_replay_of_a_missing_or_broken_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["replay", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2
    broken = tmp_path / "broken.json"
    broken.write_text("[1, 2]")
    result = runner.invoke(app, ["replay", str(broken)])
    assert result.exit_code == 2
    assert "cannot read" in result.output


def test_bench_engine_prints_its_figures() -> None:
    result = runner.invoke(app, ["bench", "engine", "--games", "3"])
    assert result.exit_code == 0, result.output
    assert "games/s" in result.output and "events/s" in result.output
    assert "ratio full/baseline" in result.output
    assert "results: " in result.output


def test_roles_doc_is_generated_from_the_registry() -> None:
    on_disk = (ROOT / "docs" / "roles.md").read_text(encoding="utf-8")
    assert on_disk == roles_markdown(), "docs/roles.md is stale: run `tossim docs`"


def test_scenario_run_prints_one_line_each_and_a_total(tmp_path: Path) -> None:
    good = runner.invoke(app, ["scenario", "run", str(ROOT / "tests" / "scenarios")])
    assert good.exit_code == 0, good.output
    last = good.output.strip().splitlines()[-1]
    passed, failed = last.split(", ")
    assert int(passed.split()[0]) > 100 and failed == "0 failed"

    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: a doctor cannot stop this\n"
        "players: [Doctor, Sheriff, Serial Killer, Godfather, Mafioso]\n"
        "start: night 1\n"
        "steps:\n"
        "  - night: {actor: 3, targets: [2]}\n"
        "  - timeout\n"
        "expect:\n"
        "  alive: [2]\n"
    )
    result = runner.invoke(app, ["scenario", "run", str(bad)])
    assert result.exit_code == 1
    assert "FAIL  a doctor cannot stop this" in result.output
    assert "bad.yaml:8: player 2" in result.output
    assert result.output.strip().endswith("0 passed, 1 failed")
