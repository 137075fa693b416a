"""How the tool loop talks to a model: a `TurnTransport`, and the events one
attempt of a turn yields.

The loop (`loop.play_turn`) owns a turn's control flow: the tool cap,
repeated calls, faults and retries, the guard, deadlines and the forced
`wait`, step reporting and the counts. A transport owns only the model's
side: how a request is made (token IDs under a grammar,
`token_transport.py`; chat messages under an endpoint's constraint,
`chat_transport.py`), how text cut off is closed, and how an observation
is put into the context. So the two kinds of model seat differ only in
what differs between the models, not in how a turn is played.

One attempt is an async generator: it yields what the model did as it
happens, and stops after a final action (`Final`), output it could not read
(`Unreadable`), no action at all (time ran out), or a failed request
(`Failed`). A `ToolCall` suspends it: the loop runs (or refuses) the tool and
calls `observe` before asking for the next event, so the model resumes with
the observation in its context (seed 003's interrupt-and-resume).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any, Protocol

from tossim.agents.escape import escape_text
from tossim.agents.protocols import Parsed
from tossim.agents.turn import Turn


@dataclass(frozen=True)
class Thought:
    """A piece of the model's reasoning, reported as a "thinking" step."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """A tool called; `shown` is its argument as the step reports it."""

    parsed: Parsed
    shown: Any


@dataclass(frozen=True)
class ActionText:
    """The final action's text as generated (before it is checked)."""

    text: str


@dataclass(frozen=True)
class Final:
    """The attempt's final action; the loop checks it once the attempt ends."""

    parsed: Parsed


@dataclass(frozen=True)
class Unreadable:
    """Output without the protocol's shape: an expression fault with this
    observation (`expression_fault`). The attempt goes on after one inside a
    thought; otherwise it ends there."""

    text: str


@dataclass(frozen=True)
class Failed:
    """The model could not be reached in time (a chat API's error kind:
    "timeout", "server", ...): the seat abstains."""

    kind: str


Event = Thought | ToolCall | ActionText | Final | Unreadable | Failed


def expression_fault(why: str, ask: str = "") -> str:
    """The observation for output the protocol cannot read (seed 002's
    expression fault): why, escaped, then how to answer."""
    text = f"[expression fault] {escape_text(why)}"
    return f"{text} {ask}" if ask else text


class TurnTransport(Protocol):
    """The model's side of one turn (see the module docstring)."""

    def attempt(self, turn: Turn) -> AsyncGenerator[Event, None]:
        """One attempt at the turn's action: a thought (with tool calls) and
        a final action."""
        ...

    def observe(self, text: str) -> None:
        """Put an observation (a tool's answer, a fault) into the context."""
        ...

    def prompt_text(self) -> str:
        """The turn's prompt as one text (the guard refuses copies of it)."""
        ...

    def transcript(self) -> str:
        """Everything the model wrote and was shown this turn."""
        ...

    def wait_step(self, forced: bool) -> dict[str, Any]:
        """The step that reports a turn ending in a `wait` the loop chose."""
        ...

    def accepted_step(self, parsed: Parsed) -> dict[str, Any] | None:
        """The step that reports an accepted final action, or None when its
        text was reported already (`ActionText`)."""
        ...
