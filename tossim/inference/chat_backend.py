"""A backend for any OpenAI-compatible *chat* API (hosted providers, routers,
`vllm serve`, SGLang, llama.cpp, Ollama) through the official `openai` client.

Unlike the token-ID backends, a chat API takes messages and gives text or a
tool call, so the chat seat (`agents/chat_seat.py`) drives it one model turn
at a time. The output is constrained the strongest way the endpoint allows:

- `json_schema`: `response_format` with the turn's JSON schema (seed 001's
  thought/action/args, one branch per legal action);
- `tools`: one function, `act`, whose parameters are that schema, named in
  `tool_choice` so the model must call it (the arguments are constrained);
- `text`: no constraint (the seat still parses and validates the answer).

`probe()` finds which one an endpoint honours (a request no model answers
right unless the constraint is applied), once per entry and process: a
server probes its catalogue's chat entries at start-up in the background
(`start_probes`; /api/models shows the result, `probe_state`), and an entry
whose probe failed or never ran is probed at its first turn. A request
refused later for its constraint (`ChatRejected`) moves the entry down one
mode. Retries, 429s (Retry-After honoured, else exponential backoff with
jitter), 5xx, timeouts and connection errors are retried only while the
caller's deadline allows; then `ChatError` tells the seat to abstain. Every
error is counted (per kind) here and by the seat. Requests per entry are
bounded by `max_concurrency` and spaced to `rpm`.

The API key is read from the entry's environment variable when the client
is built and lives only inside the client; nothing here logs it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

from tossim.inference.base import BackendUnavailable
from tossim.inference.catalogue import ModelEntry
from tossim.inference.limits import RateLimiter, RateLimitExceeded, shared_limiter
from tossim.inference.seeds import derive_seed
from tossim.timeouts import stopped, within

log = logging.getLogger(__name__)

MODES = ("json_schema", "tools", "text")
PROBE_CODE = "tossim-417-ok"
PROBE_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {"code": {"type": "string", "enum": [PROBE_CODE]}},
    "required": ["code"], "additionalProperties": False}
BACKOFF_BASE = 0.5  # seconds, doubled per retry
BACKOFF_CAP = 20.0
DEFAULT_MAX_TOKENS = 256


class ChatError(RuntimeError):
    """A request that could not be answered in time. `kind`: rate_limit,
    server, timeout, transport, client (4xx other than a refused constraint),
    bad_reply (no choice in the answer)."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


class ChatRejected(ChatError):
    """The endpoint refused the request's constraint (400/422 on
    response_format or tools): use a weaker mode."""

    def __init__(self, detail: str) -> None:
        super().__init__("rejected", detail)


@dataclass(frozen=True)
class ChatReply:
    content: str
    tool_name: str | None
    tool_args: str | None
    tool_call_id: str | None
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    seconds: float


@dataclass
class ChatStats:
    """What one entry's backend did in this process (all seats together)."""

    requests: int = 0
    replies: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    seconds: float = 0.0
    max_seconds: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "replies": self.replies,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "cached_tokens": self.cached_tokens, "seconds": round(self.seconds, 3),
                "max_seconds": round(self.max_seconds, 3), "errors": dict(self.errors)}


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from a Retry-After (or retry-after-ms) header, if any."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


ACT_TOOL = "act"


def act_tool(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The `tools` of a turn in tools mode: one function, `act`, whose
    parameters are the turn's JSON schema (seed 001's thought/action/args, one
    branch per allowed tool or final action). The request names it in
    `tool_choice`, which every OpenAI-compatible server honours by
    constraining the arguments (vLLM applies `required` only through a
    model-specific tool parser; a named choice goes through structured
    outputs)."""
    return [{"type": "function", "function": {
        "name": ACT_TOOL,
        "description": "Take one step: call a tool (you then receive its observation) or "
                       "take a final action, which ends your turn.",
        "parameters": {"type": "object", **schema}}}]


class ChatBackend:
    """One catalogue entry's chat endpoint (see the module docstring).
    `client`: an `openai.AsyncOpenAI` (tests); default one built from the entry."""

    name = "chat"

    def __init__(self, entry: ModelEntry, *, client: Any = None,
                 rng: random.Random | None = None) -> None:
        if entry.backend != "chat":
            raise ValueError(f"entry {entry.name!r} is not a chat entry")
        self.entry = entry
        if client is None:
            try:
                import openai
            except ImportError as exc:
                raise BackendUnavailable(
                    f"the chat backend needs the openai package: {exc}") from None
            client = openai.AsyncOpenAI(base_url=entry.base_url, api_key=entry.api_key()
                                        or "no-key", max_retries=0, timeout=60.0)
        self.client = client
        self.rng = rng or random.Random()
        self.stats = ChatStats()
        self.mode: str | None = None if entry.constraint == "auto" else entry.constraint
        self.probe_report: dict[str, str] = {}
        self.probe_error: str | None = None  # why the last probe failed (it is retried)
        self._sem = asyncio.Semaphore(entry.max_concurrency)
        # one limiter per entry for the process: every game's seats share the rpm
        self._limiter: RateLimiter = shared_limiter(entry.model_dump_json(), entry.rpm)
        self._probe_lock = asyncio.Lock()

    @property
    def label(self) -> str:
        return f"chat:{self.entry.name}"

    # ---- start-up probe ----------------------------------------------------------------
    async def ensure_mode(self, deadline: float, errors: dict[str, int] | None = None) -> str:
        """The constraint mode to use (probing the endpoint the first time).
        Transport errors of the probe are counted in `errors` (the seat's)."""
        if self.mode is not None:
            return self.mode
        async with self._probe_lock:
            if self.mode is None:
                seen: dict[str, int] = {}
                try:
                    self.mode = await self.probe(deadline, seen)
                    self.probe_error = None
                except ChatError as exc:
                    self.probe_error = exc.kind
                    raise
                finally:
                    if errors is not None:
                        for kind, n in seen.items():
                            if kind != "rejected":  # the probe's question, not a failure
                                errors[kind] = errors.get(kind, 0) + n
        return self.mode

    async def probe(self, deadline: float | None = None,
                    errors: dict[str, int] | None = None) -> str:
        """Which constraint this endpoint honours: json_schema, tools or text.
        ChatError when the endpoint cannot be reached (nothing is recorded then,
        so the next turn probes again)."""
        deadline = deadline or time.monotonic() + max(self.entry.turn_seconds, 30.0)
        messages = [{"role": "user", "content": "Reply with a JSON object that reports "
                                                "today's weather in one word."}]
        report: dict[str, str] = {}
        try:
            reply = await self.complete(messages, mode="json_schema", schema=PROBE_SCHEMA,
                                        deadline=deadline, max_tokens=40, seed=0,
                                        errors=errors)
            ok = _probe_ok(reply.content)
            report["json_schema"] = "applied" if ok else "ignored"
            if ok:
                return self._probed("json_schema", report)
        except ChatRejected as exc:
            report["json_schema"] = f"rejected ({exc.detail[:120]})"
        tools = [{"type": "function", "function": {
            "name": "report", "description": "Report the code.", "parameters": PROBE_SCHEMA}}]
        try:
            reply = await self.complete(messages, mode="tools", tools=tools,
                                        deadline=deadline, max_tokens=40, seed=0,
                                        errors=errors)
            ok = reply.tool_name == "report" and _probe_ok(reply.tool_args or "")
            report["tools"] = "applied" if ok else "ignored"
            if ok:
                return self._probed("tools", report)
        except ChatRejected as exc:
            report["tools"] = f"rejected ({exc.detail[:120]})"
        return self._probed("text", report)

    def _probed(self, mode: str, report: dict[str, str]) -> str:
        self.probe_report = report
        log.info("%s: constraint mode %s (%s)", self.label, mode, report)
        return mode

    def downgrade(self, mode: str) -> str:
        """The next weaker mode after `mode` was refused (recorded for the entry)."""
        weaker = MODES[min(MODES.index(mode) + 1, len(MODES) - 1)]
        if self.mode == mode:
            log.warning("%s: %s refused; using %s", self.label, mode, weaker)
            self.mode = weaker
            self.probe_report[mode] = "rejected during play"
        return weaker

    # ---- requests ----------------------------------------------------------------------
    def _body(self, messages: Sequence[Mapping[str, Any]], mode: str,
              schema: dict[str, Any] | None, tools: list[dict[str, Any]] | None,
              max_tokens: int | None, seed: int | None) -> dict[str, Any]:
        sampling = dict(self.entry.sampling)
        body: dict[str, Any] = {"model": self.entry.model, "messages": list(messages),
                                "max_tokens": max_tokens or sampling.pop("max_tokens",
                                                                         DEFAULT_MAX_TOKENS)}
        sampling.pop("max_tokens", None)
        if isinstance(sampling.get("seed"), int) and seed is not None:
            # a per-request seed only when the entry asks for seeded sampling:
            # vLLM-CPU's sampler crashes on seeded requests ("CPU Generator
            # does not use offset"), and most hosted APIs ignore seeds anyway
            sampling["seed"] = derive_seed(sampling["seed"], seed)
        body.update(sampling)
        if mode == "json_schema" and schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "tossim_turn", "schema": schema, "strict": False}}
        elif mode == "tools" and tools:
            body["tools"] = tools
            body["tool_choice"] = {"type": "function",
                                   "function": {"name": tools[0]["function"]["name"]}}
        return body

    async def complete(self, messages: Sequence[Mapping[str, Any]], *, mode: str,
                       deadline: float, schema: dict[str, Any] | None = None,
                       tools: list[dict[str, Any]] | None = None,
                       max_tokens: int | None = None, seed: int | None = None,
                       errors: dict[str, int] | None = None) -> ChatReply:
        """One chat completion, retried while `deadline` (time.monotonic)
        allows. Every failed attempt is counted in `errors` and the stats."""
        import openai
        body = self._body(messages, mode, schema, tools, max_tokens, seed)
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0.05:
                self._count("timeout", errors)
                raise ChatError("timeout", "no time left before the seat's deadline")
            wait: float | None = None
            try:
                try:
                    await self._limiter.wait(deadline)
                except RateLimitExceeded as exc:
                    raise ChatError("rate_limit", str(exc)) from None
                remaining = deadline - time.monotonic()
                return await within(self._send(body, remaining), max(remaining, 0.01))
            except ChatError as exc:  # bad_reply, rate limiter
                self._count(exc.kind, errors)
                kind, detail = exc.kind, exc.detail
                if kind == "bad_reply":
                    raise
            except (TimeoutError, openai.APITimeoutError):
                self._count("timeout", errors)
                raise ChatError("timeout", "the endpoint did not answer before the "
                                           "seat's deadline") from None
            except openai.RateLimitError as exc:
                kind, detail = "rate_limit", self._scrub(_status_detail(exc))
                wait = retry_after(exc.response.headers)
                self._count(kind, errors)
            except openai.APIConnectionError as exc:
                kind, detail = "transport", type(exc).__name__
                self._count(kind, errors)
            except openai.APIStatusError as exc:
                status = exc.status_code
                detail = self._scrub(_status_detail(exc))
                if status >= 500 or status in (408, 409):
                    kind = "server"
                    self._count(kind, errors)
                    wait = retry_after(exc.response.headers)
                elif status in (400, 404, 415, 422) and mode != "text" and _about_constraint(
                        detail, mode):
                    self._count("rejected", errors)
                    raise ChatRejected(detail) from None
                else:
                    self._count("client", errors)
                    raise ChatError("client", detail) from None
            except openai.APIError as exc:  # malformed answers and the like
                kind, detail = "bad_reply", type(exc).__name__
                self._count(kind, errors)
                raise ChatError(kind, detail) from None
            if wait is None:
                wait = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** attempt)
                wait *= 0.5 + self.rng.random()  # jitter
            attempt += 1
            if time.monotonic() + wait >= deadline - 0.05:
                raise ChatError(kind, f"{detail} (no time left to retry)")
            log.info("%s: %s (%s); retrying in %.2f s", self.label, kind, detail, wait)
            await asyncio.sleep(wait)

    def _scrub(self, detail: str) -> str:
        """An error body with the key blanked (some providers echo it back)."""
        key = self.entry.api_key()
        return detail.replace(key, "***") if key and len(key) >= 8 else detail

    def _count(self, kind: str, errors: dict[str, int] | None) -> None:
        self.stats.error(kind)
        if errors is not None:
            errors[kind] = errors.get(kind, 0) + 1

    async def _send(self, body: dict[str, Any], timeout: float) -> ChatReply:
        async with self._sem:
            started = time.perf_counter()
            self.stats.requests += 1
            resp = await self.client.with_options(timeout=timeout).chat.completions.create(
                **body)
            seconds = time.perf_counter() - started
        if not getattr(resp, "choices", None):
            raise ChatError("bad_reply", "the answer has no choices")
        choice = resp.choices[0]
        msg = choice.message
        calls = getattr(msg, "tool_calls", None) or []
        call = calls[0] if calls else None
        usage = getattr(resp, "usage", None)
        details = getattr(usage, "prompt_tokens_details", None) if usage else None
        reply = ChatReply(
            content=msg.content or "",
            tool_name=call.function.name if call is not None else None,
            tool_args=call.function.arguments if call is not None else None,
            tool_call_id=getattr(call, "id", None) if call is not None else None,
            finish_reason=str(choice.finish_reason or "stop"),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cached_tokens=int(getattr(details, "cached_tokens", 0) or 0) if details else 0,
            seconds=seconds)
        s = self.stats
        s.replies += 1
        s.prompt_tokens += reply.prompt_tokens
        s.completion_tokens += reply.completion_tokens
        s.cached_tokens += reply.cached_tokens
        s.seconds += seconds
        s.max_seconds = max(s.max_seconds, seconds)
        return reply

    def stats_dict(self) -> dict[str, Any]:
        """Per-model figures (every seat and game of this process): tokens as
        the API reports them, latency, errors, cost and the constraint mode."""
        out = self.stats.to_dict()
        out.update({"entry": self.entry.name, "constraint": self.mode,
                    "probe": dict(self.probe_report),
                    "cost_usd": round(self.entry.cost(self.stats.prompt_tokens,
                                                      self.stats.completion_tokens), 6)
                    if self.entry.priced else None})
        return out

    async def close(self) -> None:
        close = getattr(self.client, "close", None)
        if close is not None:
            await close()


def _probe_ok(text: str) -> bool:
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return False
    return isinstance(obj, dict) and obj.get("code") == PROBE_CODE


def _status_detail(exc: Any) -> str:
    """The status and the start of the error body (never the request headers)."""
    body = getattr(exc, "body", None)
    text = json.dumps(body)[:300] if body is not None else str(exc.message)[:300]
    return f"HTTP {exc.status_code}: {text}"


def _about_constraint(detail: str, mode: str) -> bool:
    words = ("response_format", "json_schema", "structured", "guided", "schema") \
        if mode == "json_schema" else ("tool", "function")
    low = detail.lower()
    return any(w in low for w in words)


_shared: dict[str, ChatBackend] = {}


def shared_chat_backend(entry: ModelEntry) -> ChatBackend:
    """The process-wide backend of an entry (one client, one concurrency
    bound, one rate limit and one probe for every seat and game)."""
    key = entry.model_dump_json()
    backend = _shared.get(key)
    if backend is None:
        backend = _shared[key] = ChatBackend(entry)
    return backend


def probed_mode(entry: ModelEntry) -> str | None:
    """The constraint mode this process has found for `entry` (None: not yet
    probed: the server probes at start-up, anything else at the first turn)."""
    backend = _shared.get(entry.model_dump_json())
    return backend.mode if backend is not None else None


def probe_state(entry: ModelEntry) -> dict[str, Any]:
    """What /api/models shows of an entry's probe (no URL, no key):
    `probed_constraint` (the mode found; the entry's own when it names one;
    None until probed) and `probe` ("pending", "done", "fixed" or "failed:
    KIND", retried at the entry's first turn)."""
    if entry.backend != "chat":
        return {}
    if entry.constraint != "auto":
        return {"probed_constraint": entry.constraint, "probe": "fixed"}
    backend = _shared.get(entry.model_dump_json())
    if backend is None or (backend.mode is None and backend.probe_error is None):
        return {"probed_constraint": None, "probe": "pending"}
    if backend.mode is not None:
        return {"probed_constraint": backend.mode, "probe": "done"}
    return {"probed_constraint": None, "probe": f"failed: {backend.probe_error}"}


STARTUP_PROBE_SECONDS = 20.0  # each entry's probe at start-up, at most


async def probe_entries(entries: Sequence[ModelEntry],
                        timeout: float | None = None) -> dict[str, str | None]:
    """Probe the chat entries that let the endpoint decide (`constraint =
    "auto"`), all at once, each within `timeout` seconds, through their
    shared backends (so seats use what was found). Returns name -> mode, or
    None where the endpoint could not be reached in time: nothing is
    recorded then and the entry's first turn probes again. Never raises for
    an endpoint's failure."""
    todo = [e for e in entries if e.backend == "chat" and e.constraint == "auto"]
    limit = STARTUP_PROBE_SECONDS if timeout is None else timeout

    async def one(entry: ModelEntry) -> str | None:
        backend = shared_chat_backend(entry)
        try:
            return await within(
                backend.ensure_mode(time.monotonic() + limit), limit + 1.0)
        except (ChatError, TimeoutError) as exc:
            if backend.mode is None and backend.probe_error is None:
                backend.probe_error = getattr(exc, "kind", "timeout")
            log.warning("%s: start-up probe failed (%s); the first turn probes again",
                        backend.label, backend.probe_error)
            return None
        except Exception:  # a bad answer must not take the server down
            log.exception("%s: start-up probe failed", backend.label)
            backend.probe_error = backend.probe_error or "error"
            return None

    found = await asyncio.gather(*(one(e) for e in todo))
    return {e.name: mode for e, mode in zip(todo, found, strict=True)}


def start_probes(catalogue_path: Any = None,
                 timeout: float | None = None) -> asyncio.Task[Any] | None:
    """At server start-up: probe the catalogue's playable chat entries in
    the background (start-up does not wait; a broken catalogue or a down
    endpoint only leaves the entries unprobed). None when there is nothing
    to probe. Each probe takes at most `timeout` seconds (default
    STARTUP_PROBE_SECONDS). Stop it with `stop_probes`."""
    from tossim.inference.catalogue import CatalogueError, cached_catalogue
    try:
        catalogue = cached_catalogue(catalogue_path)
    except CatalogueError:
        return None  # /api/models reports the broken catalogue
    entries = [e for e in catalogue.entries if e.backend == "chat" and e.constraint == "auto"
               and e.unavailable_reason() is None]
    if not entries:
        return None
    return asyncio.get_running_loop().create_task(probe_entries(entries, timeout),
                                                  name="tossim-startup-probes")


async def stop_probes(task: asyncio.Task[Any] | None) -> None:
    """Cancel start-up probes still running (server shutdown)."""
    await stopped(task)


def forget_shared() -> None:
    """Drop the shared backends and their limiters (tests, or a reloaded
    catalogue)."""
    from tossim.inference.limits import forget_limiters
    _shared.clear()
    forget_limiters()
