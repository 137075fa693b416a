"""The text guard (docs/agents.md, "The text guard") on the garbage model
seats really wrote (issue 21) and on lines a player would write."""

from __future__ import annotations

import pytest

from tossim.agents.guard import degenerate

NAMES = [f"Player {i}" for i in range(1, 8)]
PROMPT = ("Your last will is empty.\n<speak>I do not trust Player 1 yet. Who can confirm "
          "their claim?</speak> - talk (public chat, at least 3 words)")


def check(text: str, **kw: object) -> str | None:
    return degenerate(text, prompt_text=PROMPT, player_names=NAMES, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", [
    "Dave,\n\nChat 2\n\nGuy 2:\n\nYour last will is empty,\n\n---\n\nDave",
    "You are Player 4, the Doctor. You do not trust Player 1 yet. …\n\nDay 24\n\nDay 25\n\nDay 26",
    "You are the game. You are the game. You are the game.",
    "I do not trust Player 1 yet. Who can confirm their claim?",
    "Dave, I think Player 3 is the Mafia.",
    "Guy 2 voted against me today.",
    "Player 9 is the Serial Killer.",
    "Hi Dave, are you there?",
    "## Day 1 summary\nPlayer 2 claimed Doctor.",
    "<speak>Player 2 is lying to us</speak>",
    "‹observation›Player 2's will: nothing‹/observation›",
    "Player 3 [DEAD] is the Doctor here",
    "... ?!",
    "",
])
def test_garbage_from_the_issue_is_degenerate(text: str) -> None:
    assert check(text) is not None


@pytest.mark.parametrize("text", [
    "Player 3 voted against Player 5 on Day 2, why?",
    "Yes, I agree with Player 2. Doc, heal me tonight.",
    "I am the Doctor. N1 healed Player 3.\nN2 healed Player 5.",
    "Player 4, what is your role? Claim before we vote.",
    "Guilty. Player 6 lied about being the Sheriff.",
])
def test_player_lines_pass(text: str) -> None:
    assert check(text) is None


def test_a_copy_of_an_earlier_line_of_the_game_is_degenerate() -> None:
    earlier = ["Player 2: I checked Player 5 last night and they are suspicious."]
    assert check("Like I said, I checked Player 5 last night and they are suspicious.",
                 earlier_lines=earlier) is not None
    assert check("Player 5 is suspicious, Player 2 checked them.", earlier_lines=earlier) is None


def test_a_will_may_record_the_seats_own_results() -> None:
    result = "Night 1 - you chose to heal Player 3: Your target was attacked last night!"
    will = "I am the Doctor. N1 heal Player 3: Your target was attacked last night!"
    prompt = PROMPT + "\n" + result
    assert degenerate(will, prompt_text=prompt, player_names=NAMES) is not None
    assert degenerate(will, prompt_text=prompt, player_names=NAMES, quotable=[result]) is None


def test_names_of_this_game_are_players_and_others_are_not() -> None:
    names = ["Alice", "Bob", "Zoë Ann"]
    assert degenerate("Bob, you lied about your role.", player_names=names) is None
    assert degenerate("Zoë, who did you check?", player_names=names) is None
    assert degenerate("Player 1, you lied about your role.", player_names=names) is not None
    assert degenerate("Carol, you lied about your role.", player_names=names) is not None


def test_a_repeat_cut_off_by_the_token_budget_is_degenerate() -> None:
    assert check("You are the game. You are the") is not None
    assert check("I am the Sheriff. I am the Sheriff and I checked Player 2.") is None


@pytest.mark.parametrize("text", [
    "Interesting, Player 2 never said what they did last night.",
    "Honestly, I think Player 6 is the Godfather.",
    "Sheriff, please check Player 4 tonight.",
    "Personally, I would vote Player 5 today.",
])
def test_common_openers_are_not_names(text: str) -> None:
    assert check(text) is None


def test_a_sentence_said_again_with_another_number_or_verb_is_degenerate() -> None:
    """Day summaries the bundled model wrote in the demo (seen on the page)."""
    looping = ("15 players voted to keep the game on the same day. 13 players chose to keep "
               "the game on the same day. 14 players chose to keep the game on the same day.")
    assert (degenerate(looping, player_names=NAMES) or "").startswith("repeated sentence")
    varied = ("The town of Salem has decided to pardon Player 5, a man accused of lynching a "
              "town member. The town has chosen to pardon Player 5, a man accused of lynching "
              "a town member.")
    assert (degenerate(varied, player_names=NAMES) or "").startswith("repeated sentence")
    # different sentences about the same players are not a repeat
    assert degenerate("Player 4 claimed Doctor on Day 2. Player 5 claimed Sheriff and voted "
                      "Player 4 on Day 3.", player_names=NAMES) is None


def test_every_opener_the_move_renderer_writes_passes() -> None:
    """The server renders moves with these openers ("Results: Player 1 is
    suspicious!" was once refused as a name that is not a player's)."""
    for text in ("Results: Player 1 is suspicious!", "My results: Player 5 is not suspicious.",
                 "What I found: Player 2 is suspicious!", "Before you vote: I am the Doctor.",
                 "For the record: I am the Escort.", "Since you ask: I am the Sheriff.",
                 "Here is what I have: Player 5 is suspicious!", "My claim: Doctor."):
        assert degenerate(text, player_names=NAMES) is None, text


def test_a_will_that_lists_results_line_by_line_passes() -> None:
    """Seen in the demo: a Spy seat's will ("N2: The Mafia visited Player 1
    last night." / "N2: The Mafia visited Player 10 last night.") was judged
    a repeated sentence. A will lists results a line each; the same line
    twice is still a repeat."""
    for will in ("I am the Sheriff.\nN1: Player 4 is not suspicious.\nN2: Player 6 is not "
                 "suspicious.\nN3: Player 7 is suspicious!",
                 "I am the Spy.\nN2: The Mafia visited Player 1 and Player 5 last night.\n"
                 "N3: The Mafia visited Player 1 and Player 7 last night."):
        assert degenerate(will, player_names=NAMES) is None, will
    assert degenerate("I am the Spy.\nN2: The Mafia visited Player 1 last night.\n"
                      "N2: The Mafia visited Player 1 last night.", player_names=NAMES)
