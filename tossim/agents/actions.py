"""Final actions (a tag and its arguments) to engine Commands, and fault
observations for whatever cannot be executed.

Every error is an `IllegalCommand` with a fault kind (seed 002):
expression (unknown or ambiguous name; `candidates` are the players meant),
parameter (missing, extra or malformed argument), intention (that action is
not available now) and premise (the target is dead, jailed, not in the game,
or otherwise not a legal target; `candidates` are the legal targets).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tossim.agents.escape import escape_text
from tossim.agents.memory import SeatMemory
from tossim.engine.commands import (
    Chat,
    Command,
    DayAction,
    Judge,
    NightAction,
    Vote,
    Whisper,
    WriteDeathNote,
    WriteWill,
)
from tossim.engine.legal import VERDICTS, IllegalCommand, LegalAction
from tossim.engine.state import MAX_CHAT, MAX_DEATH_NOTE, MAX_WILL
from tossim.engine.view import RosterEntry, SelfView

# final action tag -> the LegalAction kind that allows it (wait needs none)
FINAL_ACTIONS: dict[str, str | None] = {
    "speak": "chat", "whisper": "whisper", "wait": None, "vote": "vote", "judge": "judge",
    "night": "night", "will": "will", "death_note": "death_note", "reveal": "reveal",
    "jail": "jail", "seance": "seance",
}
# the arguments each final action takes (canonical form, both protocols)
ACTION_ARGS: dict[str, tuple[str, ...]] = {
    "speak": ("text",), "whisper": ("target", "text"), "wait": (), "vote": ("target",),
    "judge": ("verdict",), "night": ("targets",), "will": ("text",),
    "death_note": ("text",), "reveal": (), "jail": ("target",), "seance": ("target",),
}
TEXT_LIMITS: dict[str, int] = {"speak": MAX_CHAT, "whisper": MAX_CHAT, "will": MAX_WILL,
                               "death_note": MAX_DEATH_NOTE}
SELF_WORDS = ("yourself", "myself", "me", "self")
_PLAYER_N = re.compile(r"^(?:player\s*|p|#)?\s*(\d+)$", re.IGNORECASE)


def display_name(name: str) -> str:
    """A player's name as prompts and the grammar write it (escaped)."""
    return escape_text(name)


def attr_name(name: str) -> str:
    """The name inside `to="..."` (no double quotes)."""
    return escape_text(name).replace('"', "'")


def final_tags(legal: Sequence[LegalAction], wait: bool = True) -> list[str]:
    """The final action tags available now; `wait` unless `wait=False` (a
    seat that acts while its phase's action is open, `may_wait`)."""
    kinds = {a.kind for a in legal}
    return [tag for tag, kind in FINAL_ACTIONS.items()
            if kind in kinds or (kind is None and wait)]


SIDE_TAGS = frozenset({"speak", "whisper", "will", "death_note"})
"""Final actions that never use up the phase's action (docs/agents.md,
"The phase's action"): after one of them the seat gets another turn for it."""
PHASE_KINDS = ("vote", "judge", "night")
_DONE = {"vote": "vote", "judge": "verdict", "night": "night_action"}


def open_phase_actions(legal: Sequence[LegalAction], you: SelfView) -> list[str]:
    """The kinds of phase action ("vote", "judge", "night") legal now and not
    yet taken by the seat (its View's `you`)."""
    return [a.kind for a in legal
            if a.kind in PHASE_KINDS and getattr(you, _DONE[a.kind]) in (None, "", ())]


def phase_action_left(legal: Sequence[LegalAction], you: SelfView) -> bool:
    """Is the phase's action (a vote, a verdict, a night ability) legal now
    and not yet taken by the seat?"""
    return bool(open_phase_actions(legal, you))


def open_jail(legal: Sequence[LegalAction], you: SelfView) -> list[LegalAction]:
    """A Jailor's jail for tonight while it has chosen none today: the day
    ability its role is played by, which a structured-move seat takes as it
    takes a vote (seen in a lobby: a Jailor model seat never jailed anyone
    in three days; docs/agents.md, "The phase's action")."""
    return [a for a in legal if a.kind == "jail" and you.jail_choice is None]


def public_chat(legal: Sequence[LegalAction]) -> list[LegalAction]:
    """The legal public chat (a day's talk; not a night's Mafia or jail chat)."""
    return [a for a in legal if a.kind == "chat" and (not a.options or "public" in a.options)]


def owes_speech(memory: SeatMemory) -> bool:
    """A day's talk (Day 1 or a Discussion) in which the seat may speak in
    public and has not yet today."""
    if memory.phase not in ("day1", "discussion") or not public_chat(memory.legal):
        return False
    return not any(e["key"] == "chat.public" and (e.get("data") or {}).get("author") == memory.slot
                   for e in memory.chat(memory.day))


def may_wait(memory: SeatMemory, abstain: bool) -> bool:
    """Whether a seat is offered `wait` this turn. A seat that may abstain
    always is; one that may not (`LoopConfig.abstain`, the structured-move
    seats of small models) is offered it only while no phase action (a vote,
    a verdict, a night ability, a Jailor's jail) is open to it and it owes
    no speech today, so it votes in every Voting, uses its ability every
    night and says something every day (docs/agents.md, "The phase's action")."""
    return abstain or not (phase_action_left(memory.legal, memory.you) or owes_speech(memory)
                           or open_jail(memory.legal, memory.you))


def phase_actions_only(legal: Sequence[LegalAction]) -> list[LegalAction]:
    """The legal actions less speech, whispers, wills and notes: the turn a
    seat gets for the phase's action after one of those (`wait` stays)."""
    return [a for a in legal if a.kind in PHASE_KINDS]


def resolve_name(text: str, names: Mapping[int, str]) -> int:
    """A player's slot from a name as written ("Player 3", "3", "player 3", a
    roster name, or an unambiguous prefix of one). Raises an expression fault
    with the candidates when it is unknown or ambiguous."""
    t = " ".join(str(text).split()).strip(" .,!?\"'")
    if not t:
        raise IllegalCommand("No player was named.", "parameter", tuple(sorted(names)))
    exact = [s for s, n in names.items() if n == t]
    if len(exact) == 1:
        return exact[0]
    shown = [s for s, n in names.items() if t in (display_name(n), attr_name(n))]
    if len(shown) == 1:  # the escaped form the prompt and the grammar show
        return shown[0]
    folded = [s for s, n in names.items() if n.casefold() == t.casefold()]
    if len(folded) == 1:
        return folded[0]
    m = _PLAYER_N.match(t)
    if m and int(m.group(1)) in names:
        return int(m.group(1))
    prefix = [s for s, n in names.items() if n.casefold().startswith(t.casefold())]
    if len(prefix) == 1:
        return prefix[0]
    within = [s for s, n in names.items() if t.casefold() in n.casefold()]
    candidates = tuple(sorted(set(folded or prefix or within)))
    if len(candidates) > 1:
        raise IllegalCommand(f"'{t}' could mean several players.", "expression", candidates)
    if len(candidates) == 1:
        return candidates[0]
    raise IllegalCommand(f"There is no player called '{t}'.", "expression",
                         tuple(sorted(names)))


def _legal(legal: Sequence[LegalAction], kind: str, tag: str) -> LegalAction:
    for a in legal:
        if a.kind == kind:
            return a
    raise IllegalCommand(f"You cannot {tag.replace('_', ' ')} now.", "intention")


def _text(args: Mapping[str, Any], tag: str) -> str:
    value = args.get("text")
    if not isinstance(value, str):
        raise IllegalCommand(f"{tag} needs a text.", "parameter")
    limit = TEXT_LIMITS[tag]
    if len(value) > limit:
        raise IllegalCommand(f"Your {tag} is {len(value)} characters; the limit is {limit}.",
                             "parameter")
    if tag in ("speak", "whisper") and not value.strip():
        raise IllegalCommand(f"Your {tag} is empty.", "parameter")
    return value


def _target(value: Any, action: LegalAction, names: Mapping[int, str],
            roster: Mapping[int, RosterEntry] | None, what: str) -> int:
    if value is None or (isinstance(value, str) and not value.strip()):
        raise IllegalCommand(f"Name a player to {what}.", "parameter", action.targets)
    if isinstance(value, int) and not isinstance(value, bool):
        if value not in names:
            raise IllegalCommand(f"There is no player {value} in this game.", "premise",
                                 action.targets)
        slot = value
    elif isinstance(value, str):
        slot = resolve_name(value, names)
    else:
        raise IllegalCommand(f"Name a player to {what}.", "parameter", action.targets)
    if slot not in action.targets:
        entry = (roster or {}).get(slot)
        who = names.get(slot, f"Player {slot}")
        if entry is not None and not entry.alive and what != "revive":
            reason = f"{who} is dead."
        elif entry is not None and entry.revealed_mayor:
            reason = f"{who} is the revealed Mayor."
        else:
            reason = f"You cannot {what} {who} now."
        raise IllegalCommand(reason, "premise", action.targets)
    return slot


def split_targets(text: str, names: Mapping[int, str]) -> list[str]:
    """"Player 3 and Player 5" -> two names; a split is taken only where both
    sides resolve to players (names may themselves contain "and")."""
    t = text.strip()
    for m in re.finditer(r"\s+(?:and|&)\s+|\s*,\s*", t):
        left, right = t[:m.start()], t[m.end():]
        try:
            resolve_name(left, names)
            resolve_name(right, names)
        except IllegalCommand:
            continue
        return [left, right]
    try:
        resolve_name(t, names)
    except IllegalCommand:
        return [p for p in re.split(r"\s+(?:and|&)\s+|\s*,\s*", t) if p]
    return [t]


def to_command(slot: int, tag: str, args: Mapping[str, Any], legal: Sequence[LegalAction],
               names: Mapping[int, str],
               roster: Sequence[RosterEntry] | None = None) -> Command | None:
    """The Command for a final action of seat `slot` (None for `wait`).

    `args` hold the canonical arguments of ACTION_ARGS (`target` a name or a
    slot, `targets` a list of them or one string "A and B", `text`,
    `verdict`). Raises IllegalCommand with a fault kind when it cannot be done."""
    if tag not in FINAL_ACTIONS:
        raise IllegalCommand(f"There is no action called '{tag}'.", "intention")
    extra = set(args) - set(ACTION_ARGS[tag])
    if extra:
        raise IllegalCommand(f"{tag} takes no argument {', '.join(sorted(extra))}.",
                             "parameter")
    if tag == "wait":
        return None
    kind = FINAL_ACTIONS[tag]
    assert kind is not None
    action = _legal(legal, kind, tag)
    by_slot = {r.slot: r for r in roster or ()}
    if tag == "speak":
        return Chat(slot, _text(args, tag))
    if tag == "whisper":
        target = _target(args.get("target"), action, names, by_slot, "whisper to")
        return Whisper(slot, target, _text(args, tag))
    if tag == "vote":
        return Vote(slot, _target(args.get("target"), action, names, by_slot, "vote for"))
    if tag == "judge":
        verdict = str(args.get("verdict", "")).strip().lower()
        if verdict not in VERDICTS:
            raise IllegalCommand(f"A verdict is one of {', '.join(VERDICTS)}.", "parameter")
        return Judge(slot, verdict)
    if tag == "night":
        return NightAction(slot, _night_targets(slot, args.get("targets"), action, names,
                                                by_slot))
    if tag == "will":
        return WriteWill(slot, _text(args, tag))
    if tag == "death_note":
        return WriteDeathNote(slot, _text(args, tag))
    if tag == "reveal":
        return DayAction(slot, "reveal")
    return DayAction(slot, tag, _target(args.get("target"), action, names, by_slot, tag))


def _night_targets(slot: int, value: Any, action: LegalAction, names: Mapping[int, str],
                   roster: Mapping[int, RosterEntry]) -> tuple[int, ...]:
    if action.n_targets == 0:  # an ability on yourself (Veteran alert)
        if value in (None, "", [], ()) or (isinstance(value, str)
                                           and value.strip().lower() in SELF_WORDS):
            return (slot,)
        given = value if isinstance(value, list | tuple) else [value]
        if len(given) == 1 and str(given[0]).strip().lower() in SELF_WORDS:
            return (slot,)
        raise IllegalCommand(f"{action.ability} takes no target: write 'yourself'.",
                             "parameter", (slot,))
    if value is None or value == "" or value == [] or value == ():
        raise IllegalCommand(f"Name {action.n_targets} player(s) to {action.ability}.",
                             "parameter", action.targets)
    if isinstance(value, str):
        items: list[Any] = split_targets(value, names) if action.n_targets > 1 else [value]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        items = [value]
    if len(items) != action.n_targets:
        raise IllegalCommand(f"{action.ability} takes {action.n_targets} target(s), "
                             f"not {len(items)}.", "parameter", action.targets)
    slots = tuple(_target(v, action, names, roster, action.ability) for v in items)
    if len(set(slots)) != len(slots):
        raise IllegalCommand("Name two different players.", "parameter", action.targets)
    return slots


def fault_observation(exc: IllegalCommand, names: Mapping[int, str] | None = None) -> str:
    """The <observation> text for a failed action or tool call: the fault kind,
    the reason and, as in seed 002's Disambiguate, the candidates."""
    text = f"[{exc.fault} fault] {escape_text(exc.reason)}"
    if exc.candidates:
        listed = ", ".join(escape_text((names or {}).get(c, f"Player {c}"))
                           for c in exc.candidates)
        text += f" Candidates: {listed}."
    hint = {"expression": " Write the name exactly as listed.",
            "parameter": " Give exactly the arguments the action takes.",
            "premise": " Choose one of the candidates.",
            "intention": " Choose one of the actions listed as available now."}.get(exc.fault, "")
    return text + hint
