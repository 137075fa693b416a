"""A model seat taken up again after a restart, rebuilt from its stored turns.

A server that resumes a game makes its seats afresh; their memory of the
game's events comes back with their first View (the engine's log), but what
only the seat kept would be lost: its turn counter (its sampling seeds would
repeat), its tool results and notes, the version of the game it last acted
on, its turn records and the sums of its metrics. `restore_seat` rebuilds them
from the turn records the server stored (`Store.turns`: each with day,
phase, steps, action, tokens and, since they are kept, `phase_seq` and
`version`), and `acted_in` says which phase a seat already played so it is
not asked again there (docs/architecture.md, "Resume").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tossim.agents.memory import Note, ToolRecord


def _tool_arg(args: Any) -> str:
    """A stored tool step's argument as the tool took it (`Parsed.tool_arg`)."""
    if isinstance(args, dict):
        return "" if not args else str(next(iter(args.values())))
    return "" if args is None else str(args)


def restore_seat(seat: Any, turns: Sequence[dict[str, Any]]) -> int:
    """Rebuild `seat` (an `LLMSeat` or `ChatSeat`: `memory`, `metrics`,
    `turn_log`; a worker's `RemoteSeat` has no memory here, its worker's seat
    has) from its stored turns, oldest first. Returns how many turns went into
    its `turn_log` (they are stored already). A seat without a `turn_log` and
    `metrics` is left as it is (0)."""
    memory = getattr(seat, "memory", None)
    metrics = getattr(seat, "metrics", None)
    log = getattr(seat, "turn_log", None)
    if metrics is None or not isinstance(log, list) or not turns:
        return 0
    for turn in turns:
        raw_day = turn.get("day")
        day = raw_day if isinstance(raw_day, int) else 0
        phase = str(turn.get("phase") or "")
        for step in turn.get("steps") or ():
            if memory is None or not isinstance(step, dict) or step.get("kind") != "tool":
                continue
            name, arg = str(step.get("name") or ""), _tool_arg(step.get("args"))
            if name == "notebook":
                if arg.strip():  # a note written (reading the notebook records nothing)
                    memory.notes.append(Note(day, phase, arg.strip()))
            elif name:
                memory.tool_log.append(ToolRecord(day, phase, name, arg,
                                                  str(step.get("observation") or "")))
        log.append({k: v for k, v in turn.items() if k not in ("slot", "seq")})
        timing = turn.get("time")
        if isinstance(timing, dict) and timing.get("abandoned"):
            metrics.timed_turns += 1  # given up at its deadline: a miss, not a turn
            metrics.misses += 1
            continue
        action = turn.get("action")
        name = (str(action.get("type") or "wait") if isinstance(action, dict)
                else str(action or "wait"))
        metrics.turns += 1  # the next turn's seed follows on (inference/seeds.py)
        metrics.actions[name] = metrics.actions.get(name, 0) + 1
        raw_tokens = turn.get("tokens")
        tokens: dict[str, Any] = raw_tokens if isinstance(raw_tokens, dict) else {}
        for field, key in (("prompt_tokens", "prompt"), ("generated_tokens", "generated"),
                           ("cached_tokens", "cached")):
            value = tokens.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                setattr(metrics, field, getattr(metrics, field) + value)
        version = turn.get("version")
        if memory is not None and isinstance(version, int) and not isinstance(version, bool):
            memory.last_turn_version = max(memory.last_turn_version, version)
    return len(turns)


def history(turns: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What `restore_seat` reads of these turn records, without prompts,
    outputs or thoughts: what a worker that takes a seat over (after a
    restart, or from a worker that left) rebuilds its seat from."""
    return [{**{k: t.get(k) for k in ("day", "phase", "phase_seq", "version", "action",
                                      "tokens", "time")},
             "steps": [s for s in t.get("steps") or ()
                       if isinstance(s, dict) and s.get("kind") == "tool"]}
            for t in turns if isinstance(t, dict)]


def acted_in(turns: Sequence[dict[str, Any]]) -> set[int]:
    """The phases (phase_seq) in which these stored turns were played (a
    turn given up at its deadline was not)."""
    return {t["phase_seq"] for t in turns
            if isinstance(t.get("phase_seq"), int) and not isinstance(t["phase_seq"], bool)
            and not (isinstance(t.get("time"), dict) and t["time"].get("abandoned"))}
