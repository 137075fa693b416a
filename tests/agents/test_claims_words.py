"""Claims in people's own words: bots, stand-ins and model seats hear a
person's "i'm the sheriff" as they hear a bot's "I am the Sheriff."
(docs/agents.md, "Claims")."""

from __future__ import annotations

import pytest

from tests.agents.support import Tracker
from tossim.agents import claims as cv
from tossim.agents.moves import _claims
from tossim.agents.scripted import ScriptedBot
from tossim.engine import Chat, GameConfig, PhaseTimeout, Viewer, apply, new_game, view
from tossim.engine.roles import ROLES

NAMES = ("Ann", "Bob", "Cleo", "Dan", "Eve", "Finn", "Gus")
ROLES7 = ("sheriff", "doctor", "investigator", "jailor", "godfather", "mafioso", "lookout")


@pytest.mark.parametrize(("text", "role"), [
    ("I am the Sheriff.", "sheriff"),  # the bots' own wording
    ("I am the Sheriff", "sheriff"),
    ("i'm the sheriff, Bob is sus", "sheriff"),
    ("im doc", "doctor"),
    ("I’m the real Doctor! I healed Ann", "doctor"),
    ("Sheriff here. Cleo is clear", "sheriff"),
    ("lo here", "lookout"),
    ("I am a serial killer", "serial_killer"),
    ("I AM THE JAILOR", "jailor"),
])
def test_a_claim_in_a_persons_own_words_is_heard(text: str, role: str) -> None:
    claims = [c for c in cv.vocabulary(NAMES).parse(text) if c.kind == cv.ROLE]
    assert [c.role for c in claims] == [role]


@pytest.mark.parametrize(("text", "heard"), [
    ("vote bob", [(cv.ACCUSE, 2)]),
    ("I vote Bob, he dodged", [(cv.ACCUSE, 2)]),
    ("lynch cleo", [(cv.ACCUSE, 3)]),
    ("bob is sus", [(cv.SUSPICIOUS, 2)]),
    ("Cleo is mafia. Dan is clear", [(cv.SUSPICIOUS, 3), (cv.INNOCENT, 4)]),
    ("dan is not sus", [(cv.INNOCENT, 4)]),
    ("i'm sheriff, eve = sus", [(cv.ROLE, None), (cv.SUSPICIOUS, 5)]),
    ("don't vote bob", []), ("do not lynch Cleo", []), ("never vote dan", []),
    ("is bob sus?", []), ("Bob is sus?", []), ("who do we vote", []),
    # a bot's reason, not a call: it names the dead (seen in 201 bot games)
    ("Voting Cleo. They helped lynch Dan, and Dan was the Sheriff.", []),
    ("let's lynch eve", [(cv.ACCUSE, 5)]),
])
def test_a_call_to_vote_and_a_result_in_a_persons_own_words_are_heard(
        text: str, heard: list[tuple[str, int | None]]) -> None:
    assert [(c.kind, c.target) for c in cv.vocabulary(NAMES).parse(text)] == heard


@pytest.mark.parametrize("text", [
    "I am not the sheriff", "if I am the Jester you all lose", "Am I the Mayor?",
    "I am the sheriff?", "I am tired", "Ann here. Who do you suspect?", "the doctor here died",
])
def test_what_is_no_claim_is_not_heard_as_one(text: str) -> None:
    assert not [c for c in cv.vocabulary(NAMES).parse(text) if c.kind == cv.ROLE]


def test_bots_and_model_seats_hear_a_persons_claim_and_a_stand_in_keeps_it() -> None:
    """Seen in a lobby: a stand-in claimed another role than the one its
    absent player had claimed; bots and model seats missed claims typed as
    people type them."""
    g = new_game(GameConfig(players=7, seed=2, roles=ROLES7))
    t = Tracker(g, [2, 7])
    apply(g, Chat(1, "i'm the sheriff, trust me"))
    apply(g, Chat(7, "Doc here."))  # the Lookout's bluff
    t.observe()
    assert {s: said[-1][1] for s, said in _claims(t.memories[2]).items()} == {
        1: "Sheriff", 7: "Doctor"}
    bot = ScriptedBot(2, 0)
    bot.decide(view(g, Viewer.player(2), since=0))
    assert bot.claims == {1: "sheriff", 7: "doctor"}
    standin = ScriptedBot(7, 0)  # takes the Lookout's seat from here
    standin.decide(view(g, Viewer.player(7), since=0))
    assert standin._my_claim() == "doctor"


def test_a_scripted_liar_picks_another_cover_than_its_teammate_announced() -> None:
    """Seen in a lobby: a Framer seat and its Godfather, a bot, both claimed
    Investigator. A model seat tells its team tonight's plan ("Tomorrow I
    will claim X."); a scripted teammate reads it and claims another cover."""
    from tossim.agents.talk import COVER_PLANS

    def cover(heard: str | None) -> str:
        g = new_game(GameConfig(players=7, seed=4))
        mafia = [s for s in range(1, 8) if g.player(s).role in ("godfather", "mafioso",
                                                                 "framer", "consigliere")]
        me = next(s for s in mafia if g.player(s).role == "godfather")
        mate = next(s for s in mafia if s != me)
        apply(g, PhaseTimeout(g.phase_seq))  # Night 1
        if heard is not None:
            apply(g, Chat(mate, heard))
        bot = ScriptedBot(me, 0)
        bot.decide(view(g, Viewer.player(me), since=0))
        if heard is not None:
            assert any(e.key == "chat.mafia" for e in g.events)
        return bot._my_claim()

    alone = cover(None)
    for plan in COVER_PLANS:
        other = cover(plan.format(role=ROLES[alone].name))
        assert other != alone, plan
