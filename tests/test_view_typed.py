"""The typed View: every seat's card (`SelfView`) and roster entry as a game
hands them out, against the dataclasses' own constructors, and the JSON they
write. A seat, a worker and a browser all read these."""

from __future__ import annotations

import json
from dataclasses import fields

from tossim.agents.match import play_match
from tossim.engine import Event, GameConfig, Viewer, view
from tossim.engine.replay import rerun
from tossim.engine.view import OMNISCIENT_VIEWER, PUBLIC_VIEWER, RosterEntry, SelfView


def _games(seed: int) -> list:
    played = play_match(GameConfig(players=15, seed=seed)).game
    commands = list(played.commands)
    step = max(1, len(commands) // 12)
    return [rerun(GameConfig(players=15, seed=seed), commands[:n])
            for n in [*range(0, len(commands), step), len(commands)]]


def test_every_card_is_the_one_its_constructor_makes() -> None:
    """`view` builds a card without calling `SelfView(...)` (it is faster):
    the card must hold exactly SelfView's fields, compare equal to the
    constructed one and write the same JSON."""
    names = [f.name for f in fields(SelfView)]
    seen_keys: set[str] = set()
    for game in _games(4):
        for p in game.players:
            card = view(game, Viewer.player(p.slot)).you
            assert card is not None
            assert list(vars(card)) == names
            built = SelfView(**vars(card))
            assert built == card and repr(built) == repr(card)
            assert json.dumps(built.to_dict()) == json.dumps(card.to_dict())
            assert SelfView.from_dict(json.loads(json.dumps(card.to_dict()))) == card
            seen_keys |= set(card.to_dict())
    assert {"teammates", "prisoner", "jail_choice"} <= seen_keys  # the optional keys came up


def test_roster_entries_are_shared_only_while_nothing_they_show_changes() -> None:
    """Rosters are kept per game between views; each must still be what a
    fresh projection of the game shows to that viewer."""
    for game in _games(6):
        viewers = [PUBLIC_VIEWER, OMNISCIENT_VIEWER,
                   *(Viewer.player(p.slot) for p in game.players)]
        for viewer in viewers:
            roster = view(game, viewer).roster
            again = view(game, viewer).roster
            assert roster == again
            for entry, p in zip(roster, game.players, strict=True):
                assert isinstance(entry, RosterEntry)
                assert entry.slot == p.slot and entry.alive == p.alive
                assert (entry.death is None) == (p.alive or p.death is None)
                team = game.player(viewer.slot).spec.night_chat if viewer.slot else ""
                mate = bool(team) and p.spec.night_chat == team
                if viewer.kind == "player" and p.alive and p.slot != viewer.slot \
                        and not p.revealed and not mate and game.phase.value != "ended":
                    assert entry.role is None
        # a death changes what every viewer's roster shows, at once
        living = [p for p in game.players if p.alive]
        if living and game.phase.value != "ended":
            victim = living[0]
            before = view(game, PUBLIC_VIEWER).roster[victim.slot - 1]
            victim.alive = False
            try:
                after = view(game, PUBLIC_VIEWER).roster[victim.slot - 1]
                assert before.alive and not after.alive
            finally:
                victim.alive = True
            assert view(game, PUBLIC_VIEWER).roster[victim.slot - 1] == before


def test_every_event_is_the_one_its_constructor_makes() -> None:
    """`log.emit` builds events without calling `Event(...)` (`make_event`):
    each must hold exactly Event's fields and the same shared form."""
    names = [f.name for f in fields(Event)]
    game = play_match(GameConfig(players=15, seed=2)).game
    assert game.events
    for e in game.events:
        assert list(vars(e)) == names
        built = Event(**{f.name: getattr(e, f.name) for f in fields(Event) if f.init})
        assert built == e and built.shared == e.shared and repr(built) == repr(e)
        assert json.dumps(built.to_dict()) == json.dumps(e.to_dict())
