"""Whether decoding several seats in one llama_batch pays on this machine
(issue "The bundled model on llama.cpp", item 4: several seats at once):
one request at a time against four together, for the local backend as it
ships and with the llama.cpp settings that could change the answer.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_llama_batching.py [--tokens 1400]

Four requests share a real turn prompt's head (as a game's seats share the
system prompt) and differ in its last tokens; each generates `--decode`
tokens at temperature 0.6 with its own seed. Every setting first prefills the
four prompts (its own column), then decodes them with at most one request at a time,
then with all four together, from the same prompts (the prefixes are held,
so what is timed is decoding). Figures come from the backend's own decode
clock: milliseconds per llama_decode step and generated tokens per second.
Run it alone: two processes on two cores slow each other about tenfold.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from bench_gguf_quant import prompt_ids

# (label, LlamaBackend keyword arguments)
SETTINGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("as shipped (Q8_0, 2 threads)", {}),
    ("F16 weights", {"quant": "F16"}),
    ("one KV stream for all (unified)", {"context": {"kv_unified": True}}),
    ("flash attention", {"context": {"flash_attn_type": 1}}),
    # GGML_TYPE_Q8_0 (8) keys and values; a quantised V needs flash attention
    ("KV cache Q8_0 + flash attention",
     {"context": {"type_k": 8, "type_v": 8, "flash_attn_type": 1}}),
    ("1 thread", {"threads": 1}),
)


def measure(kwargs: dict[str, Any], tokens: int,
            decode: int) -> tuple[float, list[tuple[float, float]]]:
    """The seconds the four prompts took to prefill, and (ms per step,
    tokens/s) with at most 1, then 4, requests at once."""
    from tossim.inference.base import GenerationRequest
    from tossim.inference.llama_backend import LlamaBackend

    backend = LlamaBackend(**kwargs)
    head = list(prompt_ids(backend, tokens))[:-24]
    prompts = [tuple(head + backend.tokenizer.encode(f" Player {i + 1} speaks next."))
               for i in range(4)]

    def requests() -> list[GenerationRequest]:
        return [GenerationRequest(prompt_ids=p, max_tokens=decode, temperature=0.6, seed=i,
                                  key=f"seat{i}") for i, p in enumerate(prompts)]

    out = []
    try:
        asyncio.run(backend.generate(requests()))  # prefill, not in the decode figures
        prefill = backend.stats.prefill_seconds
        for batch in (1, 4):
            backend.max_batch = batch
            s = backend.stats
            d0, n0, g0 = s.decode_seconds, s.decode_steps, s.generated_tokens
            asyncio.run(backend.generate(requests()))
            secs, steps = s.decode_seconds - d0, s.decode_steps - n0
            out.append((1000 * secs / max(steps, 1), (s.generated_tokens - g0) / max(secs, 1e-9)))
    finally:
        backend.shutdown()
    return prefill, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=1400, help="prompt length")
    ap.add_argument("--decode", type=int, default=100, help="tokens per request")
    args = ap.parse_args()
    print(f"4 requests, {args.tokens}-token prompts sharing a head, {args.decode} tokens "
          f"each; decode only")
    print(f"{'setting':<34} {'prefill':>8} {'1 at once':>18} {'4 at once':>18} "
          f"{'4 / 1 (tokens/s)':>17}")
    started = time.perf_counter()
    for label, kwargs in SETTINGS:
        prefill, ((ms1, tps1), (ms4, tps4)) = measure(kwargs, args.tokens, args.decode)
        print(f"{label:<34} {prefill:6.1f} s {ms1:6.1f} ms {tps1:5.0f} t/s {ms4:6.1f} ms "
              f"{tps4:5.0f} t/s {tps4 / max(tps1, 1e-9):>16.2f}x")
    print(f"({time.perf_counter() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
