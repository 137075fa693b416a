"""The guard on what a model seat writes (docs/agents.md, "The text guard").

Small models fill a speech with text no player would say: the prompt's own
example copied word for word, a sentence repeated until the token budget
runs out, headings and rules (`##`, `---`), chat-template tags, speaker
labels for people who are not in the game ("Dave,", "Guy 2:"). Such text
must never reach the chat, a will or a summary, so every model-written text
is checked here before it becomes a command, and the caller decides what
to do instead (resample, a structured move, a wait, the extractive summary).

`degenerate(text, ...)` returns the reason ("KIND: detail", or "no
letters"; `reason_kind` gives the KIND the seat metrics count) or None when
the text is fine. It is pure: everything it compares
against is passed in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from tossim.engine.roles import ROLES

COPY_RUN = 6
"""A run of this many words copied from the prompt or an earlier line is a
copy, not the seat's own words."""

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_LETTER = re.compile(r"[^\W\d_]")
_SENTENCE_END = re.compile(r"[.!?\n]+")
_MARKUP = re.compile(
    r"(?m)(^\s*#{1,6}\s|#{2,}|^\s*(?:-{3,}|={3,}|\*{3,}|_{3,})\s*$|-{3,}|```|\*\*"
    r"|</?[A-Za-z_][\w-]*[^<>]*>|[‹<]/?[A-Za-z_][\w-]*|\[/?[A-Z][A-Z _]+\]"
    r"|<\|[^|]*\|>)")
_NUMBERED = re.compile(r"\b([A-Z][a-z]+)\s+(\d+)\b")
_ADDRESS = re.compile(r"(?m)(?:^|[.!?]\s+|\n)\s*([A-Z][a-z]+(?:\s[A-Z][a-z]+)?)\s*[,:](?!\d)")
_GREETING = re.compile(r"\b(?:[Hh]i|[Hh]ey|[Hh]ello|[Tt]hanks|[Tt]hank you|[Dd]ear),?\s+"
                       r"([A-Z][a-z]+)\b")
_LABEL_LINE = re.compile(r"(?m)^\s*[^\s:]{1,24}(?:\s[^\s:]{1,24})?\s*:\s*$")
_HEADING_LINE = re.compile(r"(?m)^\s*(?:Day|Night)\s+\d+\s*[:.]?\s*$")

# Capitalised words a player may start a sentence with before a comma or
# colon, and words that are game terms before a number ("Day 2", "Night 1").
_GAME_TERMS = frozenset({"Day", "Night", "Trial", "Vote", "Votes", "Round", "Game"})
_OPENER_WORDS = """
Yes No Ok Okay Well So Also Now Then Maybe Hmm Hm Wait Look Listen Honestly Actually
Sorry Alright Guys Folks Everyone Everybody Town Mafia Coven Friends Please Fine Sure
Agreed True False Right Wrong Good Great Thanks Oh Ah Hey Hi Hello Again First Second
Third Last Tonight Today Yesterday Anyway However But And Or If When Why What Who How
Because Still Seriously Really Lol Guilty Innocent Abstain Note Also Besides Meanwhile
Otherwise Remember Careful Anyone Someone Nobody Clearly Obviously Definitely Also
I Me My We Us Our You Your They Them He She It This That These Those Here There
Doc Vigi Invest Exe Jester Lookout Sheriff Mayor Vet Medium
Interesting Unfortunately Fortunately Personally Basically Lastly Finally Apparently Instead
Thus Therefore Plus Overall Wow Whoa Ok Alright Friend Friends People Folks Team Gentlemen
Ladies Sir Everyone Anybody Somebody Nope Yeah Yep Yup Sure Indeed Perhaps Hold Stop Ugh Oops
Fair Noted Understood Exactly Absolutely Correct Incorrect Agree Disagree Listen Okay
Results Result Findings Update Proof Evidence Claim Info Reminder Summary Verdict
"""
_OPENERS = frozenset(_OPENER_WORDS.split())


def words(text: str) -> list[str]:
    """The words of a text, lower-cased: punctuation, escaping (` / ` for a
    line break, `‹` for `<`) and spacing do not hide a copy."""
    return [w.lower() for w in _WORD.findall(text)]


def shingles(texts: Iterable[str], n: int = COPY_RUN) -> set[tuple[str, ...]]:
    """Every run of `n` consecutive words in any of the texts."""
    out: set[tuple[str, ...]] = set()
    for t in texts:
        w = words(t)
        out.update(tuple(w[i:i + n]) for i in range(len(w) - n + 1))
    return out


def copied_run(text: str, sources: set[tuple[str, ...]], n: int = COPY_RUN) -> str | None:
    """The first run of `n` words of `text` found in `sources`, or None."""
    w = words(text)
    for i in range(len(w) - n + 1):
        run = tuple(w[i:i + n])
        if run in sources:
            return " ".join(run)
    return None


NEAR_SAME = 0.8
"""Two sentences of `NEAR_MIN` words or more sharing this share of their
words (numbers aside) are one sentence said twice: a looping model varies a
number or a verb ("13 players chose to keep the game on the same day. 14
players chose ...")."""
NEAR_MIN = 5


def _near(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    if min(len(a), len(b)) < NEAR_MIN:
        return False
    sa = {"#" if w.isdigit() else w for w in a}
    sb = {"#" if w.isdigit() else w for w in b}
    return len(sa & sb) / len(sa | sb) >= NEAR_SAME


def repeated_sentence(text: str) -> str | None:
    """A sentence of two words or more said twice, or nearly (`NEAR_SAME`)
    within one line; or a last, unfinished sentence (text cut off by the
    token budget) that starts one said before. Near repeats count only within
    a line: a will lists one result per line ("N1: Player 4 is not
    suspicious." / "N2: Player 6 is not suspicious."), a list a player keeps,
    while a model's loop repeats itself in running text."""
    seen: list[tuple[str, ...]] = []
    line_start = 0  # where the current line's sentences begin in `seen`
    parts = _SENTENCE_END.split(text)
    ends = _SENTENCE_END.findall(text)
    for i, s in enumerate(parts):
        key = tuple(words(s))
        if i and "\n" in ends[i - 1]:
            line_start = len(seen)
        if len(key) < 2:
            continue
        if key in seen or any(_near(key, k) for k in seen[line_start:]):
            return " ".join(key)
        cut = i == len(parts) - 1 and not text.rstrip().endswith((".", "!", "?"))
        if cut and len(key) >= 3 and any(k[:len(key)] == key for k in seen):
            return " ".join(key)
        seen.append(key)
    return None


def _known_words(player_names: Sequence[str]) -> tuple[set[str], set[str]]:
    """Full names and their capitalised parts (a player named "Zoë Ann" may be
    addressed as "Zoë"), and role names (a player may address "Doctor")."""
    full = {n.strip() for n in player_names if n.strip()}
    parts = {p for n in full for p in n.split()}
    roles = {r.name for r in ROLES.values()} | {p for r in ROLES.values() for p in r.name.split()}
    return full, parts | roles


def _stranger(text: str, player_names: Sequence[str]) -> str | None:
    """A name that is not a player of this game: a capitalised word with a
    number ("Guy 2", "Player 9"), a greeting or an address ("Dave, ...")."""
    full, known = _known_words(player_names)
    for m in _NUMBERED.finditer(text):
        name = f"{m.group(1)} {m.group(2)}"
        if m.group(1) in _GAME_TERMS or name in full:
            continue
        return name
    for m in _GREETING.finditer(text):
        if m.group(1) not in known and m.group(1) not in _OPENERS:
            return m.group(1)
    for m in _ADDRESS.finditer(text):
        name = m.group(1)
        if name in full or name in _OPENERS:
            continue
        first = name.split()[0]
        if first in _OPENERS or all(p in known for p in name.split()):
            continue
        if first.endswith(("ly", "ing", "ed")):  # "Honestly,", "Interesting,", "Agreed,"
            continue
        return name
    return None


def degenerate(text: str, *, prompt_text: str = "", earlier_lines: Iterable[str] = (),
               player_names: Sequence[str] = (), quotable: Iterable[str] = ()) -> str | None:
    """Why `text` is not something a player would write, or None when it is.

    - no letters at all;
    - markup or headings (`##`, `---`, `**`, tags such as `<speak>` or
      `‹observation›`, `[DEAD]`, a line that is only a label or "Day 24");
    - the same sentence twice;
    - a name that is not one of `player_names` ("Dave,", "Guy 2");
    - a run of `COPY_RUN` words copied from `prompt_text` or from any of
      `earlier_lines` (every line of the game so far: chat, wills, notes,
      summaries), except runs that also occur in `quotable` (the seat's own
      results, which a will may record word for word).
    """
    if not _LETTER.search(text):
        return "no letters"
    m = _MARKUP.search(text)
    if m is not None:
        return f"markup: {m.group(0).strip()!r}"
    line = _LABEL_LINE.search(text) or _HEADING_LINE.search(text)
    if line is not None:
        return f"markup: heading {line.group(0).strip()!r}"
    twice = repeated_sentence(text)
    if twice is not None:
        return f"repeated sentence: {twice!r}"
    who = _stranger(text, player_names)
    if who is not None:
        return f"not a player: {who!r}"
    allowed = shingles(quotable)
    sources = shingles([prompt_text]) - allowed
    run = copied_run(text, sources)
    if run is not None:
        return f"copied from the prompt: {run!r}"
    run = copied_run(text, shingles(earlier_lines) - allowed)
    if run is not None:
        return f"copied from an earlier line: {run!r}"
    return None


KINDS = ("no letters", "markup", "repeated sentence", "not a player", "copied from the prompt",
         "copied from an earlier line")


def reason_kind(reason: str) -> str:
    """The kind of a reason from `degenerate` (one of KINDS), for counting."""
    return reason.split(":", 1)[0]
