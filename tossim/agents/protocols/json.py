"""The JSON protocol (after seed 001): one object per step.

    {"thought": "...", "action": "check_will", "args": {"player": "Player 3"}}
    {"thought": "...", "action": "vote", "args": {"target": "Player 4"}}
    {"thought": "...", "action": "night", "args": {"targets": ["Player 2", "Player 6"]}}
    {"thought": "...", "action": "wait", "args": {}}

`action` is a tool name (a tool call: the loop runs it and resumes) or a final
action (seed 001's FINISH becomes the final action itself). `args` is an
object; a JSON string holding an object (seed 001's form) is accepted too.
"""

from __future__ import annotations

import json
from typing import Any

from tossim.agents.actions import ACTION_ARGS
from tossim.agents.protocols import Parsed, ProtocolError, kind_of
from tossim.agents.tools import TOOLS


def parse(text: str) -> Parsed:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"not valid JSON: {exc.msg}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("expected a JSON object")
    extra = set(obj) - {"thought", "action", "args"}
    if extra:
        raise ProtocolError(f"unexpected field(s): {', '.join(sorted(extra))}")
    action, thought, args = obj.get("action"), obj.get("thought", ""), obj.get("args", {})
    if not isinstance(action, str):
        raise ProtocolError('"action" must be a string')
    if not isinstance(thought, str):
        raise ProtocolError('"thought" must be a string')
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            raise ProtocolError('"args" is not a JSON object') from None
    if not isinstance(args, dict):
        raise ProtocolError('"args" must be an object')
    kind = kind_of(action)
    if kind == "tool":
        spec = TOOLS[action]
        allowed = set() if spec.arg == "none" else {spec.arg}
        if set(args) - allowed:
            raise ProtocolError(f"{action} takes {spec.arg if allowed else 'no'} argument")
        out: dict[str, Any] = {k: str(v) for k, v in args.items()}
        return Parsed("tool", action, out, thought)
    if set(args) - set(ACTION_ARGS[action]):
        raise ProtocolError(f"{action} takes {', '.join(ACTION_ARGS[action]) or 'no'} "
                            "argument(s)")
    return Parsed("final", action, dict(args), thought)


def render(p: Parsed) -> str:
    return json.dumps({"thought": p.thought, "action": p.name, "args": p.args},
                      ensure_ascii=False)
