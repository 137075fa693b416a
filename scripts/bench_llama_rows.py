"""What a llama_decode step costs on this machine as it carries more rows:
one or four sequences at a turn prompt's context, each with r tokens in the
step. r = 1 is plain decoding; r > 1 is what verifying r - 1 guessed tokens
beside the next one costs (speculative decoding; docs/agents.md, "Measured:
speculative decoding from the context").

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_llama_rows.py [--tokens 1400]

Each sequence first holds the same real turn prompt (untimed); each shape is
then stepped 12 times (the rows' KV dropped after each) and the middle 8
steps averaged. Run it alone: two processes on two cores slow each other.
"""

from __future__ import annotations

import argparse
import time

from bench_gguf_quant import prompt_ids

SHAPES = ((1, 1), (1, 2), (1, 3), (1, 5), (2, 1), (2, 2), (4, 1), (4, 2), (4, 3), (4, 5))


def main() -> None:
    from tossim.inference.llama_backend import LlamaBackend

    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=1400, help="context per sequence")
    args = ap.parse_args()
    backend = LlamaBackend()
    lc, ctx, batch = backend.llama_cpp, backend.ctx, backend._batch
    mem = lc.llama_get_memory(ctx)
    ids = list(prompt_ids(backend, args.tokens))

    def step(rows: list[tuple[int, int, list[int]]], logits: bool) -> float:
        n = 0
        for seq, pos, tokens in rows:
            for i, tok in enumerate(tokens):
                batch.token[n], batch.pos[n], batch.n_seq_id[n] = tok, pos + i, 1
                batch.seq_id[n][0], batch.logits[n] = seq, logits
                n += 1
        batch.n_tokens = n
        started = time.perf_counter()
        if lc.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")
        return time.perf_counter() - started

    try:
        for seq in range(4):
            for i in range(0, len(ids), 256):
                step([(seq, i, ids[i:i + 256])], False)
        print(f"{len(ids)}-token context per sequence, {backend.kernels} kernels, "
              f"{backend.threads} threads")
        one = 0.0
        for seqs, r in SHAPES:
            times = []
            for _ in range(12):
                times.append(step([(s, len(ids), ids[100:100 + r]) for s in range(seqs)], True))
                for s in range(seqs):
                    lc.llama_memory_seq_rm(mem, s, len(ids), -1)
            mid = sorted(times)[2:-2]
            ms = 1000 * sum(mid) / len(mid)
            one = one or ms
            print(f"{seqs} sequence(s) x {r} token(s): {ms:6.1f} ms per step "
                  f"({ms / one:.2f}x one row)")
    finally:
        backend.shutdown()


if __name__ == "__main__":
    main()
