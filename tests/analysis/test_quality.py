"""Play-quality metrics on hand-played games whose right answers are obvious."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tossim.agents.match import play_match
from tossim.analysis.quality import aggregate, claimed_roles, game_quality, record_quality
from tossim.cli import app
from tossim.engine import (
    Chat,
    Game,
    GameConfig,
    Judge,
    NightAction,
    PhaseTimeout,
    Vote,
    WriteWill,
    apply,
    new_game,
    replay,
)
from tossim.engine.state import Phase

# 1 Sheriff, 2 Doctor, 3 Mafioso, 4 Investigator, 5 Lookout, 6 Escort, 7 Serial Killer
ROLES = ("Sheriff", "Doctor", "Mafioso", "Investigator", "Lookout", "Escort", "Serial Killer")


def timeout(game: Game) -> None:
    apply(game, PhaseTimeout(game.phase_seq))


def until(game: Game, phase: Phase) -> None:
    while game.phase is not phase:
        timeout(game)


def played() -> Game:
    """Night 1: the Sheriff checks the Mafioso, the Doctor heals itself, the
    Investigator checks the Mafioso, the Escort blocks the Mafioso. Day 2: the
    Sheriff names its result with a reason, the Doctor repeats itself and votes
    the Investigator; the Mafioso goes on trial and is lynched."""
    game = new_game(GameConfig(players=7, seed=1, roles=ROLES))
    until(game, Phase.NIGHT)
    apply(game, NightAction(1, (3,)))
    apply(game, NightAction(2, (2,)))
    apply(game, NightAction(4, (3,)))
    apply(game, NightAction(6, (3,)))
    apply(game, NightAction(3, (5,)))
    until(game, Phase.DISCUSSION)
    apply(game, Chat(1, "I am the Sheriff. Player 3 is Mafia, I checked them last night."))
    apply(game, Chat(2, "hello"))
    apply(game, Chat(2, "Hello "))
    apply(game, Chat(3, "I am the Doctor."))
    apply(game, WriteWill(4, "I am the Investigator. N1: Player 3 could be a Vigilante, "
                             "Veteran, or Mafioso."))
    until(game, Phase.VOTING)
    apply(game, Vote(2, 4))
    for voter in (1, 4, 5, 7):
        apply(game, Vote(voter, 3))
    until(game, Phase.JUDGEMENT)
    apply(game, Judge(1, "guilty"))
    apply(game, Judge(2, "innocent"))
    apply(game, Judge(4, "guilty"))
    apply(game, Judge(7, "guilty"))
    until(game, Phase.NIGHT)  # last words, then the lynch
    assert not game.player(3).alive
    return game


def test_a_sheriff_who_votes_and_lynches_the_mafioso_it_found_scores_full_marks() -> None:
    q = game_quality(played())
    sheriff = q[1]
    assert sheriff["vote_accuracy"] == 1.0  # its vote and its guilty verdict hit the Mafioso
    assert sheriff["votes"] == 1 and sheriff["guilty"] == 1
    assert sheriff["results"] == 1 and sheriff["results_use_rate"] == 1.0
    assert sheriff["claim_accuracy"] == 1.0
    assert sheriff["reasoned_rate"] == 1.0
    assert sheriff["night_plausibility"] == 1.0
    assert sheriff["repetition_rate"] == 0.0


def test_bad_play_shows_in_the_metrics() -> None:
    q = game_quality(played())
    doctor = q[2]
    assert doctor["vote_accuracy"] == 0.0  # voted an Investigator; its innocent is not a hit
    assert doctor["innocent_on_enemies"] == 1
    assert doctor["night_plausibility"] == 0.0  # healed itself
    assert doctor["repetition_rate"] == 0.5  # "hello" twice
    assert doctor["reasoned_rate"] == 0.0
    # the Investigator wrote its result into its will
    assert q[4]["results_use_rate"] == 1.0
    # the Mafioso lied about its role: not scored as a Town claim
    assert q[3]["role_claims"] == 1 and q[3]["claim_accuracy"] is None
    # the Escort blocked an enemy: plausible; the Serial Killer's votes are always on enemies
    assert q[6]["night_plausibility"] == 1.0
    assert q[7]["vote_accuracy"] == 1.0


def test_town_lynched_by_town_votes_is_counted_for_the_guilty_town_voters() -> None:
    game = new_game(GameConfig(players=7, seed=1, roles=ROLES))
    until(game, Phase.VOTING)
    for voter in (1, 3, 4, 5):
        apply(game, Vote(voter, 2))  # the Doctor on trial
    until(game, Phase.JUDGEMENT)
    for voter in (1, 3, 4):
        apply(game, Judge(voter, "guilty"))
    apply(game, Judge(5, "innocent"))
    until(game, Phase.NIGHT)
    assert not game.player(2).alive
    q = game_quality(game)
    assert [q[s]["town_lynched_with_guilty"] for s in (1, 3, 4, 5)] == [1, 0, 1, 0]
    assert q[1]["vote_accuracy"] == 0.0
    assert q[3]["vote_accuracy"] == 1.0  # the Mafioso helped lynch an enemy


def test_a_stored_log_gives_the_same_metrics_and_aggregates_skip_undefined_rates() -> None:
    game = played()
    record = json.loads(json.dumps(replay.to_record(game)))
    assert record_quality(record) == game_quality(game)
    agg = aggregate(game_quality(game), [1, 2])
    assert agg["seats"] == 2 and agg["votes"] == 2
    assert agg["vote_accuracy"] == 0.5
    assert aggregate(game_quality(game), [2])["results_use_rate"] is None


def test_claims_are_read_in_free_wording() -> None:
    assert claimed_roles("Honestly I'm a doctor, and I am the Serial Killer") == [
        "doctor", "serial_killer"]
    assert claimed_roles("the Sheriff is dead") == []


def test_play_metrics_writes_and_prints_each_seats_quality(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    result = CliRunner().invoke(app, ["play", "--players", "7", "--seed", "2", "--quiet",
                                      "--metrics", str(out)])
    assert result.exit_code == 0, result.output
    assert "play quality, scripted seats (7 seats): vote accuracy" in result.output
    data = json.loads(out.read_text())
    seats = data["quality"]["seats"]
    assert sorted(seats, key=int) == [str(s) for s in range(1, 8)]
    game = play_match(GameConfig(players=7, seed=2)).game
    assert seats == {str(s): m for s, m in game_quality(game).items()}
    assert data["quality"]["groups"]["scripted seats"]["seats"] == 7


def _example_will(game: Game, slot: int) -> str:
    """The will example the seat's prompt shows now (built from its results)."""
    from tossim.agents.memory import SeatMemory
    from tossim.agents.prompting import action_lines
    from tossim.engine import Viewer, view

    memory = SeatMemory(slot)
    memory.update(view(game, Viewer.player(slot)))
    line = next(x for x in action_lines(memory) if x.startswith("<will>"))
    return line.split("<will>", 1)[1].split("</will>", 1)[0]


def test_copies_of_prompt_text_and_earlier_lines_are_not_credited() -> None:
    """Issue 21: `reasoned_rate` credited copies of the prompt's speech example
    and "results used" credited the example will, copied word for word."""
    game = new_game(GameConfig(players=7, seed=1, roles=ROLES))
    until(game, Phase.NIGHT)
    apply(game, NightAction(4, (3,)))  # the Investigator checks the Mafioso
    until(game, Phase.DISCUSSION)
    will = _example_will(game, 4)
    assert "Player 3" in will  # names the result's target: the old figure credited it
    apply(game, WriteWill(4, will))
    apply(game, Chat(2, "I do not trust Player 4 yet. Who can confirm their claim?"))
    apply(game, Chat(5, "Player 3 voted for nobody and acts suspicious to me."))
    apply(game, Chat(6, "Player 3 voted for nobody and acts suspicious to me."))
    q = game_quality(game)
    assert q[4]["results"] == 1 and q[4]["results_use_rate"] == 0.0  # was 1.0
    assert q[2]["reasoned_rate"] == 0.0  # the prompt's example: was 1.0
    assert q[5]["reasoned_rate"] == 1.0  # its own words
    assert q[6]["reasoned_rate"] == 0.0  # a copy of Player 5's line: was 1.0
