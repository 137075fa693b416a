"""Modes and role lists (rules reference A5): every mode deals what its list
says, plays to the end with scripted bots, replays byte for byte, and leaks
nothing; a list that cannot be dealt is refused naming the slot, in the
engine, the CLI and (tests/server) the lobby API.

The deal constraints per mode are scenario files (tests/scenarios/modes.yaml);
here: whole games in every mode, and the parts a scenario cannot say."""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import replace

import pytest
from test_leaks import LeakChecker
from typer.testing import CliRunner

from tossim.agents import play_match
from tossim.cli import app
from tossim.engine import GameConfig, apply, command_from_dict, new_game
from tossim.engine import role_lists as rl
from tossim.engine.modes import MODES, get_mode
from tossim.engine.role_lists import RoleListError
from tossim.engine.roles import ROLES, find_role
from tossim.engine.rules import ConfigError, deal, make_config, role_list
from tossim.scenarios.scenario import load_string, run

CUSTOM_LIST = ("Jailor, Town Investigative, Town Investigative, Town Protective, Town Support, "
               "Random Town, Random Town, Godfather, Random Mafia, Neutral Killing, "
               "Neutral Evil, Any")
# With the Vampires (custom lists only), once the registry has them.
VAMPIRE_LIST = ("Jailor, Vampire Hunter, Town Investigative, Town Protective, Random Town, "
                "Random Town, Random Town, Vampire, Vampire, Godfather, Random Mafia, "
                "Neutral Killing, Any")


def configs() -> list[tuple[str, GameConfig]]:
    out = [(m, make_config(m)) for m in ("classic", "ranked", "all_any")]
    out.append(("custom", make_config(roles=CUSTOM_LIST)))
    if find_role("Vampire") is not None and find_role("Vampire Hunter") is not None:
        out.append(("vampires", make_config(roles=VAMPIRE_LIST)))
    return out


CONFIGS = configs()
IDS = [name for name, _ in CONFIGS]


def _log(game: object) -> bytes:
    return "\n".join(json.dumps(e.to_dict(), sort_keys=True)
                     for e in game.events).encode()  # type: ignore[attr-defined]


@pytest.mark.parametrize("config", [c for _, c in CONFIGS], ids=IDS)
def test_every_mode_plays_to_the_end_and_deals_its_list(config: GameConfig) -> None:
    """Scripted games in every mode finish without an exception or a bot fault,
    and every deal fits the mode's list."""
    mode = get_mode(config.mode)
    slots = rl.parse_role_list(role_list(config))
    results: Counter[str] = Counter()
    for seed in range(60):
        result = play_match(replace(config, seed=seed), max_days=60)
        game = result.game
        assert game.ended, (config.mode, seed)
        assert not any(result.faults.values()), (seed, result.fault_reasons)
        dealt = [p.original_role for p in game.players]
        assert rl.fit(slots, dealt, custom=mode.custom) is not None, (seed, dealt)
        results[game.result or "none"] += 1
    assert len(results) >= 2, results  # more than one kind of ending


@pytest.mark.parametrize("config", [c for _, c in CONFIGS], ids=IDS)
def test_every_mode_replays_byte_for_byte(config: GameConfig) -> None:
    for seed in (1, 2, 3):
        played = play_match(replace(config, seed=seed)).game
        stored = json.loads(json.dumps(played.config.to_dict()))
        replayed = new_game(GameConfig.from_dict(stored))
        for raw in json.loads(json.dumps(played.commands)):
            apply(replayed, command_from_dict(raw))
        assert _log(replayed) == _log(played)
        assert _log(play_match(replace(config, seed=seed)).game) == _log(played)


@pytest.mark.parametrize("config", [c for _, c in CONFIGS], ids=IDS)
def test_no_player_sees_what_it_may_not_in_any_mode(config: GameConfig) -> None:
    for seed in range(6):
        checker = LeakChecker()
        result = play_match(replace(config, seed=seed), before=checker.before,
                            after=checker.after)
        checker.check(result.game)
        assert not checker.problems, checker.problems[:10]


def test_the_game_start_event_carries_the_list_as_written() -> None:
    game = new_game(make_config(roles=CUSTOM_LIST, seed=3))
    start = game.events[0]
    assert start.key == "game.start"
    assert list(start.data["role_list"]) == rl.split_role_list(CUSTOM_LIST)
    assert start.data["mode"] == "custom"


def test_all_any_without_opposing_factions_ends_at_the_start_of_day_2() -> None:
    config = make_config(roles="Sheriff, Doctor, Lookout, Jester, Survivor"
                         if find_role("Survivor") else "Sheriff, Doctor, Lookout, Jester, Mayor")
    result = play_match(config)
    assert result.game.result == "town"
    assert result.game.day == 2


def test_custom_only_roles_come_only_from_custom_lists() -> None:
    custom_only = {k for k, r in ROLES.items() if r.custom_only}
    for name in ("classic", "ranked", "all_any"):
        config = make_config(name)
        for seed in range(200):
            dealt = set(deal(replace(config, seed=seed), random.Random(seed)))
            assert not dealt & custom_only, (name, seed)


@pytest.mark.parametrize(("roles", "players", "slot", "reason"), [
    ("Jailor, Sheriff, Jailor", None, 3, "unique and already in slot 1"),
    ("Jailor, Sherif, Any", None, 2, "not a role"),
    ("Mafia Killing, Mafia Killing, Mafia Killing", None, 3, "no unique role left"),
    ("Jailor, Sheriff, Godfather, Jester", 3, None, "4 slots for 3 players"),
    ("Jailor, , Any", None, None, ""),  # an empty item is skipped: 2 slots
])
def test_a_list_that_cannot_be_dealt_names_the_slot(roles: str, players: int | None,
                                                    slot: int | None, reason: str) -> None:
    if not reason:
        assert make_config(roles=roles).players == 2
        return
    with pytest.raises(RoleListError) as info:
        make_config(roles=roles, players=players)
    assert info.value.slot == slot
    assert reason in str(info.value)


def test_modes_refuse_wrong_player_counts_and_lists() -> None:
    with pytest.raises(ConfigError, match="needs 15 players"):
        make_config("ranked", 9)
    with pytest.raises(ConfigError, match="needs 7-15 players"):
        make_config("classic", 5)
    with pytest.raises(ConfigError, match="unknown mode"):
        make_config("coven_ranked")
    with pytest.raises(ConfigError, match="own mode"):
        make_config("ranked", roles="Jailor, Sheriff")
    assert set(MODES) >= {"classic", "ranked", "all_any", "custom"}
    assert make_config("Ranked Practice").mode == "ranked"


def test_a_deal_check_fails_when_the_expectation_is_wrong() -> None:
    """The scenario deal check can fail: Ranked does not deal 10 Town."""
    (sc,) = load_string("""
name: wrong
deal: {mode: ranked, seeds: 5}
expect:
  factions: {town: 10}
  never: [Jailor]
""")
    failures = run(sc).failures
    assert any("9 town roles, expected 10" in f for f in failures), failures
    assert any("Jailor was dealt" in f for f in failures), failures


def test_deal_check_reports_an_unexpected_refusal() -> None:
    (sc,) = load_string("name: x\ndeal: {roles: [Jailor, Jailor]}\n")
    assert sc.deal is not None
    assert "unique" in run(sc).failures[0]


runner = CliRunner()


def test_cli_plays_every_mode_and_a_custom_list() -> None:
    for args in (["--mode", "ranked"], ["--mode", "all_any"], ["--roles", CUSTOM_LIST]):
        result = runner.invoke(app, ["play", "--seed", "3", "--quiet", "--json", *args])
        assert result.exit_code == 0, result.output
        line = json.loads(result.output.strip().splitlines()[-1])
        assert line["result"] is not None
        assert line["mode"] in ("ranked", "all_any", "custom")


def test_cli_refuses_a_bad_list_naming_the_slot() -> None:
    result = runner.invoke(app, ["play", "--roles", "Jailor, Jailor, Any", "--quiet"])
    assert result.exit_code == 2
    assert "slot 2" in result.output and "unique" in result.output


def test_bench_engine_takes_a_mode() -> None:
    result = runner.invoke(app, ["bench", "engine", "--games", "3", "--mode", "all_any"])
    assert result.exit_code == 0, result.output
    assert "All Any" in result.output and "results:" in result.output
