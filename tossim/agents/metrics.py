"""A model seat's metrics: `AgentMetrics`, what it did summed over its turns
(a worker sends one turn's as `fields()`), and `SeatMetrics`, the typed
value a `seat.ModelSeat` reports (`seat_metrics()`), whose `to_dict()` is the
`agent` part of the seat's stored metrics (docs/agents.md, "Metrics").

One type for every model seat: a seat on a chat API (`chat=True`) also
counts what its API reports (requests, errors, latency, cost), and only its
stored metrics carry those keys, so a token-ID seat's stay as they were."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tossim.engine.commands import Command

if TYPE_CHECKING:
    from tossim.agents.turn import TurnResult


_CHAT_FIELDS = frozenset({"requests", "completion_tokens", "errors", "abstained",
                          "abstained_kinds", "cost_usd", "latency_seconds",
                          "max_latency_seconds"})
_KIND_FIELDS = frozenset({"chat", "priced"})  # what the sums are of, not sums


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
    # a seat on a chat API (`chat`): what its API reports, counted as each
    # request is answered (a turn cancelled at its deadline keeps them)
    chat: bool = False  # store the fields below (`to_dict`)
    priced: bool = True  # False: the entry has no price, and its cost is None ("-")
    requests: int = 0
    completion_tokens: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # by kind, retried ones too
    abstained: int = 0  # turns that ended in `wait` because of an error or the deadline
    # the same, by kind (turn_records.abstention: "timeout", "error")
    abstained_kinds: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    latency_seconds: float = 0.0  # summed over requests
    max_latency_seconds: float = 0.0
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
                     "thinking_cut", "misses", "repeated_tools", "silenced", "moved",
                     "requests", "completion_tokens", "abstained", "cost_usd",
                     "latency_seconds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for mine, theirs in ((self.actions, other.actions), (self.faults, other.faults),
                             (self.moves, other.moves), (self.degenerate, other.degenerate),
                             (self.offered, other.offered), (self.taken, other.taken),
                             (self.errors, other.errors),
                             (self.abstained_kinds, other.abstained_kinds)):
            for k, n in theirs.items():
                mine[k] = mine.get(k, 0) + n
        self.seconds += other.seconds
        self.max_seconds = max(self.max_seconds, other.max_seconds)
        self.max_latency_seconds = max(self.max_latency_seconds, other.max_latency_seconds)

    def fields(self) -> dict[str, Any]:
        """The summed fields as `from_fields` reads them (what a worker sends;
        a chat API's only for a chat seat's)."""
        skip = _KIND_FIELDS | (frozenset() if self.chat else _CHAT_FIELDS)
        return {k: v for k, v in vars(self).items() if not k.startswith("_") and k not in skip}

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
        out: dict[str, Any] = {
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
        if self.chat:
            out.update({
                "requests": self.requests, "completion_tokens": self.completion_tokens,
                "errors": dict(sorted(self.errors.items())), "abstained": self.abstained,
                "abstained_kinds": dict(sorted(self.abstained_kinds.items())),
                "cost_usd": round(self.cost_usd, 6) if self.priced else None,
                "mean_latency_seconds": round(self.latency_seconds / max(self.requests, 1), 3),
                "max_latency_seconds": round(self.max_latency_seconds, 3)})
        return out


@dataclass(frozen=True)
class SeatMetrics:
    """What a model seat reports: its sums (a snapshot) and, for a seat on a
    catalogue entry's chat API, the entry's name and the constraint mode its
    endpoint honours. `to_dict()` is the stored and JSON form."""

    sums: AgentMetrics
    entry: str | None = None
    constraint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = self.sums.to_dict()
        if self.entry is not None:
            out["entry"] = self.entry
            out["constraint"] = self.constraint
        return out
