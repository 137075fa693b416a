"""Property tests: whole games of scripted play and random legal play.

1,000 seeds of scripted Classic games: nothing crashes, every game ends, the
dead only do what the dead may do, every accepted command was among the
actor's legal actions at that moment, the deal follows the Classic role list,
and Town, Mafia and the Serial Killer all win some games. Then hypothesis plays
random legal commands in random order and checks that nothing but
IllegalCommand is ever raised and that timeouts alone always end a game.
"""

from __future__ import annotations

import contextlib
import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tossim.agents import ScriptedBot, play_match
from tossim.agents.match import MatchResult
from tossim.engine import (
    Chat,
    Command,
    DayAction,
    Event,
    Game,
    GameConfig,
    IllegalCommand,
    Judge,
    LegalAction,
    NightAction,
    PhaseTimeout,
    Vote,
    Whisper,
    WriteDeathNote,
    WriteWill,
    apply,
    legal_actions,
    new_game,
)
from tossim.engine.modes import CLASSIC, RANDOM_TOWN, TOWN_KILLING
from tossim.engine.roles import ROLES, Faction
from tossim.engine.victory import stalemate as victory_stalemate

SEEDS = range(1000)
MAX_DAYS = 60


def matches(cmd: Command, legal: list[LegalAction]) -> bool:
    """Is `cmd` one of the things `legal` offers (checked independently of the engine)?"""
    acts = {a.kind: a for a in legal}
    if isinstance(cmd, Chat):
        a = acts.get("chat")
        return a is not None and (cmd.channel is None or cmd.channel in a.options)
    if isinstance(cmd, Whisper):
        a = acts.get("whisper")
        return a is not None and cmd.target in a.targets
    if isinstance(cmd, Vote):
        a = acts.get("vote")
        return a is not None and (cmd.target is None or cmd.target in a.targets)
    if isinstance(cmd, Judge):
        a = acts.get("judge")
        return a is not None and cmd.verdict in a.options
    if isinstance(cmd, NightAction):
        a = acts.get("night")
        if a is None:
            return False
        if not cmd.targets:
            return True
        return (len(cmd.targets) == max(a.n_targets, 1)
                and len(set(cmd.targets)) == len(cmd.targets)
                and all(t in a.targets for t in cmd.targets))
    if isinstance(cmd, DayAction):
        a = acts.get(cmd.ability)
        if a is None:
            return False
        if cmd.ability == "reveal":
            return cmd.target is None
        return cmd.target is None or cmd.target in a.targets
    if isinstance(cmd, WriteWill):
        return "will" in acts
    if isinstance(cmd, WriteDeathNote):
        return "death_note" in acts
    return False


class Auditor:
    """Match hooks that check every command the driver applies."""

    def __init__(self) -> None:
        self.pending: tuple[list[LegalAction], bool, bool] | None = None
        self.problems: list[str] = []
        self.accepted = 0
        self.dead_actions: Counter[str] = Counter()

    def before(self, game: Game, cmd: Command) -> None:
        actor = getattr(cmd, "actor", None)
        if actor is None:
            self.pending = None
            return
        p = game.player(actor)
        self.pending = (legal_actions(game, actor), p.alive, actor == game.haunter)

    def after(self, game: Game, cmd: Command, events: list[Event] | None) -> None:
        if events is None or self.pending is None:
            return
        legal, alive, haunter = self.pending
        self.accepted += 1
        where = f"seed {game.config.seed}, day {game.day} {game.phase.value}: {cmd!r}"
        if not matches(cmd, legal):
            self.problems.append(f"accepted but not legal: {where}")
        if not alive:
            if isinstance(cmd, Chat):
                ok = bool(events) and events[0].key in ("chat.dead", "chat.seance")
                kind = "chat"
            elif isinstance(cmd, DayAction):
                ok, kind = cmd.ability == "seance", "seance"
            elif isinstance(cmd, NightAction):
                ok, kind = haunter, "haunt"
            else:
                ok, kind = False, type(cmd).__name__
            self.dead_actions[kind] += 1
            if not ok:
                self.problems.append(f"a dead player acted: {where}")


def check_deal(game: Game) -> list[str]:
    problems = []
    roles = [p.original_role for p in game.players]
    for key, n in Counter(roles).items():
        if ROLES[key].unique and n > 1:
            problems.append(f"unique role {key} dealt {n} times")
    rest = Counter(roles)
    flexible: list[str] = []
    for slot in CLASSIC.slots[: len(roles)]:
        if slot in (TOWN_KILLING, RANDOM_TOWN):
            flexible.append(slot)
        elif rest[slot] > 0:
            rest[slot] -= 1
        else:
            problems.append(f"role list slot {slot} missing")
    left = sorted(rest.elements())
    if len(left) != len(flexible):
        problems.append(f"unexpected roles {left}")
        return problems
    town = {k for k, r in ROLES.items()
            if r.faction is Faction.TOWN and not r.custom_only}
    tk = [r for r in left if r in ("veteran", "vigilante")]
    if TOWN_KILLING in flexible and not tk:
        problems.append(f"no Town Killing role among {left}")
    else:
        if TOWN_KILLING in flexible:
            left.remove(tk[0])
        if any(r not in town for r in left):
            problems.append(f"random town slot holds {left}")
    return problems


@pytest.fixture(scope="module")
def scripted_games() -> list[tuple[MatchResult, Auditor]]:
    out = []
    for seed in SEEDS:
        audit = Auditor()
        result = play_match(GameConfig(players=15, seed=seed), max_days=MAX_DAYS,
                            before=audit.before, after=audit.after)
        out.append((result, audit))
    return out


def test_every_game_ends(scripted_games: list[tuple[MatchResult, Auditor]]) -> None:
    unfinished = [r.game.config.seed for r, _ in scripted_games if not r.game.ended]
    assert not unfinished
    for r, _ in scripted_games:
        assert r.result in ("town", "mafia", "serial_killer", "draw")
        assert r.days <= MAX_DAYS


def test_every_accepted_command_was_legal(
        scripted_games: list[tuple[MatchResult, Auditor]]) -> None:
    problems = [p for _, a in scripted_games for p in a.problems]
    assert not problems, problems[:10]
    assert sum(a.accepted for _, a in scripted_games) > 100_000


def test_dead_players_only_do_what_the_dead_may(
        scripted_games: list[tuple[MatchResult, Auditor]]) -> None:
    dead = Counter[str]()
    for _, a in scripted_games:
        dead.update(a.dead_actions)
    assert set(dead) <= {"chat", "seance", "haunt"}
    # the dead do use what they are allowed to use
    assert dead["chat"] and dead["haunt"] and dead["seance"]


def test_scripted_bots_make_no_faults(scripted_games: list[tuple[MatchResult, Auditor]]) -> None:
    faults = {r.game.config.seed: r.fault_reasons for r, _ in scripted_games
              if any(r.faults.values())}
    assert not faults


def test_deal_follows_the_classic_role_list(
        scripted_games: list[tuple[MatchResult, Auditor]]) -> None:
    problems = {r.game.config.seed: p for r, _ in scripted_games if (p := check_deal(r.game))}
    assert not problems


def test_every_side_wins_sometimes(scripted_games: list[tuple[MatchResult, Auditor]]) -> None:
    results = Counter(r.result for r, _ in scripted_games)
    assert results["town"] and results["mafia"] and results["serial_killer"]
    assert results["draw"] < len(scripted_games) // 4, results
    co_wins = Counter(r.game.player(w).original_role for r, _ in scripted_games
                      for w in r.winners
                      if r.game.player(w).spec.win in ("jester", "executioner"))
    assert co_wins["jester"] and co_wins["executioner"]


def test_winners_match_the_result(scripted_games: list[tuple[MatchResult, Auditor]]) -> None:
    for r, _ in scripted_games:
        g = r.game
        for p in g.players:
            side = p.spec.win
            if side == r.result:
                assert p.slot in r.winners
        if r.result in ("town", "mafia", "serial_killer"):
            living = [p for p in g.players if p.alive]
            alive_sides = {p.spec.win for p in living
                           if p.spec.win in ("town", "mafia", "serial_killer")}
            stalemate = victory_stalemate(g) is not None
            assert alive_sides <= {r.result} or (len(living) == 2 and stalemate)


# ---- random legal play -------------------------------------------------------------

TEXTS = ("hello", "I am the Sheriff.", "Player 3 is suspicious!", "Vote Player 2!",
         "I will not tell you my role.", "x" * 400)


def random_command(rnd: random.Random, slot: int, action: LegalAction,
                   players: int) -> Command:
    kind = action.kind
    text = rnd.choice(TEXTS)
    if rnd.random() < 0.05:  # now and then a command that may well be refused
        return rnd.choice([
            Vote(slot, rnd.randint(0, players + 1)),
            NightAction(slot, (rnd.randint(1, players),) * rnd.randint(1, 2)),
            Chat(slot, "", None), Whisper(slot, slot, text), Judge(slot, "maybe"),
            DayAction(slot, "jail", rnd.randint(1, players)), WriteWill(slot, "w" * 401),
        ])
    if kind == "chat":
        return Chat(slot, text, rnd.choice([None, *action.options]))
    if kind == "whisper":
        return Whisper(slot, rnd.choice(action.targets), text)
    if kind == "vote":
        return Vote(slot, rnd.choice([None, *action.targets, *action.targets]))
    if kind == "judge":
        return Judge(slot, rnd.choice(action.options))
    if kind == "night":
        if rnd.random() < 0.1:
            return NightAction(slot, ())
        n = min(max(action.n_targets, 1), len(action.targets))
        return NightAction(slot, tuple(rnd.sample(action.targets, n)))
    if kind in ("jail", "seance"):
        return DayAction(slot, kind, rnd.choice([None, *action.targets, *action.targets]))
    if kind == "reveal":
        return DayAction(slot, "reveal")
    if kind == "will":
        return WriteWill(slot, text)
    return WriteDeathNote(slot, text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), players=st.integers(7, 15),
       play_seed=st.integers(0, 2**32 - 1), timeout_rate=st.floats(0.01, 0.3))
def test_random_legal_commands_never_break_the_engine(
        seed: int, players: int, play_seed: int, timeout_rate: float) -> None:
    rnd = random.Random(play_seed)  # the order and choice of commands
    g = new_game(GameConfig(players=players, seed=seed))
    for _ in range(600):
        if g.ended:
            break
        cmd: Any
        if rnd.random() < timeout_rate:
            stale = rnd.random() < 0.05
            cmd = PhaseTimeout(g.phase_seq - 1 if stale else rnd.choice([None, g.phase_seq]))
        else:
            slot = rnd.randint(1, players)
            actions = legal_actions(g, slot)
            if not actions:
                continue
            cmd = random_command(rnd, slot, rnd.choice(actions), players)
        with contextlib.suppress(IllegalCommand):
            apply(g, cmd)
    timeouts = 0
    while not g.ended:
        apply(g, PhaseTimeout(g.phase_seq))
        timeouts += 1
        assert timeouts < 500, "timeouts alone did not end the game"
    assert g.result in ("town", "mafia", "serial_killer", "draw")
    assert legal_actions(g, 1) == []


def test_scripted_bot_needs_no_game_object() -> None:
    """A bot is built from a slot and a seed only, and decides from a View."""
    bot = ScriptedBot(3, 42)
    assert not any(isinstance(v, Game) for v in vars(bot).values())
