"""The chat turn transport: a chat-completions API (`inference/chat_backend.py`)
in seed 001's JSON protocol (thought/action/args).

Each request is one model turn over the conversation so far, constrained by
the endpoint's mode:

    json_schema  content is {"thought", "action", "args"}
    tools        one function call (`act`): a tool or a final action
    text         content, parsed as the JSON object

and the observation that answers it (a tool's, a fault's) is the next
message: a `tool` message in tools mode, else a user message. An endpoint
that refuses a mode during play is moved down a mode and asked again; one
that fails (after the backend's own retries within the deadline) ends the
turn in an abstention (`Failed`). The transport counts the API's usage as
each answer arrives (tokens, requests, latency, cost) into the turn's stats
and the seat's metrics, so a turn cancelled at its deadline keeps them.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator
from typing import Any

from tossim.agents.actions import TEXT_LIMITS
from tossim.agents.grammar import turn_json_schema
from tossim.agents.metrics import AgentMetrics
from tossim.agents.protocols import Parsed, ProtocolError
from tossim.agents.protocols import json as json_protocol
from tossim.agents.tools import tool_options
from tossim.agents.transport import (
    Event,
    Failed,
    Final,
    Thought,
    ToolCall,
    Unreadable,
    expression_fault,
)
from tossim.agents.turn import Turn
from tossim.inference.chat_backend import (
    ACT_TOOL,
    ChatBackend,
    ChatError,
    ChatRejected,
    ChatReply,
    act_tool,
)
from tossim.inference.seeds import derive_seed

TOOLS_NOTE = ("\n## Answering with function calls\nAnswer each step by calling the function "
              "`act` with that JSON object as its arguments.\n")
ANSWER_TOOLS = "Answer with exactly one function call."
ANSWER_JSON = 'Answer with exactly one JSON object {"thought", "action", "args"}.'
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)
_OPEN_TEXT = re.compile(r'"(text|thought)"\s*:\s*"((?:[^"\\]|\\.)*)$')
_CLOSINGS = ('"}}', '"]}}', '}}', ']}}', '"}', '}')


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


def close_truncated(text: str) -> Parsed | None:
    """An object cut off by max_tokens inside its last string, closed as the
    token transport closes a cut-off segment (free text cut at a word
    boundary, then the brackets): the parsed step, or None when no closing fits."""
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


def parse_reply(reply: ChatReply) -> Parsed:
    """The reply as the JSON protocol: `act`'s arguments are the object; a
    call of another function (a provider that ignored the named choice) is
    read as {"thought", "action": its name, "args": its arguments}."""
    if reply.tool_name == ACT_TOOL:
        return json_protocol.parse(reply.tool_args or "")
    if reply.tool_name:
        try:
            args = json.loads(reply.tool_args or "{}")
        except json.JSONDecodeError as exc:
            raise ProtocolError(f"the call's arguments are not valid JSON: {exc.msg}") from None
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


class ChatTransport:
    """One turn's conversation with a chat API (see the module docstring).
    `deadline` (time.monotonic()) bounds every request: the endpoint's own,
    not a timed turn's (a chat turn ends in an abstention when it passes)."""

    def __init__(self, backend: ChatBackend, messages: list[dict[str, Any]],
                 metrics: AgentMetrics, *, deadline: float, seed: int,
                 max_tokens: int | None, thought_chars: int) -> None:
        self.backend, self.messages, self.metrics = backend, messages, metrics
        self.deadline, self.seed = deadline, seed
        self.max_tokens, self.thought_chars = max_tokens, thought_chars
        self.prompt = "\n".join(str(m["content"]) for m in messages)
        self.mode: str | None = None  # the endpoint's constraint, once known
        self.outputs: list[str] = []
        self.answered = 0  # requests answered this turn (each one's seed)
        self.reply: ChatReply | None = None  # the last answer, which an observation follows

    # ---- the transport ----------------------------------------------------------------
    async def attempt(self, turn: Turn) -> AsyncGenerator[Event, None]:
        """Requests until a final action (tool calls up to the cap, each
        answered by the loop's observation), an unreadable answer, or a
        failed request."""
        if self.mode is None:
            try:
                self._use(await self.backend.ensure_mode(self.deadline, self.metrics.errors))
            except ChatError as exc:
                yield Failed(exc.kind)
                return
        while True:
            reply = await self._request(turn)
            if isinstance(reply, ChatError):
                yield Failed(reply.kind)
                return
            try:
                parsed = parse_reply(reply)
            except ProtocolError as exc:
                ask = ANSWER_TOOLS if self.mode == "tools" else ANSWER_JSON
                yield Unreadable(expression_fault(str(exc), ask))
                return
            if parsed.thought:
                yield Thought(parsed.thought)
            if parsed.kind == "tool":
                yield ToolCall(parsed, parsed.tool_arg)
                continue
            yield Final(parsed)
            return

    def observe(self, text: str) -> None:
        """The model's answer, then the observation as the next message."""
        reply = self.reply
        assert reply is not None, "an observation follows an answer"
        if reply.tool_name:
            call_id = reply.tool_call_id or f"call_{len(self.messages)}"
            self.messages.append({
                "role": "assistant", "content": reply.content or "",
                "tool_calls": [{"id": call_id, "type": "function", "function": {
                    "name": reply.tool_name, "arguments": reply.tool_args or "{}"}}]})
            self.messages.append({"role": "tool", "tool_call_id": call_id,
                                  "content": f"<observation>{text}</observation>"})
        else:
            self.messages.append({"role": "assistant", "content": reply.content})
            self.messages.append({"role": "user",
                                  "content": f"<observation>{text}</observation>"})

    def prompt_text(self) -> str:
        return self.prompt

    def transcript(self) -> str:
        return "\n".join(self.outputs)

    def wait_step(self, forced: bool) -> dict[str, Any]:
        return {"kind": "action", "name": "wait", "args": {}, "forced": forced}

    def accepted_step(self, parsed: Parsed) -> dict[str, Any] | None:
        return {"kind": "action", "name": parsed.name, "args": parsed.args, "forced": False}

    # ---- requests ---------------------------------------------------------------------
    def _use(self, mode: str) -> None:
        """Ask in `mode` from now on (function calls need a word in the
        system prompt)."""
        if mode == "tools" and self.mode != "tools":
            first = self.messages[0]
            self.messages[0] = {"role": "system", "content": first["content"] + TOOLS_NOTE}
        self.mode = mode

    async def _request(self, turn: Turn) -> ChatReply | ChatError:
        """One answer in the endpoint's mode (moved down a mode while the
        endpoint refuses one), counted; or the error that ends the turn."""
        memory = turn.memory
        while True:
            mode = self.mode
            assert mode is not None, "attempt() asks the endpoint's mode first"
            schema = bounded(turn_json_schema(memory.legal, memory.names, tool_options(memory),
                                              turn.tools_left), self.thought_chars)
            try:
                reply = await self.backend.complete(
                    self.messages, mode=mode, schema=schema,
                    tools=act_tool(schema), deadline=self.deadline, max_tokens=self.max_tokens,
                    seed=derive_seed(self.seed, self.answered), errors=self.metrics.errors)
            except ChatRejected:
                self._use(self.backend.downgrade(mode))
                continue
            except ChatError as exc:
                return exc
            self.answered += 1
            self._account(reply, turn, first=self.answered == 1)
            self.outputs.append(f"{reply.tool_name}({reply.tool_args})" if reply.tool_name
                                else reply.content)
            turn.stats.segments += 1
            if reply.finish_reason == "length":
                turn.stats.truncated += 1
            self.reply = reply
            return reply

    def _account(self, reply: ChatReply, turn: Turn, first: bool) -> None:
        stats, m = turn.stats, self.metrics
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

