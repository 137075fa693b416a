"""Final actions to engine Commands; names; fault kinds and observations."""

from __future__ import annotations

import pytest

from tossim.agents.actions import (
    fault_observation,
    final_tags,
    resolve_name,
    split_targets,
    to_command,
)
from tossim.engine import (
    Chat,
    DayAction,
    GameConfig,
    IllegalCommand,
    Judge,
    LegalAction,
    NightAction,
    Viewer,
    Vote,
    Whisper,
    WriteDeathNote,
    WriteWill,
    apply,
    new_game,
    view,
)

from .support import day3_investigator

NAMES = {1: "Alice", 2: "Alan", 3: "Bob", 4: "Bob and Carol", 5: "Carol", 6: "Player 9"}


def test_resolve_name() -> None:
    assert resolve_name("Alice", NAMES) == 1
    assert resolve_name("alice", NAMES) == 1
    assert resolve_name(" Bob ", NAMES) == 3
    assert resolve_name("Bob and Carol", NAMES) == 4
    assert resolve_name("Car", NAMES) == 5
    assert resolve_name("Player 9", NAMES) == 6  # a name wins over a seat number
    assert resolve_name("3", NAMES) == 3
    assert resolve_name("player 2", NAMES) == 2
    with pytest.raises(IllegalCommand) as exc:
        resolve_name("Al", NAMES)
    assert exc.value.fault == "expression" and exc.value.candidates == (1, 2)
    with pytest.raises(IllegalCommand) as exc:
        resolve_name("Zed", NAMES)
    assert exc.value.fault == "expression" and exc.value.candidates == (1, 2, 3, 4, 5, 6)
    assert split_targets("Bob and Carol and Alice", NAMES) == ["Bob and Carol", "Alice"]
    assert split_targets("Alice, Bob", NAMES) == ["Alice", "Bob"]


def test_day3_commands_are_accepted_by_the_engine() -> None:
    t = day3_investigator()
    m = t.memories[7]
    assert final_tags(m.legal) == ["speak", "whisper", "wait", "vote", "will"]

    def cmd(tag: str, **args: object) -> object:
        return to_command(7, tag, args, m.legal, m.names, m.roster)

    assert cmd("wait") is None
    assert cmd("speak", text="Player 4 is lying.") == Chat(7, "Player 4 is lying.")
    assert cmd("whisper", target="Player 5", text="hi") == Whisper(7, 5, "hi")
    assert cmd("vote", target="Player 4") == Vote(7, 4)
    assert cmd("vote", target=4) == Vote(7, 4)
    assert cmd("will", text="N1: P4") == WriteWill(7, "N1: P4")
    for c in (cmd("speak", text="x"), cmd("whisper", target="Player 5", text="y"),
              cmd("vote", target="Player 4"), cmd("will", text="z")):
        assert c is not None
        apply(t.game, c)  # type: ignore[arg-type]


@pytest.mark.parametrize(("tag", "args", "fault", "candidates"), [
    ("vote", {"target": "Player 3"}, "premise", (1, 2, 4, 5, 6, 8)),  # dead
    ("vote", {"target": "Player 7"}, "premise", (1, 2, 4, 5, 6, 8)),  # yourself
    ("vote", {"target": 12}, "premise", (1, 2, 4, 5, 6, 8)),  # not in the game
    ("vote", {"target": "Player"}, "expression", tuple(range(1, 10))),
    ("vote", {"target": "Bobby"}, "expression", tuple(range(1, 10))),
    ("vote", {}, "parameter", (1, 2, 4, 5, 6, 8)),
    ("vote", {"target": "Player 4", "text": "x"}, "parameter", ()),
    ("speak", {}, "parameter", ()),
    ("speak", {"text": "  "}, "parameter", ()),
    ("speak", {"text": "x" * 501}, "parameter", ()),
    ("judge", {"verdict": "guilty"}, "intention", ()),
    ("night", {"targets": "Player 4"}, "intention", ()),
    ("jail", {"target": "Player 4"}, "intention", ()),
    ("dance", {}, "intention", ()),
])
def test_faults(tag: str, args: dict[str, object], fault: str,
                candidates: tuple[int, ...]) -> None:
    m = day3_investigator().memories[7]
    with pytest.raises(IllegalCommand) as exc:
        to_command(7, tag, args, m.legal, m.names, m.roster)
    assert exc.value.fault == fault
    assert exc.value.candidates == candidates
    obs = fault_observation(exc.value, m.names)
    assert obs.startswith(f"[{fault} fault] ")
    if candidates:
        assert "Candidates: " + ", ".join(f"Player {c}" for c in candidates) in obs


def test_night_day_and_judge_commands() -> None:
    names = {i: f"Player {i}" for i in range(1, 6)}
    legal = [LegalAction("night", (1, 2, 3), 2, "transport"),
             LegalAction("judge", options=("guilty", "innocent", "abstain")),
             LegalAction("jail", (2, 3), 1, "jail"), LegalAction("seance", (2,), 1, "seance"),
             LegalAction("reveal", ability="reveal"), LegalAction("death_note")]
    assert to_command(4, "night", {"targets": "Player 1 and Player 3"}, legal, names) == \
        NightAction(4, (1, 3))
    assert to_command(4, "night", {"targets": ["Player 2", "Player 1"]}, legal, names) == \
        NightAction(4, (2, 1))
    with pytest.raises(IllegalCommand) as exc:
        to_command(4, "night", {"targets": "Player 1"}, legal, names)
    assert exc.value.fault == "parameter"
    with pytest.raises(IllegalCommand) as exc:
        to_command(4, "night", {"targets": ["Player 1", "Player 1"]}, legal, names)
    assert exc.value.fault == "parameter"
    assert to_command(4, "judge", {"verdict": "Innocent"}, legal, names) == Judge(4, "innocent")
    with pytest.raises(IllegalCommand) as exc:
        to_command(4, "judge", {"verdict": "maybe"}, legal, names)
    assert exc.value.fault == "parameter"
    assert to_command(4, "jail", {"target": "Player 2"}, legal, names) == DayAction(4, "jail", 2)
    assert to_command(4, "seance", {"target": "2"}, legal, names) == DayAction(4, "seance", 2)
    assert to_command(4, "reveal", {}, legal, names) == DayAction(4, "reveal")
    assert to_command(4, "death_note", {"text": "Bye"}, legal, names) == WriteDeathNote(4, "Bye")
    alert = [LegalAction("night", (4,), 0, "alert")]
    assert to_command(4, "night", {"targets": "yourself"}, alert, names) == NightAction(4, (4,))
    assert to_command(4, "night", {"targets": ["yourself"]}, alert, names) == NightAction(4, (4,))


def test_veteran_alert_accepted_by_engine() -> None:
    g = new_game(GameConfig(players=7, seed=1, roles=(
        "veteran", "godfather", "doctor", "sheriff", "jester", "lookout", "escort")))
    from tossim.engine import PhaseTimeout
    apply(g, PhaseTimeout(g.phase_seq))
    obs = view(g, Viewer.player(1))
    names = {r.slot: r.name for r in obs.roster}
    c = to_command(1, "night", {"targets": "yourself"}, obs.legal, names, obs.roster)
    assert c is not None
    apply(g, c)
