"""A model-free backend for loop tests: a character tokenizer and scripted
outputs (optionally cut off as if max_tokens ran out, or ignoring the regex
as an unguided server would)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from tossim.inference.base import Backend, GenerationRequest, GenerationResult


class CharTokenizer:
    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(chr(i) for i in ids)

    def chat_prompt(self, messages: Sequence[dict[str, str]]) -> list[int]:
        return self.encode("".join(f"<|{m['role']}|>{m['content']}" for m in messages)
                           + "<|assistant|>")


class ScriptedBackend(Backend):
    """Answers request i with `outputs[i]`, cut to max_tokens ("length")."""

    name = "scripted-fake"

    def __init__(self, outputs: Sequence[str], check_regex: bool = True) -> None:
        super().__init__()
        self.tokenizer = CharTokenizer()
        self.outputs = list(outputs)
        self.requests: list[GenerationRequest] = []
        self.check_regex = check_regex

    async def _generate_batch(
            self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        out = []
        for r in requests:
            self.requests.append(r)
            text = self.outputs.pop(0)
            finish = "stop"
            if len(text) > r.max_tokens:
                text, finish = text[:r.max_tokens], "length"
            if self.check_regex and finish == "stop" and r.regex is not None:
                assert re.fullmatch(r.regex, text), (text, r.regex[:200])
            ids = tuple(ord(c) for c in text)
            out.append(GenerationResult(ids, text, finish, len(r.prompt_ids)))
        return out
