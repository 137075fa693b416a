"""Leak checks for the secrets of the Classic-era roles beyond the Classic list:
Vampire chat (Vampires only, the Vampire Hunter anonymised), a Janitor's
cleaned role and will (the Janitor alone), a forged will (the real will never
reaches the town) and a disguise (the body shows the disguise). The general
checks of `test_leaks.LeakChecker` run on the same games."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.test_leaks import LeakChecker
from tossim.agents import play_match
from tossim.engine import PUBLIC_VIEWER, Command, Event, Game, GameConfig, Viewer, view
from tossim.engine.state import Phase

ROLE_LISTS = {
    "deception": ("Jailor", "Sheriff", "Investigator", "Lookout", "Doctor", "Escort",
                  "Vigilante", "Godfather", "Janitor", "Forger", "Blackmailer",
                  "Consigliere", "Witch", "Survivor", "Arsonist"),
    "vampires": ("Vampire Hunter", "Sheriff", "Investigator", "Lookout", "Doctor", "Mayor",
                 "Spy", "Medium", "Vampire", "Vampire", "Mafioso", "Disguiser", "Consort",
                 "Amnesiac", "Werewolf"),
}
SEEDS = range(12)


class SecretChecker(LeakChecker):
    """Adds the new secrets to the general checks."""

    def __init__(self) -> None:
        super().__init__()
        self.real_wills: dict[int, str] = {}  # forged victims -> their real will

    def before(self, game: Game, cmd: Command) -> None:
        for p in game.players:  # remember wills before a night may forge them
            if p.alive:
                self.real_wills[p.slot] = p.will
        super().before(game, cmd)

    def after(self, game: Game, cmd: Command, events: list[Event] | None) -> None:
        super().after(game, cmd, events)
        for e in events or ():
            self.coverage[e.key] += 1

    def check(self, game: Game) -> None:
        super().check(game)
        if game.phase is Phase.ENDED:
            return
        for p in game.players:
            death = p.death
            if p.alive or death is None:
                continue
            if death.cleaned:
                self.check_cleaned(game, p.slot)
            if death.forged:
                self.check_forged(game, p.slot)

    def check_cleaned(self, game: Game, slot: int) -> None:
        p = game.player(slot)
        for viewer in [PUBLIC_VIEWER, *(Viewer.player(q.slot) for q in game.players)]:
            v = view(game, viewer)
            entry = v.roster[slot - 1]
            if entry.role != "Cleaned" or entry.death is None or entry.death.will:
                self.fail(game, viewer.label(), f"roster shows cleaned {slot}'s role or will")
            for e in v.events:
                if e["data"].get("player") == slot and e["data"].get("role") == p.spec.name \
                        and e["key"] != "game.role":
                    self.fail(game, viewer.label(), f"{e['key']} shows cleaned {slot}'s role")
                if e["key"] == "night.janitor_role" and \
                        game.player(int(viewer.slot or 0)).original_role != "janitor" and \
                        game.player(int(viewer.slot or 0)).role not in ("janitor", "mafioso"):
                    self.fail(game, viewer.label(), "reads the Janitor's result")

    def check_forged(self, game: Game, slot: int) -> None:
        for viewer in [PUBLIC_VIEWER, *(Viewer.player(q.slot) for q in game.players)]:
            grave = view(game, viewer).roster[slot - 1].death
            if grave is not None and grave.forged:
                self.fail(game, viewer.label(), f"the graveyard labels {slot}'s will forged")
        real = self.real_wills.get(slot, "")
        if not real:
            return
        for e in view(game, PUBLIC_VIEWER).events:
            if e["key"] in ("dawn.will", "lynch.will") and e["data"].get("player") == slot \
                    and e["data"].get("will") == real and real != game.player(slot).death.will:  # type: ignore[union-attr]
                self.fail(game, "public", f"reads {slot}'s real will under a forgery")


@pytest.fixture(scope="module")
def checked() -> list[SecretChecker]:
    out = []
    for roles in ROLE_LISTS.values():
        for seed in SEEDS:
            checker = SecretChecker()
            result = play_match(GameConfig(players=len(roles), seed=seed, roles=roles),
                                before=checker.before, after=checker.after)
            assert result.game.ended
            checker.check(result.game)
            out.append(checker)
    return out


def test_new_secrets_do_not_leak(checked: list[SecretChecker]) -> None:
    problems = [p for c in checked for p in c.problems]
    assert not problems, problems[:20]


def test_the_games_exercised_the_new_secrets(checked: list[SecretChecker]) -> None:
    seen: Counter[str] = Counter()
    for c in checked:
        seen.update(c.coverage)
    for key in ("chat.team", "chat.overheard", "game.team", "night.team_chosen",
                "dawn.cleaned", "night.janitor_role", "night.blackmailed", "night.consigliere",
                "night.controlled", "night.converted", "night.disguised", "night.forged"):
        assert seen[key], f"no {key} event was seen"


def test_checker_catches_a_shown_cleaned_role() -> None:
    from tossim.engine import NightAction, PhaseTimeout, apply, new_game
    game = new_game(GameConfig(players=6, roles=("Sheriff", "Janitor", "Godfather", "Doctor",
                                                 "Investigator", "Mafioso")))
    apply(game, PhaseTimeout())  # night 1
    apply(game, NightAction(2, (1,)))
    apply(game, NightAction(3, (1,)))
    apply(game, PhaseTimeout())  # dawn
    death = game.player(1).death
    assert death is not None and death.cleaned
    checker = SecretChecker()
    checker.check_cleaned(game, 1)
    assert not checker.problems
    death.role_shown = "Sheriff"  # as if the body showed the role
    checker.check_cleaned(game, 1)
    assert checker.problems


def test_a_forged_will_reads_as_the_will_until_the_game_is_over() -> None:
    """The Forger's forgery is the will the town reads, with no label (the
    label would undo the forgery); the omniscient view and the finished
    game's views carry it."""
    from tossim.engine import (
        OMNISCIENT_VIEWER,
        NightAction,
        PhaseTimeout,
        WriteDeathNote,
        WriteWill,
        apply,
        new_game,
    )
    game = new_game(GameConfig(players=6, roles=("Sheriff", "Forger", "Godfather", "Doctor",
                                                 "Investigator", "Mafioso")))
    apply(game, WriteWill(1, "I am the Sheriff. N1: Player 2 is suspicious."))
    apply(game, WriteDeathNote(2, "I am the Jester, lynch me."))
    apply(game, PhaseTimeout())  # night 1
    apply(game, NightAction(2, (1,)))
    apply(game, NightAction(3, (1,)))
    apply(game, PhaseTimeout())  # dawn
    assert game.player(1).death is not None and game.player(1).death.forged
    for viewer in [PUBLIC_VIEWER, *(Viewer.player(q.slot) for q in game.players[1:])]:
        death = view(game, viewer).roster[0].death
        assert death is not None and death.will == "I am the Jester, lynch me.", viewer
        assert death.forged is False, viewer
    checker = SecretChecker()
    checker.check_forged(game, 1)
    assert not checker.problems
    grave = view(game, OMNISCIENT_VIEWER).roster[0].death
    assert grave is not None and grave.forged is True
    game.phase = Phase.ENDED  # as at the end of the game: every label is shown
    grave = view(game, PUBLIC_VIEWER).roster[0].death
    assert grave is not None and grave.forged is True
