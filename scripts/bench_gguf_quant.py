"""Prefill and decode speed of the bundled GGUF as shipped (Q4_1) against the
same weights re-quantised with llama.cpp's own tool (Q8_0, F16), on the local
backend (issue "The bundled model on llama.cpp", item 2: fast prefill).

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_gguf_quant.py [--threads 1,2]

For each file and thread count: a real turn prompt (a Day 2 seat of the drift
situations, repeated to about 1,400 tokens), prefilled cold, then 100 greedy
tokens; wall seconds, from the backend's own prefill/decode clocks. The
re-quantised files go to a temporary folder (nothing is kept). Run it alone:
two processes on two cores slow each other about tenfold.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path


def prompt_ids(backend: object, tokens: int) -> tuple[int, ...]:
    from tossim.agents.memory import SeatMemory
    from tossim.agents.prompting import build_messages
    from tossim.analysis.drift import build_situations

    sit = build_situations(1, 1)[0]
    memory = SeatMemory(sit.slot)
    memory.update(sit.view)
    ids = list(backend.tokenizer.chat_prompt(build_messages(memory)))  # type: ignore[attr-defined]
    while len(ids) < tokens:
        ids += ids
    return tuple(ids[:tokens])


def measure(path: Path, threads: int, tokens: int, decode: int) -> tuple[float, float]:
    from tossim.inference.base import GenerationRequest
    from tossim.inference.llama_backend import LlamaBackend

    backend = LlamaBackend(path, threads=threads, slots=1)
    try:
        ids = prompt_ids(backend, tokens)
        # warm-up (first evaluation: kernels, buffers) on other tokens
        warm = GenerationRequest(prompt_ids=ids[-16:], max_tokens=2, temperature=0.0, key="w")
        asyncio.run(backend.generate([warm]))
        s = backend.stats
        p0, d0, g0 = s.prefill_seconds, s.decode_seconds, s.generated_tokens
        req = GenerationRequest(prompt_ids=ids, max_tokens=decode, temperature=0.0, seed=1,
                                key="m")
        asyncio.run(backend.generate([req]))
        return (s.prefill_seconds - p0,
                1000 * (s.decode_seconds - d0) / max(s.generated_tokens - g0, 1))
    finally:
        backend.shutdown()


def main() -> None:
    from tossim.inference.llama_backend import bundled_gguf
    from tossim.inference.llama_quant import FTYPES, requantised

    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--tokens", type=int, default=1400)
    ap.add_argument("--decode", type=int, default=100)
    args = ap.parse_args()
    src = bundled_gguf()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TOSSIM_MODEL_CACHE"] = tmp  # the backend's own re-quantising, here
        files = {"Q4_1 (shipped)": src}
        for name in FTYPES:
            t = time.perf_counter()
            dst = requantised(src, name)
            secs = time.perf_counter() - t
            print(f"re-quantised to {name} in {secs:.1f} s "
                  f"({dst.stat().st_size / 2**20:.0f} MiB)")
            files[name] = dst
        print(f"{'file':<16} {'threads':>7} {'prefill ' + str(args.tokens):>14} "
              f"{'decode ms/token':>16}")
        for threads in (int(t) for t in args.threads.split(",")):
            for name, path in files.items():
                prefill, per_token = measure(path, threads, args.tokens, args.decode)
                print(f"{name:<16} {threads:>7} {prefill:>12.2f} s {per_token:>16.1f}")


if __name__ == "__main__":
    main()
