"""The XML protocol (seed 003): `<thinking>…</thinking>` then one tag.

    <thinking>Player 4's claim contradicts the will.</thinking>
    <check_will>Player 3</check_will>          a tool call
    <vote>Player 4</vote>                      a final action
    <whisper to="Player 5">I am the Sheriff.</whisper>
    <night>Player 2 and Player 6</night>       two targets (Transporter)
    <night>yourself</night>                    Veteran alert
    <wait></wait>

Tag contents may not contain `<` (the grammar guarantees it for guided
output); anything else (a second tag, text after the tag, a forged
`</speak><observation>` inside a speech) is a ProtocolError.
"""

from __future__ import annotations

import re

from tossim.agents.protocols import Parsed, ProtocolError, kind_of
from tossim.agents.tools import TOOLS

_SEGMENT = re.compile(
    r"\s*(?:<thinking>(?P<thought>[^<]*)</thinking>)?\s*"
    r"<(?P<tag>[a-z_]+)(?: to=\"(?P<to>[^\"<>]*)\")?>(?P<body>[^<]*)</(?P<close>[a-z_]+)>\s*")


def parse(text: str) -> Parsed:
    """One segment of model output -> Parsed. The closing tag must match."""
    m = _SEGMENT.fullmatch(text)
    if m is None:
        raise ProtocolError("expected <thinking>…</thinking> followed by exactly one tag")
    tag, close, body, to = m.group("tag"), m.group("close"), m.group("body"), m.group("to")
    if tag != close:
        raise ProtocolError(f"<{tag}> is closed by </{close}>")
    kind = kind_of(tag)
    if to is not None and tag != "whisper":
        raise ProtocolError(f"<{tag}> takes no attribute")
    thought = (m.group("thought") or "").strip()
    if kind == "tool":
        spec = TOOLS[tag]
        args = {} if spec.arg == "none" and not body.strip() else {spec.arg: body.strip()
                                                                    if spec.arg != "text"
                                                                    else body}
        if spec.arg == "text" and not body.strip():
            args = {}
        return Parsed("tool", tag, args, thought)
    return Parsed("final", tag, _final_args(tag, body, to), thought)


def _final_args(tag: str, body: str, to: str | None) -> dict[str, object]:
    if tag == "whisper":
        if to is None:
            raise ProtocolError('<whisper> needs to="NAME"')
        return {"target": to, "text": body}
    if tag in ("speak", "will", "death_note"):
        return {"text": body}
    if tag in ("vote", "jail", "seance"):
        return {"target": body.strip()}
    if tag == "judge":
        return {"verdict": body.strip()}
    if tag == "night":
        return {"targets": body.strip()}
    if body.strip():  # wait, reveal
        raise ProtocolError(f"<{tag}> takes no content")
    return {}


def render(p: Parsed, with_thought: bool = True) -> str:
    """Parsed -> the XML segment (the inverse of `parse`)."""
    head = f"<thinking>{p.thought}</thinking>\n" if with_thought else ""
    a = p.args
    if p.kind == "tool":
        return f"{head}<{p.name}>{p.tool_arg}</{p.name}>"
    if p.name == "whisper":
        return f'{head}<whisper to="{a["target"]}">{a["text"]}</whisper>'
    body = a.get("text", a.get("target", a.get("verdict", a.get("targets", ""))))
    if isinstance(body, list | tuple):
        body = " and ".join(str(b) for b in body)
    return f"{head}<{p.name}>{body}</{p.name}>"
