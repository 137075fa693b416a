"""An AI seat played by a model through the tool loop.

The same object serves the server and the headless match driver (it is a
`seat.ModelSeat`). It keeps the seat's memory (built from
its own Views only), the shared day summaries (a mapping the game owner fills
in), and per-seat metrics that are stored with the game.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from tossim.agents.actions import (
    open_jail,
    open_phase_actions,
    owes_speech,
    phase_action_left,
    phase_actions_only,
    public_chat,
)
from tossim.agents.loop import LoopConfig, ToolLoop, TurnResult
from tossim.agents.memory import SeatMemory
from tossim.agents.metrics import AgentMetrics, SeatMetrics
from tossim.agents.moves import Move, move_table, offered
from tossim.agents.personas import PERSONAS, Persona, persona_for
from tossim.agents.seat import ModelSeat, StepHook
from tossim.engine.commands import (
    Chat,
    Command,
    DayAction,
    Judge,
    Vote,
    WriteDeathNote,
    WriteWill,
)
from tossim.engine.legal import LegalAction
from tossim.engine.view import View
from tossim.inference.base import Backend
from tossim.inference.seeds import derive_seed
from tossim.timeouts import within

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
      player says something every day (`owes_speech`). A Jailor that has
      not chosen tonight's prisoner gets a turn that offers only the jail
      (after that speech or its vote, time allowing, else first; `open_jail`).

    `metrics` counts the phase actions open and taken (`AgentMetrics.note_phase`)."""
    open_kinds = open_phase_actions(memory.legal, memory.you)
    phase_seq = memory.phase_seq
    if metrics is not None:  # offered now: an ask cancelled at its deadline still counts
        metrics.note_phase(phase_seq, open_kinds)
    jail = open_jail(memory.legal, memory.you) if act_first else []
    if act_first and open_kinds:
        cmds = await _action_first(memory, turn, deadline, phase_actions_only(memory.legal),
                                   jail)
    elif act_first and owes_speech(memory):
        cmds = await _action_first(memory, turn, deadline, public_chat(memory.legal), jail)
    elif jail:
        cmds = await _action_first(memory, turn, deadline, jail)
    else:
        cmds = await _phase_commands(memory, turn, deadline)
    if metrics is not None:
        metrics.note_phase(phase_seq, open_kinds, cmds)
    return cmds


async def _action_first(memory: SeatMemory, turn: Callable[[], Awaitable[Command | None]],
                        deadline: float | None, first_legal: list[LegalAction],
                        then: list[LegalAction] | None = None) -> list[Command]:
    """A turn offering only `first_legal`, then, time allowing, one offering
    `then` (a Jailor's jail after its day's speech), else everything else."""
    full = memory.legal
    memory.legal = first_legal
    first = await turn()
    cmds = [first] if first is not None else []
    rest = then or [a for a in full if a not in first_legal]
    if first is None or not rest or (
            deadline is not None and deadline - time.monotonic() < SIDE_TURN_MIN_S):
        return cmds
    _remember(memory, first, full)
    memory.legal = rest
    second = await _in_time(turn, deadline)
    return cmds + ([second] if second is not None else [])


def _remember(memory: SeatMemory, first: Command, legal: list[LegalAction]) -> None:
    """What a phase's second turn must know of its first, whose command the
    engine has not seen yet: the vote or verdict just cast, the will or note just
    written, and the line just said in public (seen in a lobby: a Mafia
    seat's "I am the Investigator." and then, in the same Discussion, the
    will "I am the Medium.")."""
    if isinstance(first, Vote):
        memory.you = replace(memory.you, vote=first.target)
    elif isinstance(first, Judge):
        memory.you = replace(memory.you, verdict=first.verdict)
    elif isinstance(first, WriteWill):
        memory.you = replace(memory.you, will=first.text)
    elif isinstance(first, WriteDeathNote):
        memory.you = replace(memory.you, death_note=first.text)
    elif isinstance(first, Chat) and first.channel in (None, "public") and public_chat(legal):
        memory.say_public(first.text)
    elif isinstance(first, DayAction) and first.ability == "jail":
        memory.you = replace(memory.you, jail_choice=first.target)


async def _in_time(turn: Callable[[], Awaitable[Command | None]],
                   deadline: float | None) -> Command | None:
    """A phase's second turn, stopped at the decision's deadline (None
    then): the driver drops a decision that comes later, and with it the
    first turn's command, which is the one that mattered (seen in the demo:
    votes decided in time, lost with a speech turn that ran over)."""
    if deadline is None:
        return await turn()
    try:
        return await within(turn(), max(0.0, deadline - time.monotonic()))
    except TimeoutError:
        return None


async def _phase_commands(memory: SeatMemory, turn: Callable[[], Awaitable[Command | None]],
                          deadline: float | None) -> list[Command]:
    first = await turn()
    cmds = [first] if first is not None else []
    if first is None or type(first).type not in SIDE_COMMANDS:
        return cmds
    if not phase_action_left(memory.legal, memory.you):
        return cmds
    _remember(memory, first, memory.legal)
    memory.legal = phase_actions_only(memory.legal)
    second = await _in_time(turn, deadline)
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
    "generated", "cached"}, "time" {"seconds", "given", "missed"}}; a turn
    given up at its deadline (the phase moved on) gets one too, with what it
    had done, a fault step, no prompt, output, action or tokens, and
    "abandoned" in its "time". `on_step(slot, step)`, if set, is called as each
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
        # the last answer's lines and the speech moves behind them (`still_meant`)
        self.said: list[tuple[Command, Move, dict[str, Any]]] = []

    async def decide(self, obs: View, deadline: float | None = None) -> list[Command]:
        """This turn's commands; with a `deadline` (time.monotonic()) the
        turn acts before it (docs/agents.md#deadlines). A turn cancelled
        after its deadline counts as a miss."""
        self.said = []
        self.memory.update(obs)
        if self.loop.config.speech == "moves":
            self.memory.legal = offered(self.memory)
        if not self.memory.legal:
            self.memory.end_turn()
            return []
        return await play_phase(self.memory, lambda: self._turn(deadline), self.metrics,
                                act_first=not self.loop.config.may_abstain, deadline=deadline)

    async def _turn(self, deadline: float | None) -> Command | None:
        where = {"day": self.memory.day, "phase": self.memory.phase,
                 "phase_seq": self.memory.phase_seq, "version": self.memory.version}
        started = time.monotonic()
        steps: list[dict[str, Any]] = []  # so far: kept if the turn is given up

        def on_step(step: dict[str, Any]) -> None:
            steps.append(step)
            self._step(step)

        try:
            result = await self.loop.run_turn(
                self.memory, summaries=self.summaries, persona=self.persona, key=self.key,
                seed=derive_seed(self.seed, self.metrics.turns), on_step=on_step,
                deadline=deadline)
        except asyncio.CancelledError:
            if deadline is not None and time.monotonic() >= deadline:
                self.metrics.timed_turns += 1
                self.metrics.misses += 1
                # a turn given up at its deadline is a turn too: stored with
                # what it had done, so a game's record counts every miss
                self.turn_log.append({
                    **where, "prompt": None, "output": None,
                    "steps": [*steps, {"kind": "fault", "fault": "deadline",
                                       "text": "did not answer in time; the seat abstains"}],
                    "action": None, "move": None, "tokens": None,
                    "time": {"seconds": round(time.monotonic() - started, 3),
                             "given": round(deadline - started, 3), "missed": True,
                             "abandoned": True}})
            raise
        self.memory.end_turn()
        self.metrics.add(result)
        self.last = result
        self.results.append(result)
        self.turn_log.append({
            **where, "prompt": result.prompt, "output": result.transcript,
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
        if isinstance(result.command, Chat) and result.move is not None:
            self.said.append((result.command, result.move, self.turn_log[-1]))
        return result.command

    def still_meant(self, obs: View, commands: list[Command]) -> list[Command]:
        """A line said in moves is withdrawn when the move is no longer one
        the seat could make now (seen in a lobby: "Player 5 has some
        explaining to do. They have not claimed a role." right after Player
        5's claim, which came while the seat thought); its turn record says
        so in a fault step."""
        said = [(c, m, record) for c, m, record in self.said
                if any(c is x for x in commands)]
        if not said:
            return commands
        self.memory.update(obs)
        moves = list(move_table(self.memory).speak.values())
        stale = [(c, record) for c, m, record in said if m not in moves]
        for _c, record in stale:
            step = {"kind": "fault", "fault": "stale",
                    "text": "withdrawn: the game moved on while the seat thought, and "
                            "the line no longer holds"}
            record["steps"].append(step)
            self._step(step)
        gone = [c for c, _record in stale]
        return [c for c in commands if not any(c is g for g in gone)]

    def _step(self, step: dict[str, Any]) -> None:
        if self.on_step is not None:
            self.on_step(self.slot, step)

    def seat_metrics(self) -> SeatMetrics:
        return SeatMetrics(copy.deepcopy(self.metrics))


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
