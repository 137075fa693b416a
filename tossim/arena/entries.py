"""Arena entries: the model-catalogue entries an arena seats, under their labels.

Entries are looked up in the catalogue (`tossim.inference.catalogue`), and seats name
their entry (`{"kind": "ai", "model": NAME}`), which the server resolves.

An arena names each entry `LABEL=ENTRY` or just `ENTRY` (the label is then
the entry's name); two labels for one entry compare an entry with itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tossim.inference.catalogue import load_catalogue

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

    def seat_spec(self, slot: int) -> dict[str, Any]:
        """The lobby seat for this entry at `slot`."""
        return {"slot": slot, "kind": "ai", "model": self.entry}

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """USD from the catalogue's prices (None when the entry has none)."""
        if self.price_prompt is None and self.price_completion is None:
            return None
        return ((self.price_prompt or 0.0) * prompt_tokens
                + (self.price_completion or 0.0) * completion_tokens) / 1e6


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
    cat = load_catalogue(catalogue_path)
    out: list[ArenaEntry] = []
    for text in specs:
        label, name = parse_label(text)
        try:
            e = cat.get(name)
        except KeyError:
            raise ValueError(f"no entry {name!r} in the model catalogue (known: "
                             f"{', '.join(cat.names())})") from None
        priced = e.priced  # no price in the catalogue: no cost figure ("-"), not 0
        out.append(ArenaEntry(label, name, e.backend, e.max_concurrency, e.rpm,
                              e.price_prompt if priced else None,
                              e.price_completion if priced else None))
    labels = [e.label for e in out]
    if len(set(labels)) != len(labels):
        raise ValueError("two entries share a label: name them LABEL=ENTRY")
    return out
