"""Draft tokens by prompt lookup, for the local backend's speculative decoding
(docs/agents.md, "Backends": drafts from the context).

A seat's thought copies its context a lot: names ("Player 4"), claims ("claimed
Sheriff"), the tags and wordings of its own earlier turns. When the last few
tokens written also stand earlier in the context, the tokens that followed
them there are a good guess at what comes next. The backend evaluates the
guess beside the real next token in one llama_decode (a short run of one
sequence costs about what one token costs on a CPU) and keeps the longest
part the model itself would have sampled, so output is what plain decoding
would give, only in fewer steps.

No draft model and no training: the guess is only the context's own n-grams.
"""

from __future__ import annotations

from collections.abc import Sequence

# the n-gram lengths looked up, longest first: a longer match guesses better
NGRAMS = (3, 2)


class LookupDraft:
    """A request's context (prompt, then each token sampled) with, for each
    n-gram length, where each n-gram last ended before the context's end."""

    def __init__(self, context: Sequence[int]) -> None:
        self.ctx = list(context)
        self._ends: dict[int, dict[tuple[int, ...], int]] = {n: {} for n in NGRAMS}
        ctx = self.ctx
        for n, ends in self._ends.items():
            for end in range(n, len(ctx)):  # later occurrences overwrite earlier ones
                ends[tuple(ctx[end - n:end])] = end

    def push(self, token: int) -> None:
        """The context grows by `token`: its old end becomes a place to look up."""
        ctx = self.ctx
        end = len(ctx)
        for n, ends in self._ends.items():
            if end >= n:
                ends[tuple(ctx[end - n:end])] = end
        ctx.append(token)

    def propose(self, k: int) -> list[int]:
        """Up to `k` tokens that followed the latest earlier occurrence of the
        context's last n tokens (the longest n that occurred); none if none."""
        ctx = self.ctx
        if k <= 0:
            return []
        for n, ends in self._ends.items():
            if len(ctx) < n:
                continue
            end = ends.get(tuple(ctx[-n:]))
            if end is not None:
                return ctx[end:end + k]
        return []
