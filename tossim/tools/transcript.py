"""Readable transcripts of a game as one viewer saw it (the CLI's output).

Works on projected events only (`tossim.engine.view`), so a public transcript
can never print what a public spectator could not have seen.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

PHASE_TITLES = {
    "day1": "Day {day}",
    "discussion": "Day {day} · Discussion",
    "voting": "Day {day} · Voting",
    "defense": "Day {day} · Defense",
    "judgement": "Day {day} · Judgement",
    "last_words": "Day {day} · Last Words",
    "night": "Night {day}",
    "ended": "Game over",
}

CHANNEL_TAGS = {
    "chat.mafia": "[Mafia] ",
    "chat.dead": "[Dead] ",
    "chat.jail": "[Jail] ",
    "chat.seance": "[Seance] ",
    "chat.whisper": "[Whisper] ",
    "chat.spy_mafia": "[Spy] ",
    "chat.team": "[Team] ",
    "chat.overheard": "[Overheard] ",
}

# Phase banners the transcript prints itself, and acknowledgements that only
# repeat what the next lines say (a saved will, "You voted guilty.").
SKIPPED_KEYS = frozenset({"phase.day1", "phase.discussion", "phase.night", "will.saved",
                          "death_note.saved", "judge.private"})


def render_lines(events: Iterable[dict[str, Any]], names: dict[int, str]) -> list[str]:
    """Turn projected events into transcript lines with a heading per phase."""
    lines: list[str] = []
    current: tuple[int, str] | None = None
    for e in events:
        if (e["day"], e["phase"]) != current:
            current = (e["day"], e["phase"])
            title = PHASE_TITLES.get(e["phase"], e["phase"]).format(day=e["day"])
            lines += ["", f"== {title} =="]
        if e["key"] not in SKIPPED_KEYS:
            # wills and chat may hold line breaks: keep them inside the entry
            lines.append(_line(e, names).replace("\n", "\n      "))
    return lines


def _line(e: dict[str, Any], names: dict[int, str]) -> str:
    text = e["text"]
    if e["key"] in CHANNEL_TAGS:
        return f"  {CHANNEL_TAGS[e['key']]}{text}"
    if e["key"].startswith("chat."):
        return f"  {text}"
    audience = e["audience"]
    if audience in ("players", "mafia", "vampire", "dead", "jail", "seance"):
        who = _recipients(e, names)
        return f"  ({who}) {text}" if who else f"  (private) {text}"
    return f"  * {text}"


def _recipients(e: dict[str, Any], names: dict[int, str]) -> str:
    players = e.get("to")
    if not players:
        return ""
    return ", ".join(names.get(p, str(p)) for p in players)
