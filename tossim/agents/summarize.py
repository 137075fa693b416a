"""Summaries of earlier days for the turn context.

`summary_prompt(memory, day)` asks a model for a short summary of a day's
public discussion (claims, accusations, votes), built from the seat's public
events of that day, escaped. `fallback_summary(memory, day)` is the
deterministic, extractive summary used when no model is available.
`write_summary(backend, memory, day)` has a model write it.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tossim.agents.claims import loose_claim
from tossim.agents.escape import escape_text, quote
from tossim.agents.guard import degenerate
from tossim.agents.memory import SeatMemory
from tossim.agents.prompting import render_template
from tossim.inference.base import Backend, GenerationRequest

if TYPE_CHECKING:  # the chat backend needs `openai`, imported only when it is used
    from tossim.inference.chat_backend import ChatBackend

log = logging.getLogger(__name__)

OUTCOME_KEYS = ("dawn.death", "dawn.role", "dawn.revived", "trial.start", "judge.lynch",
                "judge.pardon", "lynch.death", "mayor.reveal", "trial.limit")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# words that mark a sentence as a claim, a result or an accusation (the phrases
# of tossim.agents.claims included)
_CLAIMY = re.compile(r"\b(I am|I'm|claim\w*|vot\w*|lynch|suspicious|lying|lie[ds]?|liar|visited|"
                     r"could be|mafia|guilty|innocent|killed|heal\w*|role)\b", re.IGNORECASE)
# a sentence that leans on the one before it ("They claimed Doctor.")
_LEANS = re.compile(r"^(they|them|their|he|she|his|her|it|this|that|so|but|and|because)\b",
                    re.IGNORECASE)


def public_lines(memory: SeatMemory, day: int) -> list[str]:
    """Day `day`'s public events as prompt lines (chat quoted, all escaped)."""
    out = []
    for e in memory.public_events(day):
        data = e.get("data", {})
        if e["key"] == "chat.public":
            out.append(f"{escape_text(memory.name(data.get('author')))}: "
                       f"{quote(data.get('text', ''))}")
        elif not e["key"].startswith("phase."):
            out.append(escape_text(e["text"]))
    return out


def summary_prompt(memory: SeatMemory, day: int, max_words: int = 80) -> str:
    return render_template("summary.j2", day=day, max_words=max_words,
                   lines=public_lines(memory, day))


def _claim_sentences(text: str) -> str:
    """What a chat message states (a claim, a result, an accusation): its
    sentences that say so, in order, each with the sentence before it when it
    leans on that one, so a quote never starts mid-thought (seen in a day
    summary: 'Player 2: "They claimed Doctor."', cut from 'Do not lynch
    Player 1. They claimed Doctor.'); "" when it states nothing."""
    sentences = _SENTENCE.split(text.strip())
    # a claim in a person's own words too (seen in a lobby's Day 1 summary:
    # two seats' "I trust Ann for now; they claimed Investigator." without
    # Ann's "hi all, im Investigator")
    keep = [bool(_CLAIMY.search(s)) or loose_claim(s) is not None for s in sentences]
    for i in range(len(sentences) - 1, 0, -1):
        if keep[i] and _LEANS.match(sentences[i]):
            keep[i - 1] = True
    return " ".join(s for s, k in zip(sentences, keep, strict=True) if k)


def fallback_summary(memory: SeatMemory, day: int, max_quotes: int = 12) -> str:
    """An extractive summary of Day `day`: who claimed or accused what in public
    chat (the sentences that say so), votes per target, trials and deaths."""
    parts: list[str] = []
    said: list[str] = []
    votes: dict[Any, list[str]] = {}
    for e in memory.public_events(day):
        data = e.get("data", {})
        key = e["key"]
        if key == "chat.public":
            stated = _claim_sentences(str(data.get("text", "")))
            if stated:
                said.append(f"{escape_text(memory.name(data.get('author')))}: {quote(stated)}")
        elif key in ("vote.cast", "vote.changed"):
            # each voter once per target (seen in a demo's summary: "Votes
            # against Player 5: Player 3, Player 2, …, Player 3, Player 2"
            # after a pardon and a second vote on the same player)
            voters = votes.setdefault(data.get("target"), [])
            voter = escape_text(memory.name(data.get("voter")))
            if voter not in voters:
                voters.append(voter)
        elif key in OUTCOME_KEYS:
            parts.append(escape_text(e["text"]))
    out = said[:max_quotes]
    for target, voters in votes.items():
        out.append(f"Votes against {escape_text(memory.name(target))}: "
                   + ", ".join(voters) + ".")
    out.extend(parts)
    return " ".join(out) if out else "Nothing notable happened."


SUMMARY_SYSTEM = ("You write short, factual summaries of a Town of Salem day for its "
                  "players. Plain sentences, no lists, no tags.")
# a summary: printable text without '<' (it is shown in prompts and to spectators)
SUMMARY_REGEX = r"[^<\s\x00-\x1f\x7f-\x9f][^<\x00-\x09\x0b-\x1f\x7f-\x9f]*"


@dataclass
class SummaryStats:
    """How the day summaries of a game were written: by the model, or by the
    extractive fallback (the model failed or wrote nothing usable)."""

    model: int = 0
    fallback: int = 0
    degenerate: int = 0  # of the fallbacks, model summaries the text guard refused

    def to_dict(self) -> dict[str, Any]:
        total = self.model + self.fallback
        return {"model": self.model, "fallback": self.fallback, "degenerate": self.degenerate,
                "fallback_rate": round(self.fallback / total, 3) if total else 0.0}


async def write_summary(backend: Backend, memory: SeatMemory, day: int,
                        max_tokens: int = 96, seed: int = 0,
                        stats: SummaryStats | None = None,
                        deadline: float | None = None) -> str:
    """A model-written summary of Day `day` from a public viewer's memory, cut
    at a sentence or word boundary when the model runs out of tokens; the
    extractive fallback when it writes nothing usable or the backend fails
    (counted in `stats`). The grammar is free text: it is complete after one
    character, so it is the model's EOS (or max_tokens) that ends a summary,
    never the grammar (see the local backend's end-state rule). With
    `deadline` (time.monotonic()) a backend stops at it, and a summary cut
    there is late: the extractive one is used (docs/architecture.md, "Day
    summaries")."""
    stats = stats if stats is not None else SummaryStats()
    tok = backend.tokenizer
    messages = [{"role": "system", "content": SUMMARY_SYSTEM},
                {"role": "user", "content": summary_prompt(memory, day)}]
    try:
        res = await backend.generate_one(GenerationRequest(
            tuple(tok.chat_prompt(messages)), max_tokens, regex=SUMMARY_REGEX, seed=seed,
            temperature=0.3, deadline=deadline))
    except Exception:  # a summary is never worth losing the game over
        log.exception("summary of day %d failed; using the extractive one", day)
        stats.fallback += 1
        return fallback_summary(memory, day)
    if res.finish_reason == "deadline":
        log.warning("summary of day %d came too late; using the extractive one", day)
        stats.fallback += 1
        return fallback_summary(memory, day)
    return _finish(res.text, res.finish_reason == "length", memory, day, stats)


async def write_chat_summary(backend: ChatBackend, memory: SeatMemory, day: int,
                             max_tokens: int = 160, seconds: float = 60.0,
                             stats: SummaryStats | None = None) -> str:
    """The same summary from a chat API (a chat entry's game): plain text, no
    constraint; the extractive fallback when the API fails or answers with
    nothing usable within `seconds` (counted in `stats`)."""
    stats = stats if stats is not None else SummaryStats()
    messages = [{"role": "system", "content": SUMMARY_SYSTEM},
                {"role": "user", "content": summary_prompt(memory, day)}]
    try:
        reply = await backend.complete(messages, mode="text",
                                       deadline=time.monotonic() + seconds,
                                       max_tokens=max_tokens)
    except Exception:  # ChatError, or anything else: never worth losing the game over
        log.warning("summary of day %d failed; using the extractive one", day, exc_info=True)
        stats.fallback += 1
        return fallback_summary(memory, day)
    return _finish(reply.content, reply.finish_reason == "length", memory, day, stats)


def _finish(raw: str, truncated: bool, memory: SeatMemory, day: int,
            stats: SummaryStats) -> str:
    """A model's summary as stored: one paragraph, cut at a sentence if it ran
    out of tokens; the extractive one if it is too short to be a summary."""
    text = " ".join(raw.split())
    if truncated:
        text = trim_summary(text)
    if len(text) < 12:
        log.warning("summary of day %d too short (%r); using the extractive one", day, text)
        stats.fallback += 1
        return fallback_summary(memory, day)
    # the day's lines may be quoted; the prompt's instructions and invented
    # names, headings and loops may not (docs/agents.md, "The text guard")
    lines = public_lines(memory, day)
    reason = degenerate(text, prompt_text=summary_prompt(memory, day) + SUMMARY_SYSTEM,
                        player_names=list(memory.names.values()), quotable=lines)
    if reason is not None:
        log.warning("summary of day %d is degenerate (%s); using the extractive one", day,
                    reason)
        stats.fallback += 1
        stats.degenerate += 1
        return fallback_summary(memory, day)
    stats.model += 1
    return text


def trim_summary(text: str) -> str:
    """Cut unfinished text at its last sentence end, else its last word."""
    end = max(text.rfind(". "), text.rfind("! "), text.rfind("? "))
    if text.endswith((".", "!", "?")):
        return text
    if end > len(text) // 3:
        return text[:end + 1]
    return text.rsplit(" ", 1)[0] + " …" if " " in text else text
