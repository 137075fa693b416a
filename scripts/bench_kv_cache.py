"""Decode-step time of the local backend (bundled SmolLM2 on the CPU) with its
in-place KV buffer, against the previous behaviour (the cache rebuilt and
concatenated every step) as the baseline, in the same process on the same
requests: alternating runs, best of each, then the ratio.

    .venv/bin/python scripts/bench_kv_cache.py [ROWS] [CONTEXT] [TOKENS]

Defaults: 7 rows (a 7-seat phase), 1,500-token contexts, 48 tokens each. Run
it on an idle machine: two processes sharing 2 cores distort CPU timings ~10x.
"""

from __future__ import annotations

import asyncio
import random
import sys
from typing import Any

from tossim.inference import local_backend as lb
from tossim.inference.base import GenerationRequest

_step = lb._Batch.step
_grow = lb._growing_cache


def _rebuilt_cache(keys: list[Any], values: list[Any]) -> Any:
    from transformers import DynamicCache

    cache = DynamicCache()
    for li, (k, v) in enumerate(zip(keys, values, strict=True)):
        cache.update(k, v, li)
    return cache


def _rebuild_every_step(self: Any) -> None:
    self.cache = None
    _step(self)


def use(mode: str) -> None:
    if mode == "rebuild":
        lb._growing_cache, lb._Batch.step = _rebuilt_cache, _rebuild_every_step  # type: ignore
    else:
        lb._growing_cache, lb._Batch.step = _grow, _step  # type: ignore


async def run(backend: lb.LocalBackend, rows: int, context: int, tokens: int,
              seed: int) -> float:
    rng = random.Random(seed)
    requests = [GenerationRequest(prompt_ids=[rng.randrange(1000, 40000) for _ in range(context)],
                                  max_tokens=tokens, temperature=0.0, seed=i, key=f"{seed}-{i}")
                for i in range(rows)]
    seconds, steps = backend.stats.decode_seconds, backend.stats.decode_steps
    await backend.generate(requests)
    return (backend.stats.decode_seconds - seconds) / max(1, backend.stats.decode_steps - steps)


async def main(rows: int, context: int, tokens: int) -> None:
    backend = lb.LocalBackend()
    backend.eos_id = -1  # no early stop: every row decodes `tokens` tokens
    await run(backend, 2, 64, 4, 0)  # warm up
    best: dict[str, float] = {}
    for rep in range(2):
        for mode in ("rebuild", "in-place"):
            use(mode)
            per_step = await run(backend, rows, context, tokens, 100 * rep + len(mode))
            best[mode] = min(best.get(mode, per_step), per_step)
            print(f"{mode:8s} run {rep + 1}: {per_step * 1000:.1f} ms per decode step", flush=True)
    print(f"rows={rows} context={context} tokens={tokens}: in-place "
          f"{best['in-place'] * 1000:.1f} ms/step, rebuild (baseline) "
          f"{best['rebuild'] * 1000:.1f} ms/step, ratio {best['in-place'] / best['rebuild']:.2f}")
    await backend.close()


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:4]]
    asyncio.run(main(*(args + [7, 1500, 48][len(args):])))
