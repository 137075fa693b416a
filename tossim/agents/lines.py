"""What the text guard compares a seat's text with (docs/agents.md, "The
text guard"): every line of the game the seat has seen, and the lines it may
quote word for word. Built only from the seat's own memory (its Views)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tossim.agents.guard import degenerate
from tossim.agents.memory import CHAT_KEYS, SeatMemory
from tossim.agents.prompting import results_lines, will_example

GUARDED_TAGS = ("speak", "whisper", "will", "death_note")
"""Final actions whose text a model writes (and the guard checks)."""


def game_lines(memory: SeatMemory, summaries: Mapping[int, str] | None = None) -> list[str]:
    """Every line written in the game so far that the seat has seen: chat on
    every channel, wills and death notes found on bodies, day summaries."""
    out: list[str] = []
    for e in memory.events:
        data = e.get("data") or {}
        if e["key"] in CHAT_KEYS:
            out.append(str(data.get("text", "")))
        elif e["key"] == "dawn.will":
            out.append(str(data.get("will", "")))
        elif e["key"] == "dawn.death_note":
            out.append(str(e.get("text", "")))
    out.extend(str(s) for s in (summaries or {}).values())
    return [line for line in out if line]


def quotable_lines(memory: SeatMemory, tag: str) -> list[str]:
    """What the seat may copy into a will or a death note: its own results
    (the text of each result as the engine wrote it and as the prompt shows
    it, and the will example built from them: a will that says what the seat
    found is what a will is for) and its current will or note (a will is
    rewritten by adding to it)."""
    if tag not in ("will", "death_note"):
        return []
    you = memory.you
    out = [str(e["text"]) for e in memory.private_results()] + results_lines(memory)
    if tag == "will":
        out.append(will_example(memory))
    out += [you.will, you.death_note]
    return [line for line in out if line]


def player_names(memory: SeatMemory) -> list[str]:
    return list(memory.names.values())


def guard_action(memory: SeatMemory, name: str, args: Mapping[str, Any], *, prompt: str,
                 summaries: Mapping[int, str] | None = None) -> str | None:
    """Why the text of a speech, whisper, will or death note is not a
    player's (`guard.degenerate` against the turn's prompt and the game's
    lines), or None. An empty will or note is a choice, not a text."""
    if name not in GUARDED_TAGS:
        return None
    text = str(args.get("text") or "")
    if not text.strip() and name in ("will", "death_note"):
        return None
    return degenerate(text, prompt_text=prompt, earlier_lines=game_lines(memory, summaries),
                      player_names=player_names(memory), quotable=quotable_lines(memory, name))


def guard_observation(reason: str) -> str:
    """What the seat is told when its text was refused (it may try once more)."""
    return (f"[guard] Not sent: {reason}. Write what you think in your own words, one "
            "sentence, naming only players of this game.")
