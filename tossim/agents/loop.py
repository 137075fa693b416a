"""The interrupt-and-resume tool loop (seed 003): one turn of one seat.

Every model seat plays its turns here, whatever reaches the model: token IDs
under a grammar (`ToolLoop`, `token_transport.py`) or a chat API
(`chat_seat.ChatSeat`, `chat_transport.py`). The loop owns the turn's control
flow; the transport (`transport.TurnTransport`) only makes requests and
keeps the context. XML protocol (the seed's loop exactly):

    context = chat template(system prompt, turn context)       token IDs
    <thinking> free text ... <check_will>Player 3</check_will>   interrupt: run the tool
    <observation>...</observation>                             injected by the loop
    ... the SAME thought resumes (no new <thinking>) ... more tool calls ...
    </thinking>
    <final action>                                            the turn's Command

One attempt is a thought with up to `max_tool_calls` tool calls per turn (a
call repeated in the same thought is refused with an observation), then a
final action. The action is checked (`final_check.py`: the engine's rules,
then the text guard); a refused or unreadable one gets a fault observation
(seed 002) and another attempt, up to `max_retries`; the guard's second
refusal falls back to structured moves or ends the turn. When retries, the
turn's token budget or its time (a `deadline`, time.monotonic()) run out the
seat waits. So a turn always ends with one legal final action (`wait` is one).
Every step (thought, tool call, fault, action) is reported to `on_step` as it
completes and kept in `TurnResult.steps` (docs/agents.md, "The tool loop").
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import aclosing

from tossim.agents.actions import final_tags, may_wait
from tossim.agents.final_check import Refused, check_final, refuse_illegal
from tossim.agents.loop_config import DEFAULT_THINK_BUDGET, MOVES_THINK_SHARE, LoopConfig
from tossim.agents.memory import SeatMemory
from tossim.agents.moves import SPEECH_MODES, SPEECH_TAGS, speak_move
from tossim.agents.moves import action_lines as moves_action_lines
from tossim.agents.personas import Persona
from tossim.agents.prompting import build_messages
from tossim.agents.protocols import Parsed
from tossim.agents.token_transport import TokenTransport
from tossim.agents.tools import run_tool
from tossim.agents.transport import (
    ActionText,
    Failed,
    Final,
    Thought,
    ToolCall,
    TurnTransport,
    Unreadable,
)
from tossim.agents.turn import StepCallback, Turn, TurnResult, TurnRules, TurnStats, prompt_text
from tossim.engine.commands import Command
from tossim.engine.legal import IllegalCommand
from tossim.inference.base import Backend
from tossim.inference.seeds import derive_seed

__all__ = ["DEFAULT_THINK_BUDGET", "MOVES_THINK_SHARE", "LoopConfig", "StepCallback",
           "ToolLoop", "TurnResult", "TurnRules", "TurnStats", "phase_turn_seconds",
           "play_turn", "prompt_text"]

PROTOCOLS = ("xml", "json")
STEP_KINDS = ("thinking", "tool", "fault", "action")
# A turn in a timed phase ends this many seconds (at most this share of the
# time left) before the phase does, so its commands are applied in time (the
# server and `tossim bench agents` alike)
TURN_MARGIN_S = 2.0
TURN_MARGIN_SHARE = 0.2
REPEATED = {
    "thought": ("[repeated call] You already called {name} with this argument in this "
                "thought; its answer is above. Use it, call another tool or end the thought."),
    "turn": ("[repeated call] You already called {name} with this argument in this turn; "
             "its answer is above."),
}


def phase_turn_seconds(left: float) -> float:
    """A model turn's time when `left` seconds of its phase are left."""
    return max(0.0, left - min(TURN_MARGIN_S, TURN_MARGIN_SHARE * left))


async def play_turn(transport: TurnTransport, t: Turn,
                    summaries: Mapping[int, str] | None = None) -> TurnResult:
    """Play turn `t` through `transport` to one legal final action (see the
    module docstring)."""
    rules, stats, memory = t.rules, t.stats, t.memory
    while True:
        if t.guarded > 1 and not t.structured:  # refused twice, no move to fall back on
            stats.silenced = True
            return _wait(transport, t)
        if t.out_of_time():
            stats.late = True
        spent = rules.turn_tokens is not None and rules.turn_tokens - stats.generated_tokens <= 0
        if spent or t.retries > rules.max_retries or stats.late:
            stats.forced = True
            return _wait(transport, t)
        if rules.repeat_scope == "thought":  # each attempt is a new thought
            t.calls_made.clear()
        parsed: Parsed | None = None
        async with aclosing(transport.attempt(t)) as events:
            async for event in events:
                match event:
                    case Thought(text):
                        t.step("thinking", text=text)
                    case ToolCall():
                        _call_tool(transport, t, event)
                    case Unreadable(text):
                        stats.malformed += 1
                        transport.observe(text)
                        t.step("fault", fault="expression", text=text)
                    case ActionText(text):
                        t.step("action", text=text)
                    case Final(final):
                        parsed = final
                    case Failed(kind):  # the model could not be reached: abstain
                        t.step("fault", fault="error", text=kind)
                        stats.forced = True
                        return _wait(transport, t)
        if parsed is None:  # unreadable (observed already), or no action in time
            t.retries += 1
            continue
        t.move = None
        checked: Command | None | Refused
        try:
            if t.structured and parsed.name in SPEECH_TAGS:
                parsed, t.move = speak_move(memory, parsed, derive_seed(t.seed, 0))
        except IllegalCommand as exc:
            checked = refuse_illegal(exc, memory, stats)
        else:
            # a speech move is built from the game's own facts and rendered
            # by us: only text the model wrote itself goes through the guard
            checked = check_final(memory, parsed.name, parsed.args, stats,
                                  prompt=transport.prompt_text(), summaries=summaries,
                                  guard=t.move is None)
        if isinstance(checked, Refused):
            text = checked.text
            if checked.fault == "degenerate":
                # a degenerate text is resampled once (the action again, after
                # what is left of the thought); refused again, the seat says a
                # structured move instead (one it can say now), else waits
                t.guarded += 1
                if t.guarded > 1 and rules.second_refusal == "silence":
                    stats.silenced = True
                    return _wait(transport, t)
                if t.guarded > 1 and _move_fallback(t):
                    text += " Say it as one of these moves instead:\n" + "\n".join(
                        line for tag in ("speak", "will", "death_note")
                        if tag in final_tags(memory.legal)
                        for line in moves_action_lines(memory, tag, rules.protocol))
            else:
                t.retries += 1
            transport.observe(text)
            t.step("fault", fault=checked.fault, text=text)
            continue
        stats.moved = t.structured and not rules.moves and t.move is not None
        accepted = transport.accepted_step(parsed)
        if accepted is not None:
            t.report(accepted)
        return _done(transport, t, checked, parsed.name)


def _call_tool(transport: TurnTransport, t: Turn, call: ToolCall) -> None:
    """Run a tool and observe its answer; a call made before in the repeat
    scope is refused with an observation instead. Either counts toward
    `max_tool_calls`, so a model that repeats itself runs out of tool calls,
    not of context."""
    parsed = call.parsed
    t.stats.tool_calls += 1
    if t.repeated(parsed.name, dict(parsed.args)):
        t.stats.repeated_tools += 1
        text = REPEATED[t.rules.repeat_scope].format(name=parsed.name)
        transport.observe(text)
        t.step("fault", fault="repeat", text=text)
        return
    obs = run_tool(t.memory, parsed.name, parsed.tool_arg)
    transport.observe(obs)
    t.step("tool", name=parsed.name, args=call.shown, observation=obs)


def _move_fallback(t: Turn) -> bool:
    """Turn the rest of `t` to structured moves when a speech, will or note
    may be said now (whispers have no moves); False when not."""
    if t.structured or not set(final_tags(t.memory.legal)) & set(SPEECH_TAGS):
        return False
    t.structured = True
    return True


def _wait(transport: TurnTransport, t: Turn) -> TurnResult:
    t.report(transport.wait_step(t.stats.forced))
    return _done(transport, t, None, "wait")


def _done(transport: TurnTransport, t: Turn, cmd: Command | None, action: str) -> TurnResult:
    t.stats.seconds = t.seconds()
    if t.out_of_time() and cmd is not None:
        t.stats.late = True  # acted, but after its deadline
    return TurnResult(cmd, action, transport.transcript(), t.stats,
                      prompt=transport.prompt_text(), steps=t.steps,
                      move=t.move if cmd is not None else None)


class ToolLoop:
    """Runs turns for token-ID seats against one backend: the turn's prompt,
    then `play_turn` over a `TokenTransport`."""

    def __init__(self, backend: Backend, config: LoopConfig | None = None) -> None:
        self.backend = backend
        self.config = config or LoopConfig()
        if self.config.protocol not in PROTOCOLS:
            raise ValueError(f"unknown protocol {self.config.protocol!r}")
        if self.config.speech not in SPEECH_MODES:
            raise ValueError(f"speech is one of {', '.join(SPEECH_MODES)}, "
                             f"not {self.config.speech!r}")

    async def run_turn(self, memory: SeatMemory, *, summaries: Mapping[int, str] | None = None,
                       persona: Persona | str | None = None, key: str = "",
                       seed: int = 0, on_step: StepCallback | None = None,
                       deadline: float | None = None) -> TurnResult:
        """One turn; with a `deadline` (time.monotonic()) it acts before it
        (docs/agents.md#deadlines)."""
        cfg = self.config
        # the turn reads this module's `time` (a test drives it on a fake clock)
        t = Turn(memory, cfg.rules(), seed=seed, on_step=on_step, deadline=deadline,
                 clock=time)
        # is `wait` offered this turn (`actions.may_wait`)? The legal actions do
        # not change within a turn: the prompt and every grammar agree
        wait = may_wait(memory, cfg.may_abstain)
        messages = build_messages(memory, summaries, cfg.protocol, persona, cfg.max_tool_calls,
                                  speech=cfg.speech, seed=seed, wait=wait)
        transport = TokenTransport(self.backend, cfg, t, messages, key=key, wait=wait)
        return await play_turn(transport, t, summaries)
