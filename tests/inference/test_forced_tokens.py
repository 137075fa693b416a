"""Tokens the grammar forces (`llama_backend.forced_token`): the longest
token every allowed text starts with, and none where the model has a real
choice, however the vocabulary splits the text. A tiny vocabulary, so each
case is plain to read."""

from __future__ import annotations

import pytest

from tossim.inference.llama_backend import forced_token

outlines_core = pytest.importorskip("outlines_core")

EOS = 0
PIECES = [b"", b'"', b"a", b"b", b"c", b'"a', b"ab", b'b"', b'c"', b" ", b' "', b' "a']


def _index(regex: str) -> object:
    entries: dict[bytes, list[int]] = {}
    for t, piece in enumerate(PIECES):
        if piece:
            entries.setdefault(piece, []).append(t)
    return outlines_core.Index(regex, outlines_core.Vocabulary(EOS, entries))


def _walk(index: object, text: list[int]) -> int:
    state = index.get_initial_state()  # type: ignore[attr-defined]
    for t in text:
        state = index.get_next_state(state, t)  # type: ignore[attr-defined]
    return int(state)


def test_the_longest_token_every_path_starts_with_is_forced() -> None:
    index = _index(r'"(ab|ac)"')
    start = _walk(index, [])
    assert PIECES[forced_token(index, start, PIECES, EOS) or 0] == b'"a'  # not just '"'
    after = _walk(index, [PIECES.index(b'"a')])
    assert forced_token(index, after, PIECES, EOS) is None  # b or c: the model's choice
    chose_b = _walk(index, [PIECES.index(b'"a'), PIECES.index(b"b")])
    assert forced_token(index, chose_b, PIECES, EOS) == PIECES.index(b'"')


def test_a_prefix_that_could_open_free_text_is_not_forced_beyond_it() -> None:
    """' "' may go on into free text: only ' "' is forced, never a longer
    token that would choose the text's first letters for the model."""
    index = _index(r' "[abc]{1,3}"')
    start = _walk(index, [])
    assert forced_token(index, start, PIECES, EOS) == PIECES.index(b' "')
    inside = _walk(index, [PIECES.index(b' "')])
    assert forced_token(index, inside, PIECES, EOS) is None


def test_nothing_is_forced_where_the_answer_may_end() -> None:
    index = _index(r"ab(c)?")
    at_end = _walk(index, [PIECES.index(b"ab")])
    assert forced_token(index, at_end, PIECES, EOS) is None  # EOS or "c"
