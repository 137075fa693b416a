"""Arena entries: the catalogue entries an arena seats, under their labels.

ADAPTER (to simplify at merge): the model catalogue (`tossim.catalogue`,
`load_catalogue`, `ModelEntry`) comes from another branch. When it can be
imported, entries are looked up there and seats name their entry
(`{"kind": "ai", "model": NAME}`, which the server resolves). Without it,
only the two entries every catalogue has built in are known: `scripted` and
`smollm2` (alias `local`: the bundled model on the local backend), seated by
backend (`{"kind": "ai", "backend": ...}`).

An arena names each entry `LABEL=ENTRY` or just `ENTRY` (the label is then
the entry's name); two labels for one entry compare an entry with itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,39}$")

# backends whose seats need no model (no concurrency or rate limits apply)
NO_MODEL = ("scripted",)


@dataclass(frozen=True)
class ArenaEntry:
    label: str  # the name the arena's tables use (unique in the arena)
    entry: str  # the catalogue entry's name
    backend: str  # scripted | local | vllm | openai | chat
    max_concurrency: int | None = None  # requests at once to the entry's endpoint
    rpm: int | None = None  # requests per minute the endpoint allows
    price_prompt: float | None = None  # USD per 1M prompt tokens
    price_completion: float | None = None  # USD per 1M completion tokens
    from_catalogue: bool = False

    def seat_spec(self, slot: int) -> dict[str, Any]:
        """The lobby seat for this entry at `slot`."""
        if self.from_catalogue:
            return {"slot": slot, "kind": "ai", "model": self.entry}
        return {"slot": slot, "kind": "ai", "backend": self.backend}

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """USD from the catalogue's prices (None when the entry has none)."""
        if self.price_prompt is None and self.price_completion is None:
            return None
        return ((self.price_prompt or 0.0) * prompt_tokens
                + (self.price_completion or 0.0) * completion_tokens) / 1e6


# the built-in entries, when the catalogue module is not there
BUILT_IN = {"scripted": "scripted", "smollm2": "local", "local": "local"}


def _catalogue(path: str | None) -> Any:
    try:
        from tossim import catalogue  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return None
    return catalogue.load_catalogue(path)


def parse_label(text: str) -> tuple[str, str]:
    """`LABEL=ENTRY` or `ENTRY` -> (label, entry name); ValueError if malformed."""
    label, _, name = text.partition("=")
    if not name:
        label, name = text, text
    label, name = label.strip(), name.strip()
    if not LABEL_RE.match(label):
        raise ValueError(f"bad arena label {label!r}: 1-40 letters, digits, _ . : -")
    if not name:
        raise ValueError(f"no entry named in {text!r}")
    return label, name


def resolve_entries(specs: list[str], catalogue_path: str | None = None) -> list[ArenaEntry]:
    """The entries for `LABEL=ENTRY` strings. ValueError names an unknown
    entry, with the names that are known."""
    cat = _catalogue(catalogue_path)
    out: list[ArenaEntry] = []
    for text in specs:
        label, name = parse_label(text)
        if cat is not None:
            try:
                e = cat.get(name)
            except KeyError:
                e = None
            if e is None:
                raise ValueError(f"no catalogue entry {name!r} (known: "
                                 f"{', '.join(cat.names())})")
            out.append(ArenaEntry(label, name, e.backend, e.max_concurrency, e.rpm,
                                  e.price_prompt, e.price_completion, from_catalogue=True))
        elif name in BUILT_IN:
            out.append(ArenaEntry(label, name, BUILT_IN[name]))
        else:
            raise ValueError(f"no entry {name!r} (known: {', '.join(BUILT_IN)})")
    labels = [e.label for e in out]
    if len(set(labels)) != len(labels):
        raise ValueError("two entries share a label: name them LABEL=ENTRY")
    return out
