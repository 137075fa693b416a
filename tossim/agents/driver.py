"""The one match driver: seats play a game, phase by phase, in every place a
game is played by seats (the headless `play_match` and `tossim play`, model
and catalogue-entry matches, the server's games at every speed, hence the
arena). What differs between those places is outside the driver: where the
applied commands go (sinks: hooks, day summaries, the server's store and
bus) and how long a seat may take (`Clock`). See docs/agents.md#the-match-driver.

A match is played in turns (headless, and the server's fast and paced
games) or in real time (the server's standard and quick games: a `Clock`
with `RealTime`). In real time a phase lasts its length on the clock's
`Timer`, each seat is asked at seeded moments spread over it (`ask_moments`),
asks run beside the game and their answers are applied as they come,
commands from outside (people's) arrive in the match's `inbox` and go to the
sinks, and an AI vote that would complete a majority while people still
have their fair time to vote is held until then (docs/agents.md#real-time).

Per phase the driver gives the seats `turns_in(phase)` turns
(`tossim.agents.turns`). In each turn it asks the seats that can do
something now (`seats_to_ask`), in slot order: a model seat (`ModelSeat`)
is asked at the start of the turn, all of them together so a backend can
decode them in one batch; any other seat is asked when its slot comes, so it
sees what the seats before it did. Each seat gets `view(game,
Viewer.player(slot), since=<its last version>)`. Answers are applied in slot
order. A command the engine rejects counts as a fault of that seat and is
skipped, and so does a command a seat may not send at all (one acting for
another player, a PhaseTimeout, something that is not a well-formed
command). When the phase changes in the middle of a turn (a vote put someone
on trial), the turn stops and the new phase gets its own turns; otherwise
the phase ends with a `PhaseTimeout`. A seat that raises or runs out of time
abstains (counted in its `SeatTally`).

Who is asked (to keep games fast, a seat is only asked when it has something
it could do in this phase):
  Day 1, Discussion, Voting: every living player (and a dead Medium who may
      still hold a seance, during Discussion).
  Defense, Last Words: the accused.
  Judgement: every living player but the accused.
  Night: living players with a night ability or a night chat (Mafia, jail,
      a living Medium, a seance), the Jester who haunts, a dead Medium in a
      seance, and the dead on their first night (so dead chat stays rare).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import random
import time
from abc import ABC, abstractmethod
from collections.abc import (
    Awaitable,
    Callable,
    Collection,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from tossim.agents.loop import phase_turn_seconds
from tossim.agents.scripted import ScriptedBot
from tossim.agents.seat import ModelSeat, Seat, SyncSeat
from tossim.agents.turns import turns_in
from tossim.engine.commands import (
    Chat,
    Command,
    MalformedCommand,
    PhaseTimeout,
    Vote,
    command_from_dict,
)
from tossim.engine.events import Event
from tossim.engine.legal import IllegalCommand, chat_channels, day_ability, night_ability
from tossim.engine.phases import votes_needed, weight
from tossim.engine.rules import apply
from tossim.engine.state import Game, Phase, Player
from tossim.engine.view import View, Viewer, view
from tossim.timeouts import within

log = logging.getLogger(__name__)

# apply(command, origin) -> its events; raises IllegalCommand. Origin: "ai:<slot>"
# for a seat's command, "timer" for the end of a phase (the server's log).
Applier = Callable[[Command, str], list[Event]]


def _dead_asked(game: Game, p: Player) -> bool:
    """A dead seat is asked at night only for a haunt, a seance, or its first
    night in the dead chat."""
    if p.slot == game.haunter:
        return True
    if game.seance is not None and p.slot == game.seance[0]:
        return True
    d = p.death
    if d is None:
        return False
    return (d.at_night and d.day == game.day - 1) or (not d.at_night and d.day == game.day)


def seats_to_ask(game: Game) -> list[int]:
    """The seats asked in this phase, in slot order."""
    phase = game.phase
    players = game.players
    if phase in (Phase.DEFENSE, Phase.LAST_WORDS):
        accused = game.accused
        return [accused] if accused is not None and game.player(accused).alive else []
    if phase is Phase.JUDGEMENT:
        return [p.slot for p in players if p.alive and p.slot != game.accused]
    if phase is Phase.NIGHT:
        return [p.slot for p in players
                if (p.alive and (night_ability(game, p) is not None
                                 or chat_channels(game, p)))
                or (not p.alive and _dead_asked(game, p))]
    if phase is Phase.DISCUSSION:
        return [p.slot for p in players
                if p.alive or (p.role == "medium" and day_ability(game, p) is not None)]
    if phase is Phase.ENDED:
        return []
    return [p.slot for p in players if p.alive]


def seat_command_problem(slot: int, cmd: object, checked: bool) -> str | None:
    """Why a seat may not send `cmd` at all (None: it may): a seat only acts for
    itself and never ends a phase. Commands from seats other than the built-in
    bots are also checked for their shape."""
    if not isinstance(cmd, Command) or isinstance(cmd, PhaseTimeout):
        return f"not a command a seat can send: {cmd!r}"
    if getattr(cmd, "actor", None) != slot:
        return f"a seat can only act for itself (player {slot})"
    if checked:
        try:
            command_from_dict(cmd.to_dict())
        except (MalformedCommand, TypeError, ValueError) as exc:
            return str(exc)
    return None


@dataclass
class SeatTally:
    """What the driver counted of one seat: the same figures wherever the
    game ran (the server stores them per seat; `tossim play --metrics`
    writes them per seat; docs/agents.md#the-match-driver)."""

    decisions: int = 0  # times asked
    commands: int = 0  # commands applied
    faults: int = 0  # commands refused (the engine's, or not a seat's to send)
    timeouts: int = 0  # asks abandoned past their time limit (the seat abstained)
    errors: int = 0  # asks that raised (the seat abstained)
    seconds: float = 0.0  # time spent answering
    fault_kinds: dict[str, int] = field(default_factory=dict)
    fault_reasons: list[str] = field(default_factory=list)

    def fault(self, kind: str, reason: str) -> None:
        self.faults += 1
        self.fault_kinds[kind] = self.fault_kinds.get(kind, 0) + 1
        self.fault_reasons.append(reason)

    def to_dict(self) -> dict[str, Any]:
        return {"decisions": self.decisions, "commands": self.commands, "faults": self.faults,
                "timeouts": self.timeouts, "errors": self.errors,
                "seconds": round(self.seconds, 4), "fault_kinds": dict(self.fault_kinds)}


@dataclass
class MatchResult:
    game: Game
    faults: dict[int, int]  # rejected commands per seat
    days: int
    winners: tuple[int, ...]
    result: str | None  # "town", "mafia", "serial_killer", "draw"; None if unfinished
    views: int = 0  # observations handed out
    fault_reasons: dict[int, list[str]] = field(default_factory=dict)
    tallies: dict[int, SeatTally] = field(default_factory=dict)
    summaries: dict[int, str] = field(default_factory=dict)  # day -> its summary

    @property
    def finished(self) -> bool:
        return self.game.ended

    @property
    def errors(self) -> dict[int, int]:
        """Asks per seat that raised (the seat abstained)."""
        return {slot: t.errors for slot, t in self.tallies.items()}


class MatchSink:
    """Where a match's progress goes besides the engine (each hook does
    nothing unless overridden): hooks around each command, a seat's answer
    applied (the server stores and publishes here), a phase begun or over
    (progress lines, day summaries)."""

    def before(self, game: Game, cmd: Command) -> None:
        """Runs before each command is applied."""

    def after(self, game: Game, cmd: Command, events: list[Event] | None) -> None:
        """Runs after each command; `events` is None if it was refused."""

    async def phase_started(self, game: Game) -> None:
        """A phase begins (before its first turn)."""

    async def answered(self, game: Game, slot: int) -> None:
        """The seat's answer was applied (or it abstained)."""

    async def phase_over(self, game: Game, phase: Phase, day: int) -> None:
        """`phase` of `day` is over (the game is in its next phase, or ended)."""

    async def released(self, game: Game) -> None:
        """Held votes were cast (real time: people's time to vote is up)."""

    async def received(self, game: Game, item: object) -> None:
        """Something from outside the match arrived in its inbox (real time:
        the server's seat commands); the sink applies it."""


# Real time: when seats are asked, as fractions of the phase's length:
# phase -> ((lo, hi) for other seats, (lo, hi) for model seats, how many
# times another seat is asked). Phases not listed: at the start.
SPREAD: dict[str, tuple[tuple[float, float], tuple[float, float], int]] = {
    "day1": ((0.05, 0.6), (0.0, 0.3), 1),
    "discussion": ((0.05, 0.6), (0.0, 0.3), 1),
    "voting": ((0.1, 0.9), (0.05, 0.4), 2),
    "judgement": ((0.1, 0.7), (0.0, 0.2), 1),
}


def ask_moments(seed: int, seq: int, slot: int, phase: str, model: bool) -> list[float]:
    """When (fractions of the phase) a seat is asked in real time: spread
    over the phase, seeded by game, phase and seat, so votes and talk arrive
    one by one as at a table and each seat's View holds the chat and votes
    so far. Other seats are asked twice in Voting (they may join a wagon);
    model seats once, early (they take time)."""
    rng = random.Random(f"{seed}:{seq}:{slot}")
    spread = SPREAD.get(phase)
    if spread is None:
        return [0.0]
    lo, hi = spread[1] if model else spread[0]
    return sorted(rng.uniform(lo, hi) for _ in range(1 if model else spread[2]))


class Timer(ABC):
    """The time of a real-time match (UNIX seconds: deadlines are shown to
    people), and how the driver waits on it. `WallTimer` is the wall clock;
    a test's timer may step through time only when nothing else can happen,
    which makes a real-time game deterministic."""

    @abstractmethod
    def now(self) -> float: ...

    @abstractmethod
    async def next(self, inbox: asyncio.Queue[object], until: float,
                   busy: Collection[asyncio.Future[Any]]) -> object | None:
        """The inbox's next item if one comes before `until`, else None (at
        `until`). `busy`: the asks in flight (each ends by posting its answer)."""


class WallTimer(Timer):
    def now(self) -> float:
        return time.time()

    async def next(self, inbox: asyncio.Queue[object], until: float,
                   busy: Collection[asyncio.Future[Any]]) -> object | None:
        try:
            return await within(inbox.get(), max(0.0, until - time.time()))
        except TimeoutError:
            return None


@dataclass(frozen=True)
class RealTime:
    """A match in real time: each phase lasts `phase_s(game)` seconds on
    `timer`; `hold_s(game)`, when not None, is how long people have to vote
    before an AI vote may complete a majority (docs/agents.md#real-time)."""

    phase_s: Callable[[Game], float]
    hold_s: Callable[[Game], float | None] = lambda _game: None
    timer: Timer = field(default_factory=WallTimer)


@dataclass(frozen=True)
class Clock:
    """How long seats may take. Headless matches have no limits (the
    default); the server's fast games give a model seat's turn `turn_s`
    seconds from when it is asked (its deadline; docs/agents.md#deadlines),
    abandon it `grace_s` after that, and abandon any seat after `model_s`
    (model seats) or `bot_s` (the others). With `real_time` phases last
    their length on its timer, and a model seat's turn ends shortly before
    its phase does (`loop.phase_turn_seconds`)."""

    turn_s: Callable[[str], float] | None = None  # phase -> a model seat's turn
    model_s: float | None = None
    bot_s: float | None = None
    grace_s: float = 1.0
    real_time: RealTime | None = None


@dataclass(frozen=True)
class _Answer:
    """An ask's answer, posted to the inbox in real time."""

    slot: int
    seq: int
    commands: list[Command]


class Match:
    """One game played by its seats (module docstring). `game` is a new game
    or one resumed by its owner; `seats` covers every slot the driver asks
    (`play` fills the rest with scripted bots). `apply` applies a command
    (default: the engine's `apply` on `game`); `skip(slot, phase_seq)` says a
    seat already played this phase (a resumed game's model seat);
    `origin(slot)` names a seat's commands in the log (default `ai:<slot>`).
    `tallies` and `seen` may be shared with the caller, and `seats` may
    change between asks (the server's stand-ins). In real time, `inbox`
    takes what arrives from outside (`MatchSink.received`)."""

    def __init__(self, game: Game, seats: Mapping[int, Seat], sinks: Sequence[MatchSink] = (),
                 *, turns: Mapping[str, int] | None = None, clock: Clock | None = None,
                 apply: Applier | None = None,
                 skip: Callable[[int, int], bool] | None = None,
                 origin: Callable[[int], str] | None = None,
                 tallies: dict[int, SeatTally] | None = None,
                 seen: dict[int, int] | None = None,
                 inbox: asyncio.Queue[object] | None = None) -> None:
        self.game = game
        self.seats = seats
        self.sinks = list(sinks)
        self.turns = turns
        self.clock = clock or Clock()
        self._apply = apply or (lambda cmd, _origin: _engine_apply(game, cmd))
        self.skip = skip
        self.origin = origin or (lambda slot: f"ai:{slot}")
        self.tallies = tallies if tallies is not None else {}
        self.seen = seen if seen is not None else {}
        self.inbox: asyncio.Queue[object] = inbox if inbox is not None else asyncio.Queue()
        self.views = 0
        # real time: the phase's end (the timer's time), and until when an
        # AI vote that would complete a majority is held (one per seat)
        self.deadline: float | None = None
        self.hold_until: float | None = None
        self.held: dict[int, Vote] = {}
        self._viewers: dict[int, Viewer] = {}  # slot -> its (frozen) Viewer
        for slot in seats:
            self.tallies.setdefault(slot, SeatTally())
            self.seen.setdefault(slot, 0)

    async def play(self, max_days: int | None = None,
                   until: Callable[[Game], bool] | None = None) -> None:
        """Play phases until the game ends, `max_days` is passed, or
        `until(game)` (checked before each phase) says stop."""
        game = self.game
        while not game.ended and (max_days is None or game.day <= max_days) and not (
                until and until(game)):
            await self.play_phase()

    async def play_phase(self) -> None:
        game = self.game
        seq, phase, day = game.phase_seq, game.phase, game.day
        real = self.clock.real_time
        if real is not None:
            await self._timed_phase(real)
        else:
            for sink in self.sinks:
                await sink.phase_started(game)
            for _ in range(turns_in(phase.value, self.turns)):
                await self._turn(seq)
                if game.phase_seq != seq or game.ended:
                    break
            if game.phase_seq == seq and not game.ended:
                self._command(PhaseTimeout(seq), "timer")
        for sink in self.sinks:
            await sink.phase_over(game, phase, day)

    def _asked(self, seq: int) -> list[int]:
        return [slot for slot in seats_to_ask(self.game) if slot in self.seats
                and not (self.skip is not None and self.skip(slot, seq))]

    # ---- real time --------------------------------------------------------------------
    async def _timed_phase(self, real: RealTime) -> None:
        """One phase in real time: asks start at their moments and run beside
        the game; their answers, and whatever arrives in the inbox, are
        applied as they come, until the phase moves on or its time is up."""
        game, timer = self.game, real.timer
        seq = game.phase_seq
        started = timer.now()
        self.deadline = started + real.phase_s(game)
        self.held = {}
        self.hold_until = None
        hold = real.hold_s(game)
        if hold is not None:
            self.hold_until = min(self.deadline, started + hold)
        for sink in self.sinks:
            await sink.phase_started(game)
        length = self.deadline - started
        moments = [(started + f * length, slot) for slot in self._asked(seq)
                   for f in ask_moments(game.config.seed, seq, slot, game.phase.value,
                                        isinstance(self.seats[slot], ModelSeat))]
        heapq.heapify(moments)
        asks: dict[int, asyncio.Task[None]] = {}
        try:
            while game.phase_seq == seq and not game.ended:
                now = timer.now()
                if self.held and self.hold_until is not None and now >= self.hold_until:
                    await self._release_held()
                    continue
                while moments and moments[0][0] <= now:
                    _, slot = heapq.heappop(moments)
                    # a seat asked again waits for its previous ask
                    asks[slot] = asyncio.ensure_future(
                        self._ask_timed(slot, seq, asks.get(slot)))
                if self.deadline - now <= 0:
                    self._command(PhaseTimeout(seq), "timer")
                    break
                until = self.deadline
                if self.held and self.hold_until is not None:
                    until = min(until, self.hold_until)
                if moments:
                    until = min(until, moments[0][0])
                item = await timer.next(self.inbox, until,
                                        [t for t in asks.values() if not t.done()])
                if item is not None:
                    await self._received(item, seq)
        finally:
            for task in asks.values():
                task.cancel()

    async def _ask_timed(self, slot: int, seq: int, previous: asyncio.Task[None] | None
                         ) -> None:
        if previous is not None:
            await asyncio.wait([previous])
        game = self.game
        if game.phase_seq != seq or game.ended or slot not in self.seats:
            return  # (a stand-in whose player came back is asked no more)
        deadline = None
        real = self.clock.real_time
        if (isinstance(self.seats[slot], ModelSeat) and real is not None
                and self.deadline is not None):
            left = max(0.0, self.deadline - real.timer.now())
            deadline = time.monotonic() + phase_turn_seconds(left)
        cmds = await self._ask(slot, deadline)
        self.inbox.put_nowait(_Answer(slot, seq, cmds))

    async def _received(self, item: object, seq: int) -> None:
        game = self.game
        if isinstance(item, _Answer):
            if item.seq == game.phase_seq and item.slot in self.seats:
                self._answer(item.slot, self._still_meant(item.slot, item.commands))
            for sink in self.sinks:
                await sink.answered(game, item.slot)
            return
        for sink in self.sinks:
            await sink.received(game, item)

    def _must_hold(self, vote: Vote) -> bool:
        """Would this AI vote complete a majority while people still have
        their fair time to vote?"""
        real = self.clock.real_time
        if (real is None or self.hold_until is None or vote.target is None
                or real.timer.now() >= self.hold_until):
            return False
        game = self.game
        votes = dict(game.votes)
        votes[vote.actor] = vote.target
        count = sum(weight(game, v) for v, t in votes.items() if t == vote.target)
        return count >= votes_needed(game)

    async def _release_held(self) -> None:
        """People's time is up: cast the held AI votes, in seat order (the
        trial starts if the majority still holds)."""
        self.hold_until = None
        held, self.held = self.held, {}
        for slot in sorted(held):
            self._answer(slot, [held[slot]])
        for sink in self.sinks:
            await sink.released(self.game)

    async def _turn(self, seq: int) -> None:
        game = self.game
        asked = self._asked(seq)
        thinking: dict[int, asyncio.Task[list[Command]]] = {}
        models = [slot for slot in asked if isinstance(self.seats[slot], ModelSeat)]
        if models:
            # one deadline for the turn; every model seat's view is taken now
            deadline = (None if self.clock.turn_s is None
                        else time.monotonic() + self.clock.turn_s(game.phase.value))
            thinking = {slot: asyncio.ensure_future(self._ask(slot, deadline))
                        for slot in models}  # (_ask takes the view before it returns)
        try:
            for slot in asked:
                task = thinking.pop(slot, None)
                if task is not None:
                    cmds = self._still_meant(slot, await task)
                elif self.clock.bot_s is None and _plain_sync(seat := self.seats[slot]):
                    cmds = self._ask_now(slot, seat)
                else:
                    cmds = await self._ask(slot, None)
                self._answer(slot, cmds)
                for sink in self.sinks:
                    await sink.answered(game, slot)
                if game.phase_seq != seq or game.ended:
                    break
        finally:
            for task in thinking.values():  # the phase moved on without them
                task.cancel()

    def _viewer(self, slot: int) -> Viewer:
        viewer = self._viewers.get(slot)
        if viewer is None:
            viewer = self._viewers[slot] = Viewer.player(slot)
        return viewer

    def _observe(self, slot: int) -> View:
        """The seat's view now (what is new to it), counted as a decision."""
        obs = view(self.game, self._viewer(slot), since=self.seen.get(slot, 0))
        self.seen[slot] = obs.version
        self.views += 1
        self.tallies.setdefault(slot, SeatTally()).decisions += 1
        return obs

    def _ask(self, slot: int, deadline: float | None) -> Coroutine[Any, Any, list[Command]]:
        """Ask the seat now: its view is taken at once, its answer awaited later."""
        obs = self._observe(slot)
        return self._answer_of(slot, self.seats[slot].decide(obs, deadline), deadline)

    def _ask_now(self, slot: int, seat: SyncSeat) -> list[Command]:
        """`_ask` and `_answer_of` in one step for a synchronous seat with no
        time limit (the scripted bots of a headless game: most asks of
        every game): the same view, tally and fault handling, without a
        coroutine per ask."""
        obs = self._observe(slot)
        with self._abstains_on_failure(slot):
            return list(seat.bot.decide(obs))
        return []

    @contextlib.contextmanager
    def _abstains_on_failure(self, slot: int) -> Iterator[None]:
        """A seat that runs out of time or fails abstains (counted, logged,
        the exception swallowed); the seconds it took are counted either way."""
        tally = self.tallies[slot]
        started = time.perf_counter()
        try:
            yield
        except TimeoutError:
            tally.timeouts += 1
            log.warning("seat %d did not answer in time; it abstains", slot)
        except Exception:
            tally.errors += 1
            log.exception("seat %d failed; it abstains", slot)
        finally:
            tally.seconds += time.perf_counter() - started

    async def _answer_of(self, slot: int, asking: Awaitable[list[Command]],
                         deadline: float | None) -> list[Command]:
        model = isinstance(self.seats[slot], ModelSeat)
        limit = self.clock.model_s if model else self.clock.bot_s
        if deadline is not None:
            left = deadline - time.monotonic() + self.clock.grace_s
            limit = left if limit is None else min(limit, left)
        with self._abstains_on_failure(slot):
            if limit is None:
                return list(await asking)
            return list(await within(asking, max(0.0, limit)))
        return []

    def _still_meant(self, slot: int, commands: list[Command]) -> list[Command]:
        """A model seat's answer, less the lines that no longer hold: the
        game went on while it thought (in real time, anything; turn by turn,
        the seats before it in the round, whose lines it had not seen: seen
        in the demo, two seats asked the accused "what is in your last
        will?" in one Judgement). Its view now, without moving its cursor."""
        seat = self.seats[slot]
        if (not isinstance(seat, ModelSeat) or not any(isinstance(c, Chat) for c in commands)
                or len(self.game.events) == self.seen.get(slot, 0)):
            return commands  # (nothing has happened since its view: it all holds)
        return seat.still_meant(
            view(self.game, self._viewer(slot), since=self.seen.get(slot, 0)), commands)

    def _answer(self, slot: int, cmds: Iterable[Command]) -> None:
        """Apply one seat's commands in order; a refused one is counted as a
        fault and skipped; what is left when the phase changes is dropped. A
        vote that must wait for people's time to vote is held instead (the
        seat's latest)."""
        game = self.game
        tally = self.tallies.setdefault(slot, SeatTally())
        seat = self.seats.get(slot)
        checked = seat is None or not _scripted(seat)
        seq = game.phase_seq
        for cmd in cmds:
            if game.phase_seq != seq or game.ended:
                return  # what is left was meant for the phase that just ended
            problem = seat_command_problem(slot, cmd, checked=checked)
            if problem is not None:
                tally.fault("intention", problem)
                continue
            if isinstance(cmd, Vote):
                if self._must_hold(cmd):
                    self.held[slot] = cmd
                    continue
                self.held.pop(slot, None)
            if self._command(cmd, self.origin(slot), tally) is not None:
                tally.commands += 1

    def _command(self, cmd: Command, origin: str,
                 tally: SeatTally | None = None) -> list[Event] | None:
        for sink in self.sinks:
            sink.before(self.game, cmd)
        try:
            events: list[Event] | None = self._apply(cmd, origin)
        except IllegalCommand as exc:
            if tally is None:
                raise
            tally.fault(exc.fault, exc.reason)
            events = None
        for sink in self.sinks:
            sink.after(self.game, cmd, events)
        return events

    def result(self, summaries: dict[int, str] | None = None) -> MatchResult:
        game = self.game
        return MatchResult(
            game=game, faults={s: t.faults for s, t in self.tallies.items()}, days=game.day,
            winners=game.winners, result=game.result, views=self.views,
            fault_reasons={s: list(t.fault_reasons) for s, t in self.tallies.items()
                           if t.fault_reasons},
            tallies=self.tallies, summaries=summaries if summaries is not None else {})


def _scripted(seat: Seat) -> bool:
    """A built-in scripted bot (its commands are well-formed by construction)."""
    return isinstance(seat, SyncSeat) and isinstance(seat.bot, ScriptedBot)


def _plain_sync(seat: Seat) -> TypeGuard[SyncSeat]:
    """A `SyncSeat` that answers through its bot as SyncSeat does (so the
    driver may call the bot itself: `Match._ask_now`)."""
    return isinstance(seat, SyncSeat) and type(seat).decide is SyncSeat.decide


def _engine_apply(game: Game, cmd: Command) -> list[Event]:
    return apply(game, cmd)
