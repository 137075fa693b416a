"""One actor per live game: the only writer of that game.

The actor takes commands in order (AI decisions, seat commands forwarded over
the bus, its own phase timers), applies them to the engine, stores them with
their events and only then publishes them. Speeds:

- standard: real phase lengths (rules reference A1, scaled by `time_scale`);
  AI seats are asked concurrently at the start of each phase, with a deadline.
- fast: all-AI games advance as soon as every seat has answered.
- paced: like fast, with a pause after each AI decision so people can watch.

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
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from tossim.agents.async_match import ScriptedSeat
from tossim.agents.llm_seat import LLMSeat, seat_from_spec
from tossim.agents.match import seat_command_problem, seats_to_ask
from tossim.agents.memory import SeatMemory
from tossim.agents.summarize import fallback_summary, write_summary
from tossim.engine import (
    Command,
    Event,
    Game,
    GameConfig,
    IllegalCommand,
    MalformedCommand,
    PhaseTimeout,
    View,
    Viewer,
    apply,
    command_from_dict,
    new_game,
    view,
)
from tossim.engine.modes import DURATIONS
from tossim.engine.state import Phase
from tossim.engine.view import PUBLIC_VIEWER
from tossim.inference.registry import MODEL_BACKENDS, shared_backend
from tossim.server.bus import Bus, Subscription, command_channel, game_channel
from tossim.server.settings import Settings
from tossim.server.workers import RemoteSeat, WorkerHub
from tossim.store import Store

log = logging.getLogger(__name__)

SPEEDS = ("standard", "fast", "paced")
AI_BACKENDS = ("scripted", *MODEL_BACKENDS)
MODEL_SEATS = (LLMSeat, RemoteSeat)  # played by a model, here or on a worker


class AISeat(Protocol):
    """How the server asks an AI seat for its move (one async interface for
    every backend; the server applies a deadline around it)."""

    async def decide(self, obs: View) -> list[Command]: ...



def make_ai_seat(spec: dict[str, Any], slot: int, seed: int, *, game_id: str = "",
                 summaries: dict[int, str] | None = None,
                 settings: Settings | None = None,
                 workers: WorkerHub | None = None) -> AISeat:
    """The seat for a lobby's seat spec: a scripted bot; a model seat on a
    backend shared by the whole process (the model is loaded once); or, when
    the server's inference runs on workers, a seat a worker plays."""
    backend = spec.get("backend") or "scripted"
    if backend == "scripted":
        return ScriptedSeat(slot, seed)
    if backend not in MODEL_BACKENDS:
        raise ValueError(f"AI backend {backend!r} is not available in this server")
    s = settings or Settings()
    summaries = summaries if summaries is not None else {}
    if s.inference == "workers":
        if workers is None:
            raise ValueError("this server's model seats run on workers, but it has no hub")
        return RemoteSeat(workers, game_id, slot, seed, spec, summaries)
    engine = shared_backend(backend, spec.get("model") or s.model, s.openai_url)
    return seat_from_spec(spec, slot, seed, engine, game_id=game_id, summaries=summaries)


@dataclass
class SeatMetrics:
    decisions: int = 0
    commands: int = 0
    faults: int = 0
    timeouts: int = 0
    errors: int = 0
    seconds: float = 0.0
    fault_kinds: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"decisions": self.decisions, "commands": self.commands, "faults": self.faults,
                "timeouts": self.timeouts, "errors": self.errors,
                "seconds": round(self.seconds, 4), "fault_kinds": dict(self.fault_kinds)}


class GameActor:
    def __init__(self, game_id: str, config: GameConfig, lobby: dict[str, Any],
                 store: Store, bus: Bus, settings: Settings,
                 stored: list[tuple[int, str, dict[str, Any]]] | None = None,
                 workers: WorkerHub | None = None) -> None:
        self.game_id = game_id
        self.config = config
        self.store, self.bus, self.settings = store, bus, settings
        self.workers = workers
        self.speed = lobby.get("speed", "standard")
        seats = {int(s["slot"]): s for s in lobby.get("seats", [])}
        self.ai: dict[int, AISeat] = {}
        # day -> summary of its public discussion (shown to model seats and spectators)
        self.summaries: dict[int, str] = {}
        for slot in range(1, config.players + 1):
            spec = seats.get(slot, {"kind": "ai", "backend": "scripted"})
            if spec.get("kind", "ai") == "ai" or not spec.get("claimed", True):
                self.ai[slot] = make_ai_seat(spec, slot, config.seed, game_id=game_id,
                                             summaries=self.summaries, settings=settings,
                                             workers=workers)
        self.models = {slot for slot, seat in self.ai.items()
                       if isinstance(seat, MODEL_SEATS)}
        self.game: Game = new_game(config)
        self.seen = dict.fromkeys(self.ai, 0)
        self.metrics = {slot: SeatMetrics() for slot in self.ai}
        self.stored = list(stored or [])
        self.pending: deque[tuple[int, str, dict[str, Any]]] = deque()
        self.buffer_commands: list[tuple[int, str, dict[str, Any]]] = []
        self.buffer_events: list[Event] = []
        self.deadline: float | None = None
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self._sub: Subscription | None = None
        self._sub_task: asyncio.Task[None] | None = None
        self.done = asyncio.Event()

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
            for _seq, _origin, data in self.stored:
                apply(self.game, command_from_dict(data))
        self.summaries.update(await self.store.summaries(self.game_id))
        self._summarized = set(self.summaries)
        self._sub = await self.bus.subscribe(command_channel(self.game_id))
        self._sub_task = asyncio.create_task(self._listen(), name=f"cmds-{self.game_id}")
        self.task = asyncio.create_task(self._main(), name=f"actor-{self.game_id}")

    async def stop(self) -> None:
        for task in (self.task, self._sub_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self._sub is not None:
            await self._sub.close()

    async def _listen(self) -> None:
        assert self._sub is not None
        async for msg in self._sub:
            if msg.get("type") == "sync":
                # a new mirror (in any process) asks for what the store lacks
                await self._publish_deadline()
                continue
            if self.flat_out:  # fast and paced games have no human seats to serve
                if msg.get("reply_to"):
                    await self.bus.publish(msg["reply_to"], {
                        "ok": False, "error": "this game takes no seat commands"})
                continue
            await self.queue.put(msg)

    async def _publish_deadline(self) -> None:
        await self.bus.publish(game_channel(self.game_id), {
            "type": "deadline", "deadline": self.deadline, "phase_seq": self.game.phase_seq,
            "t": time.time()})

    async def _main(self) -> None:
        try:
            if self.flat_out:
                await self._run_fast()
            else:
                await self._run_realtime()
            if self.game.ended:
                # metrics first: a game marked finished has everything stored
                await self._save_metrics()
                await self.store.set_status(self.game_id, "finished", result=self.game.result,
                                            winners=list(self.game.winners))
                await self.bus.publish(game_channel(self.game_id),
                                       {"type": "ended", "version": self.game.version})
                if self.workers is not None:
                    await self.workers.forget(self.game_id)
        except asyncio.CancelledError:
            raise
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

    # ---- AI seats -----------------------------------------------------------------------
    async def _decide(self, slot: int) -> list[Command]:
        obs = view(self.game, Viewer.player(slot), since=self.seen[slot])
        self.seen[slot] = obs.version
        m = self.metrics[slot]
        m.decisions += 1
        started = time.perf_counter()
        deadline = (self.settings.model_deadline if slot in self.models
                    else self.settings.ai_deadline)
        try:
            return await asyncio.wait_for(self.ai[slot].decide(obs), deadline)
        except TimeoutError:
            m.timeouts += 1
            log.warning("game %s: AI seat %d did not answer in time; it abstains",
                        self.game_id, slot)
        except Exception:
            m.errors += 1
            log.exception("game %s: AI seat %d failed; it abstains", self.game_id, slot)
        finally:
            m.seconds += time.perf_counter() - started
        return []

    def _apply_seat_commands(self, slot: int, cmds: list[Command]) -> None:
        m = self.metrics[slot]
        seq = self.game.phase_seq
        for cmd in cmds:
            if self.game.ended or self.game.phase_seq != seq:
                return  # what is left was meant for the phase that just ended
            problem = seat_command_problem(slot, cmd, checked=True)
            try:
                if problem is not None:
                    raise IllegalCommand(problem, "intention")
                self._apply(cmd, f"ai:{slot}")
                m.commands += 1
            except IllegalCommand as exc:
                m.faults += 1
                m.fault_kinds[exc.fault] = m.fault_kinds.get(exc.fault, 0) + 1

    async def _run_fast(self) -> None:
        pace = self.settings.pace if self.speed == "paced" else 0.0
        game = self.game
        while not game.ended:
            seq = game.phase_seq
            asked = [slot for slot in seats_to_ask(game) if slot in self.ai]
            early: dict[int, asyncio.Task[list[Command]]] = {}
            if self.models.intersection(asked):
                # model seats think at the same time (one batch for the backend);
                # their answers are applied in seat order like everyone else's
                early = {slot: asyncio.create_task(self._decide(slot))
                         for slot in asked if slot in self.models}
            for slot in asked:
                cmds = await (early.pop(slot) if slot in early else self._decide(slot))
                self._apply_seat_commands(slot, cmds)
                await self._flush()
                if pace and not self.replaying:
                    await asyncio.sleep(pace)
                if game.phase_seq != seq or game.ended:
                    break
            for task in early.values():
                task.cancel()
            if game.phase_seq == seq and not game.ended:
                self._apply(PhaseTimeout(seq), "timer")
                await self._flush()
            await asyncio.sleep(0)  # let the rest of the server run

    # ---- real time ----------------------------------------------------------------------
    def _duration(self) -> float:
        table = DURATIONS[self.game.flags.durations]
        return table[self.game.phase.value] * self.settings.time_scale

    async def _run_realtime(self) -> None:
        game = self.game
        while not game.ended:
            seq = game.phase_seq
            self.deadline = time.time() + self._duration()
            await self.bus.publish(game_channel(self.game_id), {
                "type": "commands", "first_seq": len(game.commands) + 1, "commands": [],
                "version": game.version, "deadline": self.deadline, "phase_seq": seq,
                "t": time.time()})
            asks = [asyncio.create_task(self._ask_later(slot, seq))
                    for slot in seats_to_ask(game) if slot in self.ai]
            try:
                while game.phase_seq == seq and not game.ended:
                    left = self.deadline - time.time()
                    if left <= 0:
                        self._apply(PhaseTimeout(seq), "timer")
                        await self._flush()
                        break
                    try:
                        item = await asyncio.wait_for(self.queue.get(), left)
                    except TimeoutError:
                        continue
                    await self._handle(item, seq)
            finally:
                for task in asks:
                    task.cancel()

    async def _ask_later(self, slot: int, seq: int) -> None:
        cmds = await self._decide(slot)
        await self.queue.put({"type": "ai", "slot": slot, "commands": cmds, "phase_seq": seq})

    async def _handle(self, item: dict[str, Any], seq: int) -> None:
        if item.get("type") == "ai":
            if item["phase_seq"] == self.game.phase_seq:
                self._apply_seat_commands(item["slot"], item["commands"])
                await self._flush()
            return
        if item.get("type") == "seat":
            await self._seat_command(item)

    async def _seat_command(self, item: dict[str, Any]) -> None:
        """A human seat's command, forwarded by a websocket (maybe from another process)."""
        reply: dict[str, Any] = {"ok": True}
        try:
            raw = item.get("command")
            if not isinstance(raw, dict):
                raise MalformedCommand("a command must be an object")
            cmd = command_from_dict({**raw, "actor": int(item["slot"])})
            if isinstance(cmd, PhaseTimeout):
                raise MalformedCommand("a seat cannot end a phase")
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
        for slot, m in self.metrics.items():
            data = m.to_dict()
            seat = self.ai.get(slot)
            if isinstance(seat, MODEL_SEATS):
                data["agent"] = seat.metrics_dict()
            data["quality"] = quality.get(slot, {})
            await self.store.save_metrics(self.game_id, slot, data)

    # ---- day summaries --------------------------------------------------------------------
    async def _write_summary(self, public: View, day: int) -> str:
        """By the game's model (in this process, or on the game's worker) if it
        has model seats, else extractively; a model that fails or does not
        answer in time leaves the extractive summary."""
        memory = SeatMemory(0)
        memory.update(public)
        seed = self.game.config.seed + day
        seat = self.ai[min(self.models)] if self.models else None
        try:
            if isinstance(seat, LLMSeat):
                return await write_summary(seat.loop.backend, memory, day, seed=seed)
            if isinstance(seat, RemoteSeat):
                return await asyncio.wait_for(
                    seat.hub.summarize(self.game_id, seat.backend, public, day, seed),
                    self.settings.model_deadline)
        except (TimeoutError, ConnectionError, ValueError):
            log.warning("game %s: the model did not summarise day %d", self.game_id, day,
                        exc_info=True)
        return fallback_summary(memory, day)

    async def _summarize_ended_days(self) -> None:
        """Once a day is over (night fell, or the game ended), summarise its
        public discussion once: by the game's model if it has model seats,
        else extractively; store it and tell spectators."""
        game = self.game
        day = game.day
        if not (game.phase is Phase.NIGHT or game.ended) or day in self._summarized:
            return
        self._summarized.add(day)
        text = await self._write_summary(view(game, PUBLIC_VIEWER), day)
        self.summaries[day] = text
        await self.store.add_summary(self.game_id, day, text)
        await self.bus.publish(game_channel(self.game_id), {
            "type": "summary", "day": day, "text": text, "version": game.version})


class ActorHub:
    """The games this process runs."""

    def __init__(self, store: Store, bus: Bus, settings: Settings,
                 workers: WorkerHub | None = None) -> None:
        self.store, self.bus, self.settings = store, bus, settings
        self.workers = workers
        self.actors: dict[str, GameActor] = {}

    async def start_game(self, game_id: str,
                         stored: list[tuple[int, str, dict[str, Any]]] | None = None
                         ) -> GameActor:
        row = await self.store.get_game(game_id)
        if row is None:
            raise KeyError(game_id)
        lobby = dict(row.lobby)
        lobby["seats"] = [
            {"slot": s.slot, "kind": s.kind, "backend": s.backend, "model": s.model,
             "persona": s.persona, "protocol": s.protocol, "claimed": s.claimed}
            for s in row.seats
        ]
        actor = GameActor(game_id, GameConfig.from_dict(row.config), lobby, self.store,
                          self.bus, self.settings, stored, self.workers)
        self.actors[game_id] = actor
        await actor.start()
        asyncio.get_running_loop().create_task(self._forget_when_done(actor))
        return actor

    async def _forget_when_done(self, actor: GameActor) -> None:
        await actor.done.wait()
        if self.actors.get(actor.game_id) is actor:
            del self.actors[actor.game_id]

    async def resume_all(self) -> list[str]:
        resumed = []
        for game_id in await self.store.live_game_ids():
            stored = await self.store.commands(game_id)
            await self.start_game(game_id, stored)
            resumed.append(game_id)
        return resumed

    async def stop_all(self) -> None:
        for actor in list(self.actors.values()):
            await actor.stop()
        self.actors.clear()
