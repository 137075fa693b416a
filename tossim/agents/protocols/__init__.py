"""Parsers for the two output protocols: XML tags (seed 003) and JSON (seed 001).

Both turn one generated segment into a `Parsed(kind, name, args, thought)`:
kind "tool" (run it, append the observation, resume) or "final" (map it to a
Command with `actions.to_command`). Args use the canonical names of
`actions.ACTION_ARGS` for final actions and `{<arg kind>: value}` for tools
(`{"player": "Player 3"}`, `{"day": "2"}`, `{}` for no argument).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tossim.agents.actions import FINAL_ACTIONS
from tossim.agents.tools import TOOLS


class ProtocolError(ValueError):
    """The model's output does not have the protocol's shape."""


@dataclass(frozen=True)
class Parsed:
    kind: str  # tool | final
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    thought: str = ""

    @property
    def tool_arg(self) -> str:
        """A tool call's single argument as a string ("" for none)."""
        return "" if not self.args else str(next(iter(self.args.values())))


def kind_of(name: str) -> str:
    if name in TOOLS:
        return "tool"
    if name in FINAL_ACTIONS:
        return "final"
    raise ProtocolError(f"unknown tool or action {name!r}")


__all__ = ["Parsed", "ProtocolError", "kind_of"]
