"""CPU cost of the bundled candidate models for one real model-seat turn.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_bundled_models.py [MODEL ...]

MODEL is a bundled name (`smollm2-135m`, `gemma3-270m`; see
tossim/inference/bundled.py) or a model folder. For each model, on one
thread and in process CPU seconds (so a busy shared machine changes the
figures less than wall time would): loading (weights and the grammar
vocabulary), compiling the turn grammar of the first drift situation (a
Sheriff judging on Day 2), prefilling that turn's prompt, and greedy decoding
of 32 tokens after it. The first model given is the baseline for the ratios.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def measure(model: str) -> dict[str, float]:
    import torch

    from tossim.agents.grammar import turn_regex
    from tossim.agents.memory import SeatMemory
    from tossim.agents.prompting import build_messages
    from tossim.agents.tools import tool_options
    from tossim.analysis.drift import build_situations
    from tossim.inference.bundled import resolve
    from tossim.inference.local_backend import LocalBackend

    torch.set_num_threads(1)
    t = time.process_time()
    backend = LocalBackend(resolve(model))
    load = time.process_time() - t

    sit = build_situations(1, 1)[0]
    memory = SeatMemory(sit.slot)
    memory.update(sit.view)
    regex = turn_regex(memory.legal, memory.names, tool_options(memory))
    t = time.process_time()
    backend._index(regex)  # the compiled grammar the backend would build for this turn
    grammar = time.process_time() - t

    ids = backend.tokenizer.chat_prompt(build_messages(memory, {}))
    with torch.inference_mode():
        t = time.process_time()
        out = backend.model(torch.tensor([ids]), use_cache=True)
        prefill = time.process_time() - t
        past, nxt = out.past_key_values, out.logits[0, -1].argmax()
        t = time.process_time()
        for _ in range(32):
            out = backend.model(nxt.view(1, 1), past_key_values=past, use_cache=True)
            past, nxt = out.past_key_values, out.logits[0, -1].argmax()
        decode = (time.process_time() - t) / 32
    return {"load_s": load, "grammar_s": grammar, "prompt_tokens": float(len(ids)),
            "prefill_s": prefill, "decode_s_per_token": decode,
            "vocab": float(backend.vocab_size),
            "params_m": sum(p.numel() for p in backend.model.parameters()) / 1e6}


def main(models: list[str]) -> None:
    rows = [(m, measure(m)) for m in models]
    base = rows[0][1]
    print(f"{'model':<22} {'params':>7} {'vocab':>7} {'load':>7} {'grammar':>8} "
          f"{'prompt':>7} {'prefill':>8} {'ms/token':>9}  (CPU seconds, 1 thread)")
    for name, r in rows:
        print(f"{Path(name).name[:22]:<22} {r['params_m']:>6.0f}M {r['vocab']:>7.0f} "
              f"{r['load_s']:>6.1f}s "
              f"{r['grammar_s']:>7.2f}s {r['prompt_tokens']:>7.0f} {r['prefill_s']:>7.2f}s "
              f"{1000 * r['decode_s_per_token']:>8.1f}")
    for name, r in rows[1:]:
        per_token = (r["prefill_s"] / r["prompt_tokens"]) / (
            base["prefill_s"] / base["prompt_tokens"])
        print(f"  {Path(name).name} / {Path(models[0]).name}: "
              f"grammar x{r['grammar_s'] / base['grammar_s']:.1f}, "
              f"prefill per token x{per_token:.1f}, "
              f"decode x{r['decode_s_per_token'] / base['decode_s_per_token']:.1f}")

if __name__ == "__main__":
    main(sys.argv[1:] or ["smollm2-135m", "gemma3-270m"])
