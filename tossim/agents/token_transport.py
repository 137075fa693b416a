"""The token-ID turn transport: a backend with guided decoding (seed 003).

The context is a list of token IDs that is only ever appended to (generated
tokens are kept as generated, never re-tokenised), so every request of a turn
extends the previous one and the backend's prefix cache serves all but the
tail. Each request is constrained by a grammar (`grammar.py`).

XML: one thought, `<thinking>` ... `</thinking>`, whose pieces end at a
tool's closing tag (the backend stops there: nothing may follow a closed
tag; the loop observes, the SAME thought resumes) or at `</thinking>`; then
one final action under the final actions' grammar. JSON (seed 001's
spirit): one object `{"thought", "action", "args"}` per step, the thought
and the tail each under its own grammar.

Text cut off by `max_tokens` or by the turn's deadline is closed here, from
the same description the grammar is built from (`grammar.walk`): a thought
at a word boundary (a half-written tool tag dropped), free text in an action
at a word boundary with its tag closed, a half-written name completed with
the first legal name it fits. The thinking budget is per phase and cut to
what the backend's measured speed writes before the time kept for the final
action (docs/agents.md#deadlines).
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Sequence
from typing import Any

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
from tossim.agents.loop_config import LoopConfig
from tossim.agents.moves import structured_choices
from tossim.agents.protocols import Parsed, ProtocolError
from tossim.agents.protocols import json as json_protocol
from tossim.agents.protocols import xml as xml_protocol
from tossim.agents.tools import tool_options
from tossim.agents.transport import (
    ActionText,
    Event,
    Final,
    Thought,
    ToolCall,
    Unreadable,
    expression_fault,
)
from tossim.agents.turn import Turn, prompt_text
from tossim.inference.base import Backend, GenerationRequest, Tokenizer
from tossim.inference.seeds import derive_seed

# A timed turn keeps this share of its time (at least) for the final action,
# and plans its thought at this share of the backend's measured speed (the
# machine may slow down mid-turn: docs/agents.md#deadlines)
ACTION_SHARE = 0.3
SPEED_MARGIN = 0.7
_TOOL_TAG = re.compile(r"<([a-z_]+)>[^<]*</\1>\s*$")
CLOSE_THOUGHT_FIRST = ("[expression fault] Close your thought with </thinking> "
                       "before the final action.")
WAIT_TEXT = {"xml": "<wait></wait>", "json": '"action": "wait", "args": {}}'}
ANSWER = {"xml": "Write exactly one tag.", "json": "Write exactly one JSON object."}


def observation(text: str) -> str:
    return f"\n<observation>{text}</observation>\n"


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
    `text[:n]`, and the characters of `text[:n]` they miss (the transport
    appends those itself, so the context stays append-only)."""
    for k in range(len(gen), -1, -1):
        t = tok.decode(gen[:k])
        if len(t) <= n and text.startswith(t):
            return gen[:k], text[len(t):n]
    return [], text[:n]


class TokenTransport:
    """One turn's token context on `backend` (see the module docstring)."""

    def __init__(self, backend: Backend, config: LoopConfig, turn: Turn,
                 messages: list[dict[str, str]], *, key: str, wait: bool) -> None:
        self.backend, self.config, self.turn = backend, config, turn
        self.tok = backend.tokenizer
        self.key = key
        self.wait = wait  # `wait` is offered (`actions.may_wait`): prompt and grammars agree
        self.messages = messages
        self.ids: list[int] = list(self.tok.chat_prompt(messages))
        turn.stats.prompt_tokens = len(self.ids)
        self.pieces: list[str] = []  # the transcript
        self.requests = 0
        self.think_deadline = turn.deadline  # the thought's: the action's time kept before it
        self.think_left = self._fit(config.budget(turn.memory.phase))

    # ---- the transport ----------------------------------------------------------------
    async def attempt(self, turn: Turn) -> AsyncGenerator[Event, None]:
        """A thought (a new one after a refused action, with at least
        `retry_think_tokens`), then a final action."""
        cfg = self.config
        if turn.retries and self.think_left < cfg.retry_think_tokens:
            self.think_left = self._fit(cfg.retry_think_tokens)
        steps = self._xml_steps() if cfg.protocol == "xml" else self._json_steps()
        async for event in steps:
            yield event
        turn.stats.segments += 1

    def observe(self, text: str) -> None:
        self._append(observation(text))

    def prompt_text(self) -> str:
        return prompt_text(self.messages)

    def transcript(self) -> str:
        return "".join(self.pieces)

    def wait_step(self, forced: bool) -> dict[str, Any]:
        return {"kind": "action", "text": WAIT_TEXT[self.config.protocol]}

    def accepted_step(self, parsed: Parsed) -> dict[str, Any] | None:
        return None  # the action's text was reported as generated

    # ---- time -------------------------------------------------------------------------
    def _fit(self, budget: int) -> int:
        """The thinking budget (tokens) that leaves the final action its time:
        sets the thought's deadline (ACTION_SHARE of the time left, or the
        action's tokens at the backend's measured speed if that is more, kept
        for the action) and cuts `budget` to what the measured speed writes
        before it (SPEED_MARGIN of it). Without a deadline: `budget`."""
        deadline = self.turn.deadline
        if deadline is None:
            return budget
        left = max(0.0, deadline - self.turn.clock.monotonic())
        rate = self.backend.stats.tokens_per_second()
        keep = ACTION_SHARE * left
        if rate:
            keep = max(keep, self.config.action_tokens / rate)
        keep = min(keep, left)
        self.think_deadline = deadline - keep
        if rate is None:  # nothing measured yet: the thought's deadline alone bounds it
            return budget if left > keep else 0
        fits = int((left - keep) * rate * SPEED_MARGIN)
        if fits < budget:
            self.turn.stats.thinking_cut = True
        return max(0, min(budget, fits))

    # ---- XML: one thought with tools inside, then one final action -----------------
    async def _xml_steps(self) -> AsyncGenerator[Event, None]:
        async for event in self._xml_thought():
            yield event
        async for event in self._xml_action():
            yield event

    async def _xml_thought(self) -> AsyncGenerator[Event, None]:
        """The thought: pieces of free text, each ending in a tool call (the
        loop observes it, the thought resumes) or `</thinking>`."""
        cfg, t, tok = self.config, self.turn, self.tok
        memory, stats = t.memory, t.stats
        opened = False
        piece_start = len(t.steps)
        while True:
            budget = min(self.think_left, cfg.turn_tokens - stats.generated_tokens)
            if budget <= 0:  # spent: the transport closes the thought
                if not opened:
                    self._append("<thinking>")
                self._append("</thinking>")
                break
            tools = tool_choices(tool_options(memory), memory.names) if t.tools_left else []
            rx = thinking_regex(tools, opened, stats.tool_calls >= cfg.min_tool_calls)
            res_text, gen, finish = await self._generate(rx, budget, self.think_deadline)
            stats.thinking_tokens += len(gen)
            self.think_left -= len(gen)
            head = "" if opened else "<thinking>"
            tag = _TOOL_TAG.search(res_text)
            if tag is not None and tag.group(1) == "thinking":
                tag = None
            close_at = res_text.find("</thinking>")
            if tag is not None and (close_at < 0 or close_at > tag.start()):
                # a tool call inside the thought: interrupt, observe, resume
                gen, extra = _keep_chars(tok, gen, res_text, tag.end())
                self._take(gen, res_text[:tag.end()] if not extra else tok.decode(gen))
                if extra:
                    self._append(extra)
                thought = res_text[len(head):tag.start()] if res_text.startswith(head) \
                    else res_text[:tag.start()]
                yield Thought(thought.strip())
                opened = True
                try:
                    parsed = xml_protocol.parse(res_text[tag.start():tag.end()])
                except ProtocolError as exc:
                    yield Unreadable(expression_fault(str(exc)))
                    continue
                if parsed.kind != "tool":  # unguided: a final action inside the thought
                    yield Unreadable(CLOSE_THOUGHT_FIRST)
                    continue
                yield ToolCall(parsed, dict(parsed.args))
                continue
            if close_at >= 0:
                end = close_at + len("</thinking>")
                gen, extra = _keep_chars(tok, gen, res_text, end)
                self._take(gen, tok.decode(gen))
                if extra:
                    self._append(extra)
                body = res_text[:close_at]
                yield Thought((body[len(head):] if body.startswith(head) else body).strip())
                break
            # cut off (or, unguided, no end at all): close at a word boundary
            if finish == "deadline":
                stats.thinking_cut = True
            elif finish == "length":
                stats.truncated += 1
            else:
                stats.malformed += 1
            kept, closing, thought = self._close_thought(gen, res_text, head)
            self._take(kept, tok.decode(kept))
            self._append(closing)
            yield Thought(thought.strip())
            break
        if len(t.steps) == piece_start:  # nothing was thought (budget 0)
            yield Thought("")
        self._append("\n")

    def _close_thought(self, gen: list[int], text: str, head: str
                       ) -> tuple[list[int], str, str]:
        """Tokens to keep, the closing to append and the thought's text, for a
        thought cut off by max_tokens: a half-written tool tag is dropped,
        free text ends at a word boundary, then `</thinking>`."""
        tok = self.tok
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

    async def _xml_action(self) -> AsyncGenerator[Event, None]:
        """The final action after the thought (tools are not allowed here)."""
        t = self.turn
        memory = t.memory
        choices = turn_choices(memory.legal, memory.names, (), False, self.wait)
        rx = turn_regex(memory.legal, memory.names, (), False, think=False, protocol="xml",
                        wait=self.wait)
        if t.structured:
            choices = structured_choices(memory, choices)
            rx = choices_regex(choices, "xml")
        text = await self._segment(rx, self.config.action_tokens, choices, t.deadline,
                                   final=True)
        if not text and t.stats.action_cut:  # no time left for it: the turn waits
            return
        yield ActionText(text.strip())
        try:
            parsed = xml_protocol.parse(text)
        except ProtocolError as exc:
            yield Unreadable(expression_fault(str(exc), ANSWER["xml"]))
            return
        if parsed.kind != "final":
            yield Unreadable(expression_fault(
                "Tools are called inside <thinking>; write one final action.", ANSWER["xml"]))
            return
        yield Final(parsed)

    # ---- JSON: one object per step ----------------------------------------------------
    async def _json_steps(self) -> AsyncGenerator[Event, None]:
        """Objects {"thought", "action", "args"} until a final action (tools up
        to the cap, thoughts within the budget)."""
        cfg, t = self.config, self.turn
        memory, stats = t.memory, t.stats
        thought = thought_parts("json")
        thought_rx = parts_regex(thought, "json")
        while True:
            budget = max(1, min(max(self.think_left, 8), cfg.turn_tokens - stats.generated_tokens))
            before = stats.generated_tokens
            text = await self._segment(thought_rx, budget, thought, self.think_deadline)
            self.think_left -= stats.generated_tokens - before
            stats.thinking_tokens += stats.generated_tokens - before
            allow = t.tools_left and self.think_left > 0
            choices = turn_choices(memory.legal, memory.names, tool_options(memory), allow,
                                   self.wait)
            rx = turn_regex(memory.legal, memory.names, tool_options(memory), allow,
                            think=False, protocol="json", wait=self.wait)
            if t.structured:
                choices = structured_choices(memory, choices)
                rx = choices_regex(choices, "json")
            tail = await self._segment(rx, cfg.action_tokens, choices, t.deadline, final=True)
            if not tail and stats.action_cut:  # no time left for it: the turn waits
                return
            text += tail
            try:
                parsed = json_protocol.parse(text)
            except ProtocolError as exc:
                yield Unreadable(expression_fault(str(exc), ANSWER["json"]))
                return
            yield Thought(parsed.thought.strip())
            if parsed.kind == "tool":
                yield ToolCall(parsed, dict(parsed.args))
                continue
            yield ActionText(tail.strip())
            yield Final(parsed)
            return

    # ---- requests and the context -----------------------------------------------------
    async def _generate(self, regex: str, max_tokens: int,
                        deadline: float | None = None) -> tuple[str, list[int], str]:
        """One request on the current context: (text, token IDs, finish reason)."""
        stats = self.turn.stats
        self.requests += 1  # the request's seed: docs/agents.md#sampling-seeds
        res = await self.backend.generate_one(GenerationRequest(
            tuple(self.ids), max(1, max_tokens), regex=regex,
            seed=derive_seed(self.turn.seed, self.requests),
            temperature=self.config.temperature, key=self.key, deadline=deadline))
        stats.generated_tokens += len(res.token_ids)
        stats.requested_tokens += len(self.ids)
        stats.cached_tokens += res.cached_tokens
        return res.text, list(res.token_ids), res.finish_reason

    def _take(self, gen: list[int], text: str) -> None:
        """Append generated tokens as they are (never re-tokenised)."""
        self.ids += gen
        self.pieces.append(text)

    def _append(self, text: str) -> None:
        """Text the transport writes itself (observations, closings)."""
        self.ids += self.tok.encode(text)
        self.pieces.append(text)

    async def _segment(self, regex: str, max_tokens: int,
                       shape: Sequence[Part] | Sequence[Choice],
                       deadline: float | None = None, *, final: bool = False) -> str:
        """Generate under `regex` (until `deadline` at most), append to the
        context, close it if it was cut off; the text written (with the
        closing). A `final` action the deadline left empty stays empty (the
        turn waits)."""
        stats = self.turn.stats
        budget = max(1, min(max_tokens, self.config.turn_tokens - stats.generated_tokens))
        text, gen, finish = await self._generate(regex, budget, deadline)
        closing = ""
        if finish == "deadline":
            if final:
                stats.action_cut = True
            else:
                stats.thinking_cut = True
            if final and not gen:
                return ""
            gen, text, closing = self._close(gen, text, shape)
        elif finish == "length":
            stats.truncated += 1
            gen, text, closing = self._close(gen, text, shape)
        self._take(gen, text)
        if closing:
            self._append(closing)
        return text + closing

    def _close(self, gen: list[int], text: str, shape: Sequence[Part] | Sequence[Choice]
               ) -> tuple[list[int], str, str]:
        """Close text cut off by max_tokens: (tokens kept, their text, the
        closing). `shape` is the thought's parts or the tags allowed now."""
        protocol, tok = self.config.protocol, self.tok
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
