"""An AI seat played by a chat-API model (`inference/chat_backend.py`).

The interrupt-and-resume tool loop of seed 003 over chat turns, in seed
001's JSON protocol (thought/action/args):

    messages = [system prompt, turn context]                 (prompting.py)
    repeat, within the turn's deadline:
        one model turn, constrained by the endpoint's mode:
            json_schema  content is {"thought", "action", "args"}
            tools        one function call: a tool or a final action
            text         content, parsed as the JSON object
        a tool call  -> its observation is the next message (a `tool`
                        message in tools mode, else a user message)
        a final action the engine cannot execute, or output that is not the
        protocol -> a fault observation (expression/parameter/premise/
        intention, `actions.fault_observation`) and another try
    -> exactly one legal action; `wait` (abstain) when corrections run out,
       the endpoint fails, or the deadline is near.

The tools, prompts, JSON parsing and fault vocabulary are the token-ID loop's
(`tools.py`, `prompting.py`, `protocols/json.py`, `actions.py`); only the
transport differs. The seat keeps the same public interface as `LLMSeat`
(`decide`, `seat_metrics`, `turn_log`), so the server, matches and the arena
seat it wherever a model seat goes.
"""

from __future__ import annotations

import copy
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tossim.agents.actions import TEXT_LIMITS
from tossim.agents.escape import escape_text
from tossim.agents.final_check import Refused, check_final
from tossim.agents.grammar import turn_json_schema
from tossim.agents.llm_seat import play_phase
from tossim.agents.loop import TurnResult, TurnStats
from tossim.agents.memory import SeatMemory
from tossim.agents.metrics import AgentMetrics, SeatMetrics
from tossim.agents.personas import PERSONAS, Persona, persona_for
from tossim.agents.prompting import build_messages
from tossim.agents.protocols import Parsed, ProtocolError
from tossim.agents.protocols import json as json_protocol
from tossim.agents.seat import ModelSeat, StepHook
from tossim.agents.tools import run_tool, tool_options
from tossim.agents.turn_records import abstention
from tossim.engine.commands import Command
from tossim.engine.view import View
from tossim.inference.chat_backend import ACT_TOOL, ChatBackend, ChatError, ChatRejected, act_tool
from tossim.inference.seeds import derive_seed

TOOLS_NOTE = ("\n## Answering with function calls\nAnswer each step by calling the function "
              "`act` with that JSON object as its arguments.\n")
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


@dataclass(frozen=True)
class ChatConfig:
    max_tool_calls: int = 1
    max_corrections: int = 2  # outputs refused before the seat waits
    turn_seconds: float = 60.0  # the seat answers (or abstains) within this
    margin: float = 0.5  # seconds kept in hand before the deadline
    max_tokens: int | None = None  # per request (default: the entry's sampling)
    thought_chars: int = 300  # the schema's bound on a thought (tokens cost money)


@dataclass
class ChatMetrics(AgentMetrics):
    """`AgentMetrics` plus what a chat API reports: requests, errors by kind,
    completion tokens, request latency and cost (from the entry's prices)."""

    requests: int = 0
    completion_tokens: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    abstained: int = 0  # turns that ended in `wait` because of an error or the deadline
    # the same, by kind (turn_records.abstention: "timeout", "error")
    abstained_kinds: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    priced: bool = True  # False: the entry has no price, and its cost is None ("-")
    latency_seconds: float = 0.0  # summed over requests
    max_latency_seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update({"requests": self.requests, "completion_tokens": self.completion_tokens,
                    "errors": dict(sorted(self.errors.items())), "abstained": self.abstained,
                    "abstained_kinds": dict(sorted(self.abstained_kinds.items())),
                    "cost_usd": round(self.cost_usd, 6) if self.priced else None,
                    "mean_latency_seconds": round(self.latency_seconds
                                                  / max(self.requests, 1), 3),
                    "max_latency_seconds": round(self.max_latency_seconds, 3)})
        return out


def bounded(schema: dict[str, Any], thought_chars: int) -> dict[str, Any]:
    """The turn schema with `maxLength` on every thought and on texts the
    engine limits, so a constrained model cannot spend its token budget on
    one field and be cut off mid-object."""
    for branch in schema.get("oneOf", ()):
        props = branch["properties"]
        props["thought"] = {"type": "string", "maxLength": thought_chars}
        action = props["action"].get("const")
        limit = TEXT_LIMITS.get(action)
        text = props["args"].get("properties", {}).get("text")
        if limit is not None and text is not None:
            text["maxLength"] = limit
    return schema


_OPEN_TEXT = re.compile(r'"(text|thought)"\s*:\s*"((?:[^"\\]|\\.)*)$')
_CLOSINGS = ('"}}', '"]}}', '}}', ']}}', '"}', '}')


def close_truncated(text: str) -> Parsed | None:
    """An object cut off by max_tokens inside its last string, closed as the
    token loop closes a cut-off segment (free text cut at a word boundary,
    then the brackets): the parsed step, or None when no closing fits."""
    t = text.rstrip()
    if t.endswith("\\") and not t.endswith("\\\\"):
        t = t[:-1]  # half an escape
    in_text = _OPEN_TEXT.search(t)
    cut = t.rfind(" ")
    word = t[:cut] if in_text and cut > in_text.start(2) else None
    for body in (word, t):
        if not body:
            continue
        for closing in _CLOSINGS:
            try:
                return json_protocol.parse(body + closing)
            except ProtocolError:
                continue
    return None


def extract_json(text: str) -> str:
    """The JSON object in a free-text answer: the text itself, a fenced block,
    or the span from the first `{` to the last `}`."""
    t = text.strip()
    m = _FENCE.match(t)
    if m:
        t = m.group(1).strip()
    if t.startswith("{"):
        return t
    start, end = t.find("{"), t.rfind("}")
    return t[start:end + 1] if 0 <= start < end else t


class ChatSeat(ModelSeat):
    """One seat played through a chat API (see the module docstring)."""

    def __init__(self, slot: int, backend: ChatBackend, config: ChatConfig | None = None, *,
                 persona: Persona | str | None = None,
                 summaries: Mapping[int, str] | None = None, seed: int = 0) -> None:
        self.slot = slot
        self.backend = backend
        self.config = config or ChatConfig()
        self.persona = persona
        self.summaries: Mapping[int, str] = summaries if summaries is not None else {}
        self.seed = seed
        self.memory = SeatMemory(slot)
        self.metrics = ChatMetrics(priced=backend.entry.priced)
        self.last: TurnResult | None = None
        self.turn_log: list[dict[str, Any]] = []
        # called with (slot, step) as each step of a turn happens, like LLMSeat's
        self.on_step: StepHook | None = None

    @property
    def entry_name(self) -> str:
        return self.backend.entry.name

    async def decide(self, obs: View, deadline: float | None = None) -> list[Command]:
        """This turn's commands, within the entry's turn time and before
        `deadline` (time.monotonic(), the server's turn deadline) if sooner."""
        self.memory.update(obs)
        if not self.memory.legal:
            self.memory.end_turn()
            return []
        return await play_phase(self.memory, lambda: self._played(deadline), self.metrics,
                                deadline=deadline)

    async def _played(self, deadline: float | None) -> Command | None:
        result = await self._turn(deadline)
        self.memory.end_turn()
        self.metrics.add(result)
        self.last = result
        return result.command

    def seat_metrics(self) -> SeatMetrics:
        return SeatMetrics(copy.deepcopy(self.metrics), entry=self.entry_name,
                           constraint=self.backend.mode)

    # ---- one turn ----------------------------------------------------------------------
    async def _turn(self, turn_deadline: float | None = None) -> TurnResult:
        cfg, memory = self.config, self.memory
        started = time.perf_counter()
        deadline = time.monotonic() + cfg.turn_seconds - cfg.margin
        if turn_deadline is not None:
            deadline = min(deadline, turn_deadline)
        stats = TurnStats()
        seed = derive_seed(self.seed, self.metrics.turns)
        messages: list[dict[str, Any]] = build_messages(memory, self.summaries, "json",
                                                        self.persona, seed=seed)
        log: dict[str, Any] = {"day": memory.day, "phase": memory.phase,
                               "phase_seq": memory.phase_seq, "version": memory.version,
                               "prompt": messages[-1]["content"], "output": "", "steps": [],
                               "action": "wait",
                               "tokens": {"prompt": 0, "completion": 0, "cached": 0}}
        outputs: list[str] = []
        steps: list[dict[str, Any]] = log["steps"]
        errors = self.metrics.errors
        corrections = 0
        calls_made: set[str] = set()
        prompt = "\n".join(str(m["content"]) for m in messages)

        def emit(step: dict[str, Any]) -> None:
            steps.append(step)
            if self.on_step is not None:
                self.on_step(self.slot, step)

        def finish(cmd: Command | None, action: str, abstain: bool = False) -> TurnResult:
            stats.seconds = time.perf_counter() - started
            if action == "wait" and (abstain or corrections > cfg.max_corrections):
                stats.forced = True
            log["output"] = "\n".join(outputs)
            log["action"] = action
            if not steps or steps[-1]["kind"] != "action":
                emit({"kind": "action", "name": action, "args": {},
                      "forced": stats.forced})
            self.turn_log.append(log)
            kind = abstention(log)  # counted as the arena report counts the stored turn
            if kind is not None:
                self.metrics.abstained += 1
                kinds = self.metrics.abstained_kinds
                kinds[kind] = kinds.get(kind, 0) + 1
            return TurnResult(cmd, action, log["output"], stats)

        try:
            mode = await self.backend.ensure_mode(deadline, errors)
        except ChatError as exc:
            emit({"kind": "fault", "fault": "error", "text": exc.kind})
            return finish(None, "wait", abstain=True)
        if mode == "tools":
            messages[0] = {"role": "system", "content": messages[0]["content"] + TOOLS_NOTE}
        step = 0
        while True:
            if corrections > cfg.max_corrections:
                return finish(None, "wait")
            allow_tools = stats.tool_calls < cfg.max_tool_calls
            options = tool_options(memory)
            schema = bounded(turn_json_schema(memory.legal, memory.names, options, allow_tools),
                             cfg.thought_chars)
            tools = act_tool(schema)
            try:
                reply = await self.backend.complete(
                    messages, mode=mode, schema=schema, tools=tools, deadline=deadline,
                    max_tokens=cfg.max_tokens, seed=derive_seed(seed, step), errors=errors)
            except ChatRejected:
                mode = self.backend.downgrade(mode)
                if mode == "tools":
                    messages[0] = {"role": "system",
                                   "content": messages[0]["content"] + TOOLS_NOTE}
                continue
            except ChatError as exc:
                emit({"kind": "fault", "fault": "error", "text": exc.kind})
                return finish(None, "wait", abstain=True)
            step += 1
            self._account(reply, stats, log, first=step == 1)
            raw = (f"{reply.tool_name}({reply.tool_args})" if reply.tool_name
                   else reply.content)
            outputs.append(raw)
            stats.segments += 1
            if reply.finish_reason == "length":
                stats.truncated += 1
            try:
                parsed = self._parse(reply)
            except ProtocolError as exc:
                stats.malformed += 1
                corrections += 1
                text = (f"[expression fault] {escape_text(str(exc))} Answer with exactly one "
                        + ("function call." if mode == "tools" else
                           'JSON object {"thought", "action", "args"}.'))
                emit({"kind": "fault", "fault": "expression", "text": text})
                self._observe(messages, reply, text)
                continue
            if parsed.thought:
                emit({"kind": "thinking", "text": parsed.thought})
            if parsed.kind == "tool":
                stats.tool_calls += 1
                call = json.dumps([parsed.name, parsed.args], sort_keys=True, default=str)
                if call in calls_made:  # refused: its answer is already above
                    stats.repeated_tools += 1
                    text = (f"[repeated call] You already called {parsed.name} with this "
                            "argument in this turn; its answer is above.")
                    emit({"kind": "fault", "fault": "repeat", "text": text})
                    self._observe(messages, reply, text)
                    continue
                calls_made.add(call)
                obs = run_tool(memory, parsed.name, parsed.tool_arg)
                emit({"kind": "tool", "name": parsed.name, "args": parsed.tool_arg,
                      "observation": obs})
                self._observe(messages, reply, obs)
                continue
            checked = check_final(memory, parsed.name, parsed.args, stats, prompt=prompt,
                                  summaries=self.summaries)
            if isinstance(checked, Refused):
                if checked.fault != "degenerate":
                    corrections += 1
                elif sum(stats.degenerate.values()) > 1:  # resampled once, then it waits
                    stats.silenced = True
                    return finish(None, "wait")
                emit({"kind": "fault", "fault": checked.fault, "text": checked.text})
                self._observe(messages, reply, checked.text)
                continue
            cmd = checked
            emit({"kind": "action", "name": parsed.name, "args": parsed.args,
                  "forced": False})
            return finish(cmd, parsed.name)

    def _account(self, reply: Any, stats: TurnStats, log: dict[str, Any], first: bool) -> None:
        m = self.metrics
        if first:
            stats.prompt_tokens = reply.prompt_tokens
        stats.requested_tokens += reply.prompt_tokens
        stats.generated_tokens += reply.completion_tokens
        stats.cached_tokens += reply.cached_tokens
        m.requests += 1
        m.completion_tokens += reply.completion_tokens
        m.cost_usd += self.backend.entry.cost(reply.prompt_tokens, reply.completion_tokens)
        m.latency_seconds += reply.seconds
        m.max_latency_seconds = max(m.max_latency_seconds, reply.seconds)
        tokens = log["tokens"]
        tokens["prompt"] += reply.prompt_tokens
        tokens["completion"] += reply.completion_tokens
        tokens["cached"] += reply.cached_tokens

    @staticmethod
    def _parse(reply: Any) -> Parsed:
        """The reply as the JSON protocol: `act`'s arguments are the object; a
        call of another function (a provider that ignored the named choice)
        is read as {"thought", "action": its name, "args": its arguments}."""
        if reply.tool_name == ACT_TOOL:
            return json_protocol.parse(reply.tool_args or "")
        if reply.tool_name:
            try:
                args = json.loads(reply.tool_args or "{}")
            except json.JSONDecodeError as exc:
                raise ProtocolError(f"the call's arguments are not valid JSON: {exc.msg}"
                                    ) from None
            if not isinstance(args, dict):
                raise ProtocolError("the call's arguments must be an object")
            thought = args.pop("thought", "")
            return json_protocol.parse(json.dumps(
                {"thought": thought if isinstance(thought, str) else str(thought),
                 "action": reply.tool_name, "args": args}))
        if not reply.content.strip():
            raise ProtocolError("the answer is empty")
        text = extract_json(reply.content)
        try:
            return json_protocol.parse(text)
        except ProtocolError:
            if reply.finish_reason != "length":
                raise
            closed = close_truncated(text)
            if closed is None:
                raise
            return closed

    @staticmethod
    def _observe(messages: list[dict[str, Any]], reply: Any, text: str) -> None:
        """The model's turn, then the observation as the next message."""
        if reply.tool_name:
            call_id = reply.tool_call_id or f"call_{len(messages)}"
            messages.append({"role": "assistant", "content": reply.content or "",
                             "tool_calls": [{"id": call_id, "type": "function", "function": {
                                 "name": reply.tool_name,
                                 "arguments": reply.tool_args or "{}"}}]})
            messages.append({"role": "tool", "tool_call_id": call_id,
                             "content": f"<observation>{text}</observation>"})
        else:
            messages.append({"role": "assistant", "content": reply.content})
            messages.append({"role": "user", "content": f"<observation>{text}</observation>"})


def chat_seat_from_spec(spec: Mapping[str, Any], slot: int, seed: int, backend: ChatBackend, *,
                        game_id: str = "", summaries: Mapping[int, str] | None = None,
                        turn_seconds: float | None = None) -> ChatSeat:
    """A lobby's chat seat: its persona (named, else drawn from the game's
    seed) and a per-seat sampling seed, as `llm_seat.seat_from_spec`."""
    name = spec.get("persona")
    persona = PERSONAS[name] if name in PERSONAS else persona_for(slot, seed)
    config = ChatConfig(turn_seconds=turn_seconds or backend.entry.turn_seconds,
                        thought_chars=backend.entry.thought_chars)
    return ChatSeat(slot, backend, config, persona=persona, summaries=summaries,
                    seed=derive_seed(seed, slot))
