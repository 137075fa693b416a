"""The scripted bots read role facts from the registry, and judge trials the
way a reasonable Town player would (issue: Classic games that are exact and
fair; docs/rules.md#role-facts)."""

from __future__ import annotations

import dataclasses

import pytest

from tossim.agents import bot_hints
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
