"""A backend for any OpenAI-compatible completions server (vLLM, SGLang): the
scale-out path, where a fleet of servers holds the model.

Every request goes to `POST {base_url}/v1/completions` with the prompt as a
list of token IDs (the seat's context is a token list that only grows, so the
server's prefix cache re-uses all but the tail), the guided-decoding
constraint as `structured_outputs` (`{"regex": ...}` or `{"json": schema}`),
and `return_token_ids` so the generated segment is appended to the context as
the very IDs the server produced. A server that does not return them (an
older vLLM, SGLang) gets its text tokenised locally instead; that is counted
in `retokenized`, since it costs prefix-cache hits at the seam.

Servers silently ignore request fields they do not know: the old
`guided_regex` is ignored by current vLLM, and `structured_outputs` by servers
that predate it. So `start()` runs `self_test()` first: a request whose regex
no model follows by chance, which must come back matching it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tossim.inference.base import (
    Backend,
    BackendUnavailable,
    GenerationRequest,
    GenerationResult,
    HFTokenizer,
    Tokenizer,
    deadline_result,
    seconds_left,
)
from tossim.timeouts import within

log = logging.getLogger(__name__)

# What the self-test asks for: no model writes this unless it is forced to.
SELF_TEST_REGEX = r"tossim-[0-9]{3}-ok"


def structured_outputs(request: GenerationRequest) -> dict[str, Any] | None:
    """The `structured_outputs` field of a request (vLLM >= 0.12 spelling)."""
    if request.regex is not None:
        return {"regex": request.regex}
    if request.json_schema is not None:
        return {"json": request.json_schema}
    return None


def load_tokenizer(tokenizer_dir: str | Path) -> HFTokenizer:
    """The model's tokenizer from a local folder (never the hub)."""
    path = Path(tokenizer_dir)
    if not path.is_dir():
        raise BackendUnavailable(f"tokenizer folder {path} does not exist")
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:
        raise BackendUnavailable(
            f"the openai backend needs transformers for the model's tokenizer: {exc}") from None
    return HFTokenizer(AutoTokenizer.from_pretrained(str(path), local_files_only=True))


class OpenAIBackend(Backend):
    """Completions from an OpenAI-compatible server (see the module docstring).

    `tokenizer`: a local folder holding the served model's tokenizer files,
    or a ready `Tokenizer`. `model`: the served model's name (default: the
    first one `/v1/models` lists). `transport`: an httpx transport (tests)."""

    name = "openai"

    def __init__(self, base_url: str, tokenizer: str | Path | Tokenizer, *,
                 model: str | None = None, api_key: str | None = None,
                 timeout: float = 600.0, max_batch: int = 64,
                 transport: Any = None) -> None:
        super().__init__()
        try:
            import httpx
        except ImportError as exc:
            raise BackendUnavailable(f"the openai backend needs httpx: {exc}") from None
        self.base_url = base_url.rstrip("/")
        if self.base_url.endswith("/v1"):
            self.base_url = self.base_url[:-3]
        self.tokenizer = (load_tokenizer(tokenizer) if isinstance(tokenizer, str | Path)
                          else tokenizer)
        self.model = model
        self.max_batch = max_batch
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=self.base_url, headers=headers, transport=transport,
            timeout=httpx.Timeout(timeout, connect=10.0),
            limits=httpx.Limits(max_connections=max(max_batch, 16),
                                max_keepalive_connections=max(max_batch, 16)))
        self._started = False
        self._start_lock: asyncio.Lock | None = None
        # requests whose generated IDs the server did not return (tokenised here)
        self.retokenized = 0
        self.server_token_ids: bool | None = None  # learnt from the first reply
        self.self_test_result: GenerationResult | None = None
        # whether the server samples seeded requests (None: not yet known);
        # vLLM on the CPU answers a seeded request with an error, so the
        # first such answer is retried unseeded and later requests go unseeded
        self.takes_seed: bool | None = None

    @property
    def label(self) -> str:
        return f"openai:{self.model or '?'}@{self.base_url}"

    # ---- start-up ----------------------------------------------------------------------
    async def start(self) -> None:
        """Find the model's name and check that guided decoding works; raises
        BackendUnavailable when the server cannot be used."""
        if self._started:
            return
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._started:
                return
            if self.model is None:
                self.model = await self._first_model()
            await self.self_test()
            self._started = True

    async def _first_model(self) -> str:
        import httpx
        try:
            resp = await self._client.get("/v1/models")
        except httpx.HTTPError as exc:
            raise BackendUnavailable(f"cannot reach {self.base_url}: {exc!r}") from None
        if resp.status_code != 200:
            raise BackendUnavailable(
                f"{self.base_url}/v1/models answered {resp.status_code}: {resp.text[:300]}")
        data = resp.json().get("data") or []
        if not data:
            raise BackendUnavailable(f"{self.base_url} serves no model")
        return str(data[0]["id"])

    async def self_test(self) -> GenerationResult:
        """A request the model can only answer right if the server applies
        `structured_outputs`; raises BackendUnavailable otherwise."""
        import httpx
        prompt = self.tokenizer.chat_prompt(
            [{"role": "user", "content": "Write one short sentence about the weather."}])
        req = GenerationRequest(prompt_ids=tuple(prompt), max_tokens=24,
                                regex=SELF_TEST_REGEX, temperature=0.0, seed=0)
        try:
            res = await self._complete(req)
        except httpx.HTTPError as exc:
            raise BackendUnavailable(f"cannot reach {self.base_url}: {exc!r}") from None
        except RuntimeError as exc:
            raise BackendUnavailable(f"self-test request failed: {exc}") from None
        if not re.fullmatch(SELF_TEST_REGEX, res.text):
            raise BackendUnavailable(
                f"server ignored structured_outputs: asked for /{SELF_TEST_REGEX}/, got "
                f"{res.text[:80]!r} ({self.base_url}; vLLM >= 0.12 takes "
                f"structured_outputs, older servers only the removed guided_regex)")
        self.self_test_result = res
        log.info("self-test passed on %s: %r", self.label, res.text)
        return res

    # ---- generation --------------------------------------------------------------------
    def _body(self, r: GenerationRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": list(r.prompt_ids),
            "max_tokens": r.max_tokens,
            "temperature": r.temperature,
            "n": 1,
            "stream": False,
            "return_token_ids": True,  # vLLM >= 0.10.2
            "skip_special_tokens": True,
            "include_stop_str_in_output": True,  # as the other backends: IDs and text agree
        }
        so = structured_outputs(r)
        if so is not None:
            body["structured_outputs"] = so
        if r.stop:
            body["stop"] = list(r.stop)
        if r.seed is not None and self.takes_seed is not False:
            body["seed"] = r.seed
        for k in ("top_p", "presence_penalty", "frequency_penalty"):  # only when set
            if getattr(r, k) != (1.0 if k == "top_p" else 0.0):
                body[k] = getattr(r, k)
        return body

    async def _complete(self, r: GenerationRequest) -> GenerationResult:
        """One completion, waited for until the request's deadline at most:
        then the HTTP request is cancelled (the connection closed, which
        `vllm serve` takes as an abort) and the result is empty, finish_reason
        "deadline" (docs/agents.md#deadlines)."""
        left = seconds_left(r.deadline)
        if left is None:
            return await self._complete_now(r)
        try:
            return await within(self._complete_now(r), left)
        except TimeoutError:
            return deadline_result(r)

    async def _complete_now(self, r: GenerationRequest) -> GenerationResult:
        started = time.perf_counter()
        body = self._body(r)
        resp = await self._client.post("/v1/completions", json=body)
        if resp.status_code != 200 and "seed" in body and self.takes_seed is None:
            del body["seed"]
            unseeded = await self._client.post("/v1/completions", json=body)
            if unseeded.status_code == 200:
                self.takes_seed = False
                log.warning("%s cannot sample seeded requests (it answered %s: %s); "
                            "requests go unseeded from now on", self.base_url,
                            resp.status_code, resp.text[:200])
            resp = unseeded
        elif resp.status_code == 200 and "seed" in body:
            self.takes_seed = True
        if resp.status_code != 200:
            raise RuntimeError(f"{self.base_url}/v1/completions answered "
                               f"{resp.status_code}: {resp.text[:500]}")
        data = resp.json()
        choice = data["choices"][0]
        text = str(choice.get("text") or "")
        ids = choice.get("token_ids")
        if ids is None:
            if self.server_token_ids is not False:
                log.warning("%s does not return token_ids: tokenising its text here "
                            "(prefix-cache hits drop at the seams)", self.base_url)
            self.server_token_ids = False
            self.retokenized += 1
            token_ids = list(self.tokenizer.encode(text))
        else:
            self.server_token_ids = True
            token_ids = [int(t) for t in ids]
            eos = getattr(self.tokenizer, "eos_token_id", None)
            if token_ids and eos is not None and token_ids[-1] == eos:
                token_ids.pop()  # the context goes on after the segment, not after EOS
        reason = choice.get("finish_reason")
        if reason in ("abort", "error"):
            raise RuntimeError(f"{self.base_url}: request ended with {reason!r}")
        usage = data.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        return GenerationResult(
            token_ids=tuple(token_ids), text=text,
            finish_reason="length" if reason == "length" else "stop",
            prompt_tokens=int(usage.get("prompt_tokens") or len(r.prompt_ids)),
            cached_tokens=int(details.get("cached_tokens") or 0),
            seconds=time.perf_counter() - started)

    async def _generate_batch(
            self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        await self.start()
        # one HTTP request each, all in flight together: the server batches them
        return list(await asyncio.gather(*(self._complete(r) for r in requests)))

    async def close(self) -> None:
        await self._client.aclose()
