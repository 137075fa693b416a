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

import json
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
# at most one sentence of free text: its end mark, then at most a space or
# two newlines (a small model would otherwise pad with whitespace for ever)
SENTENCE = r"[^<.!?\x00-\x1f\x7f-\x9f]*(?:[.!?] ?|[.!?]?\n\n?)?"
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
    # arg "move": the text is these parts (a structured speech move, moves.py)
    body: tuple[Part, ...] = ()


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
                 allow_tools: bool = True, wait: bool = True) -> list[Choice]:
    """Every tag allowed this turn: tools first (if allowed), then final actions.
    `tools` is a list of tool names or a mapping name -> allowed argument
    strings ([] no argument, None free text), e.g. `tools.tool_options(memory)`;
    `wait=False` leaves `wait` out (`actions.may_wait`)."""
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
    for tag in final_tags(legal, wait):
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


# ---- segments as parts: one description gives the regex and the completion ---------
# JSON string contents: no quote, backslash or control character unless escaped;
# only the escapes of text the engine takes (\b, \f and \r decode to control
# characters it refuses)
JSTR = r'(?:[^"\\\x00-\x1f\x7f-\x9f]|\\["\\/nt])*'
# a speech: at least MIN_WORDS words, so an empty or one-word placeholder
# ("text", "message") is refused by the grammar (no backreferences needed)
MIN_WORDS = 3
WORD = r"[^<\s\x00-\x1f\x7f-\x9f]+"
JWORD = r'(?:[^"\\\s\x00-\x1f\x7f-\x9f]|\\["\\/nt])+'
JNONEMPTY = (r'(?:[^"\\\s\x00-\x1f\x7f-\x9f]|\\["\\/nt])'
             r'(?:[^"\\\x00-\x1f\x7f-\x9f]|\\["\\/nt])*')
PROTOCOL_TEXT = {"xml": (FREE, NONEMPTY), "json": (JSTR, JNONEMPTY)}


@dataclass(frozen=True)
class Part:
    """A literal, a choice among option strings, or free text."""

    kind: str  # lit | opt | text
    value: str = ""
    options: tuple[str, ...] = ()
    nonempty: bool = False
    min_words: int = 0  # free text of at least this many words (a speech)


def _lit(value: str) -> Part:
    return Part("lit", value)


def _jq(text: str) -> str:
    """`text` as the inside of a JSON string."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def thought_parts(protocol: str = "xml") -> list[Part]:
    """The opening of every segment: the model's private reasoning."""
    if protocol == "json":
        return [_lit('{"thought": "'), Part("text"), _lit('", ')]
    return [_lit("<thinking>"), Part("text"), _lit("</thinking>"), Part("opt", options=("\n", ""))]


def choice_parts(c: Choice, protocol: str = "xml") -> list[Part]:
    """One tag (XML) or one action object's tail (JSON, after the thought)."""
    if c.body:
        return _body_parts(c, protocol)
    if protocol == "json":
        return _json_parts(c)
    if c.arg == "none":
        return [_lit(f"<{c.tag}></{c.tag}>")]
    head = ([_lit(f'<{c.tag} to="'), Part("opt", options=c.attr_options), _lit('">')]
            if c.attr_options else [_lit(f"<{c.tag}>")])
    if c.arg in ("text", "free"):
        body = [Part("text", nonempty=c.arg == "text", min_words=_min_words(c))]
    elif c.arg == "names2":
        body = [Part("opt", options=c.options), _lit(" and "), Part("opt", options=c.options)]
    else:
        body = [Part("opt", options=c.options)]
    return head + body + [_lit(f"</{c.tag}>")]


def _body_parts(c: Choice, protocol: str) -> list[Part]:
    """A final action whose text is fixed parts (a speech move): the tag
    around them (XML), or the `text` argument's JSON string."""
    if protocol == "xml":
        return [_lit(f"<{c.tag}>"), *c.body, _lit(f"</{c.tag}>")]
    body = [Part(p.kind, _jq(p.value), tuple(_jq(o) for o in p.options)) for p in c.body]
    return [_lit(f'"action": "{c.tag}", "args": {{"text": "'), *body, _lit('"}}')]


def _min_words(c: Choice) -> int:
    """Speeches and whispers need MIN_WORDS words; wills and notes may be empty."""
    return MIN_WORDS if c.kind == "final" and c.tag in ("speak", "whisper") else 0


def _words_regex(n: int, protocol: str) -> str:
    """At least `n` words, then any free text (no backreferences)."""
    free = PROTOCOL_TEXT[protocol][0]
    word, space = (WORD, r"[ \n]+") if protocol == "xml" else (JWORD, r" +")
    return word + f"{space}{word}" * (n - 1) + free  # spelled out: no bounded quantifiers


def _json_parts(c: Choice) -> list[Part]:
    head = _lit(f'"action": "{c.tag}", "args": {{')
    if c.kind == "tool":
        if c.arg == "none":
            return [_lit(f'"action": "{c.tag}", "args": {{}}}}')]
        key = TOOLS[c.tag].arg
        if key == "day" and c.arg == "options":
            return [_lit(f'{head.value}"{key}": '), Part("opt", options=c.options), _lit("}}")]
        val = (Part("text") if c.arg == "free"
               else Part("opt", options=tuple(_jq(o) for o in c.options)))
        return [_lit(f'{head.value}"{key}": "'), val, _lit('"}}')]
    if c.arg == "none":
        return [_lit(f'"action": "{c.tag}", "args": {{}}}}')]
    names = tuple(_jq(o) for o in c.options)
    if c.tag == "whisper":
        return [_lit(f'{head.value}"target": "'), Part("opt", options=tuple(
            _jq(o) for o in c.attr_options)), _lit('", "text": "'),
            Part("text", nonempty=True, min_words=MIN_WORDS), _lit('"}}')]
    if c.arg in ("text", "free"):
        return [_lit(f'{head.value}"text": "'),
                Part("text", nonempty=c.arg == "text", min_words=_min_words(c)), _lit('"}}')]
    if c.tag == "judge":
        return [_lit(f'{head.value}"verdict": "'), Part("opt", options=c.options), _lit('"}}')]
    if c.tag == "night":
        if c.arg == "names2":
            return [_lit(f'{head.value}"targets": ["'), Part("opt", options=names),
                    _lit('", "'), Part("opt", options=names), _lit('"]}}')]
        return [_lit(f'{head.value}"targets": ["'), Part("opt", options=names), _lit('"]}}')]
    return [_lit(f'{head.value}"target": "'), Part("opt", options=names), _lit('"}}')]


def parts_regex(parts: Sequence[Part], protocol: str = "xml") -> str:
    free, nonempty = PROTOCOL_TEXT[protocol]
    out = []
    for p in parts:
        if p.kind == "lit":
            out.append(re.escape(p.value))
        elif p.kind == "opt":
            out.append(_alt(p.options))
        elif p.min_words > 1:
            out.append(_words_regex(p.min_words, protocol))
        else:
            out.append(nonempty if p.nonempty else free)
    return "".join(out)


def choice_regex(c: Choice, protocol: str = "xml") -> str:
    return parts_regex(choice_parts(c, protocol), protocol)


def turn_regex(legal: Sequence[LegalAction], names: Mapping[int, str],
               tools: Sequence[str] | ToolOptions = (), allow_tools: bool = True,
               think: bool = True, protocol: str = "xml", wait: bool = True) -> str:
    """One segment: `<thinking>FREE</thinking>` then exactly one allowed tag
    (JSON: `{"thought": "…", "action": …, "args": …}`). `think=False` gives
    only what follows the thought (the loop closed a thought cut off by
    `max_tokens` itself)."""
    alts = "|".join(choice_regex(c, protocol)
                    for c in turn_choices(legal, names, tools, allow_tools, wait))
    head = parts_regex(thought_parts(protocol), protocol) if think else ""
    return f"{head}(?:{alts})"


def choices_regex(choices: Sequence[Choice], protocol: str = "xml") -> str:
    """One of `choices`, with no thought before it (`turn_regex(...,
    think=False)` for a list of choices built by the caller)."""
    return "(?:" + "|".join(choice_regex(c, protocol) for c in choices) + ")"


@dataclass(frozen=True)
class Walk:
    """How a partial segment relates to a list of parts."""

    complete: bool  # the parts are fully matched by text[:consumed]
    consumed: int
    suffix: str  # what completes the partial text (when not complete)
    in_text: bool  # the partial text ends inside a free-text part
    text_start: int = 0  # where that free text starts


def _text_end(s: str, i: int, protocol: str) -> tuple[int, bool]:
    """Where free text starting at s[i] ends (index of its terminator) and
    whether the text is cut in the middle of a JSON escape."""
    if protocol == "xml":
        j = s.find("<", i)
        return (len(s) if j < 0 else j), False
    while i < len(s):
        ch = s[i]
        if ch == "\\":
            if i + 1 >= len(s):
                return len(s), True
            i += 2
            continue
        if ch == '"':
            return i, False
        i += 1
    return len(s), False


def walk(parts: Sequence[Part], s: str, protocol: str = "xml", i: int = 0) -> Walk | None:
    """Match `s[i:]` against `parts`. None: `s` does not fit. Otherwise either
    the parts are complete (`consumed` chars) or `s` ends inside them and
    `suffix` is the shortest way to finish (first fitting option, "..." for an
    empty text that must not be empty)."""
    if not parts:
        return Walk(True, i, "", False)
    p, rest = parts[0], parts[1:]
    tail = s[i:]
    if p.kind == "lit":
        if tail.startswith(p.value):
            return walk(rest, s, protocol, i + len(p.value))
        if p.value.startswith(tail):
            return Walk(False, len(s), p.value[len(tail):] + _finish(rest, protocol), False)
        return None
    if p.kind == "opt":
        for o in sorted(p.options, key=len, reverse=True):
            if tail.startswith(o):
                w = walk(rest, s, protocol, i + len(o))
                if w is not None:
                    return w
        for o in p.options:
            if o.startswith(tail) and o != tail:
                return Walk(False, len(s), o[len(tail):] + _finish(rest, protocol), False)
        return None
    end, in_escape = _text_end(s, i, protocol)
    body = s[i:end]
    if end < len(s):  # the text was closed by its terminator
        if p.nonempty and (not body or body[0].isspace()):
            return None
        if _words(body, protocol) < p.min_words:
            return None
        return walk(rest, s, protocol, end)
    fill = "n" if in_escape else ""
    if p.nonempty and not body:
        fill = "..."
    missing = p.min_words - _words(body + fill, protocol)
    if missing > 0:  # a speech cut off before its third word: "..." words fill it
        sep = "" if not (body + fill) or (body + fill)[-1] == " " else " "
        fill += sep + " ".join(["..."] * missing)
    return Walk(False, len(s), fill + _finish(rest, protocol), True, i)


def _words(text: str, protocol: str) -> int:
    """Words as the speech regex counts them (XML: split at spaces and
    newlines; JSON: at spaces, an escape is part of a word)."""
    return len(text.split()) if protocol == "xml" else len([w for w in text.split(" ") if w])


def _finish(parts: Sequence[Part], protocol: str) -> str:
    """The shortest text matching `parts` from their start."""
    out = []
    for p in parts:
        if p.kind == "lit":
            out.append(p.value)
        elif p.kind == "opt":
            out.append(min(p.options, key=len) if "" in p.options else p.options[0])
        elif p.min_words > 1:
            out.append(" ".join(["..."] * p.min_words))
        elif p.nonempty:
            out.append("...")
    return "".join(out)


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
    if c.body:  # a speech move: the whole text is one of the body's strings
        texts = [""]
        for p in c.body:
            texts = [t + o for t in texts for o in ((p.value,) if p.kind == "lit" else p.options)]
        props["text"] = {"type": "string", "enum": texts}
    elif c.tag == "speak" or c.tag in ("will", "death_note"):
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
                     allow_tools: bool = True, wait: bool = True) -> dict[str, Any]:
    """The JSON protocol's schema: {"thought", "action", "args"}, one branch
    per allowed tool or final action (`action` a const, `args` its object)."""
    branches = []
    for c in turn_choices(legal, names, tools, allow_tools, wait):
        branches.append({
            "type": "object",
            "properties": {"thought": {"type": "string"}, "action": {"const": c.tag},
                           "args": _arg_schema(c)},
            "required": ["thought", "action", "args"],
            "additionalProperties": False,
        })
    return {"oneOf": branches}


def tool_choices(tools: Sequence[str] | ToolOptions, names: Mapping[int, str]) -> list[Choice]:
    """The tool tags allowed now (no final actions)."""
    return [c for c in turn_choices((), names, tools, True) if c.kind == "tool"]


def thinking_regex(tools: Sequence[Choice], opened: bool, may_close: bool = True) -> str:
    """One piece of an XML thought (seed 003): free text that ends either in a
    tool tag (the loop interrupts there, injects the observation and resumes
    the SAME thought) or in `</thinking>`. `opened`: the `<thinking>` tag is
    already in the context (a resume); `tools` empty once the cap is reached;
    `may_close=False` (a seat required to check before acting) leaves out
    `</thinking>`: the piece is at most one sentence, then a tool call with a
    bounded argument (so a
    small model that would ramble on reaches its call; which tool, its
    argument and the sentence are still the model's choice).
    Free text holds no `<`, so the grammar's only end states are right after
    a tool's closing tag or after `</thinking>`: nothing may follow either."""
    head = "" if opened else re.escape("<thinking>")
    ends = [choice_regex(c, "xml") for c in tools]
    bounded = [choice_regex(c, "xml") for c in tools if c.arg != "free"]
    if not may_close and bounded:  # (a free-text tool, the notebook, could ramble on)
        return f"{head}{SENTENCE}(?:{'|'.join(bounded)})"
    ends.append(re.escape("</thinking>"))
    return f"{head}{FREE}(?:{'|'.join(ends)})"
