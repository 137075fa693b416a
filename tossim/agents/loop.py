"""The interrupt-and-resume tool loop (seed 003) over token IDs.

One turn of one seat, XML protocol (the seed's loop exactly):

    context = chat template(system prompt, turn context)       token IDs
    <thinking> free text ... <check_will>Player 3</check_will>   interrupt: run the tool
    <observation>...</observation>                             injected by the loop
    ... the SAME thought resumes (no new <thinking>) ... more tool calls ...
    </thinking>
    <final action>                                            the turn's Command

The thought's grammar ends either at a tool's closing tag (the backend stops
there: nothing may follow a closed tag) or at `</thinking>`; up to
`max_tool_calls` tools per turn, then tools leave the grammar. The thought
has a token budget per phase (`think_budget`), shared by all its pieces; when
it is spent the loop closes the thought at a word boundary itself. Then one
final action is generated under the final actions' grammar.

JSON protocol (in the spirit of seed 001): one object per step,
`{"thought": ..., "action": tool, "args": ...}` answered by an observation,
then the next object, up to the same tool cap and thinking budget, and a last
object whose action is final.

The context is a list of token IDs that is only ever appended to (generated
tokens are kept as generated, never re-tokenised), so every resume re-uses the
backend's prefix cache. Text cut off by `max_tokens` (or by the turn's
deadline) is closed by the loop: a
thought at a word boundary, free text in an action at a word boundary with its
tag closed, a half-written name completed with the first legal name it fits.
An action the engine cannot execute gets a fault observation (seed 002) and
another try (a new thought, then an action); when retries or the turn's token
budget run out the seat waits. So a turn always ends with one legal final
action (`wait` is one). Every step (thought, tool call, fault, action) is
reported to `on_step` as it completes and kept in `TurnResult.steps`.

A turn may have a deadline (time.monotonic(); docs/agents.md#deadlines): the
thinking budget is cut to what the backend's measured speed can write before
the time kept for the final action, the thought's requests stop at that time
(the loop closes the thought), and the action's request stops at the deadline
(the loop completes it, so it stays legal). A turn that starts with little
time left skips its thought and acts at once.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tossim.agents.actions import final_tags, may_wait
from tossim.agents.escape import escape_text
from tossim.agents.final_check import Refused, check_final, refuse_illegal
from tossim.agents.grammar import (
    Choice,
    Part,
    choice_parts,
    choices_regex,
    parts_regex,
    thinking_regex,
    thought_parts,
    tool_choices,
    turn_choices,
    turn_regex,
    walk,
)
from tossim.agents.memory import SeatMemory
from tossim.agents.moves import (
    SPEECH_MODES,
    SPEECH_TAGS,
    Move,
    speak_move,
    structured_choices,
)
from tossim.agents.moves import action_lines as moves_action_lines
from tossim.agents.personas import Persona
from tossim.agents.prompting import build_messages
from tossim.agents.protocols import ProtocolError
from tossim.agents.protocols import json as json_protocol
from tossim.agents.protocols import xml as xml_protocol
from tossim.agents.tools import run_tool, tool_options
from tossim.engine.commands import Command
from tossim.engine.legal import IllegalCommand
from tossim.inference.base import Backend, GenerationRequest, Tokenizer
from tossim.inference.seeds import derive_seed

PARSERS = {"xml": xml_protocol.parse, "json": json_protocol.parse}


# thinking budget per phase, in tokens (all pieces of one thought together):
# enough to weigh claims and results before speaking; shorter where the
# choice is small (a verdict, last words)
DEFAULT_THINK_BUDGET: dict[str, int] = {
    "day1": 160, "discussion": 160, "voting": 128, "defense": 128, "judgement": 64,
    "last_words": 64, "night": 128,
}
MOVES_THINK_SHARE = 0.4
"""A structured-move seat (a small model) thinks this share of the budget:
its thought only leads into a move the grammar constrains, and on two CPU
cores each thought token of four such seats, sharing the model (decoded
together), costs a second of a phase (docs/agents.md, "The phase's action")."""
STEP_KINDS = ("thinking", "tool", "fault", "action")
# A timed turn keeps this share of its time (at least) for the final action,
# and plans its thought at this share of the backend's measured speed (the
# machine may slow down mid-turn: docs/agents.md#deadlines)
ACTION_SHARE = 0.3
SPEED_MARGIN = 0.7
# A turn in a timed phase ends this many seconds (at most this share of the
# time left) before the phase does, so its commands are applied in time (the
# server and `tossim bench agents` alike)
TURN_MARGIN_S = 2.0
TURN_MARGIN_SHARE = 0.2


def phase_turn_seconds(left: float) -> float:
    """A model turn's time when `left` seconds of its phase are left."""
    return max(0.0, left - min(TURN_MARGIN_S, TURN_MARGIN_SHARE * left))
StepCallback = Callable[[dict[str, Any]], None]
_TOOL_TAG = re.compile(r"<([a-z_]+)>[^<]*</\1>\s*$")


@dataclass(frozen=True)
class LoopConfig:
    protocol: str = "xml"
    max_tool_calls: int = 4  # tool calls per turn; after that tools leave the grammar
    # tool calls a thought must make before it may close (0: the model decides);
    # a spent thinking budget still closes it
    min_tool_calls: int = 0
    think_budget: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_THINK_BUDGET))
    think_tokens: int = 128  # the budget of a phase not in think_budget
    action_tokens: int = 64  # the final action (a speech is the longest)
    turn_tokens: int = 640  # everything generated in one turn
    max_retries: int = 2  # final actions refused before the seat waits
    retry_think_tokens: int = 32  # a thought after a refused action, if the budget is spent
    temperature: float = 0.6
    # "free": speeches, wills and notes are free text; "moves": the seat
    # chooses a structured move the server renders (docs/agents.md#speech-moves)
    speech: str = "free"
    # may the seat `wait` while its phase's action (a vote, a verdict, a night
    # ability) is open? Unset: free-text seats may, structured-move seats (small
    # models, which pick `wait` by default) act (docs/agents.md, "The phase's action")
    abstain: bool | None = None

    @property
    def may_abstain(self) -> bool:
        return self.abstain if self.abstain is not None else self.speech != "moves"

    def budget(self, phase: str) -> int:
        """The thinking budget (tokens) of one turn in `phase` (a share of it
        for a structured-move seat, `MOVES_THINK_SHARE`)."""
        tokens = int(self.think_budget.get(phase, self.think_tokens))
        return max(16, int(tokens * MOVES_THINK_SHARE)) if self.speech == "moves" else tokens

    def scaled(self, factor: float) -> LoopConfig:
        """The same config with every thinking budget multiplied by `factor`."""
        from dataclasses import replace
        return replace(self, think_budget={k: max(8, int(v * factor))
                                           for k, v in self.think_budget.items()},
                       think_tokens=max(8, int(self.think_tokens * factor)))


@dataclass
class TurnStats:
    prompt_tokens: int = 0  # the turn's prompt
    generated_tokens: int = 0
    thinking_tokens: int = 0  # of those, inside thoughts (tool tags included)
    requested_tokens: int = 0  # context sent with each request (the prompt grows per segment)
    cached_tokens: int = 0  # of those, served from the backend's prefix cache
    segments: int = 0  # final actions generated (one, plus one per retry)
    tool_calls: int = 0
    truncated: int = 0  # segments closed by the loop after max_tokens
    malformed: int = 0  # segments that did not have the protocol's shape
    faults: dict[str, int] = field(default_factory=dict)
    forced: bool = False  # the loop chose `wait` (budget spent or retries used up)
    repeated_tools: int = 0  # tool calls refused: the same call again in one thought
    silenced: bool = False  # the guard refused the turn's text twice and the seat waited
    # the guard refused the turn's free text twice and the seat spoke a
    # structured move instead (docs/agents.md, "The text guard")
    moved: bool = False
    # texts the guard refused, by kind (guard.KINDS; docs/agents.md "The text guard")
    degenerate: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    # timed turns (docs/agents.md#deadlines): the seconds the turn had, whether
    # the time cut its thought short, cut its final action short (the loop
    # completed it), or ran out (a wait for lack of time, or done after it)
    time_s: float | None = None
    thinking_cut: bool = False
    action_cut: bool = False
    late: bool = False

    @property
    def missed(self) -> bool:
        """A turn that did not act in time (see docs/agents.md#deadlines)."""
        return self.action_cut or self.late

    def fault(self, kind: str) -> None:
        self.faults[kind] = self.faults.get(kind, 0) + 1


@dataclass
class TurnResult:
    command: Command | None  # None: wait
    action: str  # the final tag (or "wait" when forced)
    transcript: str  # everything generated and observed this turn
    stats: TurnStats
    prompt: str = ""  # the turn's prompt text (its chat messages)
    steps: list[dict[str, Any]] = field(default_factory=list)  # see LLMSeat.turn_log
    move: Move | None = None  # the speech move said (speech "moves")


def observation(text: str) -> str:
    return f"\n<observation>{text}</observation>\n"


def prompt_text(messages: Sequence[Mapping[str, str]]) -> str:
    """A turn's chat messages as one readable text (for logs and spectators)."""
    return "".join(f"<|{m['role']}|>\n{m['content']}" for m in messages)


def _drop_to_word(tok: Tokenizer, gen: list[int], text: str, text_start: int) -> int:
    """How many of the generated tokens to keep so that the decoded text ends
    at a word boundary inside free text that starts at `text_start`."""
    for k in range(len(gen) - 1, 0, -1):
        t = tok.decode(gen[:k])
        if len(t) <= text_start or not text.startswith(t):
            break
        if len(t) < len(text) and text[len(t)].isspace() and not t[-1].isspace():
            return k
    return len(gen)


def _keep_chars(tok: Tokenizer, gen: list[int], text: str, n: int) -> tuple[list[int], str]:
    """The longest run of generated tokens whose text is a prefix of
    `text[:n]`, and the characters of `text[:n]` they miss (the loop appends
    those itself, so the context stays append-only)."""
    for k in range(len(gen), -1, -1):
        t = tok.decode(gen[:k])
        if len(t) <= n and text.startswith(t):
            return gen[:k], text[len(t):n]
    return [], text[:n]


class _Turn:
    """The mutable state of one turn: the context, transcript and steps."""

    def __init__(self, loop: ToolLoop, memory: SeatMemory, ids: list[int], stats: TurnStats,
                 on_step: StepCallback | None, key: str, seed: int,
                 deadline: float | None = None) -> None:
        self.loop, self.memory, self.ids, self.stats = loop, memory, ids, stats
        self.on_step, self.key, self.seed = on_step, key, seed
        self.deadline = deadline  # the final action's (time.monotonic())
        self.think_deadline = deadline  # the thought's: the time kept for the action before it
        self.transcript: list[str] = []
        self.steps: list[dict[str, Any]] = []
        self.requests = 0
        self.move: Move | None = None
        self.calls_made: set[str] = set()  # this thought's tool calls (name and args)
        # speeches, wills and notes are structured moves this turn: the seat's
        # own speech setting, or the guard's fallback for a free-text seat
        self.structured = loop.config.speech == "moves"
        self.wait = True  # `wait` is offered (`actions.may_wait`; set by run_turn)

    def repeated(self, name: str, args: Mapping[str, Any]) -> bool:
        """Was this exact tool call made before in this thought? (It is
        refused: its answer is already in the context.)"""
        key = json.dumps([name, args], sort_keys=True, default=str)
        if key in self.calls_made:
            return True
        self.calls_made.add(key)
        return False

    def step(self, kind: str, **data: Any) -> None:
        entry = {"kind": kind, **data}
        self.steps.append(entry)
        if self.on_step is not None:
            self.on_step(entry)

    def next_seed(self) -> int:
        """This request's sampling seed: the turn's seed and the request's
        number through the one bounded derivation (docs/agents.md#sampling-seeds)."""
        self.requests += 1
        return derive_seed(self.seed, self.requests)

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline


class ToolLoop:
    """Runs turns for seats against one backend (see the module docstring)."""

    def __init__(self, backend: Backend, config: LoopConfig | None = None) -> None:
        self.backend = backend
        self.config = config or LoopConfig()
        if self.config.protocol not in PARSERS:
            raise ValueError(f"unknown protocol {self.config.protocol!r}")
        if self.config.speech not in SPEECH_MODES:
            raise ValueError(f"speech is one of {', '.join(SPEECH_MODES)}, "
                             f"not {self.config.speech!r}")

    async def run_turn(self, memory: SeatMemory, *, summaries: Mapping[int, str] | None = None,
                       persona: Persona | str | None = None, key: str = "",
                       seed: int = 0, on_step: StepCallback | None = None,
                       deadline: float | None = None) -> TurnResult:
        """One turn; with a `deadline` (time.monotonic()) it acts before it
        (see the module docstring)."""
        cfg, tok = self.config, self.backend.tokenizer
        started = time.perf_counter()
        stats = TurnStats()
        if deadline is not None:
            stats.time_s = max(0.0, deadline - time.monotonic())
        # is `wait` offered this turn (`actions.may_wait`)? The legal actions do
        # not change within a turn: the prompt and every grammar agree
        wait = may_wait(memory, cfg.may_abstain)
        messages = build_messages(memory, summaries, cfg.protocol, persona, cfg.max_tool_calls,
                                  speech=cfg.speech, seed=seed, wait=wait)
        ids: list[int] = list(tok.chat_prompt(messages))
        stats.prompt_tokens = len(ids)
        t = _Turn(self, memory, ids, stats, on_step, key, seed, deadline)
        t.wait = wait
        think_left = self._fit(t, cfg.budget(memory.phase))
        retries = guarded = 0
        while True:
            if guarded > 1 and not t.structured:  # refused twice, no move to fall back on
                stats.silenced = True
                t.step("action", text="<wait></wait>" if cfg.protocol == "xml" else
                       '"action": "wait", "args": {}}')
                return self._done(t, None, "wait", started, messages)
            if t.out_of_time():
                stats.late = True
            if (cfg.turn_tokens - stats.generated_tokens <= 0 or retries > cfg.max_retries
                    or stats.late):
                stats.forced = True
                t.step("action", text="<wait></wait>" if cfg.protocol == "xml" else
                       '"action": "wait", "args": {}}')
                return self._done(t, None, "wait", started, messages)
            if retries and think_left < cfg.retry_think_tokens:
                think_left = self._fit(t, cfg.retry_think_tokens)
            if cfg.protocol == "xml":
                think_left = await self._xml_thought(t, think_left)
                parsed = await self._xml_action(t)
            else:
                parsed, think_left = await self._json_steps(t, think_left)
            stats.segments += 1
            if parsed is None:  # malformed: already answered with a fault observation
                retries += 1
                continue
            t.move = None
            checked: Command | None | Refused
            try:
                if t.structured and parsed.name in SPEECH_TAGS:
                    parsed, t.move = speak_move(memory, parsed, derive_seed(seed, 0))
            except IllegalCommand as exc:
                checked = refuse_illegal(exc, memory, stats)
            else:
                # a speech move is built from the game's own facts and rendered
                # by us: only text the model wrote itself goes through the guard
                checked = check_final(memory, parsed.name, parsed.args, stats,
                                      prompt=prompt_text(messages), summaries=summaries,
                                      guard=t.move is None)
            if isinstance(checked, Refused):
                text = checked.text
                if checked.fault == "degenerate":
                    # a degenerate text is resampled once (the action again,
                    # after what is left of the thought); refused again, the
                    # seat says a structured move instead (one it can say
                    # now), else waits
                    guarded += 1
                    if guarded > 1 and self._move_fallback(t):
                        text += " Say it as one of these moves instead:\n" + "\n".join(
                            line for tag in ("speak", "will", "death_note")
                            if tag in final_tags(memory.legal)
                            for line in moves_action_lines(memory, tag, cfg.protocol))
                else:
                    retries += 1
                self._observe(t, text)
                t.step("fault", fault=checked.fault, text=text)
                continue
            cmd = checked
            stats.moved = t.structured and cfg.speech != "moves" and t.move is not None
            return self._done(t, cmd, parsed.name, started, messages)

    def _move_fallback(self, t: _Turn) -> bool:
        """Turn the rest of `t` to structured moves when a speech, will or
        note may be said now (whispers have no moves); False when not."""
        if t.structured or not set(final_tags(t.memory.legal)) & set(SPEECH_TAGS):
            return False
        t.structured = True
        return True

    # ---- time -------------------------------------------------------------------------
    def _fit(self, t: _Turn, budget: int) -> int:
        """The thinking budget (tokens) that leaves the final action its time:
        sets the thought's deadline (ACTION_SHARE of the time left, or the
        action's tokens at the backend's measured speed if that is more, kept
        for the action) and cuts `budget` to what the measured speed writes
        before it (SPEED_MARGIN of it). Without a deadline: `budget`."""
        if t.deadline is None:
            return budget
        left = max(0.0, t.deadline - time.monotonic())
        rate = self.backend.stats.tokens_per_second()
        keep = ACTION_SHARE * left
        if rate:
            keep = max(keep, self.config.action_tokens / rate)
        keep = min(keep, left)
        t.think_deadline = t.deadline - keep
        if rate is None:  # nothing measured yet: the thought's deadline alone bounds it
            return budget if left > keep else 0
        fits = int((left - keep) * rate * SPEED_MARGIN)
        if fits < budget:
            t.stats.thinking_cut = True
        return max(0, min(budget, fits))

    # ---- XML: one thought with tools inside, then one final action -----------------
    async def _xml_thought(self, t: _Turn, think_left: int) -> int:
        """Generate the thought: pieces of free text, each ending in a tool call
        (run, observed, resumed) or `</thinking>`. Returns the budget left."""
        cfg, memory = self.config, t.memory
        opened = False
        piece_start = len(t.steps)
        t.calls_made.clear()
        while True:
            left_turn = cfg.turn_tokens - t.stats.generated_tokens
            budget = min(think_left, left_turn)
            if budget <= 0:  # spent: the loop closes the thought
                if not opened:
                    self._append(t, "<thinking>")
                self._append(t, "</thinking>")
                break
            allow = t.stats.tool_calls < cfg.max_tool_calls
            tools = tool_choices(tool_options(memory), memory.names) if allow else []
            rx = thinking_regex(tools, opened, t.stats.tool_calls >= cfg.min_tool_calls)
            res_text, gen, finish = await self._generate(t, rx, budget, t.think_deadline)
            t.stats.thinking_tokens += len(gen)
            think_left -= len(gen)
            head = "" if opened else "<thinking>"
            tag = _TOOL_TAG.search(res_text)
            if tag is not None and tag.group(1) == "thinking":
                tag = None
            close_at = res_text.find("</thinking>")
            if tag is not None and (close_at < 0 or close_at > tag.start()):
                # a tool call inside the thought: interrupt, observe, resume
                gen, extra = _keep_chars(self.backend.tokenizer, gen, res_text, tag.end())
                self._take(t, gen, res_text[:tag.end()] if not extra else
                           self.backend.tokenizer.decode(gen))
                if extra:
                    self._append(t, extra)
                thought = res_text[len(head):tag.start()] if res_text.startswith(head) \
                    else res_text[:tag.start()]
                self._thinking_step(t, thought)
                opened = True
                try:
                    parsed = xml_protocol.parse(res_text[tag.start():tag.end()])
                except ProtocolError as exc:
                    t.stats.malformed += 1
                    text = f"[expression fault] {escape_text(str(exc))}"
                    self._observe(t, text)
                    t.step("fault", fault="expression", text=text)
                    continue
                if parsed.kind != "tool":  # unguided: a final action inside the thought
                    t.stats.malformed += 1
                    text = ("[expression fault] Close your thought with </thinking> "
                            "before the final action.")
                    self._observe(t, text)
                    t.step("fault", fault="expression", text=text)
                    continue
                t.stats.tool_calls += 1
                if self._refuse_repeat(t, parsed):
                    continue
                obs = run_tool(memory, parsed.name, parsed.tool_arg)
                self._observe(t, obs)
                t.step("tool", name=parsed.name, args=dict(parsed.args), observation=obs)
                continue
            if close_at >= 0:
                end = close_at + len("</thinking>")
                gen, extra = _keep_chars(self.backend.tokenizer, gen, res_text, end)
                self._take(t, gen, self.backend.tokenizer.decode(gen))
                if extra:
                    self._append(t, extra)
                body = res_text[:close_at]
                self._thinking_step(t, body[len(head):] if body.startswith(head) else body)
                break
            # cut off (or, unguided, no end at all): close at a word boundary
            if finish == "deadline":
                t.stats.thinking_cut = True
            elif finish == "length":
                t.stats.truncated += 1
            else:
                t.stats.malformed += 1
            kept, closing, thought = self._close_thought(gen, res_text, head)
            self._take(t, kept, self.backend.tokenizer.decode(kept))
            self._append(t, closing)
            self._thinking_step(t, thought)
            break
        if len(t.steps) == piece_start:  # nothing was thought (budget 0)
            self._thinking_step(t, "")
        self._append(t, "\n")
        return think_left

    def _close_thought(self, gen: list[int], text: str, head: str
                       ) -> tuple[list[int], str, str]:
        """Tokens to keep, the closing to append and the thought's text, for a
        thought cut off by max_tokens: a half-written tool tag is dropped,
        free text ends at a word boundary, then `</thinking>`."""
        tok = self.backend.tokenizer
        lt = text.find("<", len(head)) if text.startswith(head) else -1
        if not text.startswith(head):  # cut inside "<thinking>" itself
            return [], head + "</thinking>", ""
        if lt >= 0:  # drop a half-written tag
            gen, extra = _keep_chars(tok, gen, text, lt)
            text = tok.decode(gen) + extra
            if extra:
                return gen, extra + "</thinking>", text[len(head):]
        keep = _drop_to_word(tok, gen, text, len(head)) if len(text) > len(head) else len(gen)
        kept = gen[:keep]
        kept_text = tok.decode(kept)
        if not text.startswith(kept_text) or len(kept_text) < len(head):
            kept, kept_text = gen, text
        return kept, "</thinking>", kept_text[len(head):]

    async def _xml_action(self, t: _Turn) -> Any:
        """The final action after the thought (tools are not allowed here)."""
        memory = t.memory
        choices = turn_choices(memory.legal, memory.names, (), False, t.wait)
        rx = turn_regex(memory.legal, memory.names, (), False, think=False, protocol="xml",
                        wait=t.wait)
        if t.structured:
            choices = structured_choices(memory, choices)
            rx = choices_regex(choices, "xml")
        text = await self._segment(t, rx, self.config.action_tokens, choices, t.deadline,
                                   final=True)
        if not text and t.stats.action_cut:  # no time left for it: the turn waits
            return None
        t.step("action", text=text.strip())
        try:
            parsed = xml_protocol.parse(text)
        except ProtocolError as exc:
            self._malformed(t, str(exc))
            return None
        if parsed.kind != "final":
            self._malformed(t, "Tools are called inside <thinking>; write one final action.")
            return None
        return parsed

    # ---- JSON: one object per step ----------------------------------------------------
    async def _json_steps(self, t: _Turn, think_left: int) -> tuple[Any, int]:
        """Objects {"thought", "action", "args"} until a final action (tools up
        to the cap, thoughts within the budget)."""
        cfg, memory = self.config, t.memory
        thought = thought_parts("json")
        thought_rx = parts_regex(thought, "json")
        t.calls_made.clear()
        while True:
            budget = max(1, min(max(think_left, 8), cfg.turn_tokens - t.stats.generated_tokens))
            before = t.stats.generated_tokens
            text = await self._segment(t, thought_rx, budget, thought, t.think_deadline)
            think_left -= t.stats.generated_tokens - before
            t.stats.thinking_tokens += t.stats.generated_tokens - before
            allow = t.stats.tool_calls < cfg.max_tool_calls and think_left > 0
            choices = turn_choices(memory.legal, memory.names, tool_options(memory), allow,
                                   t.wait)
            rx = turn_regex(memory.legal, memory.names, tool_options(memory), allow,
                            think=False, protocol="json", wait=t.wait)
            if t.structured:
                choices = structured_choices(memory, choices)
                rx = choices_regex(choices, "json")
            tail = await self._segment(t, rx, cfg.action_tokens, choices, t.deadline,
                                       final=True)
            if not tail and t.stats.action_cut:  # no time left for it: the turn waits
                return None, think_left
            text += tail
            try:
                parsed = json_protocol.parse(text)
            except ProtocolError as exc:
                self._malformed(t, str(exc))
                return None, think_left
            self._thinking_step(t, parsed.thought)
            if parsed.kind == "tool":
                t.stats.tool_calls += 1
                if self._refuse_repeat(t, parsed):
                    continue
                obs = run_tool(memory, parsed.name, parsed.tool_arg)
                self._observe(t, obs)
                t.step("tool", name=parsed.name, args=dict(parsed.args), observation=obs)
                continue
            t.step("action", text=tail.strip())
            return parsed, think_left

    # ---- shared -----------------------------------------------------------------------
    def _refuse_repeat(self, t: _Turn, parsed: Any) -> bool:
        """Refuse a tool call made before in this thought, with an observation
        (it still counts toward `max_tool_calls`, so a model that repeats
        itself runs out of tool calls, not of context)."""
        if not t.repeated(parsed.name, dict(parsed.args)):
            return False
        t.stats.repeated_tools += 1
        text = (f"[repeated call] You already called {parsed.name} with this argument in "
                "this thought; its answer is above. Use it, call another tool or end the "
                "thought.")
        self._observe(t, text)
        t.step("fault", fault="repeat", text=text)
        return True

    def _malformed(self, t: _Turn, why: str) -> None:
        t.stats.malformed += 1
        text = f"[expression fault] {escape_text(why)} Write exactly one tag."
        if self.config.protocol == "json":
            text = f"[expression fault] {escape_text(why)} Write exactly one JSON object."
        self._observe(t, text)
        t.step("fault", fault="expression", text=text)

    @staticmethod
    def _thinking_step(t: _Turn, text: str) -> None:
        t.step("thinking", text=text.strip())

    async def _generate(self, t: _Turn, regex: str, max_tokens: int,
                        deadline: float | None = None) -> tuple[str, list[int], str]:
        """One request on the current context: (text, token IDs, finish reason)."""
        res = await self.backend.generate_one(GenerationRequest(
            tuple(t.ids), max(1, max_tokens), regex=regex, seed=t.next_seed(),
            temperature=self.config.temperature, key=t.key, deadline=deadline))
        t.stats.generated_tokens += len(res.token_ids)
        t.stats.requested_tokens += len(t.ids)
        t.stats.cached_tokens += res.cached_tokens
        return res.text, list(res.token_ids), res.finish_reason

    def _take(self, t: _Turn, gen: list[int], text: str) -> None:
        """Append generated tokens as they are (never re-tokenised)."""
        t.ids += gen
        t.transcript.append(text)

    async def _segment(self, t: _Turn, regex: str, max_tokens: int,
                       shape: Sequence[Part] | Sequence[Choice],
                       deadline: float | None = None, *, final: bool = False) -> str:
        """Generate under `regex` (until `deadline` at most), append to the
        context, close it if it was cut off; the text written (with the
        loop's closing). A `final` action the deadline left empty stays
        empty (the turn waits)."""
        budget = max(1, min(max_tokens, self.config.turn_tokens - t.stats.generated_tokens))
        text, gen, finish = await self._generate(t, regex, budget, deadline)
        closing = ""
        if finish == "deadline":
            if final:
                t.stats.action_cut = True
            else:
                t.stats.thinking_cut = True
            if final and not gen:
                return ""
            gen, text, closing = self._close(gen, text, shape)
        elif finish == "length":
            t.stats.truncated += 1
            gen, text, closing = self._close(gen, text, shape)
        self._take(t, gen, text)
        if closing:
            self._append(t, closing)
        return text + closing

    def _append(self, t: _Turn, text: str) -> None:
        """Text the loop writes itself (observations, closings)."""
        t.ids += self.backend.tokenizer.encode(text)
        t.transcript.append(text)

    def _observe(self, t: _Turn, text: str) -> None:
        self._append(t, observation(text))

    @staticmethod
    def _done(t: _Turn, cmd: Command | None, action: str, started: float,
              messages: Sequence[Mapping[str, str]]) -> TurnResult:
        t.stats.seconds = time.perf_counter() - started
        if t.out_of_time() and cmd is not None:
            t.stats.late = True  # acted, but after its deadline
        return TurnResult(cmd, action, "".join(t.transcript), t.stats,
                          prompt=prompt_text(messages), steps=t.steps,
                          move=t.move if cmd is not None else None)

    def _close(self, gen: list[int], text: str, shape: Sequence[Part] | Sequence[Choice]
               ) -> tuple[list[int], str, str]:
        """Close text cut off by max_tokens: (tokens kept, their text, the
        closing). `shape` is the thought's parts or the tags allowed now."""
        protocol, tok = self.config.protocol, self.backend.tokenizer
        options: list[list[Part]] = [[p for p in shape if isinstance(p, Part)]]
        if not options[0]:
            options = [choice_parts(c, protocol) for c in shape if isinstance(c, Choice)]
        for parts in options:
            w = walk(parts, text, protocol)
            if w is None or w.complete:
                continue
            if w.in_text:
                keep = _drop_to_word(tok, gen, text, w.text_start)
                if keep < len(gen):
                    kept = tok.decode(gen[:keep])
                    again = walk(parts, kept, protocol)
                    if again is not None and not again.complete:
                        return gen[:keep], kept, again.suffix
            return gen, text, w.suffix
        return gen, text, ""  # does not fit: the parser reports it
