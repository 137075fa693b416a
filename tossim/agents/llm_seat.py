"""An AI seat played by a model through the tool loop.

The same object serves the server and the headless match driver (it is a
`seat.ModelSeat`). It keeps the seat's memory (built from
its own Views only), the shared day summaries (a mapping the game owner fills
in), and per-seat metrics that are stored with the game.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tossim.agents.actions import (
    open_phase_actions,
    owes_speech,
    phase_action_left,
    phase_actions_only,
    public_chat,
)
from tossim.agents.loop import LoopConfig, ToolLoop, TurnResult
from tossim.agents.memory import SeatMemory
from tossim.agents.personas import PERSONAS, Persona, persona_for
from tossim.agents.seat import ModelSeat, StepHook
from tossim.engine.commands import Command, WriteDeathNote, WriteWill
from tossim.engine.legal import LegalAction
from tossim.engine.view import View
from tossim.inference.base import Backend
from tossim.inference.seeds import derive_seed


@dataclass
class AgentMetrics:
    """What a model seat did, summed over its turns (the `agent` part of the
    seat metrics stored with a game)."""

    turns: int = 0
    actions: dict[str, int] = field(default_factory=dict)
    tool_calls: int = 0
    thinking_tokens: int = 0
    segments: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    requested_tokens: int = 0
    cached_tokens: int = 0
    truncated: int = 0
    malformed: int = 0
    forced: int = 0
    repeated_tools: int = 0  # tool calls refused as repeats within one thought
    silenced: int = 0  # turns whose text the guard refused twice (the seat waited)
    moved: int = 0  # turns whose free text the guard refused twice, said as a move instead
    faults: dict[str, int] = field(default_factory=dict)
    # texts the guard refused, by kind (docs/agents.md "The text guard")
    degenerate: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    max_seconds: float = 0.0
    # turns with a deadline (docs/agents.md#deadlines): how many, the seconds
    # they had and used, how many had their thought cut short for time, and
    # misses: turns that did not act in time (the action cut short, a wait
    # for lack of time, done after the deadline, or abandoned at it)
    timed_turns: int = 0
    time_given: float = 0.0
    time_used: float = 0.0
    thinking_cut: int = 0
    misses: int = 0
    # speech moves said, by kind (plus lie, false_claim): docs/agents.md#speech-moves
    moves: dict[str, int] = field(default_factory=dict)
    # phases in which a phase action ("vote", "judge", "night") was open to the
    # seat, and those in which it took it, by kind (docs/agents.md, "Metrics")
    offered: dict[str, int] = field(default_factory=dict)
    taken: dict[str, int] = field(default_factory=dict)
    # (phase_seq, kind, "offered" | "taken") already counted: a phase counts once
    _counted: set[tuple[int, str, str]] = field(default_factory=set, repr=False,
                                                 compare=False)

    def note_phase(self, phase_seq: int, open_kinds: Iterable[str],
                   commands: Iterable[Command] | None = None) -> None:
        """Count one ask of the seat (each phase once, however often it is
        asked): the phase actions open at its start, counted when it starts
        (`commands` None: an ask abandoned at its deadline still offered
        them), and those its commands took."""
        taken = {type(c).type for c in commands} if commands is not None else set()
        for kind in open_kinds:
            for what, counts in (("offered", self.offered), ("taken", self.taken)):
                key = (phase_seq, kind, what)
                if (what == "offered" or kind in taken) and key not in self._counted:
                    self._counted.add(key)
                    counts[kind] = counts.get(kind, 0) + 1

    def add(self, r: TurnResult) -> None:
        s = r.stats
        self.turns += 1
        self.actions[r.action] = self.actions.get(r.action, 0) + 1
        self.tool_calls += s.tool_calls
        self.thinking_tokens += s.thinking_tokens
        self.segments += s.segments
        self.prompt_tokens += s.prompt_tokens
        self.generated_tokens += s.generated_tokens
        self.requested_tokens += s.requested_tokens
        self.cached_tokens += s.cached_tokens
        self.truncated += s.truncated
        self.malformed += s.malformed
        self.forced += int(s.forced)
        self.repeated_tools += s.repeated_tools
        self.silenced += int(s.silenced)
        self.moved += int(s.moved)
        for mine, theirs in ((self.faults, s.faults), (self.degenerate, s.degenerate)):
            for k, n in theirs.items():
                mine[k] = mine.get(k, 0) + n
        self.seconds += s.seconds
        self.max_seconds = max(self.max_seconds, s.seconds)
        if s.time_s is not None:
            self.timed_turns += 1
            self.time_given += s.time_s
            self.time_used += s.seconds
            self.thinking_cut += int(s.thinking_cut)
            self.misses += int(s.missed)
        for k in r.move.counts() if r.move is not None else ():
            self.moves[k] = self.moves.get(k, 0) + 1

    def merge(self, other: AgentMetrics) -> None:
        for name in ("turns", "tool_calls", "thinking_tokens", "segments", "prompt_tokens",
                     "generated_tokens", "requested_tokens", "cached_tokens", "truncated",
                     "malformed", "forced", "timed_turns", "time_given", "time_used",
                     "thinking_cut", "misses", "repeated_tools", "silenced", "moved"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for mine, theirs in ((self.actions, other.actions), (self.faults, other.faults),
                             (self.moves, other.moves), (self.degenerate, other.degenerate),
                             (self.offered, other.offered), (self.taken, other.taken)):
            for k, n in theirs.items():
                mine[k] = mine.get(k, 0) + n
        self.seconds += other.seconds
        self.max_seconds = max(self.max_seconds, other.max_seconds)

    def fields(self) -> dict[str, Any]:
        """The summed fields as `from_fields` reads them (what a worker sends)."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    @classmethod
    def from_fields(cls, data: object) -> AgentMetrics:
        """Metrics sent by another process (an inference worker's turn), checked
        field by field (ValueError) so a bad report cannot poison the sums."""
        if not isinstance(data, dict):
            raise ValueError("metrics are an object")
        out = cls()
        for name, value in data.items():
            current = getattr(out, name, None)
            if isinstance(current, dict):
                if not isinstance(value, dict) or not all(
                        isinstance(k, str) and type(n) is int and n >= 0
                        for k, n in value.items()):
                    raise ValueError(f"metric {name!r} must map names to counts")
            elif isinstance(current, int | float) and not isinstance(current, bool):
                if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                    raise ValueError(f"metric {name!r} must be a number >= 0")
                value = type(current)(value)
            else:
                raise ValueError(f"unknown metric {name!r}")
            setattr(out, name, value)
        return out

    def to_dict(self) -> dict[str, Any]:
        turns = max(self.turns, 1)
        return {
            "turns": self.turns, "actions": dict(sorted(self.actions.items())),
            "tool_calls": self.tool_calls, "thinking_tokens": self.thinking_tokens,
            "segments": self.segments,
            "prompt_tokens": self.prompt_tokens, "generated_tokens": self.generated_tokens,
            "requested_tokens": self.requested_tokens, "cached_tokens": self.cached_tokens,
            "cache_hit_rate": round(self.cached_tokens / max(self.requested_tokens, 1), 3),
            "truncated": self.truncated,
            "malformed": self.malformed, "forced": self.forced,
            "faults": dict(sorted(self.faults.items())), "seconds": round(self.seconds, 3),
            "repeated_tools": self.repeated_tools, "silenced": self.silenced,
            "moved": self.moved,
            "degenerate": dict(sorted(self.degenerate.items())),
            "mean_turn_seconds": round(self.seconds / turns, 3),
            "max_turn_seconds": round(self.max_seconds, 3),
            "timed_turns": self.timed_turns, "misses": self.misses,
            "in_time_rate": round(1 - self.misses / max(self.timed_turns, 1), 3),
            "thinking_cut": self.thinking_cut,
            "time_given": round(self.time_given, 3), "time_used": round(self.time_used, 3),
            "moves": dict(sorted(self.moves.items())),
            "offered": dict(sorted(self.offered.items())),
            "taken": dict(sorted(self.taken.items())),
            # taken / offered per phase action: how often the seat voted when
            # voting was open, used its ability at night, gave a verdict
            "act_rate": {k: round(self.taken.get(k, 0) / n, 3)
                         for k, n in sorted(self.offered.items())},
        }


SIDE_COMMANDS = frozenset({"chat", "whisper", "will", "death_note"})  # actions.SIDE_TAGS


SIDE_TURN_MIN_S = 4.0
"""An act-first seat's turn for speech or a will after its phase's action is
only played with at least this much of the decision's time left."""


async def play_phase(memory: SeatMemory, turn: Callable[[], Awaitable[Command | None]],
                     metrics: AgentMetrics | None = None, *, act_first: bool = False,
                     deadline: float | None = None) -> list[Command]:
    """A seat's commands for one ask of the runner (docs/agents.md, "The
    phase's action"). The runner asks a seat once per phase, so a will
    written at night must not use up the night:

    - by default, one turn, and when that turn spoke, whispered or wrote a
      will or note while the phase's action (a vote, a verdict, a night
      ability) is still open, a second turn that offers only that action
      (and `wait`, for a seat that may abstain);
    - `act_first` (a seat that may not abstain: the small models' structured
      seats), a first turn that offers only the open action, then, with
      `SIDE_TURN_MIN_S` left before `deadline` (time.monotonic()), a turn
      for the rest (speech, a will, a note or `wait`). A slow model's first
      turn can take most of a Voting; the vote is what must not be lost.
      In a day's talk with no action open, a seat that has not spoken in
      public today gets a first turn that offers only public speech: a
      player says something every day (`owes_speech`).

    `metrics` counts the phase actions open and taken (`AgentMetrics.note_phase`)."""
    open_kinds = open_phase_actions(memory.legal, memory.you)
    phase_seq = memory.phase_seq
    if metrics is not None:  # offered now: an ask cancelled at its deadline still counts
        metrics.note_phase(phase_seq, open_kinds)
    if act_first and open_kinds:
        cmds = await _action_first(memory, turn, deadline, phase_actions_only(memory.legal))
    elif act_first and owes_speech(memory):
        cmds = await _action_first(memory, turn, deadline, public_chat(memory.legal))
    else:
        cmds = await _phase_commands(memory, turn)
    if metrics is not None:
        metrics.note_phase(phase_seq, open_kinds, cmds)
    return cmds


async def _action_first(memory: SeatMemory, turn: Callable[[], Awaitable[Command | None]],
                        deadline: float | None, first_legal: list[LegalAction]
                        ) -> list[Command]:
    full = memory.legal
    memory.legal = first_legal
    first = await turn()
    cmds = [first] if first is not None else []
    rest = [a for a in full if a not in first_legal]
    if first is None or not rest or (
            deadline is not None and deadline - time.monotonic() < SIDE_TURN_MIN_S):
        return cmds
    memory.legal = rest
    second = await turn()
    return cmds + ([second] if second is not None else [])


async def _phase_commands(memory: SeatMemory, turn: Callable[[], Awaitable[Command | None]]
                          ) -> list[Command]:
    first = await turn()
    cmds = [first] if first is not None else []
    if first is None or type(first).type not in SIDE_COMMANDS:
        return cmds
    if not phase_action_left(memory.legal, memory.you):
        return cmds
    if isinstance(first, WriteWill):
        memory.you = replace(memory.you, will=first.text)
    elif isinstance(first, WriteDeathNote):
        memory.you = replace(memory.you, death_note=first.text)
    memory.legal = phase_actions_only(memory.legal)
    second = await turn()
    return cmds + ([second] if second is not None else [])


class LLMSeat(ModelSeat):
    """One model-played seat (see the module docstring).

    `turn_log` gets one dict per finished turn: {"day", "phase", "phase_seq",
    "version" (the game version the turn saw: a resumed seat is rebuilt from
    these, `agents.resume`), "prompt" (the
    turn's prompt text), "output" (generated text with observations),
    "steps" (thinking / tool / fault / action dicts, in order), "action" (the
    final command as a dict, or None for a wait), "move" (the structured
    speech move behind it, `Move.to_dict()`, or None), "tokens" {"prompt",
    "generated", "cached"}}. `on_step(slot, step)`, if set, is called as each
    step completes, so a server can stream a turn while it runs. Observations
    come from the seat's own memory: never more than its Views showed it."""

    def __init__(self, slot: int, loop: ToolLoop, *, persona: Persona | str | None = None,
                 summaries: Mapping[int, str] | None = None, key: str = "",
                 seed: int = 0) -> None:
        self.slot = slot
        self.loop = loop
        self.persona = persona
        self.summaries: Mapping[int, str] = summaries if summaries is not None else {}
        self.key = key or f"seat:{slot}"
        self.seed = seed
        self.memory = SeatMemory(slot)
        self.metrics = AgentMetrics()
        self.last: TurnResult | None = None
        self.results: list[TurnResult] = []  # every turn, in order (one per metrics.turns)
        self.turn_log: list[dict[str, Any]] = []
        self.on_step: StepHook | None = None

    async def decide(self, obs: View, deadline: float | None = None) -> list[Command]:
        """This turn's commands; with a `deadline` (time.monotonic()) the
        turn acts before it (docs/agents.md#deadlines). A turn cancelled
        after its deadline counts as a miss."""
        self.memory.update(obs)
        if not self.memory.legal:
            self.memory.end_turn()
            return []
        return await play_phase(self.memory, lambda: self._turn(deadline), self.metrics,
                                act_first=not self.loop.config.may_abstain, deadline=deadline)

    async def _turn(self, deadline: float | None) -> Command | None:
        day, phase = self.memory.day, self.memory.phase
        phase_seq, version = self.memory.phase_seq, self.memory.version
        try:
            result = await self.loop.run_turn(
                self.memory, summaries=self.summaries, persona=self.persona, key=self.key,
                seed=derive_seed(self.seed, self.metrics.turns), on_step=self._step,
                deadline=deadline)
        except asyncio.CancelledError:
            if deadline is not None and time.monotonic() >= deadline:
                self.metrics.timed_turns += 1
                self.metrics.misses += 1
            raise
        self.memory.end_turn()
        self.metrics.add(result)
        self.last = result
        self.results.append(result)
        self.turn_log.append({
            "day": day, "phase": phase, "phase_seq": phase_seq, "version": version,
            "prompt": result.prompt, "output": result.transcript,
            "steps": list(result.steps),
            "action": result.command.to_dict() if result.command is not None else None,
            # the speech move behind a speech, will or note (speech "moves"), else None
            "move": result.move.to_dict() if result.move is not None else None,
            "tokens": {"prompt": result.stats.prompt_tokens,
                       "generated": result.stats.generated_tokens,
                       "cached": result.stats.cached_tokens},
            "time": {"seconds": round(result.stats.seconds, 3),
                     "given": (None if result.stats.time_s is None
                               else round(result.stats.time_s, 3)),
                     "missed": result.stats.missed},
        })
        return result.command

    def _step(self, step: dict[str, Any]) -> None:
        if self.on_step is not None:
            self.on_step(self.slot, step)

    def metrics_dict(self) -> dict[str, Any]:
        return self.metrics.to_dict()


def seat_from_spec(spec: Mapping[str, Any], slot: int, seed: int, backend: Backend, *,
                   game_id: str = "", summaries: Mapping[int, str] | None = None,
                   loop_config: LoopConfig | None = None) -> LLMSeat:
    """A lobby's model seat on `backend`: its persona (named, else drawn from
    the game's seed), its protocol, a cache key that keeps the seat's context
    apart from other games', and a per-seat sampling seed. The server and an
    inference worker build seats here, so a seat plays the same either way.
    `speech`: free text or structured moves (docs/agents.md#speech-moves);
    `loop_config` replaces the loop's whole configuration (benchmarks, tests)."""
    name = spec.get("persona")
    persona = PERSONAS[name] if name in PERSONAS else persona_for(slot, seed)
    protocol = str(spec.get("protocol") or "xml")
    speech = str(spec.get("speech") or "free")
    config = loop_config or LoopConfig(protocol=protocol, speech=speech)
    return LLMSeat(slot, ToolLoop(backend, config),
                   persona=persona,
                   summaries=summaries, key=f"{game_id}:{slot}", seed=derive_seed(seed, slot))
