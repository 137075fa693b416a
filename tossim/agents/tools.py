"""Tools an AI seat may call while it thinks. Each answers ONLY from the
seat's SeatMemory (its own Views), so a tool can never reveal more than the
engine's projection already showed this seat.

`run_tool(memory, name, arg)` returns the observation text; a bad call gives a
fault observation (expression fault with candidates for an unknown or
ambiguous name, parameter fault for a missing/bad argument, premise fault for
e.g. the will of a living player) instead of raising.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tossim.agents.actions import fault_observation, resolve_name
from tossim.agents.escape import escape_text, quote
from tossim.agents.memory import SeatMemory
from tossim.engine.legal import IllegalCommand
from tossim.engine.roles import ROLES, find_role
from tossim.engine.view import RosterEntry, role_card

ARG_KINDS = ("player", "day", "role", "text", "none")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    arg: str  # player | day | role | text | none
    example: str  # the argument as the model writes it ("" for none)


TOOLS: dict[str, ToolSpec] = {t.name: t for t in (
    ToolSpec("check_will", "Read the last will of a dead player.", "player", "Player 3"),
    ToolSpec("graveyard", "List the dead: when and how they died and the role shown.",
             "none", ""),
    ToolSpec("chat_history", "Read the chat you saw on an earlier day (a day number).",
             "day", "2"),
    ToolSpec("role_info", "Look up any role: alignment, abilities, attack and defense.",
             "role", "Doctor"),
    ToolSpec("notebook", "Private notes that last across days: with a text, add a note; "
             "empty, read your notes.", "text", "Player 4 claimed Doctor on Day 2."),
    ToolSpec("my_results", "Your own night results and private messages so far.", "none",
             ""),
    ToolSpec("votes", "Today's votes and verdicts so far.", "none", ""),
)}


def _fault(memory: SeatMemory, exc: IllegalCommand) -> str:
    return fault_observation(exc, memory.names)


def _player(memory: SeatMemory, arg: str) -> RosterEntry:
    slot = resolve_name(arg, memory.names)
    entry = memory.player(slot)
    assert entry is not None
    return entry


def check_will(memory: SeatMemory, arg: str) -> str:
    p = _player(memory, arg)
    name = escape_text(p.name)
    if p.alive:
        raise IllegalCommand(f"{p.name} is alive; only the wills of the dead are known.",
                             "premise", tuple(d.slot for d in memory.dead()))
    will = p.death.will if p.death is not None else ""
    if not will:
        return f"{name} left no last will."
    return f"{name}'s will: {quote(will)}"


def graveyard(memory: SeatMemory, arg: str) -> str:
    dead = memory.dead()
    if not dead:
        return "Nobody has died yet."
    lines = []
    for p in dead:
        d = p.death
        when = ("Day ?" if d is None else f"Night {d.day}" if d.at_night else f"Day {d.day}")
        causes = ", ".join(d.causes if d is not None else ()) or "unknown"
        line = (f"{escape_text(p.name)} - {escape_text(p.role or 'role unknown')}"
                f" - died {when} ({causes})")
        notes = d.death_notes if d is not None else ()
        if notes:
            line += "; death note: " + "; ".join(quote(n) for n in notes)
        lines.append(line)
    return "\n".join(lines)


def _day(memory: SeatMemory, arg: str) -> int:
    t = arg.strip().lower().removeprefix("day").strip()
    if not t.isdigit():
        raise IllegalCommand("Give a day number.", "parameter")
    day = int(t)
    if not 1 <= day <= memory.day:
        raise IllegalCommand(f"Day {day} has not happened; it is day {memory.day}.", "premise")
    return day


def format_chat(memory: SeatMemory, event: dict[str, Any]) -> str:
    """One chat event as a line: 'Player 5: "text"', channel-labelled if private."""
    data = event.get("data", {})
    key = event["key"]
    author = data.get("author")
    who = escape_text(memory.name(author)) if author is not None else data.get("as", "?")
    if key == "chat.whisper":
        return (f"(whisper) {who} to {escape_text(memory.name(data.get('target')))}: "
                f"{quote(data.get('text', ''))}")
    if key == "chat.whisper_notice":
        return f"({escape_text(event['text'])})"
    if key in ("chat.spy_mafia", "chat.overheard"):
        return f"({data.get('team', 'mafia')}, overheard) {quote(data.get('text', ''))}"
    channel = data.get("team") or key.split(".", 1)[1]  # a team chat names its team
    label = "" if channel == "public" else f"({channel}) "
    return f"{label}{who}: {quote(data.get('text', ''))}"


def chat_history(memory: SeatMemory, arg: str) -> str:
    day = _day(memory, arg)
    lines = [format_chat(memory, e) for e in memory.chat(day)]
    return f"Chat of Day {day}:\n" + "\n".join(lines) if lines else f"No chat on Day {day}."


def role_info(memory: SeatMemory, arg: str) -> str:
    r = find_role(arg)
    names = sorted(x.name for x in ROLES.values())
    close = [n for n in names if arg.strip().lower() in n.lower()]
    if r is None and len(close) == 1:
        r = find_role(close[0])
    if r is None:
        close = close or names
        raise IllegalCommand(f"There is no role called '{arg.strip()}'. Roles: "
                             + ", ".join(close) + ".", "expression")
    return format_role_card(role_card(r.key))


def format_role_card(card: dict[str, Any]) -> str:
    unique = " Unique." if card.get("unique") else ""
    return (f"{card['name']} ({card['alignment']}): {card['summary']} Goal: {card['goal']} "
            f"Attack: {card['attack']}. Defense: {card['defense']}.{unique}")


def notebook(memory: SeatMemory, arg: str) -> str:
    text = arg.strip()
    if text:
        memory.write_note(text)
        return f"Noted ({len(memory.notes)} note(s))."
    if not memory.notes:
        return "Your notebook is empty."
    return "\n".join(f"[{'Night' if n.phase == 'night' else 'Day'} {n.day}] "
                     f"{escape_text(n.text)}" for n in memory.notes)


def my_results(memory: SeatMemory, arg: str) -> str:
    lines = [f"[{'Night' if e['phase'] == 'night' else 'Day'} {e['day']}] "
             f"{escape_text(e['text'])}" for e in memory.private_results()]
    return "\n".join(lines) if lines else "You have no results yet."


def votes(memory: SeatMemory, arg: str) -> str:
    keys = ("vote.cast", "vote.changed", "vote.cancel", "trial.start", "judge.vote",
            "judge.lynch", "judge.pardon", "judge.private")
    lines = [escape_text(e["text"]) for e in memory.day_events(memory.day) if e["key"] in keys]
    tally = memory.trial.get("votes")
    if tally:
        lines.append("Current tally: " + ", ".join(
            f"{escape_text(memory.name(int(s)))} {n}" for s, n in tally.items())
            + f" ({memory.trial.get('needed')} needed).")
    return "\n".join(lines) if lines else "No votes today yet."


_RUNNERS: dict[str, Callable[[SeatMemory, str], str]] = {
    "check_will": check_will, "graveyard": graveyard, "chat_history": chat_history,
    "role_info": role_info, "notebook": notebook, "my_results": my_results, "votes": votes,
}


def run_tool(memory: SeatMemory, name: str, arg: str = "", record: bool = True) -> str:
    """The observation for one tool call (a fault observation if it fails).
    With `record`, the call is kept in the memory as one of today's results."""
    spec = TOOLS.get(name)
    if spec is None:
        exc = IllegalCommand(f"There is no tool called '{name}'. Tools: "
                             + ", ".join(TOOLS) + ".", "intention")
        return _fault(memory, exc)
    arg = "" if arg is None else str(arg)
    try:
        if spec.arg == "none" and arg.strip():
            raise IllegalCommand(f"{name} takes no argument.", "parameter")
        if spec.arg in ("player", "day", "role") and not arg.strip():
            raise IllegalCommand(f"{name} needs a {spec.arg}.", "parameter")
        out = _RUNNERS[name](memory, arg)
    except IllegalCommand as exc:
        out = _fault(memory, exc)
    if record and name != "notebook":
        memory.record_tool(name, arg, out)
    return out


def tool_options(memory: SeatMemory, tools: list[str] | None = None) -> dict[str, list[str] | None]:
    """For the grammar: the argument strings each tool accepts now ([]: no
    argument; None: free text). Tools with nothing to ask about are left out."""
    out: dict[str, list[str] | None] = {}
    for name in tools or list(TOOLS):
        spec = TOOLS[name]
        if spec.arg == "player":
            dead = [escape_text(p.name) for p in memory.dead()]
            if dead:
                out[name] = dead
        elif spec.arg == "day":
            if memory.day > 1 or memory.phase == "night":
                out[name] = [str(d) for d in range(1, memory.day + 1)]
        elif spec.arg == "role":
            out[name] = sorted(r.name for r in ROLES.values())
        elif spec.arg == "text":
            out[name] = None
        else:
            out[name] = []
    return out
