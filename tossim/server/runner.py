"""One actor per live game: the only writer of that game.

The actor takes commands in order (AI decisions, seat commands forwarded over
the bus, its own phase timers), applies them to the engine, stores them with
their events and only then publishes them. Speeds:

- standard: real phase lengths (rules reference A1, scaled by `time_scale`);
  AI seats are asked at moments spread over each phase, with a deadline.
- quick: like standard with half-length phases (SPEED_SCALE), still playable.
- fast: all-AI games advance as soon as every seat has answered.
- paced: like fast, with a pause after each AI decision so people can watch.

At every speed the one match driver plays the game (`agents.driver.Match`,
in turns or, at the timed speeds, in real time on a clock); the actor is that
match plus its sink (`_ActorSink`: store, bus, stand-ins, people's commands).

Fast and paced games are deterministic (seats are asked in seat order, the
scripted bots are seeded), so a restarted server re-simulates them from the
start, checking every command against the stored log, and the resumed game's
event log equals an uninterrupted run's. Standard games resume by applying the
stored commands; their AI seats start the current phase afresh.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections import ChainMap, deque
from collections.abc import Callable
from typing import Any

from tossim.agents.actions import PHASE_KINDS
from tossim.agents.driver import (
    Clock,
    Match,
    MatchSink,
    RealTime,
    SeatTally,
    Timer,
    WallTimer,
)
from tossim.agents.entry_seat import make_seat_for_entry
from tossim.agents.resume import acted_in, restore_seat
from tossim.agents.seat import ModelSeat, Seat, SeatTelemetry
from tossim.agents.turn_records import TURN_KEYS
from tossim.engine import (
    Command,
    Event,
    Game,
    GameConfig,
    IllegalCommand,
    MalformedCommand,
    PhaseTimeout,
    apply,
    command_from_dict,
    new_game,
    view,
)
from tossim.engine.legal import legal_actions
from tossim.engine.modes import DURATIONS
from tossim.engine.state import Phase
from tossim.engine.view import PUBLIC_VIEWER
from tossim.inference.catalogue import ModelEntry, backend_entry, cached_catalogue
from tossim.inference.registry import MODEL_BACKENDS
from tossim.inference.seeds import derive_seed
from tossim.server.bus import (
    Bus,
    Subscription,
    command_channel,
    game_channel,
    thinking_channel,
)
from tossim.server.day_summaries import DaySummaries, writes_summaries
from tossim.server.settings import Settings
from tossim.server.standins import StandIns, StandInSeat, describe
from tossim.server.workers import RemoteSeat, WorkerHub
from tossim.store import ConflictError, Store
from tossim.timeouts import stopped

log = logging.getLogger(__name__)

SPEEDS = ("standard", "fast", "paced")
AI_BACKENDS = ("scripted", *MODEL_BACKENDS)


# A model seat is abandoned this long after its turn deadline
# (docs/agents.md#deadlines; the deadline itself: loop.phase_turn_seconds).
TURN_GRACE_S = 1.0


def entry_for_spec(spec: dict[str, Any], settings: Settings) -> ModelEntry:
    """The catalogue entry a seat spec plays: `model` names an entry of the
    server's catalogue; a spec with only `backend` plays that backend's
    built-in entry (the server's configured model). KeyError for an unknown
    entry or backend."""
    name = spec.get("model")
    if name:
        return cached_catalogue(settings.models).get(str(name))
    backend = spec.get("backend") or "scripted"
    return backend_entry(backend, model=settings.model if backend != "scripted" else None)


def make_ai_seat(spec: dict[str, Any], slot: int, seed: int, *, game_id: str = "",
                 summaries: dict[int, str] | None = None,
                 settings: Settings | None = None,
                 workers: WorkerHub | None = None, background: bool = False) -> Seat:
    """The seat for a lobby's seat spec (through `entry_seat.make_seat_for_entry`):
    a scripted bot; a chat seat (the entry's endpoint, from this process); a
    model seat on a backend shared by the whole process (the model is loaded
    once); or, when the server's inference runs on workers, a seat a worker
    plays. `background`: the demo's seats, whose requests wait while other
    games' seats think on the same backend (GenerationRequest.background)."""
    s = settings or Settings()
    try:
        entry = entry_for_spec(spec, s)
    except KeyError as exc:
        raise ValueError(f"AI seat {slot}: {exc.args[0]}") from None
    summaries = summaries if summaries is not None else {}
    if entry.backend not in ("scripted", "chat") and s.inference == "workers":
        if workers is None:
            raise ValueError("this server's model seats run on workers, but it has no hub")
        # the entry's protocol and sampling travel with the seat: the worker
        # plays it as make_seat_for_entry would here
        return RemoteSeat(workers, game_id, slot, seed,
                          {**spec, "backend": entry.backend,
                           "protocol": spec.get("protocol") or entry.protocol,
                           "speech": spec.get("speech") or entry.speech,
                           "entry": entry.name, "sampling": entry.sampling}, summaries)
    return make_seat_for_entry(entry, slot, seed, game_id=game_id, summaries=summaries,
                               persona=spec.get("persona"), protocol=spec.get("protocol"),
                               openai_url=s.openai_url, model_dir=s.model,
                               deadline=max(1.0, s.model_deadline - 1.0),
                               speech=spec.get("speech"), background=background)


# Phase lengths of the timed speeds, as a share of the standard lengths.
SPEED_SCALE: dict[str, float] = {"standard": 1.0, "quick": 0.5}


class GameActor:
    def __init__(self, game_id: str, config: GameConfig, lobby: dict[str, Any],
                 store: Store, bus: Bus, settings: Settings,
                 stored: list[tuple[int, str, dict[str, Any]]] | None = None,
                 workers: WorkerHub | None = None, timer: Timer | None = None) -> None:
        self.game_id = game_id
        self.config = config
        self.store, self.bus, self.settings = store, bus, settings
        self.workers = workers
        self.speed = lobby.get("speed", "standard")
        seats = {int(s["slot"]): s for s in lobby.get("seats", [])}
        self.ai: dict[int, Seat] = {}
        # day -> summary of its public discussion (shown to model seats and spectators)
        self.summaries: dict[int, str] = {}
        self.day_summaries = DaySummaries(game_id, store, bus, self.summaries)
        for slot in range(1, config.players + 1):
            spec = seats.get(slot, {"kind": "ai", "backend": "scripted"})
            if spec.get("kind", "ai") == "ai" or not spec.get("claimed", True):
                self.ai[slot] = make_ai_seat(spec, slot, config.seed, game_id=game_id,
                                             summaries=self.summaries, settings=settings,
                                             workers=workers, background=bool(lobby.get("demo")))
        self.models = {slot for slot, seat in self.ai.items() if isinstance(seat, ModelSeat)}
        self.game: Game = new_game(config)
        self.seen = dict.fromkeys(self.ai, 0)
        self.metrics = {slot: SeatTally() for slot in self.ai}
        self.stored = list(stored or [])
        self.pending: deque[tuple[int, str, dict[str, Any]]] = deque()
        self.buffer_commands: list[tuple[int, str, dict[str, Any]]] = []
        self.buffer_events: list[Event] = []
        # the match's inbox: seat commands from the bus (timed games)
        self.queue: asyncio.Queue[object] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self._sub: Subscription | None = None
        self._sub_task: asyncio.Task[None] | None = None
        self.done = asyncio.Event()
        self.conflict = False  # stopped because another writer stored first
        # model seats' turns: how many of each seat's `turn_log` entries are
        # stored, and the last stored seq (a resumed game goes on counting)
        self.turns_stored = dict.fromkeys(self.ai, 0)
        self.turn_seq = dict.fromkeys(self.ai, 0)
        # slot -> the phases (phase_seq) it played before a restart (its turn
        # records; for any AI seat, its commands in the log): not asked again
        self.acted: dict[int, set[int]] = {}
        self._thinking: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.humans = frozenset(range(1, config.players + 1)) - frozenset(self.ai)
        self._think_task: asyncio.Task[None] | None = None
        # human seats away for a whole phase are played by scripted stand-ins
        # (tossim.server.standins); a resumed game trusts its first phase
        self.standins = StandIns(self.humans, trusted=bool(stored))
        self._had_action: frozenset[int] = frozenset()
        self.standin_seats: dict[int, Seat] = {}
        self.match = Match(
            self.game, ChainMap(self.ai, self.standin_seats), [_ActorSink(self)],
            clock=self._clock(timer or WallTimer()), apply=self._apply,
            skip=lambda slot, seq: seq in self.acted.get(slot, ()),
            origin=lambda slot: (f"standin:{slot}" if slot in self.standin_seats
                                 else f"ai:{slot}"),
            tallies=self.metrics, seen=self.seen, inbox=self.queue)

    def _clock(self, timer: Timer) -> Clock:
        """Fast and paced games: a model seat's turn has `model_turn_s`.
        Timed games: phases last their length on `timer`, and in Voting, while
        a person lives, AI votes that would complete a majority wait for
        `min_human_vote_s` (docs/agents.md#real-time)."""
        s = self.settings
        real = None if self.flat_out else RealTime(
            phase_s=lambda _game: self._duration(), hold_s=self._hold_seconds, timer=timer)
        return Clock(turn_s=lambda _phase: s.model_turn_s, model_s=s.model_deadline,
                     bot_s=s.ai_deadline, grace_s=TURN_GRACE_S, real_time=real)

    def _hold_seconds(self, game: Game) -> float | None:
        if game.phase is Phase.VOTING and any(game.player(h).alive for h in self.humans):
            return self.settings.min_human_vote_s * self.settings.time_scale
        return None

    @property
    def deadline(self) -> float | None:
        """When the current phase ends (timed games; shown to people)."""
        return self.match.deadline

    @property
    def deterministic(self) -> bool:
        """Fast and paced games without model seats re-simulate exactly on
        resume; a model's output is not reproduced, so those resume from the log."""
        return self.speed in ("fast", "paced") and not self.models

    @property
    def flat_out(self) -> bool:
        return self.speed in ("fast", "paced")

    # ---- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        row = await self.store.get_game(self.game_id)
        if row is not None and row.version == 0:
            # the events new_game() emits (role cards, the opening) are stored first
            await self.store.append(self.game_id, [], [e.to_dict() for e in self.game.events],
                                    day=self.game.day, phase=self.game.phase.value)
        if self.deterministic:
            self.pending.extend(self.stored)  # re-simulate, checking against the log
        else:
            for _seq, origin, data in self.stored:
                if origin.startswith("ai:"):  # that seat played this phase already
                    with contextlib.suppress(ValueError):
                        self.acted.setdefault(int(origin[3:]), set()).add(
                            self.game.phase_seq)
                apply(self.game, command_from_dict(data))
        self.summaries.update(await self.store.summaries(self.game_id))
        self._summarized = set(self.summaries)
        await self._watch_thinking()
        self._sub = await self.bus.subscribe(command_channel(self.game_id))
        self._sub_task = asyncio.create_task(self._listen(), name=f"cmds-{self.game_id}")
        self.task = asyncio.create_task(self._main(), name=f"actor-{self.game_id}")

    async def stop(self) -> None:
        await self.day_summaries.close()
        await stopped(self.task, self._sub_task, self._think_task)
        if self._sub is not None:
            await self._sub.close()

    async def _listen(self) -> None:
        assert self._sub is not None
        async for msg in self._sub:
            if msg.get("type") == "sync":
                # a new mirror (in any process) asks for what the store lacks
                await self._publish_deadline()
                if self.standins.active or self.standins.returned:
                    await self._publish_standins()
                continue
            if msg.get("type") == "presence":
                await self._presence(msg)
                continue
            if self.flat_out:  # fast and paced games have no human seats to serve
                if msg.get("reply_to"):
                    await self.bus.publish(msg["reply_to"], {
                        "ok": False, "error": "this game takes no seat commands"})
                continue
            await self.queue.put(msg)

    # ---- stand-ins for absent players ------------------------------------------------
    async def _presence(self, msg: dict[str, Any]) -> None:
        """A seat socket opened or closed (in any process): a player back
        takes their seat from its stand-in at once."""
        slot, sid = msg.get("slot"), str(msg.get("socket", ""))
        if not isinstance(slot, int) or self.flat_out:
            return
        if not msg.get("open"):
            self.standins.closed(slot, sid)
        elif self.standins.opened(slot, sid):
            self._end_standin(slot)
            await self._publish_standins()

    def _end_standin(self, slot: int) -> None:
        self.standin_seats.pop(slot, None)
        self.match.held.pop(slot, None)  # a held vote was the stand-in's, not the player's

    async def _phase_over(self) -> None:
        """At each new phase of a timed game: seats nobody had open during
        the whole phase before get a stand-in (a scripted bot) from now on."""
        living = {p.slot for p in self.game.players if p.alive}
        label = f"{'Night' if self.game.phase is Phase.NIGHT else 'Day'} {self.game.day}"
        new = self.standins.phase_over(living, label, self._had_action)
        # the human seats with an action to take in the phase that starts
        self._had_action = frozenset(
            s for s in self.humans if s in living
            and any(a.kind in PHASE_KINDS for a in legal_actions(self.game, s)))
        for slot in new:
            log.info("game %s: seat %d was away for a whole phase; a stand-in plays it",
                     self.game_id, slot)
            self.standin_seats[slot] = StandInSeat(make_ai_seat(
                {"kind": "ai", "backend": "scripted"}, slot, self.config.seed,
                game_id=self.game_id, summaries=self.summaries, settings=self.settings))
            self.seen[slot] = 0
            self.metrics.setdefault(slot, SeatTally())
        if new:
            await self._publish_standins()

    async def _publish_standins(self) -> None:
        await self.bus.publish(game_channel(self.game_id), self.standins.message())

    async def _publish_deadline(self) -> None:
        await self.bus.publish(game_channel(self.game_id), {
            "type": "deadline", "deadline": self.deadline, "phase_seq": self.game.phase_seq,
            "t": time.time()})

    async def _main(self) -> None:
        try:
            await self.match.play()
            if self.game.ended:
                # the last day's model summary (within its deadline), then
                # metrics: a game marked finished has everything stored
                await self.day_summaries.settle()
                await self._save_metrics()
                await self.store.set_status(self.game_id, "finished", result=self.game.result,
                                            winners=list(self.game.winners))
                await self.bus.publish(game_channel(self.game_id),
                                       {"type": "ended", "version": self.game.version})
                if self.workers is not None:
                    await self.workers.forget(self.game_id)
        except asyncio.CancelledError:
            raise
        except ConflictError as exc:
            # another process stored this game's next commands first: it (or
            # the process that now holds the lease) runs the game, not us
            self.conflict = True
            log.warning("game %s: another writer got there first (%s); this actor stops",
                        self.game_id, exc)
        except Exception:
            log.exception("game %s: actor failed", self.game_id)
            raise
        finally:
            self.done.set()

    # ---- applying, storing, publishing --------------------------------------------------
    def _apply(self, cmd: Command, origin: str) -> list[Event]:
        """Apply one command (raises IllegalCommand). While re-simulating a
        resumed game, commands already in the log are only applied."""
        if self.pending:
            expected = self.pending[0][2]
            if cmd.to_dict() == expected:
                self.pending.popleft()
                return apply(self.game, cmd)
            log.warning("game %s: resumed run diverged from the log at command %d; "
                        "applying the rest of the log", self.game_id, self.pending[0][0])
            while self.pending:
                apply(self.game, command_from_dict(self.pending.popleft()[2]))
        events = apply(self.game, cmd)
        self.buffer_commands.append((len(self.game.commands), origin, cmd.to_dict()))
        self.buffer_events.extend(events)
        return events

    async def _flush(self) -> None:
        """Store, then publish, what was applied since the last flush."""
        if not self.buffer_commands:
            return
        commands, events = self.buffer_commands, self.buffer_events
        self.buffer_commands, self.buffer_events = [], []
        await self.store.append(self.game_id, commands, [e.to_dict() for e in events],
                                day=self.game.day, phase=self.game.phase.value)
        await self.bus.publish(game_channel(self.game_id), {
            "type": "commands", "first_seq": commands[0][0],
            "commands": [c for _, _, c in commands], "version": self.game.version,
            "deadline": self.deadline, "phase_seq": self.game.phase_seq, "t": time.time(),
        })
        if not self.replaying:
            await self._summarize_ended_days()

    @property
    def replaying(self) -> bool:
        return bool(self.pending)

    # ---- model seats' thinking -----------------------------------------------------------
    async def _watch_thinking(self) -> None:
        """Hook every seat that reports its steps (`LLMSeat.on_step`): each step
        goes to the thinking channel, which only omniscient spectators read."""
        stored = await self.store.turns(self.game_id)
        for slot, turns in self._stored_turn_counts(stored).items():
            if slot in self.turn_seq:
                self.turn_seq[slot] = turns
        self._resume_seats(stored)
        hooked = False
        loop = asyncio.get_running_loop()
        for slot, seat in self.ai.items():
            if isinstance(seat, SeatTelemetry):
                seat.on_step = self._step_reporter(slot, loop)
                hooked = True
        if hooked:
            self._think_task = asyncio.create_task(self._publish_thinking(),
                                                   name=f"think-{self.game_id}")

    def _resume_seats(self, rows: list[dict[str, Any]]) -> None:
        """A resumed game's model seats are the same players: each is rebuilt
        from its stored turns (turn counter, tool results, notes, the version
        it last acted on, turn records, metrics) and is not asked again in a
        phase it already played (docs/architecture.md, "Resume")."""
        for slot, seat in self.ai.items():
            turns = [r for r in rows if r["slot"] == slot]
            if turns:
                self.turns_stored[slot] += restore_seat(seat, turns)
                self.acted.setdefault(slot, set()).update(acted_in(turns))

    @staticmethod
    def _stored_turn_counts(rows: list[dict[str, Any]]) -> dict[int, int]:
        out: dict[int, int] = {}
        for r in rows:
            out[r["slot"]] = max(out.get(r["slot"], 0), int(r["seq"]))
        return out

    def _step_reporter(self, slot: int, loop: asyncio.AbstractEventLoop
                       ) -> Callable[[int, dict[str, Any]], None]:
        """The seat's `on_step(_, step)`: called during a turn (maybe from a
        backend thread), it queues the step for the publisher."""
        def report(_index: int, step: dict[str, Any]) -> None:
            if self.replaying or not isinstance(step, dict):
                return
            msg = {"type": "thinking", "slot": slot, "day": self.game.day,
                   "phase": self.game.phase.value,
                   "step": {k: v for k, v in step.items() if k != "prompt"}}
            loop.call_soon_threadsafe(self._thinking.put_nowait, msg)
        return report

    async def _publish_thinking(self) -> None:
        channel = thinking_channel(self.game_id)
        while True:
            msg = await self._thinking.get()
            try:
                await self.bus.publish(channel, msg)
            except Exception:
                log.warning("game %s: a thinking step was not published", self.game_id,
                            exc_info=True)

    async def _store_turns(self, slot: int) -> None:
        """Store the seat's turns finished since the last call (`turn_log`),
        for replays and the turns route; a seat without one stores nothing."""
        seat = self.ai.get(slot)
        if not isinstance(seat, SeatTelemetry):
            return
        log_ = seat.turn_log
        new = log_[self.turns_stored[slot]:]
        self.turns_stored[slot] = len(log_)
        for turn in new:
            if not isinstance(turn, dict):
                continue
            self.turn_seq[slot] += 1
            data = {k: turn.get(k) for k in TURN_KEYS if k not in ("day", "phase")}
            day = turn.get("day")
            phase = turn.get("phase")
            try:
                await self.store.add_turn(
                    self.game_id, slot, self.turn_seq[slot],
                    day if isinstance(day, int) else self.game.day,
                    phase if isinstance(phase, str) else self.game.phase.value, data)
            except Exception:
                log.warning("game %s: seat %d's turn was not stored", self.game_id, slot,
                            exc_info=True)

    # ---- real time ----------------------------------------------------------------------
    def _duration(self) -> float:
        table = DURATIONS[self.game.flags.durations]
        return (table[self.game.phase.value] * self.settings.time_scale
                * SPEED_SCALE.get(self.speed, 1.0))

    async def _seat_command(self, item: dict[str, Any]) -> None:
        """A human seat's command, forwarded by a websocket (maybe from another
        process). One taken up after its `expires` is dropped unapplied: its
        socket has told the player so, and a command sent again must not
        count twice."""
        expires = item.get("expires")
        if isinstance(expires, int | float) and time.time() > expires:
            log.warning("game %s: seat %s's command came too late to answer; not applied",
                        self.game_id, item.get("slot"))
            return
        reply: dict[str, Any] = {"ok": True}
        try:
            raw = item.get("command")
            if not isinstance(raw, dict):
                raise MalformedCommand("a command must be an object")
            cmd = command_from_dict({**raw, "actor": int(item["slot"])})
            if isinstance(cmd, PhaseTimeout):
                raise MalformedCommand("a seat cannot end a phase")
            slot = int(item["slot"])
            if self.standins.command(slot):  # the player is back (any socket)
                self._end_standin(slot)
                await self._publish_standins()
            self._apply(cmd, f"seat:{item['slot']}")
            await self._flush()
        except MalformedCommand as exc:
            reply = {"ok": False, "error": str(exc), "fault": "parameter", "candidates": []}
        except IllegalCommand as exc:
            reply = {"ok": False, "error": exc.reason, "fault": exc.fault,
                     "candidates": list(exc.candidates)}
        if item.get("reply_to"):
            await self.bus.publish(item["reply_to"], reply)

    async def _save_metrics(self) -> None:
        from tossim.analysis.quality import game_quality

        quality = game_quality(self.game)  # play quality from the full event log
        seats: dict[int, dict[str, Any]] = {}
        for slot, m in self.metrics.items():
            if slot in self.humans:
                continue  # a stand-in's decisions are not a seat's play to rate
            data = m.to_dict()
            seat = self.ai.get(slot)
            if isinstance(seat, ModelSeat):
                data["agent"] = seat.seat_metrics().to_dict()
            data["quality"] = quality.get(slot, {})
            seats[slot] = data
        await self.store.save_all_metrics(self.game_id, seats)

    # ---- day summaries --------------------------------------------------------------------
    def _summary_seconds(self) -> float:
        """How long the model may take over a day's summary: `summary_share` of
        the phase that follows (the Night) in timed games, so a model summary
        lands while that phase runs; a model turn's deadline in fast and paced
        games (docs/architecture.md, "Day summaries")."""
        if self.flat_out:
            return float(self.settings.model_deadline)
        night = (DURATIONS[self.game.flags.durations]["night"] * self.settings.time_scale
                 * SPEED_SCALE.get(self.speed, 1.0))
        return max(0.1, self.settings.summary_share * night)

    async def _summarize_ended_days(self) -> None:
        """Once a day is over (night fell, or the game ended), summarise its
        public discussion once: the extractive summary is stored and published
        at once; the game's model, if it has model seats, writes its own beside
        the game, which replaces it if it comes in time (`DaySummaries`). The
        actor never waits for a model here. The seats' metrics so far are
        stored too, so a running game's figures can be read each night."""
        game = self.game
        day = game.day
        if not (game.phase is Phase.NIGHT or game.ended) or day in self._summarized:
            return
        self._summarized.add(day)
        seat = next((self.ai[s] for s in sorted(self.models)
                     if writes_summaries(self.ai[s])), None)
        await self.day_summaries.ended(
            view(game, PUBLIC_VIEWER), day, game.version, seat=seat,
            seed=derive_seed(game.config.seed, "summary", day),
            seconds=self._summary_seconds())
        if not game.ended:  # an ended game's are stored once its summary is settled
            await self._save_metrics()


class _ActorSink(MatchSink):
    """The actor's side of the match driver: each seat's answer is stored
    (its turns too) and published as it is applied; a paced game pauses
    after each one so people can watch. In timed games each phase's
    deadline is published as it starts, a stand-in's commands are noted for
    its player, absent players get stand-ins as phases end, and people's
    commands from the match's inbox are applied."""

    def __init__(self, actor: GameActor) -> None:
        self.actor = actor
        self.pace = actor.settings.pace if actor.speed == "paced" else 0.0

    async def phase_started(self, game: Game) -> None:
        if self.actor.flat_out:
            return
        await self.actor.bus.publish(game_channel(self.actor.game_id), {
            "type": "commands", "first_seq": len(game.commands) + 1, "commands": [],
            "version": game.version, "deadline": self.actor.deadline,
            "phase_seq": game.phase_seq, "t": time.time()})

    def after(self, game: Game, cmd: Command, events: list[Event] | None) -> None:
        slot = getattr(cmd, "actor", None)
        if events is not None and slot in self.actor.standin_seats:
            names = {p.slot: p.name for p in game.players}
            self.actor.standins.did(slot, describe(cmd.to_dict(), names))

    async def answered(self, game: Game, slot: int) -> None:
        await self.actor._store_turns(slot)
        await self.actor._flush()
        if self.pace and not self.actor.replaying:
            await asyncio.sleep(self.pace)

    async def released(self, game: Game) -> None:
        await self.actor._flush()

    async def received(self, game: Game, item: object) -> None:
        if isinstance(item, dict) and item.get("type") == "seat":
            await self.actor._seat_command(item)

    async def phase_over(self, game: Game, phase: Phase, day: int) -> None:
        await self.actor._flush()
        if not self.actor.flat_out and not game.ended:
            await self.actor._phase_over()
        await asyncio.sleep(0)  # let the rest of the server run


def process_name() -> str:
    """A name for this server process, unique in the fleet: host, pid and a
    random part (a restarted process on the same host and pid is another)."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class LeaseHeld(RuntimeError):
    """Another server process holds the game's lease (it runs the game)."""


class ActorHub:
    """The games this process runs, each under a lease in the store.

    A process runs a game's actor only while it holds the game's lease
    (`Store.acquire_lease`): starting a game takes it (in the same
    transaction as the start), resuming one takes it first. A keeper task
    renews this process's leases every lease_s/3; a lease found taken by
    another process stops its actor. With `takeover` (the `resume` setting)
    the keeper also takes over, every lease_s/3, each live game whose lease
    has expired (its process died) and resumes it from the stored log, which
    is also what start-up does. A game that ends releases its lease; so does a
    clean shutdown (`stop_all`), so another process takes those games over at
    once.

    The log has its own guard: an actor whose append finds the next commands
    already stored (a process that lost its lease without noticing wrote
    them) stops, and this process restarts it from the store if it still
    holds the lease."""

    MAX_RESTARTS = 5  # per game: restarts after a write conflict

    def __init__(self, store: Store, bus: Bus, settings: Settings,
                 workers: WorkerHub | None = None, *, owner: str | None = None) -> None:
        self.store, self.bus, self.settings = store, bus, settings
        self.workers = workers
        self.owner = owner or process_name()
        self.timer: Timer | None = None  # timed games' clock (None: the wall clock)
        # the start-up load of the embedded model (tossim.server.preload):
        # games start once it is done, so no actor's constructor (which makes
        # its seats' backend) waits for the load on the event loop
        self.models_ready: asyncio.Future[Any] | None = None
        self.lease_s = float(settings.lease_s)
        self.actors: dict[str, GameActor] = {}
        self.leased: set[str] = set()  # games whose lease this process holds
        self.takeover = False
        self.restarts: dict[str, int] = {}
        self._keeper: asyncio.Task[None] | None = None
        self._watchers: set[asyncio.Task[None]] = set()
        self._closing = False
        self._scan_lock = asyncio.Lock()

    async def start(self, *, takeover: bool) -> list[str]:
        """Begin keeping leases; with `takeover`, resume every live game
        nobody runs now and keep looking for such games. Returns the games
        resumed now."""
        self.takeover = takeover
        resumed = await self.resume_all() if takeover else []
        self._keep()
        return resumed

    def _keep(self) -> None:
        if self._keeper is None and not self._closing:
            self._keeper = asyncio.get_running_loop().create_task(
                self._keep_leases(), name=f"leases-{self.owner}")

    async def _keep_leases(self) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            try:
                await self.renew()
                if self.takeover:
                    resumed = await self.resume_all()
                    if resumed:
                        log.info("resumed %d live game(s) whose process stopped: %s",
                                 len(resumed), ", ".join(resumed))
            except Exception:  # the store may be down for a moment: try again
                log.warning("leases: renewing or taking over failed", exc_info=True)

    async def renew(self) -> None:
        """Renew this process's leases; stop the actor of any game whose
        lease another process holds now."""
        asked = set(self.leased)
        held = await self.store.renew_leases(self.owner, asked, self.lease_s)
        for game_id in asked - held:
            self.leased.discard(game_id)
            actor = self.actors.pop(game_id, None)
            log.warning("game %s: lease lost to another process; %s", game_id,
                        "stopping its actor here" if actor else "not running it here")
            if actor is not None:
                await actor.stop()

    async def _acquire(self, game_id: str, wait: float) -> bool:
        """Take the game's lease, waiting up to `wait` seconds for another
        owner's to expire (a process killed a moment ago still holds it)."""
        deadline = time.monotonic() + wait
        while True:
            if await self.store.acquire_lease(game_id, self.owner, self.lease_s):
                self.leased.add(game_id)
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(min(self.lease_s / 3, max(0.05, deadline - time.monotonic())))

    async def start_game(self, game_id: str,
                         stored: list[tuple[int, str, dict[str, Any]]] | None = None
                         ) -> GameActor:
        """Run the game here: take its lease (waiting a little over a lease's
        length for a dead process's to expire; LeaseHeld if another process
        keeps it) and start its actor, resuming from `stored` (the command
        log: re-read after a wait, since the last holder may have written)."""
        row = await self.store.get_game(game_id)
        if row is None:
            raise KeyError(game_id)
        existing = self.actors.get(game_id)
        if existing is not None and not existing.done.is_set():
            return existing
        if not await self._acquire(game_id, wait=0.0):
            if stored is None or not await self._acquire(game_id, wait=self.lease_s * 1.5):
                raise LeaseHeld(f"game {game_id} is run by another server process")
            stored = await self.store.commands(game_id)
        if self.models_ready is not None and not self.models_ready.done():
            await asyncio.wait([self.models_ready])  # (it never raises; nor is it cancelled)
        lobby = dict(row.lobby)
        lobby["seats"] = [
            {"slot": s.slot, "kind": s.kind, "backend": s.backend, "model": s.model,
             "persona": s.persona, "protocol": s.protocol, "claimed": s.claimed,
             "speech": (row.lobby.get("speech") or {}).get(str(s.slot))}
            for s in row.seats
        ]
        actor = GameActor(game_id, GameConfig.from_dict(row.config), lobby, self.store,
                          self.bus, self.settings, stored, self.workers, self.timer)
        self.actors[game_id] = actor
        try:
            await actor.start()
        except BaseException as exc:
            self.actors.pop(game_id, None)
            await actor.stop()
            if isinstance(exc, ConflictError):  # another writer: let the lease go
                self.leased.discard(game_id)
                with contextlib.suppress(Exception):
                    await self.store.release_leases(self.owner, [game_id])
            raise
        watcher = asyncio.get_running_loop().create_task(self._watch(actor),
                                                         name=f"watch-{game_id}")
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)
        self._keep()
        return actor

    async def _watch(self, actor: GameActor) -> None:
        """When an actor stops: close its subscriptions, and release the lease
        of a game that ended; restart one that met another writer while this
        process still holds its lease. A crashed actor keeps its lease (the
        game waits for this process's restart rather than crash every
        process in turn)."""
        await actor.done.wait()
        game_id = actor.game_id
        if self.actors.get(game_id) is actor:
            del self.actors[game_id]
        await actor.stop()  # its command subscription and tasks
        if self._closing or game_id not in self.leased:
            return
        if actor.game.ended:
            self.leased.discard(game_id)
            self.restarts.pop(game_id, None)
            try:
                await self.store.release_leases(self.owner, [game_id])
            except Exception:
                log.warning("game %s: lease not released (it expires)", game_id,
                            exc_info=True)
        elif actor.conflict:
            n = self.restarts.get(game_id, 0) + 1
            self.restarts[game_id] = n
            if n > self.MAX_RESTARTS:
                log.error("game %s: %d write conflicts; not restarted here", game_id, n - 1)
                return
            try:
                await self.start_game(game_id, await self.store.commands(game_id))
                log.info("game %s: restarted from the store after a write conflict", game_id)
            except LeaseHeld:
                self.leased.discard(game_id)

    async def resume_all(self) -> list[str]:
        """Take over and resume every live game nobody runs: no lease, or an
        expired one. Its log is read after the lease is taken, so nothing the
        last holder stored is missed."""
        resumed = []
        async with self._scan_lock:
            for game_id in await self.store.unleased_live_games():
                if game_id in self.actors or self._closing:
                    continue
                if not await self._acquire(game_id, wait=0.0):
                    continue  # another process was quicker
                try:
                    await self.start_game(game_id, await self.store.commands(game_id))
                except Exception:
                    log.exception("game %s: could not be resumed", game_id)
                    continue
                resumed.append(game_id)
        return resumed

    async def stop_all(self) -> None:
        """Stop every actor and release this process's leases (another
        process takes those games over at once)."""
        self._closing = True
        await stopped(self._keeper)
        self._keeper = None
        for actor in list(self.actors.values()):
            await actor.stop()
        self.actors.clear()
        await stopped(*self._watchers)
        if self.leased:
            try:
                await self.store.release_leases(self.owner, self.leased)
            except Exception:
                log.warning("leases not released at shutdown (they expire)", exc_info=True)
            self.leased.clear()
