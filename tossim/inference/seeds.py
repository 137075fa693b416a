"""The one derivation of sampling seeds.

Every sampler a backend drives (torch's generator, llama.cpp, vLLM and any
OpenAI-compatible API) takes a seed in 0..2**31-1 and nothing larger; a game's
own seed can be anything up to 2**63-1 (a fair deal's seed is an HMAC, see
docs/agents.md#sampling-seeds). So a request's seed is never arithmetic on
the game's seed: it is a hash of the request's place in the game (game,
seat, turn, step), reduced to the range every sampler accepts. The same
place always gets the same seed, so a replayed or resumed seat samples as
before, and two seats of one game never share a stream.
"""

from __future__ import annotations

import hashlib

MAX_SEED = 2**31 - 1


def derive_seed(*parts: int | str) -> int:
    """A seed in 0..MAX_SEED from `parts` (e.g. game seed, seat, turn, step):
    BLAKE2b of their decimal text, so any integer, however large, is fine."""
    text = "\x1f".join(str(p) for p in parts)
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % (MAX_SEED + 1)


def check_seed(seed: int | None) -> int | None:
    """`seed` if a sampler can take it, else a ValueError naming the range
    (requests validate their seed here, so an unbounded one fails where it
    is made, not deep in a backend)."""
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise ValueError(f"a request's seed must be in 0..{MAX_SEED} (use derive_seed), "
                         f"got {seed}")
    return seed
