"""The scripted bots read role facts from the registry, and judge trials the
way a reasonable Town player would (issue: Classic games that are exact and
fair; docs/rules.md#role-facts)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from tossim.agents import bot_hints, talk
from tossim.agents.scripted import ScriptedBot
from tossim.engine.legal import LegalAction
from tossim.engine.roles import GROUP_OF, ROLES, Faction, cover_claims, threat
from tossim.engine.roles import registry as reg

NOT_TOWN = sorted(k for k, r in ROLES.items() if r.faction is not Faction.TOWN)


@pytest.mark.parametrize("key", NOT_TOWN)
def test_every_cover_claim_hides_in_the_roles_investigator_group(key: str) -> None:
    role = ROLES[key]
    for cover in cover_claims(role):
        assert ROLES[cover].faction is Faction.TOWN
        assert ROLES[cover].name in GROUP_OF[role.name], (key, cover)


def test_threat_says_who_the_town_must_lynch_and_who_it_must_not() -> None:
    assert threat(ROLES["godfather"]) == 1.0 and threat(ROLES["serial_killer"]) == 1.0
    assert threat(ROLES["jester"]) < 0 < threat(ROLES["executioner"]) < 1.0
    assert threat(ROLES["survivor"]) == 0.0 and threat(ROLES["sheriff"]) == 0.0


def test_a_new_role_is_known_to_the_bots_with_no_other_file_touched(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A role added to the registry only: its threat comes from its win
    condition, its cover from its Investigator group, and a bot treats a
    dead one as an enemy revealed."""
    new = dataclasses.replace(ROLES["mafioso"], key="hitman", name="Hitman")
    monkeypatch.setitem(ROLES, "hitman", new)
    monkeypatch.setitem(reg.ROLE_BY_NAME, "hitman", new)
    monkeypatch.setitem(GROUP_OF, "Hitman", ("Vigilante", "Veteran", "Hitman"))
    assert threat(new) == 1.0 and cover_claims(new) == ("vigilante", "veteran")
    bot = _town_bot()
    bot.reports.append((3, "suspicious", 5, 1.0, None))
    bot._on_death(5, "hitman")  # a report on a dead enemy earns credit
    assert bot.credit[3] > 1.0


def _town_bot(day: int = 4) -> ScriptedBot:
    bot = ScriptedBot(1, 0)
    bot.role, bot.day, bot.ready = "doctor", day, True
    bot.alive = {1, 2, 3, 4, 5, 6, 7}
    return bot


def test_a_town_bot_pardons_a_player_who_begs_for_the_rope() -> None:
    bot = _town_bot()
    bot.own[2] = 1.0  # it has something against them ...
    bot.begged[2] = bot.day  # ... but "Lynch me then, see what happens." is a Jester's line
    assert bot._verdict(2) == "innocent"


def test_a_mafia_bot_does_not_speak_up_for_a_teammate_who_confessed() -> None:
    """Seen in a lobby: a scripted Godfather voted innocent on its Framer
    teammate, who had claimed Framer, and said "Nothing contradicts Ann as
    Framer. Let them live." A teammate who has named an evil role is lost:
    the bot abstains, and so says nothing; a teammate with a Town cover is
    still spared."""
    bot = _town_bot()
    bot.role, bot.mafia, bot.team = "godfather", True, frozenset({1, 2, 3})
    bot.claims[2] = "framer"
    assert bot._verdict(2) == "abstain"
    bot.claims[3] = "lookout"
    assert bot._verdict(3) == "innocent"
    assert bot._verdict(4) == "guilty"
    # seen in a lobby: "Player 3 claimed Jailor and nothing speaks against
    # it." from the Godfather, after the game's only Jailor had died
    bot.claims[3] = "jailor"
    assert bot._verdict(3) == "innocent"
    bot.dead_role[6] = "jailor"
    bot._stats = bot._sus = None
    assert bot._verdict(3) == "abstain"


def test_a_lying_bot_wills_the_role_it_claimed() -> None:
    """Seen in a lobby: a scripted Framer that had claimed Investigator all
    game left the will "I am the Framer." A bot that lies about its role
    writes no will before it claims, then the role it claimed, with no
    results; the Town writes its real role."""
    bot = _town_bot()
    bot.names = tuple(f"Player {i}" for i in range(1, 8))
    assert [c.text for c in bot._will_cmd()] == ["I am the Doctor."]
    framer = _town_bot()
    framer.names, framer.role = bot.names, "framer"
    assert framer._will_cmd() == []
    framer.claimed = "investigator"
    assert [c.text for c in framer._will_cmd()] == ["I am the Investigator."]
    assert framer._will_cmd() == []  # the same will is not written again


def test_a_town_bot_lynches_an_accused_with_no_defence() -> None:
    bot = _town_bot()
    assert 2 not in bot.claims
    assert bot._verdict(2) == "guilty"


def test_an_uncontested_town_claim_is_pardoned_and_a_caught_lie_is_not() -> None:
    bot = _town_bot()
    bot.claims[2] = "lookout"
    assert bot._verdict(2) == "innocent"
    bot.claims[3] = "godfather"  # claiming an evil role
    assert bot._verdict(3) == "guilty"
    bot.claims[4] = "jailor"
    bot.dead_role[6] = "jailor"  # the only Jailor is already dead
    bot._stats = bot._sus = None
    assert bot._verdict(4) == "guilty"


def test_an_arsonist_ignites_when_its_lone_opponent_is_doused() -> None:
    bot = ScriptedBot(4, 0)
    bot.hint_memory = {"doused": {7}}  # type: ignore[attr-defined]
    action = LegalAction("night", ability="douse", targets=(4, 7))
    assert bot_hints.douse(bot, action) == (4,)  # targeting itself ignites


def _started(bot: ScriptedBot, mode: str, players: int | None = None) -> ScriptedBot:
    """The bot has seen a game of `mode` start (its role list)."""
    from tossim.agents.scripted import _on_start
    from tossim.engine.rules import make_config, new_game

    game = new_game(make_config(mode, players, 0, None))
    start = next(e for e in game.events if e.key == "game.start")
    _on_start(bot, dict(start.data))
    return bot


def test_a_ranked_role_list_tells_the_bots_which_neutral_killers_may_be_dealt() -> None:
    """"Neutral Killing" and "Random Mafia" are read as the deal reads them:
    a Werewolf is possible, and an Investigator's Sheriff/Executioner/Werewolf
    result counts against an unclaimed player."""
    bot = _started(_town_bot(), "ranked")
    assert {"werewolf", "arsonist", "consort"} <= bot.possible
    assert bot.odds.enemies == 5.0  # Godfather, Mafioso, two Random Mafia, Neutral Killing
    assert bot.group_weight(("Sheriff", "Executioner", "Werewolf"), None) > 0.2


def test_a_sheriff_bot_keeps_a_full_moon_werewolf_result() -> None:
    from tossim.agents.scripted import _HANDLERS

    bot = _town_bot()
    bot.role = "sheriff"
    _HANDLERS["night.sheriff_werewolf"][0](bot, {"target": 5, "result": "suspicious"})
    assert 5 in bot.checked_sus and bot.unshared[-1].kind == "suspicious"


def test_a_warning_that_a_lynch_costs_a_town_role_is_not_begging() -> None:
    from tossim.agents import claims as cv

    vocab = cv.vocabulary(("Player 1", "Player 2"))
    assert not vocab.parse("If you lynch me you lose a Town role for nothing.")
    assert [c.kind for c in vocab.parse("Lynch me then, see what happens.")] == [cv.BEG]


def test_few_players_left_the_town_lynches_its_best_suspect() -> None:
    """The game goes on, so someone among the few left still stops the
    Town's win (a killer, or a Witch while a Vigilante has bullets)."""
    bot = _town_bot(day=6)
    bot.alive, bot.last_death_day = {1, 2, 3, 4, 5}, 6  # someone died today: no draw near
    bot.claims.update({2: "lookout", 3: "medium", 4: "escort", 5: "sheriff"})
    bot.own[3] = 0.2
    assert not bot._must_lynch()
    assert bot._verdict(3) == "innocent"  # slight evidence, nothing forces a lynch
    bot.alive = {1, 2, 3, 4}
    bot._sus = None
    assert bot._must_lynch() and bot._verdict(3) == "guilty"
    bot.own[2] = 0.8  # ... but not while someone else is clearly more suspect
    bot._sus = None
    assert bot._verdict(3) == "innocent"


def test_calls_to_lynch_one_player_day_after_day_with_no_result_move_nobody() -> None:
    from tossim.agents import claims as cv

    bot = _town_bot()
    bot.names = tuple(f"Player {i}" for i in range(1, 8))
    bot.vocab = cv.vocabulary(bot.names)
    bot.claims[2] = "escort"
    for day in (2, 3, 4):
        bot._hear(5, "Vote Player 2!", day)
    assert bot.tunnels(5, 2)
    assert bot.sus()[5] > 0 and bot.sus()[2] <= 0.15


def test_a_claim_the_list_seldom_backs_is_weighed_on_the_stand() -> None:
    """Classic deals a Bodyguard only from its Random Town slot, and the
    Godfather hides behind one (its Investigator group): a Bodyguard claim
    on the stand is a likely cover, a Sheriff claim (a fixed slot whose real
    holder would answer a fake) is not."""
    bot = _started(_town_bot(), "classic")
    assert bot._cover_doubt("bodyguard") > 0.8 and bot._cover_doubt("sheriff") == 0.0
    bot.claims.update({2: "bodyguard", 3: "sheriff"})
    bot.own[2] = bot.own[3] = 0.3
    assert bot._verdict(2) == "guilty" and bot._verdict(3) == "innocent"


def test_a_claim_of_the_bots_own_role_is_a_lie_when_the_list_deals_it_once() -> None:
    """A 7-player Classic list deals one Medium (seen in a lobby: its Framer
    claimed Medium): the Medium bot knows the claimant lies, as it would for a
    unique role, and lynches them on the stand, with nothing else against
    them."""
    bot = _started(_town_bot(), "classic", 7)
    bot.role = "medium"
    bot.claims[2] = "medium"
    assert bot._verdict(2) == "guilty"
    assert bot._why(2) in talk.reason_my_role("Medium")


def test_an_investigator_result_that_fits_a_claim_clears_only_as_far_as_the_group_is_town() -> None:
    bot = _started(_town_bot(), "classic")
    gf_group = GROUP_OF["Godfather"]  # Bodyguard, Godfather, Arsonist
    doc_group = GROUP_OF["Doctor"]  # Doctor, Disguiser, Serial Killer
    lookout_group = GROUP_OF["Lookout"]  # Lookout, Forger, Witch: no enemy in Classic
    assert bot.group_weight(gf_group, "bodyguard") > 0.5
    assert 0.0 < bot.group_weight(doc_group, "doctor") < bot.group_weight(gf_group, "bodyguard")
    assert bot.group_weight(lookout_group, "lookout") < 0.0


def test_a_suspicious_result_weighs_less_while_a_framer_may_be_alive() -> None:
    bot = _started(_town_bot(), "classic")
    bot.claims[3] = "sheriff"
    bot.reports.append((3, "suspicious", 5, 0.7, None))
    framed = bot.sus()[5]
    bot.dead_role[7], bot.alive = "framer", {1, 2, 3, 4, 5, 6}
    bot._sus = None
    assert bot.sus()[5] > framed  # the Framer flipped: the result stands


def test_a_not_suspicious_result_clears_less_with_a_hidden_killer_at_large() -> None:
    from tossim.agents.scripted import _HANDLERS

    bot = _started(_town_bot(), "ranked")
    bot.role = "sheriff"
    _HANDLERS["night.sheriff_innocent"][0](bot, {"target": 5, "result": "not_suspicious"})
    cleared = bot.sus()[5]
    bot.killers_seen["arsonist"] = 3  # a fire: an Arsonist (not suspicious to a Sheriff) lives
    bot._sus = None
    assert cleared < bot.sus()[5] < 0.0


def test_a_harmless_neutral_tells_the_truth_and_the_town_is_wary_of_it() -> None:
    surv = ScriptedBot(2, 0)
    surv.role = "survivor"
    assert surv._my_claim() == "survivor"
    bot = _town_bot()
    bot.claims[2] = "survivor"
    assert bot.sus()[2] > 0.0  # not Town by their own word
    assert bot._verdict(2) == "guilty"


def test_a_consigliere_names_a_rival_killer_it_found() -> None:
    from tossim.agents.scripted import _HANDLERS

    bot = _started(ScriptedBot(3, 0), "ranked")
    bot.ready, bot.role, bot.mafia, bot.day = True, "consigliere", True, 2
    bot.names = tuple(f"Player {i}" for i in range(1, 16))
    bot.alive = set(range(1, 16))
    _HANDLERS["night.consigliere"][0](bot, {"target": 9, "role": "Arsonist"})
    said = bot._speech()
    assert "Player 9 could be a Bodyguard, Godfather, or Arsonist." in said
    assert 9 in bot.outed


def test_a_claimed_sheriff_tells_each_new_result() -> None:
    from tossim.agents.moves import Result

    bot = _town_bot()
    bot.role = bot.claimed = "sheriff"
    bot.names = tuple(f"Player {i}" for i in range(1, 8))
    bot.unshared = [Result("innocent", 4, 3)]
    said = bot._speech()
    assert "Player 4 is not suspicious." in said and "I am the" not in said
    assert not bot.unshared


def test_the_claim_parser_finds_what_finditer_finds() -> None:
    """`Vocabulary._matches` only tries the pattern where a sentence can
    begin; it must find exactly what `pattern.finditer` finds, dares and
    names with odd first letters included."""
    from tossim.agents import claims as cv

    names = ("Player 1", "Player 2", "Ána", "-dash", "Vote", "Ivy")
    vocab = cv.Vocabulary(names)
    texts = [
        "I am the Sheriff. Player 2 is suspicious! Ána is not suspicious.",
        "Vote -dash! You lynch me and lose. go AHEAD, Hang me. vote me",
        "Player 1 visited Ivy last night! The Mafia visited Vote, Ána and Player 2 last night.",
        "Ivy could be a Doctor, Disguiser, or Serial Killer. I will not tell you my role.",
        "xPlayer 1 is suspicious! Player 12 is suspicious! lynch mer", "", "I", "Vote Vote!",
    ]
    for text in texts:
        want = [(m.span(), m.lastgroup) for m in vocab.pattern.finditer(text)]
        assert [(m.span(), m.lastgroup) for m in vocab._matches(text)] == want, text


@pytest.mark.parametrize("seed", range(6))
def test_a_bot_mourns_only_the_town(seed: int) -> None:
    """Seen in the demo: "They got Player 6, our Jester." A night death is
    the Town's loss only when the role shown is Town; a Jester's or a
    Survivor's is nobody's, and an enemy's is good riddance."""
    bot = ScriptedBot(3, seed)
    bot.names = tuple(f"Player {i}" for i in range(1, 8))
    for role, words in (("jester", {"our", "loss", "hurts", "riddance", "evil"}),
                        ("survivor", {"our", "loss", "hurts", "riddance", "evil"}),
                        ("doctor", {"riddance", "evil"}),
                        ("mafioso", {"our", "loss", "hurts"})):
        lines = []
        for _ in range(40):  # a bot reacts to some mornings, not all
            bot.news = [("dawn", 6, role)]
            lines.append(bot._react())
        said = [line for line in lines if line]
        assert said and all("Player 6" in line for line in said)
        for line in said:
            assert not words & set(re.findall(r"[a-z]+", line.lower())), (role, line)
