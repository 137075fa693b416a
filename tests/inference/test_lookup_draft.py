"""Speculative decoding from the context (docs/agents.md, "Backends"): the
prompt-lookup guesses are the tokens that followed the context's last words
where they stood before, and keeping or refusing a guess leaves every token
drawn exactly as the model's own distribution would draw it."""

from __future__ import annotations

import numpy as np

from tossim.inference.llama_backend import _keep_or_draw
from tossim.inference.lookup_draft import LookupDraft


def test_a_guess_is_what_followed_the_last_words_before() -> None:
    # "I am the Sheriff . Player 4 is sus . I am the" -> "Sheriff . Player"
    d = LookupDraft([1, 2, 3, 9, 5, 6, 7, 8, 5, 1, 2])
    d.push(3)
    assert d.propose(3) == [9, 5, 6]
    assert d.propose(0) == []


def test_the_latest_occurrence_wins_and_grows_with_what_is_written() -> None:
    d = LookupDraft([4, 5, 6, 1, 4, 5, 7, 2])
    d.push(4)
    d.push(5)
    assert d.propose(2) == [7, 2]  # the later "4 5" was followed by 7
    d.push(8)  # "5 8" never stood before, nor "4 5 8"; "8" alone is not looked up
    assert d.propose(4) == []
    d.push(4)
    d.push(5)
    assert d.propose(2) == [8, 4]  # the latest earlier "4 5" is the one the model wrote


def test_no_guess_without_a_repeated_ngram() -> None:
    d = LookupDraft([1, 2, 3])
    d.push(4)
    assert d.propose(4) == []


def test_keeping_or_refusing_a_guess_draws_from_the_models_distribution() -> None:
    """Whatever the guess, the tokens come out with the model's probabilities
    (a guess the model rates low is mostly refused, and the refusal is drawn
    from the rest)."""
    p = np.array([0.5, 0.3, 0.15, 0.05, 0.0])
    n = 40_000
    for guess in (0, 1, 3, 4):
        rng = np.random.default_rng(guess)
        counts = np.bincount([_keep_or_draw(np, rng, p, guess) for _ in range(n)],
                             minlength=len(p))
        assert counts[4] == 0  # a token the model may not write is never drawn
        assert np.allclose(counts / n, p, atol=0.01), (guess, counts / n)


def test_a_certain_guess_is_always_kept() -> None:
    p = np.array([0.0, 1.0, 0.0])
    rng = np.random.default_rng(0)
    assert {_keep_or_draw(np, rng, p, 1) for _ in range(100)} == {1}
