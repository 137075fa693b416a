"""The per-turn grammar: what an AI seat may write, as a regex (XML protocol,
for guided decoding) and as a JSON schema (JSON protocol).

XML turn (seed 003):  <thinking>FREE</thinking> followed by exactly one tag,
either a tool call (the loop stops there, appends <observation>…</observation>
and asks for the next segment) or a final action. Targets are limited to the
legal names. The regex has one alternative per tag and no backreferences;
free text is a printable class without `<` (newlines allowed); quantifiers are
unbounded (`*`, `+`): the loop's max_tokens is the length bound.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tossim.agents.actions import attr_name, display_name, final_tags
from tossim.agents.tools import TOOLS
from tossim.engine.legal import VERDICTS, LegalAction

# printable, no '<', no control characters except the newline
FREE = r"[^<\x00-\x09\x0b-\x1f\x7f-\x9f]*"
# the same, starting with a character that is not a space (non-empty text)
NONEMPTY = r"[^<\s\x00-\x1f\x7f-\x9f][^<\x00-\x09\x0b-\x1f\x7f-\x9f]*"
SEP = r"\n?"
SELF = "yourself"

ToolOptions = Mapping[str, Sequence[str] | None]


@dataclass(frozen=True)
class Choice:
    """One tag the model may write now. `arg`: text | free | names | names2 |
    self | options | none; `options` the allowed strings (names, verdicts ...)."""

    tag: str
    kind: str  # tool | final
    arg: str
    options: tuple[str, ...] = ()
    attr_options: tuple[str, ...] = ()  # whisper: the allowed to="..." names


def _names(slots: Sequence[int], names: Mapping[int, str]) -> tuple[str, ...]:
    """Names as the prompt shows them (escaped: a name cannot hold a tag)."""
    return tuple(display_name(names.get(s, f"Player {s}")) for s in slots)


def default_tool_options(tools: Sequence[str] | ToolOptions,
                         names: Mapping[int, str]) -> dict[str, Sequence[str] | None]:
    if isinstance(tools, Mapping):
        return dict(tools)
    out: dict[str, Sequence[str] | None] = {}
    for t in tools:
        kind = TOOLS[t].arg
        if kind == "player":
            out[t] = [display_name(n) for n in names.values()]
        elif kind == "role":
            from tossim.engine.roles import ROLES
            out[t] = sorted(r.name for r in ROLES.values())
        elif kind == "day":
            out[t] = ["1", "2", "3", "4", "5", "6", "7", "8", "9"]
        elif kind == "text":
            out[t] = None
        else:
            out[t] = []
    return out


def turn_choices(legal: Sequence[LegalAction], names: Mapping[int, str],
                 tools: Sequence[str] | ToolOptions = (),
                 allow_tools: bool = True) -> list[Choice]:
    """Every tag allowed this turn: tools first (if allowed), then final actions.
    `tools` is a list of tool names or a mapping name -> allowed argument
    strings ([] no argument, None free text), e.g. `tools.tool_options(memory)`."""
    out: list[Choice] = []
    if allow_tools:
        for name, opts in default_tool_options(tools, names).items():
            if opts is None:
                out.append(Choice(name, "tool", "free"))
            elif not opts:
                out.append(Choice(name, "tool", "none"))
            else:
                out.append(Choice(name, "tool", "options", tuple(opts)))
    by_kind = {a.kind: a for a in legal}
    for tag in final_tags(legal):
        if tag == "speak":
            out.append(Choice(tag, "final", "text"))
        elif tag == "whisper":
            out.append(Choice(tag, "final", "text",
                              attr_options=tuple(attr_name(n) for n in _names(
                                  by_kind["whisper"].targets, names))))
        elif tag in ("wait", "reveal"):
            out.append(Choice(tag, "final", "none"))
        elif tag in ("vote", "jail", "seance"):
            out.append(Choice(tag, "final", "names", _names(by_kind[tag].targets, names)))
        elif tag == "judge":
            out.append(Choice(tag, "final", "options", by_kind[tag].options or VERDICTS))
        elif tag == "night":
            a = by_kind["night"]
            arg = {0: "self", 1: "names"}.get(a.n_targets, "names2")
            opts = (SELF,) if a.n_targets == 0 else _names(a.targets, names)
            out.append(Choice(tag, "final", arg, opts))
        else:  # will, death_note: may be empty (clears it)
            out.append(Choice(tag, "final", "free"))
    return out


def _alt(options: Sequence[str]) -> str:
    # longest first keeps the alternation readable; fullmatch backtracks anyway
    ordered = sorted(set(options), key=lambda o: (-len(o), o))
    return "(?:" + "|".join(re.escape(o) for o in ordered) + ")"


def choice_regex(c: Choice) -> str:
    body = {"text": NONEMPTY, "free": FREE, "none": ""}.get(c.arg)
    if body is None:
        one = _alt(c.options)
        body = f"{one} and {one}" if c.arg == "names2" else one
    open_tag = f"<{c.tag}>"
    if c.attr_options:
        open_tag = f'<{c.tag} to="{_alt(c.attr_options)}">'
    return f"{open_tag}{body}</{c.tag}>"


def turn_regex(legal: Sequence[LegalAction], names: Mapping[int, str],
               tools: Sequence[str] | ToolOptions = (), allow_tools: bool = True) -> str:
    """`<thinking>FREE</thinking>` then exactly one allowed tag."""
    alts = "|".join(choice_regex(c) for c in turn_choices(legal, names, tools, allow_tools))
    return f"<thinking>{FREE}</thinking>{SEP}(?:{alts})"


def _arg_schema(c: Choice) -> dict[str, Any]:
    text = {"type": "string"}
    if c.kind == "tool":
        if c.arg == "none":
            return {"type": "object", "properties": {}, "additionalProperties": False}
        key = TOOLS[c.tag].arg
        value: dict[str, Any] = ({"type": "string", "enum": list(c.options)}
                                 if c.arg == "options" else text)
        if key == "day" and c.arg == "options":
            value = {"type": "integer", "enum": [int(o) for o in c.options]}
        return {"type": "object", "properties": {key: value}, "required": [key],
                "additionalProperties": False}
    props: dict[str, Any] = {}
    if c.tag == "speak" or c.tag in ("will", "death_note"):
        props["text"] = ({"type": "string", "minLength": 1} if c.tag == "speak" else text)
    elif c.tag == "whisper":
        props["target"] = {"type": "string", "enum": list(c.attr_options)}
        props["text"] = {"type": "string", "minLength": 1}
    elif c.tag in ("vote", "jail", "seance"):
        props["target"] = {"type": "string", "enum": list(c.options)}
    elif c.tag == "judge":
        props["verdict"] = {"type": "string", "enum": list(c.options)}
    elif c.tag == "night":
        n = {"self": 1, "names": 1, "names2": 2}[c.arg]
        props["targets"] = {"type": "array", "items": {"type": "string", "enum": list(c.options)},
                            "minItems": n, "maxItems": n}
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}


def turn_json_schema(legal: Sequence[LegalAction], names: Mapping[int, str],
                     tools: Sequence[str] | ToolOptions = (),
                     allow_tools: bool = True) -> dict[str, Any]:
    """The JSON protocol's schema: {"thought", "action", "args"}, one branch
    per allowed tool or final action (`action` a const, `args` its object)."""
    branches = []
    for c in turn_choices(legal, names, tools, allow_tools):
        branches.append({
            "type": "object",
            "properties": {"thought": {"type": "string"}, "action": {"const": c.tag},
                           "args": _arg_schema(c)},
            "required": ["thought", "action", "args"],
            "additionalProperties": False,
        })
    return {"oneOf": branches}
