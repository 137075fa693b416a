"""Run inside .venv-vllm (tests/inference/test_vllm_backend.py starts it):
builds VLLMBackend on a small model, decodes a batch of four real turn
regexes, then resumes the first seat from its own prompt + output + an
observation (as the tool loop does) and prints one JSON object on stdout.

    .venv-vllm/bin/python tests/inference/vllm_probe.py [MODEL_DIR]
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.agents.support import day3_investigator  # noqa: E402
from tossim.agents.grammar import turn_json_schema, turn_regex  # noqa: E402
from tossim.agents.prompting import build_messages  # noqa: E402
from tossim.agents.tools import tool_options  # noqa: E402
from tossim.inference.base import GenerationRequest, GenerationResult  # noqa: E402
from tossim.inference.vllm_backend import VLLMBackend  # noqa: E402

MAX_TOKENS = int(os.environ.get("TOSSIM_PROBE_MAX_TOKENS", "160"))
TEMPERATURE = float(os.environ.get("TOSSIM_PROBE_TEMPERATURE", "0"))


def as_dict(r: GenerationResult, regex: str, decoded: str) -> dict[str, Any]:
    return {"text": r.text, "token_ids": list(r.token_ids), "decoded": decoded,
            "finish_reason": r.finish_reason, "prompt_tokens": r.prompt_tokens,
            "cached_tokens": r.cached_tokens, "seconds": round(r.seconds, 3),
            "regex": regex, "fullmatch": re.fullmatch(regex, r.text) is not None}


async def main(model_dir: str) -> dict[str, Any]:
    out: dict[str, Any] = {"model": model_dir}
    # eager: no torch.compile (engine start ~25 s instead of ~90-160 s on 2 CPU cores)
    eager = os.environ.get("TOSSIM_VLLM_EAGER", "1") != "0"
    backend = VLLMBackend(model_dir, max_model_len=4096, enforce_eager=eager)
    out["enforce_eager"] = eager
    tok = backend.tokenizer
    started = time.perf_counter()
    await backend.start()
    out["engine_start_s"] = round(time.perf_counter() - started, 2)

    game = day3_investigator()
    # four seats' turns (Day 3 voting), each with its own legal actions and
    # regex. The thought is written into the prompt and closed (as the loop
    # does when max_tokens cuts one off): a 135M model's free-running thoughts
    # rarely end within a small budget, and the test wants complete segments.
    seats = [(7, True), (7, False), (1, True), (5, False)]
    requests, regexes = [], []
    for n, (slot, tools) in enumerate(seats):
        m = game.memories[slot]
        rx = turn_regex(m.legal, m.names, tool_options(m), allow_tools=tools, think=False)
        prompt = tok.chat_prompt(build_messages(m))
        prompt += tok.encode("<thinking>Player 4 claims Doctor; I must act now.</thinking>\n")
        requests.append(GenerationRequest(prompt_ids=tuple(prompt), max_tokens=MAX_TOKENS,
                                          regex=rx, seed=n, temperature=TEMPERATURE,
                                          key=f"g1:{slot}:{n}"))
        regexes.append(rx)
    out["distinct_regexes"] = len(set(regexes))

    started = time.perf_counter()
    results = await backend.generate(requests)
    batch_s = time.perf_counter() - started
    generated = sum(len(r.token_ids) for r in results)
    out["batch"] = [as_dict(r, rx, tok.decode(r.token_ids))
                    for r, rx in zip(results, regexes, strict=True)]
    out["batch_s"] = round(batch_s, 2)
    out["batch_generated_tokens"] = generated
    out["batch_tokens_per_s"] = round(generated / batch_s, 1)

    # resume seat 1's context: prompt + its own output IDs + an observation
    first = requests[0]
    observation = tok.encode("\n<observation>Player 3's will: I am the Doctor.</observation>\n"
                             "<thinking>So Player 4 lies.</thinking>\n")
    resumed = first.prompt_ids + results[0].token_ids + tuple(observation)
    again = GenerationRequest(prompt_ids=resumed, max_tokens=MAX_TOKENS, regex=regexes[0],
                              seed=11, temperature=TEMPERATURE, key=first.key)
    started = time.perf_counter()
    r2 = await backend.generate_one(again)
    out["resume"] = as_dict(r2, regexes[0], tok.decode(r2.token_ids))
    out["resume"]["extends"] = len(first.prompt_ids) + len(results[0].token_ids)
    out["resume_s"] = round(time.perf_counter() - started, 2)
    # the JSON protocol: a turn schema instead of a regex
    m = game.memories[7]
    schema = turn_json_schema(m.legal, m.names, tool_options(m), allow_tools=False)
    prompt = tok.chat_prompt(build_messages(m, protocol="json"))
    r3 = await backend.generate_one(GenerationRequest(
        prompt_ids=tuple(prompt), max_tokens=48, json_schema=schema, seed=5,
        temperature=TEMPERATURE, key="g1:7:json"))
    out["json"] = {"text": r3.text, "finish_reason": r3.finish_reason,
                   "decoded": tok.decode(r3.token_ids),
                   "actions": sorted(b["properties"]["action"]["const"]
                                     for b in schema["oneOf"])}

    if os.environ.get("TOSSIM_PROBE_THROUGHPUT"):
        # decode speed: 8 rows on the (cached) prompts, no constraint, 64 tokens each
        rows = [GenerationRequest(prompt_ids=requests[i % 4].prompt_ids, max_tokens=64,
                                  seed=100 + i, temperature=0.7) for i in range(8)]
        started = time.perf_counter()
        res = await backend.generate(rows)
        secs = time.perf_counter() - started
        n = sum(len(r.token_ids) for r in res)
        out["throughput"] = {"rows": 8, "tokens": n, "seconds": round(secs, 2),
                             "tokens_per_s": round(n / secs, 1),
                             "cached_tokens": [r.cached_tokens for r in res]}
    out["stats"] = backend.stats.to_dict()
    await backend.close()
    return out


if __name__ == "__main__":
    model = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("TOSSIM_SMOL_DIR",
                                                                  "/tmp/smol_st")
    result = asyncio.run(main(model))
    print("PROBE-JSON " + json.dumps(result))
