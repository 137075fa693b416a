"""A model-free backend that writes what the request's grammar allows.

It walks the request's constraint (regex, or JSON schema turned into one)
with outlines-core over a one-character-per-token vocabulary, choosing each
next character with the request's seed: a stand-in for a model that always
obeys guided decoding, so whole games with model seats run through the real
tool loop, prompts and parsers with no model at all, and run the same way
every time (the golden playthroughs rely on that). Free text prefers lower-
case letters and spaces, and a closing tag is taken once about `words`
characters of text were written, so turns stay short and readable.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from tossim.inference.base import Backend, GenerationRequest, GenerationResult

from .fake_backend import CharTokenizer

EOS = 0
LETTERS = frozenset(ord(c) for c in "abcdefghijklmnopqrstuvwxyz ")


@lru_cache(maxsize=1)
def _vocabulary() -> Any:
    from outlines_core import Vocabulary

    entries = {bytes([c]): [c] for c in range(32, 127)}
    entries[b"\n"] = [10]
    return Vocabulary(EOS, entries)


@lru_cache(maxsize=256)
def _index(regex: str) -> Any:
    from outlines_core import Index

    return Index(regex, _vocabulary())


class GrammarWalkBackend(Backend):
    """Seeded walks through each request's grammar (module docstring)."""

    name = "grammar-walk"

    def __init__(self, text_chars: int = 24) -> None:
        super().__init__()
        self.tokenizer = CharTokenizer()
        self.text_chars = text_chars

    async def _generate_batch(
            self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return [self._one(r) for r in requests]

    def _one(self, r: GenerationRequest) -> GenerationResult:
        from outlines_core import Guide
        from outlines_core.json_schema import build_regex_from_schema

        regex = r.regex if r.regex is not None else (
            build_regex_from_schema(json.dumps(r.json_schema)) if r.json_schema else None)
        if regex is None:
            raise ValueError("the grammar-walk backend needs a constrained request")
        guide = Guide(_index(regex))
        rng = random.Random(r.seed or 0)
        out: list[int] = []
        finish = "stop"
        run = 0  # free-text characters since the last forced choice
        while not guide.is_finished():
            allowed = [t for t in guide.get_tokens() if t != EOS]
            if not allowed:
                break
            if len(out) >= r.max_tokens:
                finish = "length"
                break
            if len(allowed) > 60:  # free text: letters, then close when allowed
                run += 1
                closing = [ord(c) for c in "<.\"!?" if ord(c) in allowed]
                if run > self.text_chars and closing:
                    choice = closing[0]
                else:
                    letters = sorted(LETTERS.intersection(allowed))
                    choice = rng.choice(letters or allowed)
            else:
                run = 0
                choice = rng.choice(sorted(allowed))
            out.append(choice)
            guide.advance(choice)
            text = bytes(out).decode()
            if any(text.endswith(s) for s in r.stop):
                break
        text = bytes(out).decode()
        return GenerationResult(tuple(out), text, finish, len(r.prompt_ids))
