"""An AI seat played by a model through the tool loop.

The same object serves the server (it implements the runner's async `AISeat`)
and the headless async match driver. It keeps the seat's memory (built from
its own Views only), the shared day summaries (a mapping the game owner fills
in), and per-seat metrics that are stored with the game.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tossim.agents.loop import ToolLoop, TurnResult
from tossim.agents.memory import SeatMemory
from tossim.agents.personas import Persona
from tossim.engine.commands import Command
from tossim.engine.view import View


@dataclass
class AgentMetrics:
    """What a model seat did, summed over its turns (the `agent` part of the
    seat metrics stored with a game)."""

    turns: int = 0
    actions: dict[str, int] = field(default_factory=dict)
    tool_calls: int = 0
    segments: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    cached_tokens: int = 0
    truncated: int = 0
    malformed: int = 0
    forced: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    max_seconds: float = 0.0

    def add(self, r: TurnResult) -> None:
        s = r.stats
        self.turns += 1
        self.actions[r.action] = self.actions.get(r.action, 0) + 1
        self.tool_calls += s.tool_calls
        self.segments += s.segments
        self.prompt_tokens += s.prompt_tokens
        self.generated_tokens += s.generated_tokens
        self.cached_tokens += s.cached_tokens
        self.truncated += s.truncated
        self.malformed += s.malformed
        self.forced += int(s.forced)
        for k, n in s.faults.items():
            self.faults[k] = self.faults.get(k, 0) + n
        self.seconds += s.seconds
        self.max_seconds = max(self.max_seconds, s.seconds)

    def merge(self, other: AgentMetrics) -> None:
        for name in ("turns", "tool_calls", "segments", "prompt_tokens", "generated_tokens",
                     "cached_tokens", "truncated", "malformed", "forced"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for mine, theirs in ((self.actions, other.actions), (self.faults, other.faults)):
            for k, n in theirs.items():
                mine[k] = mine.get(k, 0) + n
        self.seconds += other.seconds
        self.max_seconds = max(self.max_seconds, other.max_seconds)

    def to_dict(self) -> dict[str, Any]:
        turns = max(self.turns, 1)
        return {
            "turns": self.turns, "actions": dict(sorted(self.actions.items())),
            "tool_calls": self.tool_calls, "segments": self.segments,
            "prompt_tokens": self.prompt_tokens, "generated_tokens": self.generated_tokens,
            "cached_tokens": self.cached_tokens, "truncated": self.truncated,
            "malformed": self.malformed, "forced": self.forced,
            "faults": dict(sorted(self.faults.items())), "seconds": round(self.seconds, 3),
            "mean_turn_seconds": round(self.seconds / turns, 3),
            "max_turn_seconds": round(self.max_seconds, 3),
        }


class LLMSeat:
    """One model-played seat (see the module docstring)."""

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

    async def decide(self, obs: View) -> list[Command]:
        self.memory.update(obs)
        if not self.memory.legal:
            self.memory.end_turn()
            return []
        result = await self.loop.run_turn(
            self.memory, summaries=self.summaries, persona=self.persona, key=self.key,
            seed=self.seed * 7919 + self.metrics.turns)
        self.memory.end_turn()
        self.metrics.add(result)
        self.last = result
        return [result.command] if result.command is not None else []

    def metrics_dict(self) -> dict[str, Any]:
        return self.metrics.to_dict()
