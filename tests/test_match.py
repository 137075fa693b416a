"""The headless match driver: who is asked, what they see, how faults count."""

from __future__ import annotations

from tossim.agents import Bot, ScriptedBot, play_match, seats_to_ask
from tossim.engine import (
    Chat,
    Command,
    GameConfig,
    PhaseTimeout,
    View,
    Vote,
    apply,
    new_game,
)
from tossim.engine.state import Phase


class Recorder:
    """Plays like a scripted bot and records what it was shown."""

    def __init__(self, slot: int, seed: int) -> None:
        self.bot = ScriptedBot(slot, seed)
        self.slot = slot
        self.asked: list[tuple[int, int]] = []  # (phase_seq, version)
        self.versions: list[int] = []
        self.alive_when_asked: list[bool] = []

    def decide(self, obs: View) -> list[Command]:
        self.asked.append((obs.phase_seq, obs.version))
        self.versions.extend(e["v"] for e in obs.events)
        assert obs.you is not None
        self.alive_when_asked.append(obs.you.alive)
        return self.bot.decide(obs)


def test_seats_are_protocol_instances() -> None:
    assert isinstance(ScriptedBot(1, 0), Bot)
    assert isinstance(Recorder(1, 0), Bot)


def test_observations_are_incremental_and_asked_once_per_phase() -> None:
    seats = {s: Recorder(s, 7) for s in range(1, 16)}
    result = play_match(GameConfig(players=15, seed=7), seats=dict(seats))
    assert result.game.ended
    for rec in seats.values():
        # every event is shown once, in order
        assert rec.versions == sorted(set(rec.versions))
        phases = [seq for seq, _ in rec.asked]
        assert len(phases) == len(set(phases)), "a seat was asked twice in one phase"
    # a seat's events are exactly what it may see up to its last observation
    from tossim.engine.view import Viewer, visible_events
    for slot, rec in seats.items():
        last = rec.asked[-1][1]
        visible = [e.v for e in visible_events(result.game, Viewer.player(slot)) if e.v <= last]
        assert rec.versions == visible
    assert result.views == sum(len(r.asked) for r in seats.values())


def test_same_result_with_explicit_scripted_seats() -> None:
    cfg = GameConfig(players=15, seed=11)
    a = play_match(cfg)
    b = play_match(cfg, seats={s: ScriptedBot(s, 11) for s in range(1, 16)})
    assert a.game.commands == b.game.commands


class Rogue:
    def decide(self, obs: View) -> list[Command]:
        return [Chat(2, "impersonating player 2"), PhaseTimeout(obs.phase_seq),
                Vote(1, 99), Chat(1, "")]


def test_bad_commands_are_faults_not_crashes() -> None:
    result = play_match(GameConfig(players=15, seed=3), seats={1: Rogue()})
    assert result.game.ended
    assert result.faults[1] > 0
    reasons = result.fault_reasons[1]
    assert any("only act for itself" in r for r in reasons)
    assert any("not a command a seat can send" in r for r in reasons)
    assert all(c.get("actor") != 1 or c["type"] != "chat" or c["text"] for c in
               result.game.commands)
    assert not any(result.faults[s] for s in range(2, 16))


def test_only_the_accused_is_asked_in_defense() -> None:
    g = new_game(GameConfig(players=15, seed=2))
    assert seats_to_ask(g) == list(range(1, 16))  # day 1: everyone
    apply(g, PhaseTimeout(g.phase_seq))  # night 1
    apply(g, PhaseTimeout(g.phase_seq))  # day 2 discussion
    apply(g, PhaseTimeout(g.phase_seq))  # voting
    living = [p.slot for p in g.players if p.alive]
    target = living[0]
    for voter in living[1:]:
        if g.phase is not Phase.VOTING:
            break
        apply(g, Vote(voter, target))
    assert g.phase is Phase.DEFENSE
    assert seats_to_ask(g) == [target]
    apply(g, PhaseTimeout(g.phase_seq))
    assert g.phase is Phase.JUDGEMENT
    assert target not in seats_to_ask(g)


def test_max_days_stops_an_endless_game() -> None:
    class Idle:
        def decide(self, obs: View) -> list[Command]:
            return []

    idle: dict[int, Bot] = {s: Idle() for s in range(1, 16)}
    result = play_match(GameConfig(players=15, seed=4), seats=idle, max_days=2)
    assert not result.game.ended and not result.finished
    assert result.days == 3 and result.result is None
    full = play_match(GameConfig(players=15, seed=4), seats=idle)
    assert full.game.ended and full.result == "draw"  # nobody ever dies
