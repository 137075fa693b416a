"""The outlines-core vocabulary of a byte-level BPE tokenizer.

outlines' own adapter decodes every token on its own, so a token holding part
of a multi-byte character (the first byte of "ë") becomes U+FFFD; a regex
that names "Zoë" or "Đorđe" then fails to compile or silently loses that
branch. Here every token maps to the raw bytes it stands for, so any name a
player picks can be generated.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """The inverse of GPT-2's byte-to-character table (what the ByteLevel
    pre-tokenizer maps each byte to): printable Latin-1 bytes stand for
    themselves, the others are shifted to U+0100 and up ('Ġ' is the space)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
            *range(ord("®"), ord("ÿ") + 1)]
    chars = {b: chr(b) for b in keep}
    shifted = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + shifted)
            shifted += 1
    return {c: b for b, c in chars.items()}


def byte_level_token_bytes(tokenizer: Any) -> Callable[[str], bytes]:
    """token -> its raw bytes; added (special) tokens are their own text."""
    decoder = _byte_decoder()
    added = set(tokenizer.get_added_vocab())

    def token_bytes(token: str) -> bytes:
        if token in added or any(c not in decoder for c in token):
            return token.encode("utf-8")
        return bytes(decoder[c] for c in token)

    return token_bytes


def outlines_core_vocabulary(tokenizer: Any) -> Any:
    """An `outlines_core.Vocabulary` of each token's raw bytes. Special tokens
    are left out, so a regex can never spell `<|im_start|>`; EOS is given apart."""
    from outlines_core import Vocabulary

    token_bytes = byte_level_token_bytes(tokenizer)
    special = set(tokenizer.all_special_ids)
    entries: dict[bytes, list[int]] = {}
    for token, token_id in sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1]):
        if token_id not in special:
            entries.setdefault(token_bytes(token), []).append(token_id)
    return Vocabulary(tokenizer.eos_token_id, entries)
