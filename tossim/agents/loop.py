"""The interrupt-and-resume tool loop (seed 003) over token IDs.

One turn of one seat:

    context = chat template(system prompt, turn context)       token IDs
    repeat:
        generate one segment under this turn's grammar:
            <thinking>…</thinking><tool>arg</tool>   -> run the tool, append
                <observation>…</observation>, resume
            <thinking>…</thinking><final action>     -> the turn's Command

The context is a list of token IDs that is only ever appended to (generated
tokens are kept as generated, never re-tokenised), so every resume re-uses the
backend's prefix cache. A segment cut off by `max_tokens` is closed by the
loop: a thought is cut at a word boundary and closed, and the action is then
generated on its own; free text in an action is cut at a word boundary and its
tag closed; a half-written name is completed with the first legal name it fits.
An action the engine cannot execute gets a fault observation (seed 002) and
another try; after the tool cap the grammar offers only final actions, and
when the turn's token budget is spent the seat waits. So a turn always ends
with one legal final action (`wait` is one).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tossim.agents.actions import fault_observation, to_command
from tossim.agents.escape import escape_text
from tossim.agents.grammar import (
    Choice,
    Part,
    choice_parts,
    parts_regex,
    thought_parts,
    turn_choices,
    turn_regex,
    walk,
)
from tossim.agents.memory import SeatMemory
from tossim.agents.personas import Persona
from tossim.agents.prompting import build_messages
from tossim.agents.protocols import ProtocolError
from tossim.agents.protocols import json as json_protocol
from tossim.agents.protocols import xml as xml_protocol
from tossim.agents.tools import run_tool, tool_options
from tossim.engine.commands import Command
from tossim.engine.legal import IllegalCommand
from tossim.inference.base import Backend, GenerationRequest, Tokenizer

PARSERS = {"xml": xml_protocol.parse, "json": json_protocol.parse}


@dataclass(frozen=True)
class LoopConfig:
    protocol: str = "xml"
    max_tool_calls: int = 1
    think_tokens: int = 32  # one thought
    action_tokens: int = 48  # one tag after the thought (a speech is the longest)
    turn_tokens: int = 400  # everything generated in one turn
    max_retries: int = 2  # final actions refused before the seat waits
    temperature: float = 0.6


@dataclass
class TurnStats:
    prompt_tokens: int = 0  # the turn's prompt
    generated_tokens: int = 0
    requested_tokens: int = 0  # context sent with each request (the prompt grows per segment)
    cached_tokens: int = 0  # of those, served from the backend's prefix cache
    segments: int = 0
    tool_calls: int = 0
    truncated: int = 0  # segments closed by the loop after max_tokens
    malformed: int = 0  # segments that did not have the protocol's shape
    faults: dict[str, int] = field(default_factory=dict)
    forced: bool = False  # the loop chose `wait` (budget spent or retries used up)
    seconds: float = 0.0

    def fault(self, kind: str) -> None:
        self.faults[kind] = self.faults.get(kind, 0) + 1


@dataclass
class TurnResult:
    command: Command | None  # None: wait
    action: str  # the final tag (or "wait" when forced)
    transcript: str  # everything generated and observed this turn
    stats: TurnStats


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


class ToolLoop:
    """Runs turns for seats against one backend (see the module docstring)."""

    def __init__(self, backend: Backend, config: LoopConfig | None = None) -> None:
        self.backend = backend
        self.config = config or LoopConfig()
        if self.config.protocol not in PARSERS:
            raise ValueError(f"unknown protocol {self.config.protocol!r}")

    async def run_turn(self, memory: SeatMemory, *, summaries: Mapping[int, str] | None = None,
                       persona: Persona | str | None = None, key: str = "",
                       seed: int = 0) -> TurnResult:
        cfg, tok = self.config, self.backend.tokenizer
        started = time.perf_counter()
        stats = TurnStats()
        messages = build_messages(memory, summaries, cfg.protocol, persona)
        ids: list[int] = list(tok.chat_prompt(messages))
        stats.prompt_tokens = len(ids)
        transcript: list[str] = []
        retries = 0
        step = 0
        thought = thought_parts(cfg.protocol)
        if cfg.protocol == "xml":
            thought = thought[:-1]  # the loop writes the newline after </thinking>
        thought_rx = parts_regex(thought, cfg.protocol)
        while True:
            if cfg.turn_tokens - stats.generated_tokens <= 0 or retries > cfg.max_retries:
                stats.forced = True
                return self._done(None, "wait", transcript, stats, started)
            allow_tools = stats.tool_calls < cfg.max_tool_calls
            # 1. the thought, closed by the loop if it runs too long
            text = await self._segment(ids, transcript, stats, thought_rx, cfg.think_tokens,
                                       thought, key, seed * 1000 + step)
            if cfg.protocol == "xml":
                self._append(ids, transcript, "\n")
                text += "\n"
            # 2. one tag: a tool call or the final action
            choices = turn_choices(memory.legal, memory.names, tool_options(memory), allow_tools)
            rx = turn_regex(memory.legal, memory.names, tool_options(memory), allow_tools,
                            think=False, protocol=cfg.protocol)
            text += await self._segment(ids, transcript, stats, rx, cfg.action_tokens,
                                        choices, key, seed * 1000 + step + 1)
            step += 2
            stats.segments += 1
            try:
                parsed = PARSERS[cfg.protocol](text)
            except ProtocolError as exc:
                stats.malformed += 1
                retries += 1
                self._observe(ids, transcript, f"[expression fault] {escape_text(str(exc))} "
                              "Write exactly one tag.")
                continue
            if parsed.kind == "tool":
                stats.tool_calls += 1
                self._observe(ids, transcript, run_tool(memory, parsed.name, parsed.tool_arg))
                continue
            try:
                cmd = to_command(memory.slot, parsed.name, parsed.args, memory.legal,
                                 memory.names, memory.roster)
            except IllegalCommand as exc:
                stats.fault(exc.fault)
                retries += 1
                self._observe(ids, transcript, fault_observation(exc, memory.names))
                continue
            return self._done(cmd, parsed.name, transcript, stats, started)

    async def _segment(self, ids: list[int], transcript: list[str], stats: TurnStats,
                       regex: str, max_tokens: int, shape: Sequence[Part] | Sequence[Choice],
                       key: str, seed: int) -> str:
        """Generate under `regex`, append to the context, close it if it was
        cut off; the text written (with the loop's closing)."""
        budget = max(1, min(max_tokens, self.config.turn_tokens - stats.generated_tokens))
        res = await self.backend.generate_one(GenerationRequest(
            tuple(ids), budget, regex=regex, seed=seed, temperature=self.config.temperature,
            key=key))
        stats.generated_tokens += len(res.token_ids)
        stats.requested_tokens += len(ids)
        stats.cached_tokens += res.cached_tokens
        gen, text, closing = list(res.token_ids), res.text, ""
        if res.finish_reason == "length":
            stats.truncated += 1
            gen, text, closing = self._close(gen, text, shape)
        ids += gen
        transcript.append(text)
        if closing:
            self._append(ids, transcript, closing)
        return text + closing

    def _append(self, ids: list[int], transcript: list[str], text: str) -> None:
        ids += self.backend.tokenizer.encode(text)
        transcript.append(text)

    def _observe(self, ids: list[int], transcript: list[str], text: str) -> None:
        self._append(ids, transcript, observation(text))

    @staticmethod
    def _done(cmd: Command | None, action: str, transcript: list[str], stats: TurnStats,
              started: float) -> TurnResult:
        stats.seconds = time.perf_counter() - started
        return TurnResult(cmd, action, "".join(transcript), stats)

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
