"""Structured speech moves (docs/agents.md#speech-moves): a seat that chooses
a move says a rendered sentence about living players and real roles; the
grammar refuses anything else; a free-text seat still writes free text."""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import replace
from typing import Any

import pytest

from tossim.agents import play_match
from tossim.agents.actions import to_command
from tossim.agents.grammar import Choice, choices_regex, turn_choices
from tossim.agents.llm_seat import LLMSeat, seat_from_spec
from tossim.agents.loop import LoopConfig, ToolLoop, TurnResult
from tossim.agents.memory import SeatMemory
from tossim.agents.moves import (
    Accuse,
    Ask,
    ClaimRole,
    Defend,
    Reason,
    Report,
    Result,
    VotePlan,
    WillMove,
    _guilty_shot,
    announced_vote,
    claimable,
    cover_blown,
    defended_today,
    game_roles,
    move_table,
    night_choice,
    own_claim,
    own_results,
    proven,
    reasons,
    render,
    speak_move,
    structured_choices,
    team_night,
    unreported,
)
from tossim.agents.prompting import build_messages
from tossim.agents.protocols import xml as xp
from tossim.engine import Chat, Command, GameConfig, View, Viewer, apply, new_game, view
from tossim.engine.commands import Judge, NightAction, Vote, WriteDeathNote, WriteWill
from tossim.engine.roles import ROLES
from tossim.inference.catalogue import CatalogueError, ModelEntry, parse_catalogue

from .fake_backend import ScriptedBackend
from .support import DAY3_ROLES, Tracker, day3_investigator

MOVES = LoopConfig(max_tool_calls=2, action_tokens=120, turn_tokens=600, speech="moves")


def run(outputs: list[str], cfg: LoopConfig = MOVES, slot: int = 7) -> TurnResult:
    memory = day3_investigator().memories[slot]
    backend = ScriptedBackend(outputs)  # asserts every output matches its request's regex
    return asyncio.run(ToolLoop(backend, cfg).run_turn(memory, key="g:7", seed=1))


def action_regex(memory: SeatMemory) -> str:
    return choices_regex(structured_choices(memory, turn_choices(memory.legal, memory.names)))


def test_an_accusation_move_is_said_as_a_sentence_and_kept() -> None:
    r = run(["<thinking>My result on Player 4 fits the Mafioso.</thinking>",
             "<speak>accuse Player 4: my result: Player 4 could be a Vigilante, Veteran, "
             "or Mafioso</speak>"])
    assert isinstance(r.command, Chat)
    text = r.command.text
    # the claim vocabulary's accusation, then the reason in words a player says
    assert text.startswith(("Vote Player 4!", "Listen, Vote", "Town, Vote", "Okay. Vote",
                            "Hear me out: Vote", "Honestly, Vote", "Let's not waste"))
    assert "Vote Player 4!" in text and "Vigilante, Veteran, or Mafioso" in text
    assert "accuse" not in text and "my result:" not in text
    assert isinstance(r.move, Accuse) and r.move.target == 4
    assert r.move.reason.kind == "result"
    assert r.move.to_dict()["move"] == "accuse"
    # the prompt lists the moves, not the free-text speech example, and no whisper
    assert "<speak>accuse Player" in r.prompt and "<whisper" not in r.prompt.split(
        "## Who you are")[1]


def test_claim_report_and_lie_are_told_apart() -> None:
    claim = run(["<thinking>Claim.</thinking>", "<speak>claim Investigator</speak>"])
    assert isinstance(claim.command, Chat) and "I am the Investigator." in claim.command.text
    assert claim.move == ClaimRole("Investigator", true=True)
    fake = run(["<thinking>Claim.</thinking>", "<speak>claim Bodyguard</speak>"], slot=2)
    assert isinstance(fake.move, ClaimRole) and not fake.move.true  # the Godfather's cover
    honest = run(["<thinking>Share.</thinking>",
                  "<speak>report Player 2 could be a Bodyguard, Godfather, or Arsonist</speak>"])
    assert isinstance(honest.command, Chat)
    assert "Player 2 could be a Bodyguard, Godfather, or Arsonist." in honest.command.text
    assert isinstance(honest.move, Report) and honest.move.honest and not honest.move.lie
    lie = run(["<thinking>Frame them.</thinking>", "<speak>lie Player 5 is suspicious</speak>"],
              slot=2)
    assert isinstance(lie.command, Chat) and "Player 5 is suspicious!" in lie.command.text
    assert isinstance(lie.move, Report) and lie.move.lie and not lie.move.honest


def test_the_grammar_refuses_dead_unknown_players_and_unreal_roles() -> None:
    m = day3_investigator().memories[7]  # Player 3 and Player 9 are dead
    rx = re.compile(action_regex(m))
    for ok in ("<speak>will vote Player 4</speak>",
               "<speak>report Player 4 could be a Vigilante, Veteran, or Mafioso</speak>",
               "<speak>accuse Player 4: they claimed Doctor, but the Doctor is dead</speak>",
               "<speak>claim Investigator</speak>", "<will>Investigator</will>",
               "<wait></wait>"):
        assert rx.fullmatch(ok), ok
    # not having claimed is a charge only from a seat that has claimed
    assert not rx.fullmatch("<speak>accuse Player 6: they have not claimed a role</speak>")
    claimed = day3_investigator(((7, "I am the Investigator."),)).memories[7]
    assert re.fullmatch(action_regex(claimed),
                        "<speak>accuse Player 6: they have not claimed a role</speak>")
    for bad in ("<speak>will vote Player 3</speak>",  # dead
                "<speak>ask Player 9 about role</speak>",  # dead
                "<speak>accuse Player 3: they have not claimed a role</speak>",
                "<speak>will vote Player 12</speak>",  # not in the game
                "<speak>will vote Dave</speak>",
                "<speak>will vote Player 7</speak>",  # the seat itself
                "<speak>claim Wizard</speak>",  # no such role
                "<speak>report Player 5 is suspicious</speak>",  # not a result it has
                "<speak>claim Doctor</speak>",  # a Town seat claims its own role
                "<will>Sheriff</will>",
                "<speak>lie Player 5 is suspicious</speak>",  # a Town seat does not lie
                "<speak>accuse Player 6: they claimed Sheriff</speak>",  # never happened
                "<speak>I do not trust Player 1 yet.</speak>",  # free text
                '<whisper to="Player 5">I am the Investigator.</whisper>',
                "<will>I am the Investigator.</will>"):
        assert not rx.fullmatch(bad), bad
    asker = re.compile(action_regex(day3_investigator().memories[5]))  # no result to tell
    assert asker.fullmatch("<speak>ask Player 1 about role</speak>")
    # Player 4 claimed in its own words ("I'm the real Doctor!"): not asked
    assert not asker.fullmatch("<speak>ask Player 4 about role</speak>")
    assert not asker.fullmatch("<speak>ask Player 9 about role</speak>")  # dead


def test_an_unguided_move_that_does_not_exist_is_a_fault_then_a_retry() -> None:
    memory = day3_investigator().memories[7]
    backend = ScriptedBackend(["<thinking>x</thinking>", "<speak>will vote Player 3</speak>",
                               "<thinking>y</thinking>", "<speak>will vote Player 4</speak>"],
                              check_regex=False)
    r = asyncio.run(ToolLoop(backend, MOVES).run_turn(memory, key="g:7", seed=1))
    assert r.stats.faults == {"expression": 1}
    assert isinstance(r.move, VotePlan) and r.move.target == 4
    assert isinstance(r.command, Chat) and "Player 4" in r.command.text


def test_wills_and_death_notes_are_built_from_moves() -> None:
    r = run(["<thinking>Keep my will.</thinking>", "<will>Investigator</will>"])
    assert r.command == WriteWill(7, "I am the Investigator.\n"
                                     "N1: Player 4 could be a Vigilante, Veteran, or Mafioso.\n"
                                     "N2: Player 2 could be a Bodyguard, Godfather, or Arsonist.")
    assert isinstance(r.move, WillMove) and r.move.true and len(r.move.results) == 2
    fake = run(["<thinking>Pretend.</thinking>", "<will>Bodyguard</will>"], slot=2)
    assert fake.command == WriteWill(2, "I am the Bodyguard.")  # a cover carries no results
    note = run(["<thinking>Scare them.</thinking>", "<death_note>Sleep well.</death_note>"],
               slot=2)
    assert note.command == WriteDeathNote(2, "Sleep well.")
    m = day3_investigator().memories[2]
    assert not re.fullmatch(action_regex(m), "<death_note>You are the game.</death_note>")


def test_json_protocol_moves() -> None:
    r = run(['{"thought": "Claim.", ',
             '"action": "speak", "args": {"text": "claim Investigator"}}'],
            LoopConfig(protocol="json", speech="moves", max_tool_calls=0), slot=7)
    assert isinstance(r.command, Chat) and "I am the Investigator." in r.command.text
    assert isinstance(r.move, ClaimRole) and r.move.role == "Investigator"


def test_a_free_text_seat_still_writes_free_text() -> None:
    t = day3_investigator()
    backend = ScriptedBackend(["<thinking>Say it.</thinking>",
                               "<speak>Player 4 is lying about the Doctor.</speak>",
                               # the vote is still open: a second turn for it
                               "<thinking>Now vote.</thinking>", "<wait></wait>"])
    seat = seat_from_spec({"speech": "free"}, 7, 3, backend)
    cmds = asyncio.run(seat.decide(view(t.game, Viewer.player(7), since=0)))
    assert cmds == [Chat(7, "Player 4 is lying about the Doctor.")]
    assert seat.turn_log[0]["move"] is None
    # the free-text grammar still offers a whisper and free speech
    assert "whisper" in (backend.requests[1].regex or "")


def test_a_structured_seat_keeps_the_move_in_its_turn_record() -> None:
    t = day3_investigator()
    # a structured seat (it may not abstain) votes first, then speaks
    backend = ScriptedBackend(["<thinking>Player 4 then.</thinking>", "<vote>Player 4</vote>",
                               "<thinking>Ask.</thinking>",
                               "<speak>ask Player 4 about vote</speak>"])
    seat = LLMSeat(5, ToolLoop(backend, MOVES))
    cmds = asyncio.run(seat.decide(view(t.game, Viewer.player(5), since=0)))
    assert cmds == [Vote(5, 4), Chat(5, "Player 4, who are you voting for today?")]
    assert seat.turn_log[0]["move"] is None
    assert seat.turn_log[1]["move"] == {"move": "ask", "target": 4, "topic": "vote"}
    assert seat.seat_metrics().to_dict()["moves"] == {"ask": 1}
    # its vote turn offered neither `wait` nor speech; the next turn offered `wait`
    vote_turn, side_turn = backend.requests[1].regex, backend.requests[-1].regex
    assert "<wait>" not in vote_turn and "<speak>" not in vote_turn
    assert "<wait>" in side_turn and "<vote>" not in side_turn
    assert seat.seat_metrics().to_dict()["offered"] == {"vote": 1}
    assert seat.seat_metrics().to_dict()["act_rate"] == {"vote": 1.0}


def test_seat_metrics_count_claims_lies_and_accusations() -> None:
    from tossim.agents.metrics import AgentMetrics

    metrics = AgentMetrics()
    for slot, out in ((2, "<speak>claim Bodyguard</speak>"),
                      (7, "<speak>claim Investigator</speak>"),
                      (2, "<speak>lie Player 5 is suspicious</speak>"),
                      (7, "<speak>accuse Player 4: they claimed Doctor, but the Doctor "
                          "is dead</speak>")):
        metrics.add(run(["<thinking>Go.</thinking>", out], slot=slot))
    assert metrics.to_dict()["moves"] == {"accuse": 1, "claim": 2, "false_claim": 1,
                                          "lie": 1, "report": 1}
    again = AgentMetrics.from_fields(metrics.fields())  # as a worker reports them
    assert again.moves == metrics.moves


def test_catalogue_speech_defaults_and_choices() -> None:
    cat = parse_catalogue({"models": {
        "small": {"backend": "local", "speech": "free"},
        "hosted": {"backend": "openai", "base_url": "http://127.0.0.1:9/v1"},
        "gpt": {"backend": "chat", "model": "gpt-4o-mini"},
        "folder": {"backend": "local", "model": "/models/qwen"},
        "guided": {"backend": "vllm", "model": "/models/qwen", "speech": "moves"}}})
    speech = {e.name: e.speech for e in cat.entries}
    assert speech == {"scripted": None, "smollm2": "moves", "small": "free", "hosted": "free",
                      "gpt": "free", "folder": "free", "guided": "moves"}
    assert cat.get("smollm2").public()["speech"] == "moves"
    with pytest.raises(CatalogueError, match="chat entry writes free text"):
        parse_catalogue({"models": {"x": {"backend": "chat", "model": "m", "speech": "moves"}}})
    with pytest.raises(CatalogueError, match="speech"):
        parse_catalogue({"models": {"x": {"backend": "local", "speech": "poetry"}}})
    assert ModelEntry(name="b", backend="local", model="smollm2-135m").speech == "moves"


# ---- whole games: random choices among the moves the grammar allows -------------------

def write(c: Choice, rng: random.Random) -> str:
    """A string for this choice as a constrained model could write it."""
    if c.body:
        body = "".join(p.value if p.kind == "lit" else rng.choice(p.options) for p in c.body)
    elif c.arg == "names2":
        a, b = rng.sample(c.options, 2)
        body = f"{a} and {b}"
    elif c.arg in ("names", "options", "self"):
        body = rng.choice(c.options)
    else:
        body = ""
    return f"<{c.tag}>{body}</{c.tag}>"


class RandomMoveSeat:
    """Chooses a random allowed final action, speeches, wills and notes as moves."""

    def __init__(self, slot: int, seed: int) -> None:
        self.memory = SeatMemory(slot)
        self.rng = random.Random(seed * 100 + slot)
        self.said: list[tuple[str, object]] = []

    def decide(self, obs: View) -> list[Command]:
        m = self.memory
        m.update(obs)
        if not m.legal:
            return []
        build_messages(m, None, "xml", speech="moves")
        table = move_table(m)
        choices = structured_choices(m, turn_choices(m.legal, m.names), table)
        speech = [c for c in choices if c.tag in ("speak", "will", "death_note")]
        pool = speech if speech and self.rng.random() < 0.7 else choices
        text = write(self.rng.choice(pool), self.rng)
        assert re.fullmatch(choices_regex(choices), text), text
        parsed = xp.parse(text)
        move = None
        if parsed.name in ("speak", "will", "death_note"):
            parsed, move = speak_move(m, parsed, self.rng.randrange(1000))
            self.check(m, parsed.args["text"], move)
        m.end_turn()
        cmd = to_command(m.slot, parsed.name, parsed.args, m.legal, m.names, m.roster)
        return [] if cmd is None else [cmd]

    def check(self, m: SeatMemory, text: str, move: object) -> None:
        living = {p.slot for p in m.living()}
        players = set(m.names.values())
        for name in re.findall(r"Player \d+", text):
            assert name in players, (text, name)
        for role in re.findall(r"I am the ([A-Z][A-Za-z ]*)\.", text):
            assert role in {r.name for r in ROLES.values()}, (text, role)
        if isinstance(move, Accuse | Defend | VotePlan | Ask):
            assert move.target in living and move.target != m.slot, (text, move)
        if isinstance(move, Accuse):
            assert f"Vote {m.names[move.target]}!" in text
        assert "<" not in text and not re.search(r"\b(?:claim|accuse|defend|lie) ", text[:7])
        self.said.append((text, move))


@pytest.mark.parametrize("seed", [0, 5])
def test_random_structured_seats_say_only_sentences_about_real_players(seed: int) -> None:
    seats = {s: RandomMoveSeat(s, seed) for s in range(1, 16)}
    result = play_match(GameConfig(players=15, seed=seed), dict(seats),  # type: ignore[arg-type]
                        max_days=6)
    assert result.faults == dict.fromkeys(range(1, 16), 0), result.fault_reasons
    said = [m for s in seats.values() for _t, m in s.said]
    kinds = {type(m).__name__ for m in said}
    assert {"ClaimRole", "Accuse", "Ask", "VotePlan", "WillMove"} <= kinds, kinds
    assert len(said) > 100


def test_scripted_bots_understand_what_a_structured_seat_says() -> None:
    """The renderer speaks the claim vocabulary, so every bot reads a model
    seat's claims, results and accusations (whatever wording is drawn)."""
    from tossim.agents import claims as cv
    from tossim.agents.moves import Reason, Result

    names = {s: f"Player {s}" for s in range(1, 8)}
    vocab = cv.vocabulary(tuple(names.values()))
    for seed in range(20):
        rng = random.Random(seed)
        said = vocab.parse(render(ClaimRole("Doctor"), names, rng))
        assert [(c.kind, c.role) for c in said] == [(cv.ROLE, "doctor")]
        said = vocab.parse(render(Report(Result("suspicious", 4)), names, rng))
        assert [(c.kind, c.target) for c in said] == [(cv.SUSPICIOUS, 4)]
        said = vocab.parse(render(Accuse(5, Reason("vote", 5, 2, other=3)), names, rng))
        assert [(c.kind, c.target) for c in said] == [(cv.ACCUSE, 5)]
        # a defence, a question or a vote plan is no accusation
        for m in (Defend(5, Reason("claim", 5, 2, role="Lookout")), Ask(5, "role"),
                  VotePlan(5)):
            assert not [c for c in vocab.parse(render(m, names, rng)) if c.kind == cv.ACCUSE]


@pytest.mark.parametrize("protocol", ["xml", "json"])
def test_a_move_cut_off_by_max_tokens_is_completed_to_an_allowed_move(protocol: str) -> None:
    from tossim.agents.grammar import choice_parts, parts_regex, walk

    m = day3_investigator().memories[7]
    for c in structured_choices(m, turn_choices(m.legal, m.names)):
        parts = choice_parts(c, protocol)
        rx = re.compile(parts_regex(parts, protocol))
        sample = "".join(p.value if p.kind == "lit" else p.options[-1] for p in parts)
        assert rx.fullmatch(sample), sample
        for i in range(0, len(sample), 3):
            w = walk(parts, sample[:i], protocol)
            assert w is not None and not w.complete, sample[:i]
            assert rx.fullmatch(sample[:i] + w.suffix), (sample[:i], w.suffix)


def test_a_move_cut_off_in_a_turn_still_says_a_whole_sentence() -> None:
    from dataclasses import replace

    r = run(["<thinking>Vote.</thinking>", "<speak>will vote Player 4</speak>"],
            replace(MOVES, action_tokens=20))  # cut after "<speak>will vote Pla"
    assert r.stats.truncated == 1
    # the only name that fits: the Investigator's plan goes to the player its
    # game shows to be an enemy (Player 4's Doctor claim; the Doctor is dead)
    assert isinstance(r.move, VotePlan) and r.move.target == 4
    assert isinstance(r.command, Chat) and "Player 4" in r.command.text


def test_a_long_will_keeps_the_newest_results_within_the_limit() -> None:
    from tossim.agents.moves import Result
    from tossim.engine.state import MAX_WILL

    names = {s: f"Player {s}" for s in range(1, 16)}
    results = tuple(Result("group", 4 + n % 9, n, roles=("Vigilante", "Veteran", "Mafioso"))
                    for n in range(1, 9))
    text = render(WillMove("Investigator", True, results), names)
    assert len(text) <= MAX_WILL
    lines = text.split("\n")
    assert lines[0] == "I am the Investigator." and lines[-1].startswith("N8: ")
    assert all(line.endswith("Mafioso.") for line in lines[1:])  # whole lines only


def test_a_structured_seat_short_of_time_votes_and_keeps_quiet() -> None:
    """With less than `SIDE_TURN_MIN_S` of the decision left after its vote,
    an act-first seat plays no second turn (no wait counted as a miss)."""
    import time

    from tossim.agents.llm_seat import SIDE_TURN_MIN_S

    t = day3_investigator()
    backend = ScriptedBackend(["<thinking>Player 4.</thinking>", "<vote>Player 4</vote>"])
    seat = LLMSeat(7, ToolLoop(backend, MOVES))
    deadline = time.monotonic() + SIDE_TURN_MIN_S / 2
    cmds = asyncio.run(seat.decide(view(t.game, Viewer.player(7), since=0), deadline))
    assert cmds == [Vote(7, 4)]
    metrics = seat.seat_metrics()
    assert metrics.sums.turns == 1 and metrics.sums.misses == 0


def test_a_structured_seat_says_something_every_day_before_its_will() -> None:
    """Day 1: a structured seat that has not spoken is offered public speech
    only (no will, no wait); its will comes in the turn after."""
    g = new_game(GameConfig(players=7, seed=3))
    own = ROLES[g.player(2).role].name
    backend = ScriptedBackend(["<thinking>Claim.</thinking>", f"<speak>claim {own}</speak>",
                               "<thinking>Will.</thinking>", "<wait></wait>"])
    seat = LLMSeat(2, ToolLoop(backend, MOVES))
    cmds = asyncio.run(seat.decide(view(g, Viewer.player(2), since=0)))
    assert len(cmds) == 1 and isinstance(cmds[0], Chat)
    speech_turn, side_turn = backend.requests[1].regex, backend.requests[-1].regex
    assert "<speak>" in speech_turn
    assert "<wait>" not in speech_turn and "<will>" not in speech_turn
    assert "<wait>" in side_turn and "<speak>" not in side_turn


def test_an_ask_abandoned_at_its_deadline_still_offered_the_vote() -> None:
    """act_rate is not flattered by the asks the server abandons: the vote
    counts as offered when the ask starts."""
    class Stuck(ScriptedBackend):
        async def generate(self, requests: Any) -> Any:
            await asyncio.sleep(3600)

    t = day3_investigator()
    seat = LLMSeat(7, ToolLoop(Stuck([]), MOVES))

    async def ask() -> None:
        task = asyncio.ensure_future(seat.decide(view(t.game, Viewer.player(7), since=0)))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(ask())
    assert seat.seat_metrics().to_dict()["offered"] == {"vote": 1}
    assert seat.seat_metrics().to_dict()["act_rate"] == {"vote": 0.0}


def test_a_turn_given_up_at_its_deadline_leaves_a_record_and_resumes_as_a_miss() -> None:
    """Seen in a lobby: a model seat's turn the server gave up at the phase's
    deadline left no stored turn, so a game's record undercounted misses.
    It leaves one now (the fault, no action), counted as a miss and not as a
    turn, and a seat rebuilt from its records (a restarted server) counts the
    same and may be asked again in that phase."""
    import time

    from tossim.agents.resume import acted_in, restore_seat

    class Stuck(ScriptedBackend):
        async def generate(self, requests: Any) -> Any:
            await asyncio.sleep(3600)

    t = day3_investigator()
    obs = view(t.game, Viewer.player(7), since=0)
    seat = LLMSeat(7, ToolLoop(Stuck([]), MOVES))

    async def ask() -> None:
        deadline = time.monotonic() + 0.3
        with pytest.raises(TimeoutError):  # the driver's wait for the seat, past its deadline
            await asyncio.wait_for(seat.decide(obs, deadline), 0.5)

    asyncio.run(ask())
    [record] = seat.turn_log
    assert record["action"] is None and record["time"]["missed"]
    assert record["steps"][-1]["kind"] == "fault" and "in time" in record["steps"][-1]["text"]
    live = seat.seat_metrics().sums
    assert live.turns == 0 and live.misses == 1

    again = LLMSeat(7, ToolLoop(Stuck([]), MOVES))
    assert restore_seat(again, [dict(record, slot=7, seq=1)]) == 1
    rebuilt = again.seat_metrics().sums
    assert (rebuilt.turns, rebuilt.misses) == (live.turns, live.misses)
    assert acted_in([record]) == set()


def test_a_mafia_seat_has_no_move_that_turns_the_town_on_a_teammate() -> None:
    """Seen in a lobby: a Mafioso said "Results: Player 3 is suspicious!" of
    its own Godfather. Its moves may cover a teammate, never accuse one."""
    t = day3_investigator()
    mafia = next(m for m in t.memories.values() if m.you.teammates)
    mate = next(s for s in mafia.you.teammates or () if s != mafia.slot)
    table = move_table(mafia)
    targets = {getattr(m, "target", None) for m in table.speak.values()
               if type(m).__name__ in ("Accuse", "VotePlan")}
    assert mate not in targets and targets
    lies = [m for m in table.speak.values() if getattr(m, "lie", False)]
    assert all(not (m.result.target == mate and m.result.kind == "suspicious") for m in lies)
    assert any(m.result.target == mate for m in lies)  # covering a teammate is a move


def test_what_a_structured_seat_claims_holds_together_over_a_game() -> None:
    """Seen in the demo: a Sheriff seat said "Results: Player 12 is not
    suspicious." on Day 1 and wrote wills claiming Investigator, then
    Transporter, then Sheriff. A Town seat claims only its own role and tells
    only real results; a Mafia seat claims a Town cover and, once it has
    claimed one, keeps it in chat and will; made-up results wait for a night
    to have passed and fit only a Sheriff's claim."""
    t = day3_investigator()
    town = move_table(t.memories[7])  # the Investigator
    assert {m.role for m in town.speak.values() if isinstance(m, ClaimRole)} == {"Investigator"}
    assert set(town.will) == {"Investigator"}
    assert not any(isinstance(m, Report) and m.lie for m in town.speak.values())

    godfather = move_table(t.memories[2])  # no claim yet: a Town cover, lies allowed
    covers = {m.role for m in godfather.speak.values() if isinstance(m, ClaimRole)}
    assert covers == {"Bodyguard"}  # the Town role of its Investigator group
    assert all(ROLES[r.lower()].faction.value == "town" for r in covers if r.lower() in ROLES)
    assert any(isinstance(m, Report) and m.lie for m in godfather.speak.values())

    claimed = day3_investigator(((4, "I am the Doctor."),)).memories[4]
    assert claimable(claimed, game_roles(claimed), own_claim(claimed)) == ["Doctor"]
    mafioso = move_table(claimed)  # claimed today: its will keeps the claim
    assert not any(isinstance(m, ClaimRole) for m in mafioso.speak.values())
    assert set(mafioso.will) == {"Doctor"}
    assert not any(isinstance(m, Report) and m.lie for m in mafioso.speak.values())

    g = new_game(GameConfig(players=9, seed=3, roles=DAY3_ROLES))
    day1 = SeatMemory(2)
    day1.update(view(g, Viewer.player(2), since=0))
    assert not any(isinstance(m, Report) and m.lie for m in move_table(day1).speak.values())


def test_a_seat_that_has_voted_says_the_vote_it_cast() -> None:
    """Seen in the demo: "My vote goes to Player 5." right after its vote
    against Player 14. Once the seat has voted, its vote plan names that vote."""
    t = day3_investigator(fake_doctor=False)
    before = {m.target for m in move_table(t.memories[7]).speak.values()
              if isinstance(m, VotePlan)}
    assert len(before) > 1
    apply(t.game, Vote(7, 4))
    t.observe()
    after = {m.target for m in move_table(t.memories[7]).speak.values()
             if isinstance(m, VotePlan)}
    assert after == {4}


def test_a_vote_plan_is_offered_only_while_a_lynch_vote_is_ahead() -> None:
    """Seen in the demo: "My vote goes to Player 10." on Day 1 (no vote that
    day) and "I am voting Player 13 today." during a Judgement."""
    def plans(memory: SeatMemory) -> set[int]:
        return {m.target for m in move_table(memory).speak.values() if isinstance(m, VotePlan)}

    t = day3_investigator()
    assert t.memories[7].phase == "voting" and plans(t.memories[7])
    g = new_game(GameConfig(players=9, seed=3, roles=DAY3_ROLES))
    day1 = SeatMemory(2)
    day1.update(view(g, Viewer.player(2), since=0))
    assert day1.phase == "day1" and not plans(day1)
    assert "will vote " not in "\n".join(build_messages(day1, speech="moves")[-1].values())
    judging = day3_investigator().memories[7]
    judging.phase = "judgement"
    assert not plans(judging)


def test_the_turn_after_a_vote_knows_the_vote() -> None:
    """Seen in a lobby: an act-first seat voted against Player 4, then said
    "My vote goes to Player 6." in the same ask (its vote was not applied yet)."""
    t = day3_investigator()
    backend = ScriptedBackend(["<thinking>Player 4.</thinking>", "<vote>Player 4</vote>",
                               "<thinking>Say it.</thinking>", "<speak>will vote Player 4</speak>"])
    seat = LLMSeat(7, ToolLoop(backend, MOVES))
    cmds = asyncio.run(seat.decide(view(t.game, Viewer.player(7), since=0)))
    assert cmds[0] == Vote(7, 4) and isinstance(cmds[1], Chat) and "Player 4" in cmds[1].text
    speech = backend.requests[-1].regex or ""
    assert re.fullmatch(speech, "<speak>will vote Player 4</speak>")
    assert not re.fullmatch(speech, "<speak>will vote Player 5</speak>")


def test_a_will_says_each_result_once_and_a_spys_night_in_one_sentence() -> None:
    """Seen in a lobby: an Investigator's will said "Player 5 could be a
    Medium, Janitor, or Retributionist." for Night 1 and again for Night 2;
    a Spy's will had a line per Mafia visit. Scripted bots still read both."""
    from tossim.agents import claims as cv
    from tossim.agents.moves import Result

    names = {s: f"Player {s}" for s in range(1, 16)}
    group = ("Medium", "Janitor", "Retributionist")
    inv = render(WillMove("Investigator", True, (Result("group", 5, 1, roles=group),
                                                 Result("group", 5, 2, roles=group),
                                                 Result("group", 6, 3, roles=group))), names)
    assert inv.splitlines() == ["I am the Investigator.",
                                "N1, N2: Player 5 could be a Medium, Janitor, or Retributionist.",
                                "N3: Player 6 could be a Medium, Janitor, or Retributionist."]
    spy = render(WillMove("Spy", True, (Result("mafia_visited", 1, 2),
                                        Result("mafia_visited", 10, 2),
                                        Result("mafia_visited", 4, 3))), names)
    assert spy.splitlines() == ["I am the Spy.",
                                "N2: The Mafia visited Player 1 and Player 10 last night.",
                                "N3: The Mafia visited Player 4 last night."]
    heard = cv.vocabulary(tuple(names.values())).parse(spy)
    assert [(c.kind, c.target) for c in heard if c.kind == cv.MAFIA_VISITED] == [
        (cv.MAFIA_VISITED, 1), (cv.MAFIA_VISITED, 10), (cv.MAFIA_VISITED, 4)]


def votable(memory: SeatMemory) -> list[str]:
    """Who a structured seat's vote can name: tried against its action grammar."""
    rx = re.compile(action_regex(memory))
    return [f"Player {s}" for s in range(1, 16)
            if rx.fullmatch(f"<vote>Player {s}</vote>")]


def test_a_seat_holds_to_the_vote_it_announced() -> None:
    """Seen in the demo: a model seat said "My vote goes to Player 4." in the
    discussion and then voted against Player 12. Its vote example names that
    player (a small model copies its example), and the plan is not offered
    again that day (seen in a lobby: "I am voting Player 4 today." twice,
    both quoted by the day's summary); a seat that announced nothing still
    gets a drawn example."""
    def plans(memory: SeatMemory) -> set[int]:
        return {m.target for m in move_table(memory).speak.values() if isinstance(m, VotePlan)}

    free = day3_investigator(fake_doctor=False).memories[7]
    assert announced_vote(free) is None and len(plans(free)) > 1
    examples = set()
    for seed in range(12):
        turn = build_messages(free, speech="moves", seed=seed)[-1]["content"]
        examples |= set(re.findall(r"<vote>(Player \d)</vote>", turn))
    assert len(examples) > 1

    t = day3_investigator(((7, "My vote goes to Player 4."),), fake_doctor=False)
    said = t.memories[7]
    assert said.phase == "voting" and announced_vote(said) == 4
    assert plans(said) == set()
    called = day3_investigator(((7, "Vote Player 4! They have not claimed a role."),),
                               fake_doctor=False)
    assert plans(called.memories[7]) == {4}  # a call to vote names the plan once said
    for seed in range(12):
        turn = build_messages(said, speech="moves", seed=seed)[-1]["content"]
        assert re.findall(r"<vote>(Player \d)</vote>", turn) == ["Player 4"]
        # and the list of whom it may put on trial names that player only, as
        # its grammar allows (it listed all six)
        assert re.findall(r"put on trial: (.*)", turn) == ["Player 4"]
    # and its grammar lets it vote for no one else (seen in a lobby: "I am
    # voting Player 4 today." and then a vote against Player 5)
    assert votable(said) == ["Player 4"]
    assert len(votable(free)) > 1
    # another seat's plan is not this seat's
    assert announced_vote(t.memories[5]) is None


def test_a_seat_does_not_turn_on_a_player_it_spoke_up_for_today() -> None:
    """Seen in the demo: "I trust Player 6 for now; they claimed Bodyguard."
    in the discussion, then a vote against Player 6. Its vote example and
    vote plans leave out whom it defended today (while anyone else is left)."""
    t = day3_investigator(((7, "I trust Player 4 for now; they claimed Doctor."),))
    memory = t.memories[7]
    assert defended_today(memory) == {4} and defended_today(t.memories[5]) == set()
    plans = {m.target for m in move_table(memory).speak.values() if isinstance(m, VotePlan)}
    assert plans and 4 not in plans
    examples = set()
    for seed in range(16):
        turn = build_messages(memory, speech="moves", seed=seed)[-1]["content"]
        examples |= set(re.findall(r"<vote>(Player \d)</vote>", turn))
    assert len(examples) > 1 and "Player 4" not in examples
    assert "Player 4" not in votable(memory) and len(votable(memory)) > 1
    assert "Player 4" in votable(t.memories[5])
    # every wording of a defence is read back
    said = {render(Defend(4, reason), memory.names, random.Random(k))
            for reason in reasons(memory).get(4, ())[:1] for k in range(12)}
    assert len(said) == 3
    for sentence in said:
        assert defended_today(day3_investigator(((7, sentence),)).memories[7]) == {4}, sentence


def test_a_claim_made_on_an_earlier_day_is_worded_as_said_again() -> None:
    """Seen in a lobby: "Time to claim. I am the Doctor." on Day 2 and again,
    word for word, on Day 3. Player 5 claimed Lookout on Day 2: on Day 3 the
    same claim comes as one said before; Player 7 (Investigator), who never
    claimed, words its claim as a first one."""
    from tossim.agents.protocols import Parsed

    t = day3_investigator()

    def says(slot: int, seed: int) -> str:
        memory = t.memories[slot]
        parsed, move = speak_move(memory, Parsed("final", "speak",
                                                 {"text": f"claim {memory.you.role}"}), seed)
        assert isinstance(move, ClaimRole)
        return str(parsed.args["text"])

    again = {says(5, seed) for seed in range(12)}
    assert all(s.endswith(": I am the Lookout.") for s in again) and len(again) > 1
    assert {s.split(":")[0] for s in again} <= {"As I said before", "Again",
                                                "I stand by my claim", "Same as before"}
    first = {says(7, seed) for seed in range(12)}
    assert all("I am the Investigator." in s for s in first)
    assert not any(s.startswith(("As I said", "Again", "I stand by", "Same as")) for s in first)


def test_an_accusation_with_no_vote_ahead_calls_for_none() -> None:
    """Seen in a lobby: a jailed seat told its Jailor "Vote Player 4!" at
    night, and in the demo a seat said "Vote Player 3!" on Day 1; neither
    has a lynch vote ahead. There an accusation is said as a suspicion; in a
    discussion or a vote it is a call to vote."""
    import copy

    from tossim.agents.protocols import Parsed

    voting = day3_investigator().memories[7]
    key = next(k for k, m in move_table(voting).speak.items() if isinstance(m, Accuse))
    for phase in ("night", "day1", "judgement"):
        other = copy.copy(voting)
        other.phase = phase
        for seed in range(8):
            by_vote = speak_move(voting, Parsed("final", "speak", {"text": key}), seed)[0]
            said = speak_move(other, Parsed("final", "speak", {"text": key}), seed)[0]
            assert "Vote Player" in by_vote.args["text"]
            assert "Vote" not in said.args["text"] and "Player" in said.args["text"]


def test_a_seat_reports_what_it_found_before_asking_and_asks_once() -> None:
    """Seen in a lobby: the Investigator seat asked "Player 5, what is your
    role?" on Day 2 and again on Day 3, and never said its Night 2 result.
    A seat holding a result it has not said in public has no question to
    ask; once it has reported, it asks each question once a game."""
    def asks(memory: SeatMemory) -> set[tuple[int, str]]:
        return {(m.target, m.topic) for m in move_table(memory).speak.values()
                if isinstance(m, Ask)}

    memory = day3_investigator().memories[7]
    found = own_results(memory)
    assert len(found) == 2 and asks(memory) == set()
    assert {m.result for m in move_table(memory).speak.values()
            if isinstance(m, Report)} == set(found)
    # another seat, with nothing to report, asks
    assert (7, "results") in asks(day3_investigator().memories[5])

    told = " ".join(render(Report(r), memory.names, random.Random(1)) for r in found)
    memory = day3_investigator(((7, told), (7, "Player 5, what is your role?"))).memories[7]
    assert (5, "vote") in asks(memory) and (6, "role") in asks(memory)
    assert (5, "role") not in asks(memory)
    # nobody is asked a role they claimed (Player 5 claimed Lookout on Day 2)
    assert (5, "role") not in asks(day3_investigator().memories[1])
    assert (6, "role") in asks(day3_investigator().memories[1])
    # and what it reported today is not offered again today (seen: "Results:
    # Player 4 is not suspicious." in the discussion and again in the vote)
    assert not any(isinstance(m, Report) for m in move_table(memory).speak.values())


def test_a_result_said_on_an_earlier_day_waits_for_the_new_one() -> None:
    """Seen in a lobby: on Day 3 a Sheriff seat said "Here is what I have:
    Player 3 is not suspicious.", its Night 1 result, which it had said on
    Day 2, and never its Night 2 result. While a seat holds a result it has
    never said, that is the one it reports; once said, the older one may be
    repeated."""
    def reports(memory: SeatMemory) -> list[Result]:
        return [m.result for m in move_table(memory).speak.values() if isinstance(m, Report)]

    first, second = own_results(day3_investigator().memories[7])
    memory = day3_investigator().memories[7]
    night1 = f"Results: {first.sentence(memory.name)}"
    memory = day3_investigator(day2_chat=((7, night1),)).memories[7]
    assert reports(memory) == [second]
    assert unreported(memory) == [second]
    # a true claim today carries the new result, not the one said yesterday
    from tossim.agents.protocols import Parsed

    claim = speak_move(memory, Parsed("final", "speak", {"text": "claim Investigator"}))[0]
    assert second.sentence(memory.name) in claim.args["text"]
    assert first.sentence(memory.name) not in claim.args["text"]
    # once the new one is said, the older one may be said again today
    night2 = f"Last night's result: {second.sentence(memory.name)}"
    memory = day3_investigator(((7, night2),), day2_chat=((7, night1),)).memories[7]
    assert reports(memory) == [first]


def test_a_claim_is_said_once_a_day() -> None:
    """Seen in a lobby: a Doctor seat said "Time to claim. I am the Doctor."
    in the discussion and again in the vote of the same day. A seat that has
    claimed today has no claim move until tomorrow; its will still says it."""
    def claims(memory: SeatMemory) -> set[str]:
        return {m.role for m in move_table(memory).speak.values() if isinstance(m, ClaimRole)}

    assert claims(day3_investigator().memories[7]) == {"Investigator"}
    memory = day3_investigator(((7, "Time to claim. I am the Investigator."),)).memories[7]
    assert claims(memory) == set()
    assert "Investigator" in move_table(memory).will
    # a claim on an earlier day leaves today's open (said again, as such)
    assert claims(day3_investigator().memories[5]) == {"Lookout"}


def test_at_night_only_a_jailor_asks_and_only_its_prisoner() -> None:
    """Seen in a lobby: a Jailor seat asked "Player 4, what is your role?" in
    its jail chat with Player 5. At night a Jailor's questions go to its
    prisoner; the prisoner and everyone else ask nothing."""
    from tossim.engine.commands import DayAction

    g = new_game(GameConfig(players=7, seed=4, roles=(
        "jailor", "godfather", "doctor", "mafioso", "lookout", "escort", "sheriff")))
    t = Tracker(g, list(range(1, 8)))
    apply(g, DayAction(1, "jail", 5))
    t.timeout()  # Night 1
    t.observe()
    assert t.memories[1].phase == "night" and t.memories[5].you.jailed

    def asked(slot: int) -> set[int]:
        return {m.target for m in move_table(t.memories[slot]).speak.values()
                if isinstance(m, Ask)}

    assert asked(1) == {5}
    assert asked(5) == set() and asked(2) == set()
    # nor about the day's vote, which is over ("Player 5, who are you voting
    # for today?" in the jail)
    assert "vote" not in {m.topic for m in move_table(t.memories[1]).speak.values()
                          if isinstance(m, Ask)}


def test_a_false_claim_to_the_team_at_night_is_the_cover_for_tomorrow() -> None:
    """Seen in a lobby: a Framer told its Godfather "I am the Investigator."
    in the Mafia's night chat. Said to the team, a false claim is the cover
    the seat will give tomorrow, and a defence of anyone is pointless there
    (seen: "Do not lynch Player 3." to the Godfather); a jailed Mafioso's
    claim to its Jailor is a claim."""
    from tossim.agents.protocols import Parsed
    from tossim.engine.commands import DayAction

    g = new_game(GameConfig(players=7, seed=4, roles=(
        "jailor", "godfather", "doctor", "mafioso", "lookout", "escort", "sheriff")))
    t = Tracker(g, list(range(1, 8)))
    apply(g, Chat(3, "I am the Doctor."))
    apply(g, DayAction(1, "jail", 4))
    t.timeout()  # Night 1
    t.observe()

    def says(slot: int, seed: int) -> str:  # its cover: Bodyguard, Vigilante (their groups)
        memory = t.memories[slot]
        assert memory.phase == "night"
        claim = "claim Bodyguard" if slot == 2 else "claim Vigilante"
        parsed, move = speak_move(memory, Parsed("final", "speak", {"text": claim}), seed)
        assert isinstance(move, ClaimRole) and not move.true
        return str(parsed.args["text"])

    cover = {says(2, seed) for seed in range(12)}
    assert len(cover) > 1 and all("Bodyguard" in s and "tomorrow" in s.lower()
                                  for s in cover), cover
    assert not any("I am the" in s for s in cover)
    jailed = {says(4, seed) for seed in range(12)}
    assert all(s.endswith("I am the Vigilante.") for s in jailed), jailed
    # nor does it speak up for anyone to its team (the jailed one may, to its Jailor)
    assert not [m for m in move_table(t.memories[2]).speak.values() if isinstance(m, Defend)]
    assert [m for m in move_table(t.memories[4]).speak.values() if isinstance(m, Defend)]


def test_a_true_claim_gives_the_results_not_yet_said_and_a_check_is_not_repeated() -> None:
    """Seen in a lobby: a Sheriff seat said "Again: I am the Sheriff." on Day 3
    with its Night 2 result only in its will, and interrogated the player it
    had cleared again on Night 3. A true claim carries the results not said
    today; the night's targets leave out players already checked."""
    from tossim.agents.protocols import Parsed

    t = day3_investigator()
    memory = t.memories[7]
    found = unreported(memory)
    assert found
    parsed, _move = speak_move(memory, Parsed("final", "speak",
                                              {"text": "claim Investigator"}), 3)
    text = str(parsed.args["text"])
    assert text.split("I am the Investigator.")[1].strip() == " ".join(
        r.sentence(memory.name) for r in found[-2:])
    memory.say_public(text)  # said: no report of the same today
    assert not [r for r in unreported(memory) if r in found[-2:]]

    night = Choice("night", "final", "names", tuple(
        p.name for p in memory.living() if p.slot != memory.slot))
    checked = {memory.name(r.target) for r in own_results(memory)}
    assert checked and checked <= set(night.options)
    assert set(night_choice(memory, night).options) == set(night.options) - checked
    # with nobody else left, a check may be repeated
    only = replace(night, options=tuple(sorted(checked)))
    assert night_choice(memory, only).options == only.options


def test_not_having_claimed_is_no_charge_on_day_1() -> None:
    """Seen in the demo, on Day 1: "Player 1 has some explaining to do. They
    have not claimed a role." Nobody claims on Day 1; from Day 2 on a player
    who has not claimed may be asked to, by a seat that has claimed (seen in a
    lobby: a Sheriff seat that had claimed nothing said "Vote Player 5! Why?
    They have not claimed a role.")."""
    g = new_game(GameConfig(players=7, seed=4))
    t = Tracker(g, [1])
    t.observe()
    assert t.memories[1].day == 1
    charges = [m for m in move_table(t.memories[1]).speak.values() if isinstance(m, Accuse)]
    assert not [m for m in charges if m.reason.kind == "no_claim"], charges
    t.timeout()  # Night 1
    t.timeout()  # Day 2
    t.observe()
    assert t.memories[1].day == 2
    assert not [m for m in move_table(t.memories[1]).speak.values() if isinstance(m, Accuse)]
    apply(g, Chat(1, "I am the Sheriff."))
    t.observe()
    charges = [m for m in move_table(t.memories[1]).speak.values() if isinstance(m, Accuse)]
    assert {m.reason.kind for m in charges} == {"no_claim"}


def test_a_reason_backs_only_the_side_it_argues() -> None:
    """Seen in the demo: "Do not lynch Player 1. They voted for Player 11 on
    Day 2."; in a lobby: "Something is off about Player 2; they claimed
    Jailor." A claim alone is no charge, and a vote, a will or a silence is
    no defence: only a claim or a clearing result is."""
    t = day3_investigator()
    apply(t.game, Vote(5, 4))  # a vote: a reason to accuse Player 5, not to defend them
    t.observe()
    memory = t.memories[1]
    assert {r.kind for r in reasons(memory)[5]} >= {"claim", "vote"}
    table = move_table(memory)
    accusations = [m for m in table.speak.values() if isinstance(m, Accuse)]
    defences = [m for m in table.speak.values() if isinstance(m, Defend)]
    assert {m.reason.kind for m in accusations if m.target == 5} >= {"vote"}
    assert not any(m.reason.kind == "claim" for m in accusations)
    assert {m.reason.kind for m in defences if m.target == 5} == {"claim"}
    assert all(m.reason.kind == "claim" or (m.reason.kind == "result" and m.reason.result
               and m.reason.result.kind == "innocent") for m in defences)
    # a claim the dead have disproved defends no one (seen in a lobby: "Do not
    # lynch Player 2. They claimed Jailor." after the real Jailor's death):
    # Player 4 claims Doctor, and the Doctor (Player 3) is dead
    claimed = day3_investigator(((4, "I am the Doctor."),)).memories[1]
    assert "death" in {r.kind for r in reasons(claimed)[4]}
    table = move_table(claimed)
    assert not any(isinstance(m, Defend) and m.target == 4 for m in table.speak.values())
    assert any(isinstance(m, Accuse) and m.target == 4 and m.reason.kind == "death"
               for m in table.speak.values())


def test_a_call_to_vote_binds_the_seats_vote() -> None:
    """Seen in the lobby journey: "Vote Player 4! They have not claimed a
    role." and then a vote against Alice. An accusation's call to vote is
    the seat's plan for the day: its vote and later plans hold to it, until
    it says another."""
    said = render(Accuse(4, Reason("no_claim", 4)), day3_investigator().memories[7].names,
                  random.Random(3))
    assert "Vote Player 4!" in said
    memory = day3_investigator(((7, said),)).memories[7]
    assert announced_vote(memory) == 4 and votable(memory) == ["Player 4"]
    memory = day3_investigator(((7, said), (7, "My vote goes to Player 6."))).memories[7]
    assert announced_vote(memory) == 6 and votable(memory) == ["Player 6"]
    # a call to vote Player 1 is not one to vote Player 10
    assert announced_vote(day3_investigator(((7, "Vote Player 1!"),)).memories[7]) == 1


def test_a_counter_claim_of_a_unique_role_is_a_charge() -> None:
    """Noticed in a lobby: a real Investigator defended another Investigator
    claimant. Two claims of a unique role cannot both be true, so a seat
    that holds or has claimed it accuses the other claimant, and never
    defends them by that claim; a seat that holds neither claim says
    nothing of it."""
    t = day3_investigator(((2, "I am the Mayor."), (6, "I am the Mayor.")))
    first = t.memories[2]  # the Godfather, whose cover is the Mayor
    assert "counter" in {r.kind for r in reasons(first)[6]}
    table = move_table(first)
    charges = [m for m in table.speak.values()
               if isinstance(m, Accuse) and m.target == 6 and m.reason.kind == "counter"]
    assert charges and not any(isinstance(m, Defend) and m.target == 6
                               for m in table.speak.values())
    said = render(charges[0], first.names, random.Random(1))
    assert "They claimed Mayor, but I am the Mayor." in said
    assert "counter" not in {r.kind for r in reasons(t.memories[1])[6]}
    # a role that is not unique (two Investigators can be dealt) is no
    # counter-claim, even to the seat that holds it
    investigator = day3_investigator(((6, "I am the Investigator."),)).memories[7]
    assert investigator.you.role == "Investigator"
    assert "claim" in {r.kind for r in reasons(investigator)[6]}
    assert "counter" not in {r.kind for r in reasons(investigator)[6]}


def test_a_seat_that_voted_calls_for_that_vote_only() -> None:
    """Seen in a lobby: a vote against Player 6, then "Vote Player 7! I say
    this because they voted for Player 6 on Day 2." Once a seat has voted or
    said its plan today, its calls to vote name that player and it speaks
    up for anyone else."""
    t = day3_investigator()
    apply(t.game, Vote(5, 6))  # a reason to accuse Player 5
    apply(t.game, Vote(7, 4))
    t.observe()
    memory = t.memories[7]
    assert memory.you.vote == 4 and "vote" in {r.kind for r in reasons(memory)[5]}
    speak = move_table(memory).speak.values()
    assert {m.target for m in speak if isinstance(m, Accuse)} == {4}
    assert not any(isinstance(m, Defend) and m.target == 4 for m in speak)
    # before its vote, a plan said today binds its calls the same way
    claim = (7, "I am the Investigator.")
    planned = day3_investigator((claim, (7, "My vote goes to Player 6."))).memories[7]
    assert {m.target for m in move_table(planned).speak.values()
            if isinstance(m, Accuse)} == {6}
    free = day3_investigator((claim,)).memories[7]
    assert len({m.target for m in move_table(free).speak.values()
                if isinstance(m, Accuse)}) > 1


def test_a_will_already_written_is_not_offered_again() -> None:
    """Seen in a lobby: an Investigator seat rewrote the same will in every
    phase, a turn each time. A will that would not change is no choice;
    once a new result comes, the will that adds it is."""
    from tossim.agents.moves import rewrites

    t = day3_investigator()
    memory = t.memories[7]
    table = move_table(memory)
    current = render(table.will["Investigator"], memory.names)
    assert "Investigator" in rewrites(memory, table, "will")
    apply(t.game, WriteWill(7, current))
    t.observe()
    memory = t.memories[7]
    assert memory.you.will == current
    table = move_table(memory)
    assert rewrites(memory, table, "will") == []
    wills = [c for c in structured_choices(memory, turn_choices(
        memory.legal, memory.names, (), False, True), table) if c.tag == "will"]
    assert wills == []


def test_a_death_note_once_written_stands() -> None:
    """Seen in a lobby: a Godfather seat swapped its two death notes back
    and forth, five turns of sixteen. Once a note is written no other is a
    choice, and a turn with something else to do offers none."""
    from tossim.agents.moves import rewrites

    t = day3_investigator()
    godfather = t.memories[2]
    table = move_table(godfather)
    assert len(rewrites(godfather, table, "death_note")) > 1
    apply(t.game, WriteDeathNote(2, next(iter(table.death_note))))
    t.observe()
    godfather = t.memories[2]
    table = move_table(godfather)
    assert godfather.you.death_note and rewrites(godfather, table, "death_note") == []
    assert not [c for c in structured_choices(godfather, turn_choices(
        godfather.legal, godfather.names), table) if c.tag == "death_note"]


def test_a_verdict_cast_binds_what_the_seat_says_of_the_accused() -> None:
    """Seen in a lobby: a guilty verdict on Player 7, then "Leave Player 7
    alone: they claimed Sheriff." After a guilty verdict the seat does not
    defend the accused; after an innocent one it does not charge them."""
    t = day3_investigator()
    for voter in (1, 2, 5, 6):
        apply(t.game, Vote(voter, 4))
    t.timeout()  # Defense -> Judgement
    assert t.game.phase.value == "judgement" and t.game.accused == 4
    apply(t.game, Judge(7, "guilty"))
    apply(t.game, Judge(5, "innocent"))
    t.observe()
    guilty, innocent = t.memories[7], t.memories[5]
    assert guilty.you.verdict == "guilty" and innocent.you.verdict == "innocent"

    def said_of_4(memory: SeatMemory) -> set[str]:
        return {m.kind for m in move_table(memory).speak.values()
                if isinstance(m, (Accuse, Defend)) and m.target == 4}

    assert said_of_4(guilty) == {"accuse"}  # Player 4's Doctor claim: the Doctor died
    assert "accuse" not in said_of_4(innocent)
    undecided = t.memories[1]
    assert undecided.you.verdict is None and "accuse" in said_of_4(undecided)


def test_a_seat_stands_by_a_player_its_result_cleared() -> None:
    """Seen in a lobby: a Sheriff seat found Player 4 not suspicious, then
    said "Vote Player 4! They have not claimed a role." and voted against
    Player 4, on Day 2 and again on Day 3. A player the seat's own result
    cleared is neither charged nor planned nor voted against while anyone
    else is left."""
    from tossim.agents.moves import trusted

    g = new_game(GameConfig(players=9, seed=3, roles=DAY3_ROLES))
    t = Tracker(g, [1])
    t.timeout()  # Night 1
    apply(g, NightAction(1, (6,)))  # the Sheriff checks the Escort
    t.timeout()  # Day 2
    apply(g, Chat(1, "I am the Sheriff."))
    t.timeout()  # Voting
    t.observe()
    memory = t.memories[1]
    assert memory.phase == "voting" and 6 in trusted(memory)
    speak = move_table(memory).speak.values()
    assert not any(isinstance(m, (Accuse, VotePlan)) and m.target == 6 for m in speak)
    assert any(isinstance(m, Accuse) for m in speak)
    assert "Player 6" not in votable(memory) and votable(memory)


def test_a_cover_is_one_nobody_has_claimed_and_an_investigator_cannot_catch() -> None:
    """Seen in a lobby: a Framer seat claimed Investigator after its Godfather
    had, beside the real Investigator (the cover was in its will since Night
    1). A liar's cover is a Town role of its own Investigator group if one is
    free; no teammate's or anyone else's claim; a cover only written in the
    will gives way, one said in public is kept."""
    godfather = day3_investigator().memories[2]  # its group: Bodyguard, Godfather, Arsonist
    assert claimable(godfather, game_roles(godfather), own_claim(godfather)) == ["Bodyguard"]

    # its teammate claimed Doctor ("I'm the real Doctor!"); others Lookout,
    # Bodyguard and, in their own words, Sheriff
    t = day3_investigator(((5, "I am the Bodyguard."), (6, "sheriff here")))
    godfather = t.memories[2]
    covers = claimable(godfather, game_roles(godfather), own_claim(godfather))
    assert not {"Doctor", "Lookout", "Bodyguard", "Sheriff"} & set(covers), covers
    assert "Escort" in covers

    g = t.game  # its will's cover is the teammate's claim: it changes
    apply(g, WriteWill(2, "I am the Doctor."))
    t.observe(2)
    assert own_claim(godfather) == "Doctor"
    assert "Doctor" not in claimable(godfather, game_roles(godfather), own_claim(godfather))
    apply(g, WriteWill(2, "I am the Escort."))  # one that still fits is kept
    t.observe(2)
    assert claimable(godfather, game_roles(godfather), own_claim(godfather)) == ["Escort"]

    # said in public, a claim is kept even when a teammate claimed it too
    godfather = day3_investigator(((2, "I am the Doctor."),)).memories[2]
    assert claimable(godfather, game_roles(godfather), own_claim(godfather)) == ["Doctor"]


def test_a_liar_poses_as_a_role_the_game_deals_more_than_once() -> None:
    """Seen in a lobby: a Godfather seat claimed Jailor, and the living Jailor
    counter-claimed. A role dealt once a game is a cover only when no shared
    role fits."""
    g = new_game(GameConfig(players=7, seed=5, roles=(
        "jailor", "godfather", "mayor", "doctor", "mafioso", "sheriff", "lookout")))
    t = Tracker(g, [2])
    t.observe()
    godfather = t.memories[2]
    town = ["Jailor", "Mayor", "Doctor", "Sheriff", "Lookout"]  # no Bodyguard to hide as
    assert claimable(godfather, town, None) == ["Doctor", "Sheriff", "Lookout"]
    for slot, role in ((4, "Doctor"), (6, "Sheriff"), (7, "Lookout")):
        apply(g, Chat(slot, f"I am the {role}."))
    t.observe()  # every shared role is claimed: a unique one is all that is left
    assert claimable(godfather, town, None) == ["Jailor", "Mayor"]


def test_a_role_the_list_deals_once_is_counter_claimed_by_its_holder() -> None:
    """Seen in a lobby: in a 7-player Classic game, whose list has one
    Medium, the real Medium seat said "I trust Player 7 for now; they claimed
    Medium." about the Framer. A claim of the seat's own role, when the
    list deals it once, is a charge and never a defence."""
    g = new_game(GameConfig(players=7, seed=11))
    roles = {p.role: p.slot for p in g.players}
    medium, framer = roles["medium"], roles["framer"]
    t = Tracker(g, [medium])
    apply(g, Chat(framer, "I am the Medium."))
    t.observe()
    speak = move_table(t.memories[medium]).speak
    about = [m for m in speak.values() if isinstance(m, (Accuse, Defend)) and m.target == framer]
    assert about and all(isinstance(m, Accuse) for m in about), about
    assert f"accuse Player {framer}: they claimed Medium, but I am the Medium" in speak


def test_a_made_up_result_is_said_once_a_day() -> None:
    """Seen in a lobby: a Framer seat said "What I found: Player 3 is not
    suspicious." in the discussion and "Results: Player 3 is not
    suspicious." in the Judgement of the same day. A lie, like a true
    result, is told once a day."""
    t = day3_investigator()
    godfather = t.memories[2]

    def lies() -> dict[str, Report]:
        return {k: m for k, m in move_table(godfather).speak.items()
                if isinstance(m, Report) and m.lie}

    told = next(iter(lies().values()))
    apply(t.game, Chat(2, render(told, godfather.names, random.Random(1))))
    t.observe()
    assert told not in lies().values() and lies()


def day4_after_the_mafioso_is_lynched(extra_chat: tuple[tuple[int, str], ...] = ()
                                      ) -> Tracker:
    """`day3_investigator` (with `extra_chat` on Day 3) played on: Player 4,
    the Mafioso, is voted up by Players 1, 5, 6 and 7 and lynched; Day 4's
    discussion, seen by every seat."""
    t = day3_investigator(extra_chat)
    for voter in (1, 5, 6, 7):
        apply(t.game, Vote(voter, 4))  # Player 4, the Mafioso
    t.timeout()  # Judgement
    t.observe()
    for p in t.memories[1].living():
        if p.slot != 4:
            apply(t.game, Judge(p.slot, "guilty"))
    t.timeout()  # Last Words
    t.timeout()  # Night 3
    t.timeout()  # Day 4
    t.observe()
    return t


def test_a_vote_against_a_player_shown_to_be_mafia_is_no_charge() -> None:
    """Seen in a lobby: "Vote Player 4! Because they voted for Ann on Day 2."
    after Ann was lynched as the Godfather. A trial vote against a player
    since shown to be an enemy of the Town is no reason to suspect the
    voter."""
    t = day4_after_the_mafioso_is_lynched()
    jester = t.memories[8]
    assert jester.day == 4 and 4 not in {p.slot for p in jester.living()}
    votes = [r for r in reasons(jester)[5] if r.kind == "vote"]
    assert not [r for r in votes if r.other == 4], votes


def test_yesterdays_verdict_does_not_unbind_todays_vote() -> None:
    """Seen in the demo: a Jailor seat voted against Player 12 and said
    "Leave Player 12 alone: they claimed Bodyguard." in the same Voting; its
    view still held the guilty verdict of the day before ("Your verdict:
    guilty."), which took the place of the vote that binds its talk. A
    verdict is shown for the trial under way only, and binds only then."""
    t = day3_investigator()
    for voter in (1, 5, 6, 7):
        apply(t.game, Vote(voter, 4))
    t.timeout()  # Judgement
    apply(t.game, Judge(1, "guilty"))
    t.observe()
    assert t.memories[1].you.verdict == "guilty"
    for p in t.memories[1].living():
        if p.slot not in (1, 4):
            apply(t.game, Judge(p.slot, "guilty"))
    t.timeout()  # Last Words
    t.observe()
    assert t.memories[1].phase == "last_words" and t.memories[1].you.verdict == "guilty"
    t.timeout()  # Night 3
    t.timeout()  # Day 4
    t.timeout()  # Voting
    t.observe()
    sheriff = t.memories[1]
    assert sheriff.phase == "voting" and sheriff.you.verdict is None
    defended = {m.target for m in move_table(sheriff).speak.values() if isinstance(m, Defend)}
    assert 5 in defended  # Player 5 claimed Lookout
    apply(t.game, Vote(1, 5))
    t.observe()
    assert not [m for m in move_table(sheriff).speak.values()
                if isinstance(m, Defend) and m.target == 5]
    # a stale verdict in a seat's memory binds nothing either
    sheriff.you = replace(sheriff.you, verdict="guilty")
    assert not [m for m in move_table(sheriff).speak.values()
                if isinstance(m, Defend) and m.target == 5]


def test_a_town_seat_stands_by_a_player_whose_result_a_lynch_bore_out() -> None:
    """Seen in a lobby: the Investigator's result led to the Godfather's
    lynch, and next day both Town model seats said "I am voting Player 7
    today." of the Investigator. A Town seat stands by a player whose public
    result a death has shown true (no vote plan, call to vote or guilty
    against them while others are left); a result the death did not bear out
    earns nothing, and the Mafia's seats are not bound."""
    t = day4_after_the_mafioso_is_lynched(
        ((5, "Player 4 is suspicious!"),
         (6, "Player 4 could be a Doctor, Disguiser, or Serial Killer.")))
    sheriff, godfather = t.memories[1], t.memories[2]
    assert sheriff.day == 4 and 4 not in {p.slot for p in sheriff.living()}
    assert proven(sheriff) == {5} and proven(godfather) == set()

    def against(memory: SeatMemory) -> set[int]:
        return {m.target for m in move_table(memory).speak.values()
                if isinstance(m, (VotePlan, Accuse))}

    assert against(sheriff) and 5 not in against(sheriff)
    assert 5 in against(godfather)


def test_a_defence_is_said_once_a_game_and_again_for_the_accused() -> None:
    """Seen in a lobby: "I trust Ann for now; they claimed Investigator." on
    Day 1, in Day 2's discussion and again in its vote. A seat says a
    defence (the player and the reason) once a game; when that player stands
    trial it may say it again, once that day."""
    t = day3_investigator()
    sheriff = t.memories[1]

    def defences() -> list[Defend]:
        return [m for m in move_table(sheriff).speak.values()
                if isinstance(m, Defend) and m.target == 5]

    first = defences()
    assert first, "Player 5 claimed Lookout on Day 2"
    apply(t.game, Chat(1, render(first[0], sheriff.names, random.Random(2))))
    t.observe()
    assert first[0] not in defences()

    def trial_of_5() -> None:
        for voter in (2, 4, 6, 7):
            apply(t.game, Vote(voter, 5))
        t.observe()
        assert sheriff.phase == "defense"

    trial_of_5()  # said today already
    assert first[0] not in defences()
    for _ in range(5):  # judgement (spared), voting, night, Day 4's discussion
        t.timeout()
    t.observe()
    assert (sheriff.day, sheriff.phase) == (4, "voting") and first[0] not in defences()
    trial_of_5()  # a new day, and Player 5 stands trial
    assert first[0] in defences()


def test_while_a_player_stands_trial_the_talk_is_about_them() -> None:
    """Seen in the demo: "I trust Player 5 for now; they claimed Lookout." in
    the Judgement of Player 6. In a trial's phases every seat's charges,
    defences and questions name only the accused; the accused speaks for
    itself and charges others."""
    t = day3_investigator()
    for voter in (1, 2, 5, 6):
        apply(t.game, Vote(voter, 4))
    t.observe()
    assert t.memories[1].phase == "defense"
    for phase in ("defense", "judgement"):
        if phase == "judgement":
            t.timeout()
            t.observe()
        for slot in (1, 7):
            memory = t.memories[slot]
            assert memory.phase == phase
            table = move_table(memory)
            named = {m.target for m in table.speak.values()
                     if isinstance(m, (Accuse, Defend, Ask))}
            assert named == {4}, (phase, slot, named)
        accused = move_table(t.memories[4])
        assert {m.target for m in accused.speak.values() if isinstance(m, Accuse)} - {4}
        # it speaks for itself (seen in a lobby: "Leave Player 7 alone: they
        # claimed Doctor." in the seat's own Defense): no defences, no questions
        assert not [m for m in accused.speak.values() if isinstance(m, (Defend, Ask))]
    t.timeout()  # no verdicts: Player 4 is spared, and the vote goes on
    t.observe()
    after = t.memories[1]
    assert after.phase == "voting"
    assert {m.target for m in move_table(after).speak.values()
            if isinstance(m, (Accuse, Defend, Ask))} - {4}


def test_a_line_that_no_longer_holds_when_the_seat_answers_is_withdrawn() -> None:
    """Seen in a lobby: "Player 5 has some explaining to do. They have not
    claimed a role." right after Player 5's claim, which came while the seat
    thought. When the answer arrives, a line whose move the seat could no
    longer make is withdrawn (its turn record says so); its vote stands,
    and a line that still holds is said."""
    def answer(after: str) -> tuple[list[Command], list[Command], LLMSeat]:
        t = day3_investigator(((7, "I am the Investigator."),), fake_doctor=False)
        backend = ScriptedBackend([
            "<thinking>Player 1.</thinking>", "<vote>Player 1</vote>",
            "<thinking>Push.</thinking>",
            "<speak>accuse Player 1: they have not claimed a role</speak>"])
        seat = LLMSeat(7, ToolLoop(backend, MOVES))
        first = view(t.game, Viewer.player(7), since=0)
        cmds = asyncio.run(seat.decide(first))
        apply(t.game, Chat(1, after))  # while the seat thought
        return cmds, seat.still_meant(view(t.game, Viewer.player(7), since=first.version),
                                      cmds), seat

    cmds, kept, seat = answer("i'm the sheriff")
    assert cmds[0] == Vote(7, 1) and isinstance(cmds[1], Chat)
    assert kept == [Vote(7, 1)]
    assert seat.turn_log[-1]["steps"][-1]["fault"] == "stale"
    cmds, kept, seat = answer("Let's take our time.")
    assert kept == cmds
    assert all(s.get("fault") != "stale" for s in seat.turn_log[-1]["steps"])


def test_a_jailor_seat_executes_only_a_prisoner_with_a_charge() -> None:
    """Seen in a lobby: a Jailor seat (structured: it may not abstain, so
    what it is offered it does) executed its prisoner, the Doctor, who had
    claimed Doctor in jail. Its execution is offered only with a charge: a
    claim its own unique role disproves, a refusal to claim in jail, a claim
    of a role that is not Town."""
    from tossim.agents.moves import offered
    from tossim.engine.commands import DayAction

    def night_with(public: str | None, jail: str | None) -> list[str]:
        g = new_game(GameConfig(players=7, seed=4, roles=(
            "jailor", "godfather", "doctor", "mafioso", "lookout", "escort", "sheriff")))
        t = Tracker(g, [1])
        t.timeout()  # Day 1 -> Night 1 (no execution on Night 1)
        t.timeout()  # Day 2
        if public:
            apply(g, Chat(3, public))
        apply(g, DayAction(1, "jail", 3))
        t.timeout()  # Voting
        t.timeout()  # Night 2
        if jail:
            apply(g, Chat(3, jail))
        t.observe()
        memory = t.memories[1]
        assert memory.phase == "night" and memory.you.prisoner == 3
        assert any(a.ability == "execute" for a in memory.legal)  # the engine allows it
        return [a.ability for a in offered(memory) if a.kind == "night"]

    assert night_with(None, "I am the Doctor.") == []
    assert night_with(None, None) == []  # nothing against them yet
    assert night_with("I am the Jailor.", None) == ["execute"]  # the seat is the Jailor
    assert night_with(None, "I will not tell you my role.") == ["execute"]
    assert night_with(None, "im the godfather lol") == ["execute"]
    # and in the jail, a Jailor's talk is about its prisoner
    g = new_game(GameConfig(players=7, seed=4, roles=(
        "jailor", "godfather", "doctor", "mafioso", "lookout", "escort", "sheriff")))
    t = Tracker(g, [1])
    apply(g, Chat(7, "I am the Sheriff."))
    apply(g, DayAction(1, "jail", 3))
    t.timeout()  # Night 1
    t.observe()
    named = {m.target for m in move_table(t.memories[1]).speak.values()
             if isinstance(m, (Accuse, Defend, Ask))}
    assert named == {3}, named


def test_a_claim_of_a_role_the_town_must_lynch_is_a_charge() -> None:
    """Seen in a lobby: Ann said "hi all, im godfather" and a Town seat said
    "I trust Ann for now; they claimed Godfather." A claim of a role the Town
    must lynch is a charge, never a defence; a Jester claim is neither."""
    t = day3_investigator(((6, "im the godfather"), (1, "I am the Jester.")))
    memory = t.memories[7]
    table = move_table(memory)
    about_6 = [m for m in table.speak.values() if isinstance(m, (Accuse, Defend)) and m.target == 6]
    assert not [m for m in about_6 if isinstance(m, Defend)]
    charges = [m for m in about_6 if isinstance(m, Accuse) and m.reason.kind == "confess"]
    assert charges
    said = render(charges[0], memory.names, random.Random(1))
    assert "claimed Godfather, an enemy of the Town" in said, said
    assert "confess" not in {r.kind for r in reasons(memory)[1]}


def test_a_vigilante_seat_shoots_only_a_player_the_game_shows_an_enemy() -> None:
    """Seen in the demo: a Vigilante seat (structured: what it is offered it
    does) shot the Escort it had defended the day before, a Town player who
    had claimed Escort. Its shot is offered only at players its game shows
    to be enemies of the Town, and not at all while there are none; a
    Vampire Hunter's stake, which harms only Vampires, is not held back."""
    from tossim.agents.moves import offered

    def night_with(*chat: tuple[int, str]) -> list[tuple[str, tuple[int, ...]]]:
        g = new_game(GameConfig(players=7, seed=4, roles=(
            "vigilante", "godfather", "doctor", "mafioso", "escort", "lookout", "sheriff")))
        t = Tracker(g, [1])
        t.timeout()  # Day 1 -> Night 1 (no shot on Night 1)
        t.timeout()  # Day 2
        for author, text in chat:
            apply(g, Chat(author, text))
        t.timeout()  # Voting
        t.timeout()  # Night 2
        t.observe()
        memory = t.memories[1]
        assert memory.phase == "night" and any(a.ability == "shoot" for a in memory.legal)
        return [(a.ability, a.targets) for a in offered(memory) if a.kind == "night"]

    assert night_with() == []  # nobody shown an enemy: the seat holds its fire
    assert night_with((5, "I am the Escort."), (1, "Do not lynch Player 5. They claimed Escort.")
                      ) == []
    assert night_with((4, "I am the Mafioso.")) == [("shoot", (4,))]
    assert night_with((4, "I am the Mafioso."), (6, "im the godfather lol")) == [
        ("shoot", (4, 6))]
    hunter = ROLES["vampire_hunter"]
    assert "attack" in hunter.night.labels and not _guilty_shot(hunter)
    assert _guilty_shot(ROLES["vigilante"])


def test_day_1_asks_only_what_can_be_answered() -> None:
    """Seen in the demo: "Player 15, who are you voting for today?" on Day 1,
    which has no vote (and no night has given anyone results yet)."""
    g = new_game(GameConfig(players=7, seed=3))
    memory = SeatMemory(2)
    memory.update(view(g, Viewer.player(2), since=0))
    topics = {m.topic for m in move_table(memory).speak.values() if isinstance(m, Ask)}
    assert topics == {"role", "will"}
    assert {m.topic for m in move_table(day3_investigator().memories[1]).speak.values()
            if isinstance(m, Ask)} >= {"vote", "results"}


def test_on_trial_nobody_asks_the_accused_how_it_votes() -> None:
    """Seen in the demo: three model seats asked the accused "who are you
    voting for today?" in one Judgement, when the day's vote was over."""
    t = _on_trial((), 5)
    asks = {(m.target, m.topic) for m in move_table(t.memories[1]).speak.values()
            if isinstance(m, Ask)}
    assert asks and all(target == 5 for target, _topic in asks)
    assert (5, "vote") not in asks


def test_a_question_someone_asked_today_is_not_asked_again() -> None:
    """Seen in the demo: three model seats asked Player 15 the same question
    in one phase. Once anyone has asked it today, no seat offers it again
    (so the later ones, chosen while the first was said, are withdrawn as
    stale: LLMSeat.still_meant); another day it may be asked anew. Nor is a
    player asked for results they gave today (seen in a lobby: "Player 4, do
    you have any results to share?" after Player 4's Investigator result)."""
    def asks(t: Tracker) -> set[tuple[int, str]]:
        return {(m.target, m.topic) for m in move_table(t.memories[1]).speak.values()
                if isinstance(m, Ask)}

    before = asks(day3_investigator())
    assert (6, "vote") in before
    after = asks(day3_investigator(((2, "Player 6, who are you voting for today?"),)))
    assert after == before - {(6, "vote")}
    # nor is anyone asked for the results they gave today (seen in a lobby)
    assert (8, "results") in before
    shared = asks(day3_investigator(((8, "Player 2 could be a Doctor, Disguiser, or "
                                          "Serial Killer."),)))
    assert (8, "results") not in shared and (8, "will") in shared


def test_nobody_is_asked_a_vote_they_cast_or_said_today() -> None:
    """Seen in a lobby: "Player 3, who are you voting for today?" right after
    Player 3 voted and said "I am voting Player 5 today." A player who cast
    a vote today, said a vote plan or called for a vote is not asked how
    they vote; everyone else still may be."""
    def vote_asks(t: Tracker) -> set[int]:
        return {m.target for m in move_table(t.memories[1]).speak.values()
                if isinstance(m, Ask) and m.topic == "vote"}

    before = vote_asks(day3_investigator())
    assert {2, 6, 8} <= before
    t = day3_investigator(((6, "I am voting Player 5 today."),
                           (8, "Vote Player 4! They have not claimed a role.")))
    apply(t.game, Vote(2, 5))
    t.observe()
    assert vote_asks(t) == before - {2, 6, 8}


def test_a_cover_a_teammate_said_it_will_claim_is_left_to_it() -> None:
    """Seen in a lobby: a Framer seat and its Godfather, both model seats,
    each told the team "I will pose as the Medium tomorrow." The teammate
    with the lower seat number keeps its plan; the other picks another. A
    seat keeps to the cover it told its team while that cover fits."""
    g = new_game(GameConfig(players=7, seed=4, roles=(
        "jailor", "framer", "godfather", "doctor", "lookout", "sheriff", "medium")))
    t = Tracker(g, [2, 3])
    t.timeout()  # Night 1
    apply(g, Chat(2, "Tomorrow I will claim Bodyguard."))
    apply(g, Chat(3, "I will pose as the Escort tomorrow."))
    t.observe()
    framer, godfather = t.memories[2], t.memories[3]
    assert "Bodyguard" not in claimable(godfather, game_roles(godfather), own_claim(godfather))
    assert claimable(framer, game_roles(framer), own_claim(framer)) == ["Bodyguard"]


def _verdicts(t: Tracker, slot: int) -> tuple[str, ...]:
    m = t.memories[slot]
    judge = [c for c in structured_choices(m, turn_choices(m.legal, m.names)) if c.tag == "judge"]
    assert len(judge) == 1, judge
    return judge[0].options


def _on_trial(chat: tuple[tuple[int, str], ...], accused: int) -> Tracker:
    """Day 3 of `day3_investigator` with `chat` said, then `accused` voted
    onto the stand and the Judgement open."""
    t = day3_investigator(chat)
    for voter in (p for p in (1, 2, 5, 6, 8) if p != accused):
        if t.game.phase.value != "voting":
            break
        apply(t.game, Vote(voter, accused))
    t.timeout()  # Defense -> Judgement
    t.observe()
    assert t.game.phase.value == "judgement" and t.game.accused == accused
    return t


def test_a_town_seat_never_spares_a_confessed_enemy() -> None:
    """Seen in a lobby: an Investigator seat voted innocent on a player who
    had claimed Framer; in another an Investigator seat abstained on a
    Framer whose claim its result disproved. A Town seat's verdict holds to
    what the game shows: guilty on a confessed enemy of the Town; no guilty on a player it
    spoke up for today, while nothing shows them an enemy; no innocent on a
    player it called to vote against today."""
    confessed = _on_trial(((4, "I am the Framer."),), 4)
    assert _verdicts(confessed, 7) == ("guilty",)  # the Investigator
    assert "innocent" in _verdicts(confessed, 2)  # the Godfather may still spare them
    # Player 4 claimed Doctor after the Doctor died: a claim the dead disprove
    assert _verdicts(_on_trial((), 4), 7) == ("guilty",)
    # Player 5 claimed Lookout, which nothing contradicts
    assert _verdicts(_on_trial((), 5), 7) == ("guilty", "innocent", "abstain")
    defended = _on_trial(((7, "I trust Player 5 for now; they claimed Lookout."),), 5)
    assert _verdicts(defended, 7) == ("innocent", "abstain")
    called = _on_trial(((7, "Vote Player 5!"),), 5)
    assert _verdicts(called, 7) == ("guilty", "abstain")


def test_a_seat_with_results_it_never_told_defends_nobody_by_a_claim() -> None:
    """Seen in a lobby: an Investigator seat chose to defend another player
    instead of telling its result. Outside a trial, while the
    seat holds a result it has never said in public, it defends nobody but
    by a result (as it asks nothing then); once it has told them, its
    defences come back; and on the stand a defence of the accused stays."""
    defend = "<speak>defend Player 5: they claimed Lookout</speak>"
    holding = day3_investigator().memories[7]
    assert unreported(holding) and not re.fullmatch(action_regex(holding), defend)
    assert re.fullmatch(action_regex(holding), "<speak>report Player 4 could be a Vigilante, "
                                               "Veteran, or Mafioso</speak>")
    told = " ".join(r.sentence(holding.name) for r in unreported(holding))
    after = day3_investigator(((7, told),)).memories[7]
    assert re.fullmatch(action_regex(after), defend)
    on_stand = _on_trial((), 5).memories[7]
    assert unreported(on_stand)
    assert re.fullmatch(action_regex(on_stand), defend)


def test_a_claim_that_fits_the_seats_investigator_result_is_trusted() -> None:
    """Seen in a lobby: an Investigator seat found "Ann could be a Sheriff,
    Executioner, or Werewolf.", Ann claimed Sheriff, and the seat said "My
    vote goes to Ann." and voted against her. A claim that fits the seat's
    own group result is stood by, as a not-suspicious result is: no vote
    against them while others are left, and the result defends them."""
    from tossim.agents.moves import trusted

    plain = day3_investigator(fake_doctor=False).memories[7]  # N2: Player 2 could be a ...
    assert 2 not in trusted(plain) and "Player 2" in votable(plain)
    fits = day3_investigator(((2, "I am the Bodyguard."),), fake_doctor=False).memories[7]
    assert 2 in trusted(fits) and "Player 2" not in votable(fits)
    assert any(isinstance(m, Defend) and m.target == 2 and m.reason.kind == "result"
               for m in move_table(fits).speak.values())
    other = day3_investigator(((2, "I am the Lookout."),)).memories[7]  # not in the group
    assert 2 not in trusted(other)


def test_a_liar_does_not_repeat_a_cover_a_death_disproved() -> None:
    """Seen in a lobby: a Godfather seat said "Same as before: I am the
    Medium." the day after the Medium was lynched. Once the one player of
    the role a liar claimed has died with it shown, the liar no longer
    offers that claim; before the death it still restates it on a new day."""
    g = new_game(GameConfig(players=7, seed=4))  # Classic's 7: one Medium
    slot = {p.role: p.slot for p in g.players}
    framer, godfather, medium = slot["framer"], slot["godfather"], slot["medium"]
    t = Tracker(g, [framer])
    apply(g, Chat(framer, "I am the Medium."))  # its cover, Day 1
    t.timeout()  # Night 1
    t.timeout()  # Day 2, the Medium alive
    t.observe()
    assert "claim Medium" in move_table(t.memories[framer]).speak
    t.timeout()  # Voting
    t.timeout()  # Night 2
    apply(g, NightAction(godfather, (medium,)))
    t.timeout()  # Day 3
    t.observe()
    memory = t.memories[framer]
    assert not g.player(medium).alive and memory.day == 3
    assert cover_blown(memory, "Medium")
    assert not [text for text in move_table(memory).speak if text.startswith("claim ")]


def test_a_claim_of_the_dead_veteran_is_disproved() -> None:
    """The Veteran is unique (rules: Classic's unique roles), so a claim of it
    after the Veteran died is a charge, as for the Jailor; only the Mafioso,
    whose place passes on, and the Vigilante are excepted."""
    roles = ("veteran", "godfather", "doctor", "mafioso", "lookout", "escort",
             "investigator", "jester", "vigilante")
    g = new_game(GameConfig(players=9, seed=3, roles=roles))
    t = Tracker(g, [7])
    t.timeout()  # Night 1
    apply(g, NightAction(2, (1,)))  # the Godfather's kill on the Veteran, not on alert
    t.timeout()  # Day 2
    apply(g, Chat(5, "I am the Veteran."))
    t.observe()
    memory = t.memories[7]
    assert not g.player(1).alive and memory.day == 2
    assert "death" in {r.kind for r in reasons(memory)[5]}


def test_a_guilty_verdict_is_a_charge_only_on_a_lynched_town_player() -> None:
    """Seen in a lobby: "Player 5 has some explaining to do. They voted
    guilty on Ann, who was the Godfather." A guilty verdict on a player the
    lynch showed to be Town is a charge; one on an enemy of the Town is none."""

    def lynched(accused: int) -> SeatMemory:
        t = _on_trial((), accused)
        for voter in (1, 5, 6):
            if voter != accused:
                apply(t.game, Judge(voter, "guilty"))
        t.timeout()  # Last Words
        t.timeout()  # Night: the lynch is shown
        t.observe()
        assert not t.game.player(accused).alive
        return t.memories[7]

    mafioso = lynched(4)
    assert "guilty" not in {r.kind for r in reasons(mafioso)[1]}
    lookout = lynched(5)
    charges = [r for r in reasons(lookout)[1] if r.kind == "guilty"]
    assert charges and charges[0].phrase(lookout.name) == \
        "they voted guilty on Player 5, who was the Lookout"


def test_a_claim_another_player_also_makes_speaks_for_neither() -> None:
    """Seen in a lobby: Player 5 and Player 6 both claimed Sheriff (which its
    list dealt once), and a model seat said "I trust Player 5 for now; they
    claimed Sheriff." in the vote and "I trust Player 6 for now; ..." that
    night. Two living players who claim a role the game deals once clear
    neither; one claimant alone may still be spoken up for."""
    def defended(memory: SeatMemory) -> set[int]:
        return {m.target for m in move_table(memory).speak.values()
                if isinstance(m, Defend) and m.reason.kind == "claim"}

    one = day3_investigator(((6, "I am the Mayor."),), fake_doctor=False).memories[1]
    assert 6 in defended(one)
    two = day3_investigator(((6, "I am the Mayor."), (8, "I am the Mayor.")),
                            fake_doctor=False).memories[1]
    assert not {6, 8} & defended(two) and defended(two)  # others still may be
    assert {r.other for r in reasons(two)[6] if r.kind == "contested"} == {8}
    # a rival claim is not a charge of its own
    assert not any(isinstance(m, Accuse) and m.reason.kind == "contested"
                   for m in move_table(two).speak.values())


def test_a_team_seat_never_votes_against_a_teammate() -> None:
    """Seen in a lobby: a Godfather seat voted against its own Framer on
    Day 4. A seat's vote, vote example and verdict leave out the teammates
    its View names; a Town seat's do not."""
    t = day3_investigator()
    godfather = t.memories[2]
    assert 4 in (godfather.you.teammates or ())  # the Mafioso
    assert "Player 4" not in votable(godfather) and len(votable(godfather)) > 1
    for seed in range(16):
        turn = build_messages(godfather, speech="moves", seed=seed)[-1]["content"]
        assert "<vote>Player 4</vote>" not in turn
    assert "Player 4" in votable(t.memories[5])
    # even after it said it would vote for them in free speech
    said = day3_investigator(((2, "My vote goes to Player 4."),)).memories[2]
    assert announced_vote(said) == 4 and "Player 4" not in votable(said)
    on_trial = _on_trial((), 4)
    assert "guilty" not in _verdicts(on_trial, 2)
    assert "guilty" in _verdicts(on_trial, 5)


def test_a_town_seat_votes_for_the_enemy_its_game_shows() -> None:
    """Seen in a lobby: an Investigator seat found "Player 5 could be a
    Bodyguard, Godfather, or Arsonist.", Player 5 claimed Investigator, and
    the seat voted against the player who had claimed Sheriff. A Town seat
    with no plan votes, plans and gives its example for a player its game
    shows to be an enemy (`moves.exposed`), and never spares them."""
    from tossim.agents.moves import exposed

    free = day3_investigator(fake_doctor=False).memories[7]  # N2: Player 2 could be a GF ...
    assert exposed(free) == set() and len(votable(free)) > 1
    lying = day3_investigator(((2, "I am the Investigator."),), fake_doctor=False)
    seat = lying.memories[7]
    assert exposed(seat) == {2} and votable(seat) == ["Player 2"]
    assert {m.target for m in move_table(seat).speak.values() if isinstance(m, VotePlan)} == {2}
    for seed in range(8):
        turn = build_messages(seat, speech="moves", seed=seed)[-1]["content"]
        assert re.findall(r"<vote>(Player \d)</vote>", turn) == ["Player 2"]
    # a claim after the claimed role died shows every Town seat an enemy
    t = day3_investigator()
    assert 4 in exposed(t.memories[5]) and votable(t.memories[5]) == ["Player 4"]
    assert exposed(t.memories[2]) == set() and len(votable(t.memories[2])) > 1  # the Godfather
    # and on the stand the seat does not spare them
    assert "innocent" not in _verdicts(_on_trial(((2, "I am the Investigator."),), 2), 7)


def test_the_dead_talk_only_among_themselves() -> None:
    """Seen in a lobby: a lynched Mafioso told the dead chat "Tomorrow I will
    claim Escort.". The dead, whose roles are shown, claim nothing, make up
    no result, plan no vote and ask the living nothing; they may still talk
    about the living with the dead."""
    t = _on_trial((), 4)  # the Mafioso who claimed Doctor after the Doctor died

    def lies(slot: int) -> list[Report]:
        return [m for m in move_table(t.memories[slot]).speak.values()
                if isinstance(m, Report) and m.lie]

    assert lies(2)  # the Godfather, who has claimed nothing, may lie in public
    for p in t.game.living():
        if p.slot != 4:
            apply(t.game, Judge(p.slot, "guilty"))
    while t.game.phase.value != "night":
        t.timeout()
    t.observe()
    dead = t.memories[4]
    assert not dead.you.alive and dead.you.teammates and dead.phase == "night"
    assert not team_night(dead)
    kinds = {type(m).__name__ for m in move_table(dead).speak.values()}
    assert kinds and not kinds & {"ClaimRole", "VotePlan", "Ask"}, kinds
    assert not [m for m in move_table(dead).speak.values()
                if isinstance(m, Report) and m.lie]
    # the living Godfather still tells its team tomorrow's cover, but no
    # result it made up (seen in a lobby: "Here is what I have: Player 2 is
    # not suspicious." in the Mafia's chat): its team knows it has none
    assert team_night(t.memories[2])
    assert [m for m in move_table(t.memories[2]).speak.values() if isinstance(m, ClaimRole)]
    assert not lies(2)


def test_to_its_team_a_seat_says_what_a_teammate_needs_to_hear() -> None:
    """Seen in lobbies, in the Mafia's night chat: a Godfather that had
    claimed Investigator said "Tomorrow I will claim Investigator."; a
    Mafioso that had claimed Jailor said "They claimed Jailor, but I am the
    Jailor." of the real Jailor; both teammates said the same accusation.
    Once a cover is given the team hears no plan for it, a counter-claim on
    a cover is no charge to the team (it stays one in public), and a player
    a teammate named tonight is left to that teammate."""
    g = new_game(GameConfig(players=7, seed=4, roles=(
        "jailor", "godfather", "doctor", "mafioso", "lookout", "escort", "sheriff")))
    t = Tracker(g, list(range(1, 8)))
    apply(g, Chat(2, "I am the Investigator."))
    apply(g, Chat(4, "I am the Jailor."))
    apply(g, Chat(1, "I am the Jailor."))
    apply(g, Chat(6, "I am the Serial Killer."))
    t.observe()

    def accused(slot: int) -> set[tuple[int, str]]:
        return {(m.target, m.reason.kind) for m in move_table(t.memories[slot]).speak.values()
                if isinstance(m, Accuse)}

    assert (1, "counter") in accused(4)  # in public, the bluff stands
    t.timeout()  # Night 1
    t.observe()
    godfather, mafioso = t.memories[2], t.memories[4]
    assert team_night(godfather) and team_night(mafioso)
    assert (1, "counter") not in accused(4)
    assert (6, "confess") in accused(2)
    apply(g, Chat(4, "Player 6 has some explaining to do. They claimed Serial Killer."))
    t.observe()
    assert 6 not in {target for target, _kind in accused(2)}
    assert (6, "confess") in accused(4)  # its own line does not bind it
    while g.phase.value != "night" or g.day != 2:
        t.timeout()
    t.observe()
    assert team_night(godfather)
    assert not [m for m in move_table(godfather).speak.values() if isinstance(m, ClaimRole)]


def test_nobody_asks_a_teammate() -> None:
    """Seen in a lobby: a Godfather seat asked its Framer "Player 3, do you
    have any results to share?". A seat asks its teammates nothing."""
    t = day3_investigator()

    def asked(slot: int) -> set[int]:
        return {m.target for m in move_table(t.memories[slot]).speak.values()
                if isinstance(m, Ask)}

    assert t.memories[2].you.teammates == (4,)
    assert asked(2) and 4 not in asked(2)  # the Godfather, of its Mafioso
    assert 4 in asked(1)  # the Sheriff may ask Player 4


def test_nobody_is_asked_for_results_their_claim_does_not_get() -> None:
    """Seen in a lobby: "Player 7, do you have any results to share?" to a
    player who had claimed Medium. Results are asked of players who have
    claimed nothing or a role that gets them (Town Investigative)."""
    t = day3_investigator(((6, "I am the Medium."), (8, "I am the Sheriff.")))

    def topics(slot: int, target: int) -> set[str]:
        return {m.topic for m in move_table(t.memories[slot]).speak.values()
                if isinstance(m, Ask) and m.target == target}

    assert "results" not in topics(1, 6) and "will" in topics(1, 6)
    assert "results" in topics(1, 8)
    assert "results" in topics(1, 2)  # claimed nothing


def test_a_liar_keeps_to_the_role_its_lies_imply() -> None:
    """Seen in lobbies: a Framer seat said "My results: Player 4 is not
    suspicious." and then wrote the will "I am the Medium."; a jailed Framer
    told its Jailor "I am the Jailor.". A seat that has given a Sheriff's
    results in public claims Sheriff, and a prisoner never claims to be the
    Jailor that holds it."""
    from tossim.engine.commands import DayAction

    g = new_game(GameConfig(players=7, seed=4))  # Classic: each role dealt once
    slot = {p.role: p.slot for p in g.players}
    jailor, framer_slot = slot["jailor"], slot["framer"]
    other = next(p.slot for p in g.players if p.faction.value == "town" and p.slot != jailor)
    t = Tracker(g, [framer_slot])
    t.observe()
    framer = t.memories[framer_slot]
    assert "Jailor" in claimable(framer, game_roles(framer), own_claim(framer))
    apply(g, DayAction(jailor, "jail", framer_slot))
    t.timeout()  # Night 1: the Framer in jail
    t.observe()
    assert framer.you.jailed
    assert "Jailor" not in claimable(framer, game_roles(framer), own_claim(framer))
    while g.phase.value != "discussion":
        t.timeout()
    apply(g, Chat(framer_slot, f"My results: Player {other} is not suspicious."))
    t.observe()
    assert claimable(framer, game_roles(framer), own_claim(framer)) == ["Sheriff"]
    assert set(move_table(framer).will) == {"Sheriff"}
    # seen in a lobby: a Godfather's will went from "I am the Sheriff." to "I
    # am the Doctor." once the real Sheriff had claimed
    apply(g, WriteWill(framer_slot, "I am the Sheriff."))
    apply(g, Chat(slot["sheriff"], "I am the Sheriff."))
    t.observe()
    assert claimable(framer, game_roles(framer), own_claim(framer)) == ["Sheriff"]
    assert set(move_table(framer).will) == {"Sheriff"}


def test_a_liar_keeps_to_the_cover_it_told_its_team() -> None:
    """Seen in a lobby: a Godfather seat told its team "Tomorrow I will
    claim Investigator." on two nights running and gave Sheriff results in
    between. A cover told to the team is its claim while it fits: no
    Sheriff results are offered against it, and it is told once."""
    g = new_game(GameConfig(players=7, seed=4))
    gf = next(p.slot for p in g.players if p.role == "godfather")
    t = Tracker(g, [gf])
    t.timeout()  # Night 1
    t.observe()
    godfather = t.memories[gf]
    def claims() -> set[str]:
        return {m.role for m in move_table(godfather).speak.values()
                if isinstance(m, ClaimRole)}

    assert "Investigator" in claims()
    apply(g, Chat(gf, "Tomorrow I will claim Investigator."))
    while g.phase.value != "discussion":
        t.timeout()
    t.observe()
    assert claimable(godfather, game_roles(godfather), own_claim(godfather)) == ["Investigator"]
    assert not [m for m in move_table(godfather).speak.values()
                if isinstance(m, Report) and m.lie]
    assert claims() == {"Investigator"}
    while g.phase.value != "night":
        t.timeout()
    t.observe()
    assert "Investigator" not in claims()


def test_a_jailor_keeps_its_role_to_itself_until_it_stands_accused() -> None:
    """Seen in a lobby: a Jailor model seat said "I am the Jailor." on Day 1
    and the Mafia killed it that night. A role the registry marks
    `keeps_hidden` (Jailor, Veteran) is claimed only on the stand; its will
    still says it."""
    g = new_game(GameConfig(players=7, seed=4))
    slot = {p.role: p.slot for p in g.players}
    jailor = slot["jailor"]
    t = Tracker(g, [jailor, slot["sheriff"]])
    t.observe()

    def claims(s: int) -> set[str]:
        return {m.role for m in move_table(t.memories[s]).speak.values()
                if isinstance(m, ClaimRole)}

    assert claims(jailor) == set() and claims(slot["sheriff"]) == {"Sheriff"}
    assert "Jailor" in move_table(t.memories[jailor]).will
    while g.phase.value != "voting":
        t.timeout()
    for p in g.living():
        if p.slot != jailor and g.phase.value == "voting":
            apply(g, Vote(p.slot, jailor))
    t.observe()
    assert g.phase.value == "defense" and g.accused == jailor
    assert claims(jailor) == {"Jailor"}


def test_a_medium_is_offered_the_dead_chat_only_once_someone_has_died() -> None:
    """Seen in a lobby: a Medium model seat told an empty dead chat on Night 1
    whom it suspected among the living. Before anyone has died its night
    talk reaches nobody and is not offered; after a death it is."""
    g = new_game(GameConfig(players=7, seed=4, roles=(
        "jailor", "framer", "godfather", "doctor", "lookout", "sheriff", "medium")))
    medium = next(p.slot for p in g.players if p.role == "medium")
    t = Tracker(g, [medium])
    t.timeout()  # Night 1, nobody dead
    t.observe()
    m = t.memories[medium]
    assert m.phase == "night" and not [a for a in m.legal if a.kind == "chat"]
    assert "speak" not in {c.tag for c in turn_choices(m.legal, m.names)}
    slot = {p.role: p.slot for p in g.players}
    apply(g, NightAction(slot["godfather"], (slot["sheriff"],)))
    t.timeout()  # the Sheriff dies at dawn
    while g.phase.value != "night":
        t.timeout()
    t.observe()
    assert [a.options for a in m.legal if a.kind == "chat"] == [("dead",)]


def test_the_accused_says_who_it_is_before_anything_else() -> None:
    """Seen in a lobby: a Medium seat on the stand accused another player,
    claimed only in its last words, and was lynched as the Medium. In its
    Defense the accused is offered its claim (and its results) until it has
    said who it is today; then the rest."""
    t = day3_investigator()
    for voter in (1, 2, 5, 6, 8):
        if t.game.phase.value != "voting":
            break
        apply(t.game, Vote(voter, 7))
    t.observe()
    m = t.memories[7]
    assert t.game.phase.value == "defense" and t.game.accused == 7
    assert {what for what, _head, _items in move_table(m).groups} <= {"claim", "report"}
    assert "claim Investigator" in {text for text in move_table(m).speak}
    apply(t.game, Chat(7, "I am the Investigator."))
    t.observe()
    assert "accuse" in {what for what, _head, _items in move_table(m).groups}


def test_a_seat_names_itself_me_in_its_reasons() -> None:
    """Seen in a lobby: Player 3 said of Player 5 "they voted for Player 3 on
    Day 3", as if about someone else. A reason that names the speaking seat
    says "me", in the move the model picks and in the sentence said."""
    from tossim.agents.protocols import Parsed

    t = day3_investigator(fake_doctor=False)
    apply(t.game, Vote(5, 7))  # Player 5 votes to put Player 7 (the Investigator) on trial
    t.observe()
    investigator = t.memories[7]
    table = move_table(investigator)
    accusations = {text: m for text, m in table.speak.items()
                   if isinstance(m, Accuse) and m.target == 5 and m.reason.kind == "vote"}
    assert list(accusations) == ["accuse Player 5: they voted for me on Day 3"], list(table.speak)
    assert not any("Player 7" in text for text in table.speak)
    parsed, _move = speak_move(investigator, Parsed("final", "speak",
                                                    {"text": next(iter(accusations))}), 3)
    said = str(parsed.args["text"])
    assert "voted for me on Day 3." in said and "Player 7" not in said, said
    # a seat that is not the voted player names them
    sheriff = move_table(t.memories[1]).speak
    assert any(text.endswith("they voted for Player 7 on Day 3") for text in sheriff), list(sheriff)


def test_a_plan_gives_way_when_the_player_claims_what_a_result_showed() -> None:
    """Seen in the demo: an Investigator seat said "I am voting Player 2
    today.", Player 2 then claimed Sheriff, which its own result on Player 2
    held ("could be a Sheriff, Executioner, or Werewolf"), and it said "Vote
    Player 2! ... I checked them: they could be a Sheriff, Executioner, or
    Werewolf.", and the next day "I trust Player 2 for now" with the same
    result. A result that holds the player's claim speaks for them: it is
    never a charge, and a plan against a player the seat now stands by no
    longer binds its calls to vote."""
    t = day3_investigator(fake_doctor=False)
    investigator = t.memories[7]
    apply(t.game, Chat(7, render(VotePlan(4), investigator.names)))
    t.observe()

    def charges() -> dict[str, Accuse]:
        return {text: m for text, m in move_table(investigator).speak.items()
                if isinstance(m, Accuse)}

    before = charges()
    assert before and {m.target for m in before.values()} == {4}, list(before)
    assert any(m.reason.kind == "result" for m in before.values())
    apply(t.game, Chat(4, "I am the Vigilante."))  # what Player 7's Night 1 result held
    t.observe()
    after = charges()
    assert not [m for m in after.values() if m.target == 4 and m.reason.kind == "result"], \
        list(after)
    assert {m.target for m in after.values()} - {4}, list(after)  # others may be charged now
    assert 4 in {m.target for m in move_table(investigator).speak.values()
                 if isinstance(m, Defend)}


def test_a_question_asked_by_a_seat_earlier_in_the_round_is_withdrawn() -> None:
    """Seen in the demo (turn by turn, all model seats asked at once and
    answered in seat order): Player 1 and Player 2 both asked the accused
    "Player 4, what is in your last will?" in one Judgement. A seat's line
    that a seat before it in the round has already said is withdrawn (its
    turn record says so); the first seat's question is said."""
    from tossim.agents.driver import Match

    t = day3_investigator()
    g = t.game
    for voter in (1, 2, 5, 6):
        apply(g, Vote(voter, 4))
    t.timeout()  # Defense -> Judgement
    assert g.phase.value == "judgement"
    ask = ["<thinking>Guilty.</thinking>", "<judge>guilty</judge>",
           "<thinking>Their will.</thinking>", "<speak>ask Player 4 about will</speak>"]
    seats = {slot: LLMSeat(slot, ToolLoop(ScriptedBackend(ask), MOVES)) for slot in (1, 5)}
    match = Match(g, seats)
    asyncio.run(match._turn(g.phase_seq))
    asked = [e for e in g.events if e.key == "chat.public"
             and e.data.get("text") == "Player 4, what is in your last will?"]
    assert [e.data["author"] for e in asked] == [1]
    assert seats[5].turn_log[-1]["steps"][-1]["fault"] == "stale"
