"""The claim vocabulary: the fixed sentences scripted bots say, and the parser
that reads them back out of public chat and last wills.

Keeping both directions in one place means a bot always understands what
another bot says. Anything else in a message is ignored, so humans and LLM
seats can be understood too when they use the same phrasing.

    I am the Sheriff.                                role claim
    Player 4 is suspicious!                          Sheriff result (or accusation)
    Player 4 is not suspicious.                      Sheriff result
    Player 4 could be a Doctor, Disguiser, or Serial Killer.   Investigator result
    Player 4 visited Player 9 last night!            Lookout result
    The Mafia visited Player 9 last night.           Spy result
    Vote Player 4!                                   accusation
    I will not tell you my role.                     refusal to claim
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from tossim.engine.roles import ROLES, find_role

ROLE = "role"
SUSPICIOUS = "suspicious"
INNOCENT = "innocent"
GROUP = "group"
VISITED = "visited"
MAFIA_VISITED = "mafia_visited"
ACCUSE = "accuse"
NO_CLAIM = "no_claim"
# a player daring the Town to lynch them: what a Jester does
BEG = "beg"


# ---- saying --------------------------------------------------------------------------

def say_role(role_name: str) -> str:
    return f"I am the {role_name}."


def say_suspicious(name: str) -> str:
    return f"{name} is suspicious!"


def say_innocent(name: str) -> str:
    return f"{name} is not suspicious."


def say_group(name: str, roles: tuple[str, ...] | list[str]) -> str:
    return f"{name} could be a {roles[0]}, {roles[1]}, or {roles[2]}."


def say_visited(visitor: str, target: str) -> str:
    return f"{visitor} visited {target} last night!"


def say_mafia_visited(*targets: str) -> str:
    """A Spy's night: every house the Mafia visited, in one sentence."""
    who = targets[0] if len(targets) == 1 else ", ".join(targets[:-1]) + " and " + targets[-1]
    return f"The Mafia visited {who} last night."


def say_accuse(name: str) -> str:
    return f"Vote {name}!"


def say_no_claim() -> str:
    return "I will not tell you my role."


# ---- reading -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Claim:
    """One recognised sentence. `target` is the player it is about; `role` the
    claimed role key (ROLE); `roles` an Investigator group (display names);
    `visitor` the visiting player (VISITED)."""

    kind: str
    target: int | None = None
    role: str = ""
    roles: tuple[str, ...] = ()
    visitor: int | None = None


# a role's name as the bots write it ("Sheriff", "Serial Killer")
ROLE_WORD = r"[A-Z][A-Za-z]*(?: [A-Z][A-Za-z]*)*"


class Vocabulary:
    """The parser for one game's player names (slot i+1 is names[i])."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.slot_of = {n: i for i, n in enumerate(names, start=1)}
        self._cache: dict[str, tuple[Claim, ...]] = {}
        alts = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
        name = rf"(?<!\w)(?:{alts})(?!\w)"
        self._name = re.compile(name)
        word = ROLE_WORD
        self.pattern = re.compile(
            rf"I am the (?P<role>{word})\."
            rf"|(?P<sus>{name}) is suspicious!"
            rf"|(?P<inn>{name}) is not suspicious\."
            rf"|(?P<grp>{name}) could be a (?P<g1>{word}), (?P<g2>{word}), or (?P<g3>{word})\."
            rf"|(?P<vis>{name}) visited (?P<vt>{name}) last night!"
            rf"|The Mafia visited (?P<mv>{name}(?:(?:, | and ){name})*) last night\."
            rf"|Vote (?P<acc>{name})!"
            rf"|(?P<nc>I will not tell you my role\.)"
            # a dare, not a warning ("If you lynch me you lose a Town role")
            r"|(?P<beg>(?<![Yy]ou )(?i:lynch me|go ahead|vote me|hang me)\b)"
        )
        # Where a sentence of `pattern` can begin: the first letter of a
        # phrase or a name, or a dare. `pattern` starts every branch with a
        # group or a lookbehind, so the regex engine tries all of them at
        # every character; `_matches` tries it only where this finds a start.
        firsts = "".join(sorted({"I", "T", "V"} | {n[0] for n in names if n}))
        self._starts = re.compile(
            rf"[{re.escape(firsts)}]|(?i:lynch me|go ahead|vote me|hang me)")
        self._scan = all(names)  # (an empty name could match anywhere)
        # people's wording of a call to vote and of a result (`_loosely`):
        # "vote bob", "Bob is sus", "cleo is clear"; names in any case
        self.slot_of_lower = {n.lower(): i for n, i in self.slot_of.items()}
        any_name = rf"(?<![\w'’])(?:{alts})(?![\w'’])"
        self._loose = re.compile(
            rf"(?i)(?<![\w'’])(?:vote|lynch|hang)\s+(?P<la>{any_name})"
            rf"|(?P<ls>{any_name})\s+(?:is\s+|=\s*)(?:sus|suspicious|sussy|mafia|maf|evil"
            rf"|scum|guilty)(?![\w'’])"
            rf"|(?P<li>{any_name})\s+(?:is\s+|=\s*)(?:not\s+sus(?:picious)?|clear(?:ed)?"
            rf"|inno(?:cent)?|town)(?![\w'’])") if self._scan else None

    def parse(self, text: str) -> tuple[Claim, ...]:
        """Every recognised sentence in `text`, in order (cached: each bot of a
        game reads the same messages)."""
        hit = self._cache.get(text)
        if hit is None:
            if len(self._cache) > 4096:
                self._cache.clear()
            hit = self._cache[text] = tuple(self._parse(text))
        return hit

    def _matches(self, text: str) -> Iterator[re.Match[str]]:
        """`pattern.finditer(text)`: the same matches, looked for only where
        one can begin (`_starts`; a match's lookbehind still sees the text
        before it)."""
        if not self._scan:
            yield from self.pattern.finditer(text)
            return
        search, match = self._starts.search, self.pattern.match
        pos = 0
        while (start := search(text, pos)) is not None:
            at = start.start()
            m = match(text, at)
            if m is None:
                pos = at + 1
            else:
                yield m
                pos = m.end()  # (no branch matches the empty string)

    def _parse(self, text: str) -> list[Claim]:
        out: list[Claim] = []
        slot = self.slot_of
        for m in self._matches(text):
            kind = m.lastgroup
            if kind == "role":
                r = find_role(m.group("role"))
                if r is not None:
                    out.append(Claim(ROLE, role=r.key))
            elif kind == "sus":
                out.append(Claim(SUSPICIOUS, slot[m.group("sus")]))
            elif kind == "inn":
                out.append(Claim(INNOCENT, slot[m.group("inn")]))
            elif kind in ("g1", "g2", "g3"):
                out.append(Claim(GROUP, slot[m.group("grp")],
                                 roles=(m.group("g1"), m.group("g2"), m.group("g3"))))
            elif kind == "vt":
                out.append(Claim(VISITED, slot[m.group("vt")], visitor=slot[m.group("vis")]))
            elif kind == "mv":
                out.extend(Claim(MAFIA_VISITED, slot[n])
                           for n in self._name.findall(m.group("mv")))
            elif kind == "acc":
                out.append(Claim(ACCUSE, slot[m.group("acc")]))
            elif kind == "nc":
                out.append(Claim(NO_CLAIM))
            elif kind == "beg":
                out.append(Claim(BEG))
        if not out:
            out = self._loosely(text)
        if not any(c.kind == ROLE for c in out):
            role = loose_claim(text)
            if role is not None:
                out.insert(0, Claim(ROLE, role=role))
        return out

    def _loosely(self, text: str) -> list[Claim]:
        """Calls to vote and results in people's own words, in a message with
        nothing in the vocabulary's wording (docs/agents.md, "Claims"): never
        after "not", "don't" or "never", nor in a question."""
        if self._loose is None:
            return []
        out: list[Claim] = []
        low = text.lower()
        for m in self._loose.finditer(text):
            if text[m.end():m.end() + 1] == "?" or _HEDGED.search(low, 0, m.start()):
                continue
            kind = str(m.lastgroup)
            if kind == "la" and not _CALL_OPENS.search(low, 0, m.start()):
                continue  # "they helped lynch Player 6" calls for nothing
            who = self.slot_of_lower[" ".join(m.group(kind).lower().split())]
            out.append(Claim({"la": ACCUSE, "ls": SUSPICIOUS, "li": INNOCENT}[kind], who))
        return out


# People claim in their own words ("I'm the sheriff", "i am doc", "Sheriff
# here", "I am the real Doctor!", "I am the Sheriff" with no full stop): a
# message with no claim in the bots' wording is read for one of these too, so
# bots and model seats hear a person's claim (docs/agents.md, "Claims").
SHORT_NAMES = {"doc": "doctor", "inv": "investigator", "invest": "investigator",
               "invi": "investigator", "lo": "lookout", "vig": "vigilante",
               "vigi": "vigilante", "vet": "veteran", "jailer": "jailor", "med": "medium",
               "ret": "retributionist", "tp": "transporter", "trans": "transporter",
               "bg": "bodyguard", "esc": "escort", "sher": "sheriff", "sk": "serial_killer"}
_LOOSE_HINTS = ("i am", "i'm", "im ", "i’m", "here")
# what makes the words that follow no claim: a condition or a negation
_HEDGED = re.compile(r"\b(?:if|not|don['’]?t|never)\s*$")
# where a call to vote opens: a sentence's start, or a speaker's "I", "we",
# "let's", "please", "just", "should" ("I vote bob", "let's lynch cleo")
_CALL_OPENS = re.compile(
    r"(?:^|[.!?,;:\n]|\b(?:i|we|let['’]?s|lets|pls|please|just|should|gotta))\s*$")


@lru_cache(maxsize=1)
def _loose_pattern() -> re.Pattern[str]:
    words = {r.name.lower() for r in ROLES.values()} | set(SHORT_NAMES)
    alt = "|".join(re.escape(w).replace(r"\ ", r"\s+")
                   for w in sorted(words, key=len, reverse=True))
    return re.compile(
        rf"(?i)(?<![\w'’])(?:i\s*am|i['’]?m)\s+(?:the\s+real\s+|the\s+|an?\s+)?(?P<r1>{alt})"
        # "Sheriff here" opens a sentence ("the doctor here died" claims nothing)
        rf"(?![\w'’])|(?:^|(?<=[.!?,;:\n]))\s*(?P<r2>{alt})\s+here(?!\w)")


def loose_claim(text: str) -> str | None:
    """The role key a message claims in a person's own words (see above), or
    None; never one after "if" or "not" ("if I am the Jester..."), nor in a
    question."""
    low = text.lower()
    if not any(h in low for h in _LOOSE_HINTS):
        return None
    for m in _loose_pattern().finditer(text):
        if text[m.end():m.end() + 1] == "?" or _HEDGED.search(low, 0, m.start()):
            continue
        word = " ".join((m.group("r1") or m.group("r2")).lower().split())
        role = find_role(SHORT_NAMES.get(word, word))
        if role is not None:
            return role.key
    return None


@lru_cache(maxsize=64)
def vocabulary(names: tuple[str, ...]) -> Vocabulary:
    """The (cached) parser for a roster's names."""
    return Vocabulary(names)
