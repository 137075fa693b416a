"""A small OpenAI-compatible chat provider for the chat backend's error paths
(no model: it answers from the request's own schema or tools).

The `model` of a request picks a behaviour:

    good            honours response_format / tools: a legal answer built from
                    the schema (prefers a final action other than wait)
    ratelimit       every other request: 429 with Retry-After: 0.2
    flaky           every other request: 500
    down            always 503
    slow            sleeps `slow_seconds` before answering
    truncated       `{"thought": "I suspect Pla` with finish_reason "length",
                    then (after the fault observation) a good answer
    ignore-schema   prose instead of JSON, always
    no-rf           400 for response_format; honours tools
    no-constraints  400 for response_format and tools; a fenced JSON answer
    echo-key        401 quoting the key it was sent
    dead-target     a final action aimed at a dead player (or an unknown one
                    when nobody is dead), then a good answer after the fault

Every request is recorded (body, headers and `at`, its arrival on
time.monotonic()) in `FakeProvider.requests`.
Run it with `async with FakeProvider() as url:`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import socket
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

PROBE = "tossim-417-ok"  # chat_backend.PROBE_CODE
PREFERRED = ("vote", "night", "judge", "jail", "seance", "speak", "will", "whisper", "reveal",
             "death_note", "wait")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def value_for(schema: dict[str, Any], rng: random.Random) -> Any:
    """A value that satisfies a (small) JSON schema."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    t = schema.get("type")
    if t == "object":
        return {k: value_for(v, rng) for k, v in schema.get("properties", {}).items()}
    if t == "array":
        items = schema.get("items", {})
        n = schema.get("minItems", 1)
        if "enum" in items and len(items["enum"]) >= n:
            return rng.sample(items["enum"], n)
        return [value_for(items, rng) for _ in range(n)]
    if t == "integer":
        return 1
    if t == "string":
        return sentence(rng)
    return None


_SLOTS = (("feel", "think", "sense", "suspect", "smell", "doubt", "fear", "see"),
          ("trouble", "danger", "lies", "tricks", "secrets", "games", "plots", "fear"),
          ("around", "among", "near", "behind", "inside", "beyond", "under", "within"),
          ("town", "us", "here", "everyone", "them", "chat", "tonight", "today"),
          ("honestly", "truly", "really", "frankly", "sadly", "clearly", "maybe", "perhaps"))


def sentence(rng: random.Random) -> str:
    """A short sentence a player could say, different each time (a provider
    that repeats itself is refused by the text guard, docs/agents.md)."""
    verb, noun, where, who, how = (rng.choice(words) for words in _SLOTS)
    return f"I {verb} {noun} {where} {who}, {how}."


def _rank(name: str) -> int:
    return PREFERRED.index(name) if name in PREFERRED else -1  # tools first: never chosen


def answer_from_schema(schema: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    branches = [b for b in schema.get("oneOf", [schema])
                if b.get("properties", {}).get("action", {}).get("const") in PREFERRED]
    if not branches:
        return {"thought": "?", "action": "wait", "args": {}}
    best = min(branches, key=lambda b: _rank(b["properties"]["action"]["const"]))
    return {"thought": "Thinking it over.", "action": best["properties"]["action"]["const"],
            "args": value_for(best["properties"]["args"], rng)}


def call_from_tools(tools: list[dict[str, Any]], rng: random.Random) -> tuple[str, str]:
    fn = tools[0]["function"]  # `act`: its parameters are the turn's schema
    return fn["name"], json.dumps(answer_from_schema(fn["parameters"], rng))


def _dead_name(messages: list[dict[str, Any]]) -> str:
    for m in messages:
        content = m.get("content") or ""
        found = re.findall(r"^(Player \d+)(?: \(you\))? \[DEAD\]", content, re.MULTILINE)
        if found:
            return found[0]
    return "Player 99"


class _QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers (it runs inside the test's loop)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class FakeProvider:
    def __init__(self, *, slow_seconds: float = 3.0, seed: int = 0) -> None:
        self.slow_seconds = slow_seconds
        self.rng = random.Random(seed)
        self.requests: list[dict[str, Any]] = []
        self.counts: dict[str, int] = {}
        self.outage = False  # True: every request gets 503, whatever its model
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self.completions)
        self.app.get("/v1/models")(self.models)
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    async def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": "good", "object": "model"}]}

    def _reply(self, body: dict[str, Any], *, content: str | None = None,
               call: tuple[str, str] | None = None, finish: str = "stop") -> JSONResponse:
        n = len(self.requests)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if call is not None:
            message["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                                      "function": {"name": call[0], "arguments": call[1]}}]
            finish = "tool_calls"
        prompt = sum(len(str(m.get("content") or "")) for m in body["messages"]) // 4
        completion = len(content or (call[1] if call else "")) // 4 + 1
        return JSONResponse({
            "id": f"fake-{n}", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion,
                      "prompt_tokens_details": {"cached_tokens": prompt // 2}}})

    def _good(self, body: dict[str, Any], *, fenced: bool = False) -> JSONResponse:
        rf = body.get("response_format")
        if rf and rf.get("type") == "json_schema":
            obj = answer_from_schema(rf["json_schema"]["schema"], self.rng)
            if PROBE in json.dumps(rf):  # the probe
                obj = value_for(rf["json_schema"]["schema"], self.rng)
            return self._reply(body, content=json.dumps(obj))
        if body.get("tools"):
            tools = body["tools"]
            if tools[0]["function"]["name"] == "report":  # the probe
                return self._reply(body, call=("report", json.dumps(
                    value_for(tools[0]["function"]["parameters"], self.rng))))
            return self._reply(body, call=call_from_tools(tools, self.rng))
        system = str(body["messages"][0].get("content") or "") if body["messages"] else ""
        if "summaries of a Town of Salem day" in system:  # a day summary: plain prose
            return self._reply(body, content="Player 2 accused Player 3 of lying about a "
                                             "claim; nobody was put on trial.")
        text = json.dumps({"thought": "No constraint; I answer anyway.", "action": "wait",
                           "args": {}})
        return self._reply(body, content=f"Sure!\n```json\n{text}\n```" if fenced else text)

    @staticmethod
    def _refuse(what: str) -> JSONResponse:
        return JSONResponse({"error": {"message": f"{what} is not supported by this model",
                                       "type": "invalid_request_error", "code": None}},
                            status_code=400)

    async def completions(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append({"body": body, "headers": dict(request.headers),
                              "at": time.monotonic()})
        model = body.get("model", "good")
        n = self.counts[model] = self.counts.get(model, 0) + 1
        probe = PROBE in json.dumps(body)
        observed = any("<observation>" in str(m.get("content") or "")
                       for m in body["messages"][2:])
        if model == "echo-key":  # a provider that quotes the key it refuses
            key = request.headers.get("authorization", "").removeprefix("Bearer ")
            return JSONResponse({"error": {"message": f"Incorrect API key provided: {key}"}},
                                status_code=401)
        if model == "down" or self.outage:
            return JSONResponse({"error": {"message": "overloaded"}}, status_code=503)
        if model == "ratelimit" and n % 2 == 1:
            return JSONResponse({"error": {"message": "rate limited"}}, status_code=429,
                                headers={"Retry-After": "0.2"})
        if model == "flaky" and n % 2 == 1:
            return JSONResponse({"error": {"message": "internal error"}}, status_code=500)
        if model == "slow":
            await asyncio.sleep(self.slow_seconds)
        if model == "truncated" and not observed and not probe:
            return self._reply(body, content='{"thought": "I suspect Pla', finish="length")
        if model == "ignore-schema" and not probe:
            return self._reply(body, content="I think Player 2 is suspicious, let's vote!")
        if model in ("no-rf", "no-constraints") and body.get("response_format"):
            return self._refuse("response_format")
        if model == "no-constraints" and body.get("tools"):
            return self._refuse("tools")
        if model == "no-constraints":
            return self._good(body, fenced=True)
        if model == "dead-target" and not observed and not probe:
            rf = body.get("response_format")
            if rf:
                branches = rf["json_schema"]["schema"].get("oneOf", [])
                actions = {b["properties"]["action"]["const"] for b in branches}
                for act, arg in (("vote", "target"), ("night", "targets"), ("jail", "target")):
                    if act in actions:
                        target = _dead_name(body["messages"])
                        value: Any = [target] if arg == "targets" else target
                        return self._reply(body, content=json.dumps(
                            {"thought": "That one.", "action": act, "args": {arg: value}}))
        return self._good(body)

    async def __aenter__(self) -> str:
        port = _free_port()
        config = uvicorn.Config(self.app, host="127.0.0.1", port=port, log_level="warning",
                                lifespan="off")
        self._server = _QuietServer(config)
        self._task = asyncio.create_task(self._server.serve())
        while not self._server.started:
            await asyncio.sleep(0.02)
        return f"http://127.0.0.1:{port}/v1"

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


@contextlib.asynccontextmanager
async def fake_provider(**kw: Any) -> AsyncIterator[tuple[FakeProvider, str]]:
    provider = FakeProvider(**kw)
    url = await provider.__aenter__()
    try:
        yield provider, url
    finally:
        await provider.__aexit__()
