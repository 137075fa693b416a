"""The scenario suite (tests/scenarios/*.yaml) and the scenario runner itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tossim.engine.roles import ROLES
from tossim.scenarios.scenario import (
    Scenario,
    ScenarioError,
    load_file,
    load_string,
    run,
    run_paths,
)

SCENARIO_DIR = Path(__file__).parent / "scenarios"
FILES = sorted(SCENARIO_DIR.glob("*.yaml"))


def _collect() -> list[object]:
    params: list[object] = []
    for path in FILES:
        try:
            scenarios = load_file(path)
        except ScenarioError as exc:  # shown as a failing case, not a collection error
            params.append(pytest.param(None, str(exc), id=path.name))
            continue
        for sc in scenarios:
            params.append(pytest.param(sc, "", id=sc.name))
    return params


ALL: list[Scenario] = [sc for path in FILES for sc in load_file(path)]


@pytest.mark.parametrize(("scenario", "load_error"), _collect())
def test_scenario(scenario: Scenario | None, load_error: str) -> None:
    assert scenario is not None, load_error
    result = run(scenario)
    assert result.passed, "\n".join(result.failures)


def test_suite_is_substantial() -> None:
    assert len(FILES) >= 7
    assert len(ALL) >= 60


def test_scenario_names_are_unique() -> None:
    names = [sc.name for sc in ALL]
    dupes = sorted({n for n in names if names.count(n) > 1})
    assert not dupes, f"duplicate scenario names: {dupes}"


def _mentions(sc: Scenario, key: str) -> bool:
    name = ROLES[key].name.lower()
    covers = {c.strip().lower().replace(" ", "_") for c in sc.covers}
    return key in covers or name in sc.name.lower() or key in sc.name.lower()


@pytest.mark.parametrize("key", sorted(ROLES))
def test_every_role_has_a_scenario(key: str) -> None:
    dealt = [sc for sc in ALL if key in sc.roles]
    assert dealt, f"no scenario deals the role {key}"
    exercised = [sc for sc in dealt if _mentions(sc, key)]
    assert exercised, f"no scenario with {key} in its players names it in `name` or `covers`"


# ---- the runner ---------------------------------------------------------------------------

GOOD = """\
name: doctor saves the sheriff
players: [Sheriff, Doctor, Godfather, Mafioso, Jester]
start: night 1
steps:
  - night: {actor: 3, targets: [1]}
  - night: {actor: 2, targets: [1]}
  - timeout
expect:
  alive: [1]
  messages:
    1: [night.healed]
"""


def _write(tmp_path: Path, text: str, name: str = "case.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_scenario_passes(tmp_path: Path) -> None:
    results = run_paths([_write(tmp_path, GOOD)])
    assert [(r.name, r.passed) for r in results] == [("doctor saves the sheriff", True)]


def test_unknown_field_is_reported_with_file_and_line(tmp_path: Path) -> None:
    text = GOOD.replace("start: night 1\n", "start: night 1\nfalgs: {}\n")
    path = _write(tmp_path, text)
    (result,) = run_paths([path])
    assert not result.passed
    assert result.failures[0].startswith(f"{path}:4: unknown field 'falgs'")


def test_unknown_fields_deeper_down_are_reported_with_their_lines(tmp_path: Path) -> None:
    text = GOOD.replace("  - timeout\n", "  - vote: {actor: 1, taget: 2}\n  - timeout\n")
    text = text.replace("  alive: [1]\n", "  alive: [1]\n  winner: [1]\n")
    path = _write(tmp_path, text)
    (result,) = run_paths([path])
    assert f"{path}:7: unknown field 'taget' in vote" in "\n".join(result.failures)
    assert f"{path}:11: unknown field 'winner' in expect" in "\n".join(result.failures)


def test_unexpected_illegal_command_is_reported_with_file_and_line(tmp_path: Path) -> None:
    text = GOOD.replace("  - timeout\n", "  - vote: {actor: 1, target: 2}\n  - timeout\n")
    path = _write(tmp_path, text)
    (result,) = run_paths([path])
    assert not result.passed
    assert len(result.failures) == 1  # the run stops at the rejected command
    failure = result.failures[0]
    assert failure.startswith(f"{path}:7: vote(actor=1, target=2) was rejected (intention)")
    assert "cannot vote" in failure


def test_expected_illegal_command_that_is_accepted_fails(tmp_path: Path) -> None:
    text = GOOD.replace("  - timeout\n", "  - illegal: {night: {actor: 1, targets: [4]}}\n"
                                         "  - timeout\n")
    (result,) = run_paths([_write(tmp_path, text)])
    assert not result.passed
    assert ":7: night(actor=1, targets=[4]) was accepted" in result.failures[0]


def test_illegal_with_the_wrong_fault_fails(tmp_path: Path) -> None:
    text = GOOD.replace("  - timeout\n",
                        "  - illegal: {night: {actor: 2, targets: [9]}, fault: intention}\n"
                        "  - timeout\n")
    (result,) = run_paths([_write(tmp_path, text)])
    assert result.failures == [
        f"{tmp_path / 'case.yaml'}:7: night(actor=2, targets=[9]) was rejected with fault "
        "'premise', expected 'intention' (reason: There is no player 9 in this game.)"
    ]


def test_failed_expectation_names_file_line_and_what_was_seen(tmp_path: Path) -> None:
    text = GOOD.replace("1: [night.healed]", "1: [night.healed]\n    2: [night.healed]")
    path = _write(tmp_path, text)
    (result,) = run_paths([path])
    assert len(result.failures) == 1
    failure = result.failures[0]
    assert failure.startswith(f"{path}:12: player 2 expected message night.healed; got: [")
    assert "night.doctor_saved" in failure


def test_expect_step_checks_in_the_middle(tmp_path: Path) -> None:
    text = GOOD.replace("  - timeout\n", "  - expect: {phase: day 2}\n  - timeout\n")
    (result,) = run_paths([_write(tmp_path, text)])
    assert result.failures == [
        f"{tmp_path / 'case.yaml'}:7: expected phase day 2 discussion; now night 1"]


def test_yaml_syntax_error_gives_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "name: broken\nplayers: [Sheriff, Doctor\nsteps: []\n")
    with pytest.raises(ScenarioError, match=re.escape(str(path)) + r":\d+: invalid YAML"):
        load_file(path)
    (result,) = run_paths([path])
    assert not result.passed and result.name == str(path)


def test_unknown_role_player_and_step_are_reported(tmp_path: Path) -> None:
    text = """\
- name: bad role
  players: [Sheriff, Wizard]
- name: bad player and step
  players: [{name: Alice, role: Sheriff}, Doctor, Godfather]
  steps:
    - vote: {actor: Bob, target: Alice}
    - dance: {actor: 1}
    - until: noon
"""
    path = _write(tmp_path, text)
    first, second = run_paths([path])
    assert first.failures[0].startswith(f"{path}:2: player 2: unknown role 'Wizard'")
    joined = "\n".join(second.failures)
    assert f"{path}:6: vote.actor: unknown player 'Bob'" in joined
    assert f"{path}:7: unknown step 'dance'" in joined
    assert f"{path}:8: until: unknown phase 'noon'" in joined


def test_a_file_must_hold_scenarios() -> None:
    with pytest.raises(ScenarioError, match=r"^x.yaml:1: a scenario file holds"):
        load_string("just text", "x.yaml")
    (sc,) = load_string("- 42", "y.yaml")
    assert sc.errors == ["y.yaml:1: a scenario must be a mapping, not 42"]


def test_duplicate_keys_are_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, "name: a\nname: b\nplayers: [Sheriff]\n")
    with pytest.raises(ScenarioError, match=r":2: invalid YAML: duplicate key 'name'"):
        load_file(path)


def test_player_names_multi_documents_and_folders(tmp_path: Path) -> None:
    named = """\
name: named players
players:
  - {name: Alice, role: Sheriff}
  - {name: Bob, role: Doctor}
  - Godfather
  - Mafioso
start: night 1
steps:
  - night: {actor: Alice, targets: [Mafioso]}
  - timeout
expect:
  sheriff: {Alice: suspicious}
---
name: second document
players: [Sheriff, Godfather]
"""
    scenarios = load_string(named.replace("[Mafioso]", "[4]"), "x.yaml")
    assert [s.name for s in scenarios] == ["named players", "second document"]
    assert scenarios[0].names == ("Alice", "Bob", "Player 3", "Player 4")
    sub = tmp_path / "sub"
    sub.mkdir()
    _write(sub, named.replace("[Mafioso]", "[4]"), "a.yaml")
    _write(sub, GOOD, "b.yaml")
    _write(sub, "not: a scenario file", "notes.txt")
    results = run_paths([tmp_path])
    assert [r.name for r in results] == ["named players", "second document",
                                         "doctor saves the sheriff"]
    assert all(r.passed for r in results), [r.failures for r in results]


def test_unknown_player_name_in_targets_is_reported() -> None:
    text = GOOD.replace("targets: [1]}\n  - night: {actor: 2", "targets: [Mafioso]}\n"
                        "  - night: {actor: 2")
    (sc,) = load_string(text, "t.yaml")
    assert sc.errors and sc.errors[0].startswith("t.yaml:5: night.targets: unknown player")


def test_until_reports_a_game_that_ends_first() -> None:
    text = """\
name: ends first
players: [Sheriff, Mafioso]
start: night 1
steps:
  - night: {actor: 2, targets: [1]}
  - until: day 5
"""
    (sc,) = load_string(text, "u.yaml")
    result = run(sc)
    assert result.failures and result.failures[0].startswith(
        "u.yaml:6: until day 5 discussion: the game ended first (result mafia")


def test_start_that_cannot_be_reached_quietly() -> None:
    (sc,) = load_string("name: late\nplayers: [Sheriff, Mafioso]\nstart: day 9\n", "s.yaml")
    result = run(sc)
    assert result.failures and "start day 9 discussion cannot be reached" in result.failures[0]


def test_missing_path_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        run_paths([tmp_path / "nope.yaml"])


def test_a_deal_check_that_stops_early_does_not_claim_roles_were_never_dealt(
        tmp_path: Path) -> None:
    """After five broken deals the check stops; the seeds it did not deal say
    nothing about which roles are never dealt."""
    text = ("name: classic with one town member\n"
            "deal: {mode: classic, seeds: 300}\n"
            "expect:\n"
            "  factions: {town: 1}\n"
            "  sometimes: [Spy, Retributionist, Transporter, Veteran, Vigilante]\n")
    (result,) = run_paths([_write(tmp_path, text)])
    assert not result.passed
    assert [f.split(": ", 2)[1] for f in result.failures[:5]] == [
        f"seed {s}" for s in range(5)]
    assert not any("never dealt" in f for f in result.failures), result.failures
    assert result.failures[5].endswith(
        "stopped after 5 problems at seed 4; `sometimes` was not checked")


def test_every_scenario_named_in_the_rules_doc_exists() -> None:
    """docs/rules.md lists each rule sentence beside the scenarios that prove
    it (`file.yaml::name`); a renamed or deleted scenario must not leave the
    list claiming coverage it no longer has."""
    doc = (Path(__file__).parent.parent / "docs" / "rules.md").read_text(encoding="utf-8")
    refs = re.findall(r"`([a-z_]+\.yaml)::([^`]+)`", doc)
    assert len(refs) > 100
    known = {(Path(sc.file).name, sc.name) for sc in ALL}
    missing = [f"{f}::{n}" for f, n in refs if (f, n) not in known]
    assert not missing, missing
