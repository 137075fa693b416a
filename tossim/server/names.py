"""Names and text from strangers: no look-alike names, no invisible tricks.

- Format characters (Unicode category Cf: bidirectional overrides and
  isolates such as U+202E, zero-width spaces and joiners, the BOM) are
  stripped from names, chat, whispers and wills before they reach the game:
  they can reverse or hide the text other players read. (Other control
  characters are refused by the engine with a clear error.)
- A name is compared by its *skeleton*: NFKC, case-folded, and each
  character replaced by its ASCII look-alike where the Unicode confusables
  table (`confusable_homoglyphs`, Unicode TR39 data) has one, so "Аlice" with
  a Cyrillic А, "ALICE" and "Ａlice" are all "alice". A name is refused when
  its skeleton equals another seat's, a default "Player N", or a role name.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from confusable_homoglyphs import confusables

from tossim.engine.roles import ROLES

_SPACES = re.compile(r"\s+")


def strip_format(text: str) -> str:
    """`text` without format characters (category Cf)."""
    if text.isascii():
        return text
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def clean_name(raw: str) -> str:
    """A name as shown: NFKC, format characters stripped, spaces collapsed."""
    return _SPACES.sub(" ", strip_format(unicodedata.normalize("NFKC", raw))).strip()


@functools.lru_cache(maxsize=4096)
def _prototype(ch: str) -> str:
    """The character a look-alike stands for: itself if ASCII, else the first
    ASCII homoglyph the confusables table lists for it, else itself."""
    if ch.isascii():
        return ch
    for entry in confusables.confusables_data.get(ch, ()):
        alike = entry.get("c", "")
        if alike and alike.isascii():
            return str(alike)
    return ch


# ASCII characters that look alike (TR39 maps them together too): O/0, l/1/I/|
_ASCII_ALIKE = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l"})


def skeleton(name: str) -> str:
    """What a name looks like, for comparing names (see the module doc)."""
    text = unicodedata.normalize("NFKC", strip_format(name)).casefold()
    text = "".join(_prototype(ch) for ch in text).casefold()
    text = text.replace("rn", "m").translate(_ASCII_ALIKE)
    return _SPACES.sub("", text)


@functools.cache
def reserved_skeletons() -> dict[str, str]:
    """Skeleton -> why a name with it is refused: defaults and role names."""
    out = {skeleton(f"Player {n}"): "the name of another seat" for n in range(1, 16)}
    for role in ROLES.values():
        out[skeleton(role.name)] = "a role name"
    return out


def name_problem(name: str, others: list[str]) -> str | None:
    """Why `name` may not be used next to `others` (None: it may)."""
    sk = skeleton(name)
    if not sk:
        return "a name needs a visible character"
    why = reserved_skeletons().get(sk)
    if why is not None:
        return f"the name {name!r} is {why}"
    for other in others:
        if skeleton(other) == sk:
            return f"the name {name!r} is taken (or looks like {other!r})"
    return None
