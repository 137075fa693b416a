"""The openai backend stops waiting at a request's deadline
(docs/agents.md#deadlines): the HTTP request is cancelled (a completions
server sees the connection go) and the seat gets an empty "deadline" result
instead of a stalled turn."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
from agents.fake_backend import CharTokenizer  # tests/agents, on sys.path under pytest

from tossim.inference.base import GenerationRequest
from tossim.inference.openai_backend import SELF_TEST_REGEX, OpenAIBackend


async def test_a_server_that_does_not_answer_in_time_is_left_at_the_deadline() -> None:
    tok = CharTokenizer()
    cancelled = asyncio.Event()

    async def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if (body.get("structured_outputs") or {}).get("regex") == SELF_TEST_REGEX:
            text = "tossim-042-ok"
            return httpx.Response(200, json={"choices": [{
                "text": text, "token_ids": tok.encode(text), "finish_reason": "stop"}]})
        try:
            await asyncio.Event().wait()  # a server busy with other work: no answer
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    backend = OpenAIBackend("http://fake/v1", tok, model="m",
                            transport=httpx.MockTransport(handler))
    await backend.start()
    res = await backend.generate_one(GenerationRequest(
        prompt_ids=(5, 6, 7), max_tokens=8, deadline=time.monotonic() + 0.3))
    assert res.finish_reason == "deadline" and res.token_ids == () and res.text == ""
    await asyncio.wait_for(cancelled.wait(), 5)  # the request itself was cancelled
    assert backend.stats.deadline_stops == 1
    await backend.close()
