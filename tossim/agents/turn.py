"""One model turn's values: its rules, its mutable state, its counts and its
result. The tool loop (`loop.play_turn`) and both turn transports (token IDs,
`token_transport.py`; a chat API, `chat_transport.py`) share them, so a turn
is counted and reported the same way whatever the model is reached through
(docs/agents.md, "The tool loop")."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from tossim.agents.memory import SeatMemory
from tossim.agents.moves import Move
from tossim.engine.commands import Command

StepCallback = Callable[[dict[str, Any]], None]


class TurnClock(Protocol):
    """Where a turn reads the time: the `time` module, or a test's fake
    clock (a turn on a fake clock is checked without waiting)."""

    def monotonic(self) -> float: ...

    def perf_counter(self) -> float: ...


@dataclass(frozen=True)
class TurnRules:
    """What the loop allows a turn: the seat's settings, where the token-ID
    and chat seats differ in policy (not in transport)."""

    max_tool_calls: int = 4  # tool calls per turn; after that tools leave the grammar/schema
    max_retries: int = 2  # final actions refused (or unreadable) before the seat waits
    turn_tokens: int | None = None  # everything generated in one turn (None: unbounded)
    moves: bool = False  # the seat speaks in structured moves (docs/agents.md#speech-moves)
    protocol: str = "xml"  # the format of the move lines offered after the guard's refusals
    # a repeated tool call is refused within one thought (a refused action
    # starts a new one) or within the whole turn (a chat conversation)
    repeat_scope: Literal["thought", "turn"] = "thought"
    # the guard's second refusal: "moves" shows it and falls back to
    # structured moves where one can be said (else the seat waits);
    # "silence" ends the turn in `wait` without showing it
    second_refusal: Literal["moves", "silence"] = "moves"


@dataclass
class TurnStats:
    prompt_tokens: int = 0  # the turn's prompt
    generated_tokens: int = 0
    thinking_tokens: int = 0  # of those, inside thoughts (tool tags included)
    requested_tokens: int = 0  # context sent with each request (the prompt grows per segment)
    cached_tokens: int = 0  # of those, served from the backend's prefix cache
    # final actions generated (token IDs: one, plus one per retry), or
    # requests answered (a chat API)
    segments: int = 0
    tool_calls: int = 0
    truncated: int = 0  # segments closed by the loop after max_tokens
    malformed: int = 0  # segments that did not have the protocol's shape
    faults: dict[str, int] = field(default_factory=dict)
    forced: bool = False  # the loop chose `wait` (budget spent, retries used up, an error)
    repeated_tools: int = 0  # tool calls refused: the same call again in one thought
    silenced: bool = False  # the guard refused the turn's text twice and the seat waited
    # the guard refused the turn's free text twice and the seat spoke a
    # structured move instead (docs/agents.md, "The text guard")
    moved: bool = False
    # texts the guard refused, by kind (guard.KINDS; docs/agents.md "The text guard")
    degenerate: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    # timed turns (docs/agents.md#deadlines): the seconds the turn had, whether
    # the time cut its thought short, cut its final action short (the loop
    # completed it), or ran out (a wait for lack of time, or done after it)
    time_s: float | None = None
    thinking_cut: bool = False
    action_cut: bool = False
    late: bool = False

    @property
    def missed(self) -> bool:
        """A turn that did not act in time (see docs/agents.md#deadlines)."""
        return self.action_cut or self.late

    def fault(self, kind: str) -> None:
        self.faults[kind] = self.faults.get(kind, 0) + 1


@dataclass
class TurnResult:
    command: Command | None  # None: wait
    action: str  # the final tag (or "wait" when forced)
    transcript: str  # everything generated and observed this turn
    stats: TurnStats
    prompt: str = ""  # the turn's prompt text (its chat messages)
    steps: list[dict[str, Any]] = field(default_factory=list)  # see LLMSeat.turn_log
    move: Move | None = None  # the speech move said (speech "moves")


class Turn:
    """The mutable state of one turn that the loop owns: its counts, its
    steps (reported as they happen), the tool calls made, retries and the
    guard's refusals. A transport reads it (the tool cap, the speech mode)
    but keeps its own context."""

    def __init__(self, memory: SeatMemory, rules: TurnRules, *, seed: int = 0,
                 on_step: StepCallback | None = None, deadline: float | None = None,
                 clock: TurnClock = time) -> None:
        self.clock = clock
        self.started = clock.perf_counter()
        self.memory, self.rules, self.seed, self.on_step = memory, rules, seed, on_step
        self.deadline = deadline  # the final action's (clock.monotonic()); None: untimed
        self.stats = TurnStats()
        if deadline is not None:
            self.stats.time_s = max(0.0, deadline - clock.monotonic())
        self.steps: list[dict[str, Any]] = []
        self.retries = 0  # attempts that ended without an accepted action
        self.guarded = 0  # the guard's refusals
        self.move: Move | None = None
        self.calls_made: set[str] = set()  # tool calls (name and args) in the repeat scope
        # speeches, wills and notes are structured moves this turn: the seat's
        # own speech setting, or the guard's fallback for a free-text seat
        self.structured = rules.moves

    @property
    def tools_left(self) -> bool:
        """May the model call another tool (the turn's cap)?"""
        return self.stats.tool_calls < self.rules.max_tool_calls

    def repeated(self, name: str, args: Mapping[str, Any]) -> bool:
        """Was this exact tool call made before in the repeat scope? (It is
        refused: its answer is already in the context.)"""
        key = json.dumps([name, args], sort_keys=True, default=str)
        if key in self.calls_made:
            return True
        self.calls_made.add(key)
        return False

    def report(self, entry: dict[str, Any]) -> None:
        """Keep a step and report it as it happens (`on_step`)."""
        self.steps.append(entry)
        if self.on_step is not None:
            self.on_step(entry)

    def step(self, kind: str, **data: Any) -> None:
        self.report({"kind": kind, **data})

    def out_of_time(self) -> bool:
        return self.deadline is not None and self.clock.monotonic() >= self.deadline

    def seconds(self) -> float:
        """Seconds since the turn started."""
        return self.clock.perf_counter() - self.started


def prompt_text(messages: Sequence[Mapping[str, str]]) -> str:
    """A turn's chat messages as one readable text (for logs and spectators)."""
    return "".join(f"<|{m['role']}|>\n{m['content']}" for m in messages)
