"""Information leaks: every projection shows each viewer only what it may know.

Scripted games are played with hooks; at many points (every phase change and
every few commands) every player's view and the public view are checked:

- no living other player's true role in the roster, unless both are Mafia or
  the player is a revealed Mayor (the public sees no living role at all);
- every visible event has an audience that includes the viewer, and the
  projected event carries neither the audience's member list nor a secret;
- night chats reach only their own people: Mafia chat the living Mafia, jail
  chat the Jailor and the prisoner, dead chat the dead and a living Medium at
  night, a seance its two ends (computed here from the game state at the
  moment the message was said, not from the event's audience);
- private night results ("night.*" addressed to one player) reach only that
  player;
- an event naming a living player's role is addressed to the viewer alone
  (its own result) or to the Mafia team.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tossim.agents import play_match
from tossim.engine import (
    PUBLIC_VIEWER,
    Command,
    Event,
    Game,
    GameConfig,
    PhaseTimeout,
    Viewer,
    view,
)
from tossim.engine.roles import Faction
from tossim.engine.state import Phase

SEEDS = range(30)
PROJECTED_KEYS = {"v", "day", "phase", "key", "audience", "text", "data"}
CHANNEL_KEYS = ("chat.mafia", "chat.jail", "chat.dead", "chat.seance", "chat.whisper",
                "chat.spy_mafia", "chat.team", "chat.overheard")


def expected_audience(game: Game, event: Event) -> frozenset[int] | None:
    """Who may read a chat message, from the game state when it was said."""
    living = [p for p in game.players if p.alive]
    key = event.key
    if key == "chat.mafia":
        return frozenset(p.slot for p in living if p.faction is Faction.MAFIA)
    if key == "chat.jail":
        jailor = [p.slot for p in living if p.role == "jailor"]
        assert game.prisoner is not None
        return frozenset([*jailor, game.prisoner])
    if key == "chat.dead":
        night = game.phase is Phase.NIGHT
        return frozenset(p.slot for p in game.players
                         if not p.alive or (night and p.role == "medium"))
    if key == "chat.seance":
        assert game.seance is not None
        return frozenset(game.seance)
    if key == "chat.whisper":
        spies = {p.slot for p in living if p.role == "spy"}
        return frozenset({event.data["author"], event.data["target"], *spies})
    if key == "chat.spy_mafia":
        return frozenset(p.slot for p in living if p.role == "spy")
    if key == "chat.team":  # another team's night chat (Vampires)
        return frozenset(p.slot for p in living if p.spec.night_chat == event.data["team"])
    if key == "chat.overheard":  # the Vampire Hunter, anonymised
        return frozenset(p.slot for p in living if p.spec.hears_chat == event.data["team"])
    return None


class LeakChecker:
    def __init__(self) -> None:
        self.allowed: dict[int, frozenset[int]] = {}  # event version -> chat audience
        self.ever_dead: set[int] = set()
        self.seen: dict[int, int] = {}  # viewer slot -> last version checked
        self.problems: list[str] = []
        self.coverage: Counter[str] = Counter()
        self.commands = 0

    # hooks ---------------------------------------------------------------------------
    def before(self, game: Game, cmd: Command) -> None:
        if isinstance(cmd, PhaseTimeout):
            self.check(game)

    def after(self, game: Game, cmd: Command, events: list[Event] | None) -> None:
        for e in events or ():
            if e.key in CHANNEL_KEYS:
                allowed = expected_audience(game, e)
                assert allowed is not None
                self.allowed[e.v] = allowed
            if e.key in ("lynch.death", "dawn.death"):
                self.ever_dead.add(e.data["player"])
        self.commands += 1
        if isinstance(cmd, PhaseTimeout) or self.commands % 7 == 0:
            self.check(game)

    # checks --------------------------------------------------------------------------
    def fail(self, game: Game, who: str, what: str) -> None:
        self.problems.append(f"seed {game.config.seed} v{game.version} {who}: {what}")

    def check(self, game: Game) -> None:
        ended = game.phase is Phase.ENDED
        for p in game.players:
            self.check_player(game, p.slot, ended)
        pub = view(game, PUBLIC_VIEWER, since=max(0, game.version - 40))
        for entry in pub.roster:
            if entry.alive and entry.role is not None and not ended \
                    and not entry.revealed_mayor:
                self.fail(game, "public", f"sees the role of living player {entry.slot}")
        for pe in pub.events:
            if game.events[pe["v"] - 1].audience.kind != "public":
                self.fail(game, "public", f"sees non-public event {pe['key']}")

    def check_player(self, game: Game, slot: int, ended: bool) -> None:
        me = game.player(slot)
        obs = view(game, Viewer.player(slot), since=self.seen.get(slot, 0))
        self.seen[slot] = obs.version
        who = f"player {slot} ({me.role})"
        # the roster
        for entry in obs.roster:
            other = game.player(entry.slot)
            if other.slot == slot or not entry.alive or entry.role is None or ended:
                continue
            team = me.spec.night_chat
            both_mafia = bool(team) and other.spec.night_chat == team  # Mafia or Vampires
            if not both_mafia and not (entry.revealed_mayor and entry.role == "Mayor"):
                self.fail(game, who, f"roster shows living player {other.slot}'s role")
        you = obs.you.to_dict() if obs.you is not None else {}  # as the wire sends it
        if "teammates" in you and not me.spec.night_chat:
            self.fail(game, who, "sees a team")
        if "target" in you and me.role != "executioner":
            self.fail(game, who, "sees an Executioner target")
        # the events
        for pe in obs.events:
            self.check_event(game, slot, who, pe, ended)

    def check_event(self, game: Game, slot: int, who: str, pe: dict[str, Any],
                    ended: bool) -> None:
        raw = game.events[pe["v"] - 1]
        key = raw.key
        aud = raw.audience
        self.coverage[key] += 1
        if set(pe) != PROJECTED_KEYS or not isinstance(pe["audience"], str):
            self.fail(game, who, f"projected {key} carries {sorted(set(pe) - PROJECTED_KEYS)}")
        if aud.kind != "public" and slot not in aud.players:
            self.fail(game, who, f"sees {key} addressed to {sorted(aud.players)}")
        if raw.secret and any(pe["data"].get(k) == v for k, v in raw.secret.items()):
            self.fail(game, who, f"{key} data reveals its secret")
        if key in CHANNEL_KEYS and slot not in self.allowed.get(raw.v, frozenset()):
            self.fail(game, who, f"reads {key} said to {sorted(self.allowed.get(raw.v, ()))}")
        if key.startswith("night.") and aud.kind == "players" and len(aud.players) == 1 \
                and slot not in aud.players:
            self.fail(game, who, f"sees another player's night result {key}")
        if not ended:
            self.check_roles_named(game, slot, who, raw)

    def check_roles_named(self, game: Game, slot: int, who: str, raw: Event) -> None:
        """An event that names a living player's role goes to that viewer alone
        (its own result) or to the Mafia team."""
        data = raw.data
        named: list[int] = []
        if "role" in data or "roles" in data:
            for k in ("player", "target"):
                if isinstance(data.get(k), int):
                    named.append(data[k])
        for m in data.get("members", ()) if isinstance(data.get("members"), list) else ():
            if isinstance(m, dict) and "role" in m:
                named.append(m["slot"])
        for t in named:
            p = game.player(t)
            if not p.alive or t in self.ever_dead or t == slot:
                continue  # a role shown at death, or the viewer's own
            if raw.key == "mayor.reveal":
                continue  # the Mayor reveals in public
            own = raw.audience.kind == "players" and raw.audience.players == {slot}
            if not (own or raw.audience.kind in ("mafia", "vampire")):
                self.fail(game, who, f"{raw.key} names living player {t}'s role")


@pytest.fixture(scope="module")
def checked_games() -> list[LeakChecker]:
    out = []
    for seed in SEEDS:
        checker = LeakChecker()
        result = play_match(GameConfig(players=15, seed=seed), before=checker.before,
                            after=checker.after)
        assert result.game.ended
        checker.check(result.game)
        out.append(checker)
    return out


def test_no_player_sees_what_it_may_not(checked_games: list[LeakChecker]) -> None:
    problems = [p for c in checked_games for p in c.problems]
    assert not problems, problems[:20]


def test_the_checks_saw_every_kind_of_private_channel(checked_games: list[LeakChecker]) -> None:
    seen: Counter[str] = Counter()
    for c in checked_games:
        seen.update(c.coverage)
    for key in ("chat.mafia", "chat.jail", "chat.dead", "chat.whisper", "night.mafia_chosen",
                "game.mafia_team", "night.investigator", "night.lookout", "judge.private"):
        assert seen[key], f"no {key} event was checked"


def test_checker_catches_a_leak() -> None:
    """The checker itself fails when a viewer is handed something it may not see."""
    game_holder: list[Game] = []

    def grab(game: Game, cmd: Command) -> None:
        game_holder.append(game)

    play_match(GameConfig(players=15, seed=1), before=grab, max_days=1)
    game = game_holder[0]
    checker = LeakChecker()
    # pretend a whisper was said to players 1 and 2 only, then show player 3 an event
    # addressed to player 1 alone
    secret_event = next(e for e in game.events if e.key == "game.role")
    assert 3 not in secret_event.audience.players
    pe = {"v": secret_event.v, "day": 1, "phase": "day1", "key": secret_event.key,
          "audience": "players", "text": secret_event.text, "data": secret_event.data}
    checker.check_event(game, 3, "player 3", pe, ended=False)
    assert checker.problems
