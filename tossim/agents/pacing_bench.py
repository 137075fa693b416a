"""`tossim bench pacing`: how the scripted bots play and talk, in figures.

Over N seeded scripted games of each size (Classic, 7, 11 and 15 players) it
counts what a watcher notices: how many days reach a trial, whom the town
lynches (by faction), how varied the public chat is, how often an accusation
gives a reason, and who wins. It reads only the finished games' event logs,
so it measures any bots the headless match driver plays.

It also counts the Town players' verdicts by the accused's real faction (how
often a Town player votes guilty on a Mafia member on trial, innocent on a
Town member), and the public lines said twice in one game.

An *accusation* is a public message that calls for a vote on a player or
calls a player suspicious (the claim vocabulary's ``ACCUSE`` and
``SUSPICIOUS`` sentences). It *cites a reason* when the same message also
points at something that happened: an investigation result (a Sheriff,
Investigator, Lookout or Spy sentence about anybody), or a word that refers to
a vote, a claim, a will, a death or a night (``REASON_WORDS``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from tossim.agents import claims as cv
from tossim.agents.match import play_match
from tossim.engine.roles import ROLES, find_role
from tossim.engine.state import Game, GameConfig

SIZES = (7, 11, 15)
RESULTS = ("town", "mafia", "serial_killer", "draw", "unfinished")
FACTIONS = ("town", "mafia", "neutral")
# Words that tie an accusation to something that happened in the game.
REASON_WORDS = re.compile(
    r"\b(because|since|voted|voting|vote for|claimed|claims|claim|will|died|dead|killed|"
    r"lynch|lynched|guilty|innocent|flipped|result|checked|investigated|visited|visit|"
    r"night|defended|defense|lied|lying|changed|counter|fake|framed|wagon|jailed|said|refused)\b",
    re.IGNORECASE)
RESULT_KINDS = frozenset({cv.GROUP, cv.VISITED, cv.MAFIA_VISITED, cv.INNOCENT})


@dataclass
class SizeFigures:
    """What N games of one size add up to."""

    players: int
    games: int = 0
    voting_days: int = 0  # days that had a Voting phase
    trial_days: int = 0  # of those, days with at least one trial
    trials: int = 0
    lynches: Counter[str] = field(default_factory=Counter)  # faction -> lynches
    results: Counter[str] = field(default_factory=Counter)
    chat_lines: int = 0  # public chat messages
    distinct_lines: int = 0  # summed over games (distinct within a game)
    accusations: int = 0
    reasoned: int = 0
    days: int = 0
    # Town players' verdicts by the accused's faction: (faction, verdict) -> count
    verdicts: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, game: Game) -> None:
        self.games += 1
        self.days += game.day
        self.results[game.result or "unfinished"] += 1
        voting: set[int] = set()
        tried: set[int] = set()
        texts: list[str] = []
        vocab = cv.vocabulary(tuple(p.name for p in game.players))
        faction = {p.slot: ROLES[p.role].faction.value for p in game.players}
        accused: int | None = None
        for e in game.events:
            if e.key == "phase.voting":
                voting.add(e.day)
            elif e.key == "trial.start":
                tried.add(e.day)
                self.trials += 1
                accused = e.data.get("accused")
            elif e.key == "judge.vote" and isinstance(accused, int) \
                    and faction.get(int(e.data.get("voter", 0))) == "town":
                self.verdicts[(faction[accused], str(e.data.get("verdict")))] += 1
            elif e.key == "lynch.death":
                role = find_role(str(e.data.get("role", "")))
                self.lynches[role.faction.value if role else "neutral"] += 1
            elif e.key == "chat.public":
                text = str(e.data.get("text", ""))
                texts.append(text)
                accusation, reason = classify(vocab, text)
                if accusation:
                    self.accusations += 1
                    self.reasoned += reason
        self.voting_days += len(voting)
        self.trial_days += len(tried & voting)
        self.chat_lines += len(texts)
        self.distinct_lines += len(set(texts))


def classify(vocab: cv.Vocabulary, text: str) -> tuple[bool, bool]:
    """(is this message an accusation, does it cite a reason)."""
    found = vocab.parse(text)
    accusation = any(c.kind in (cv.ACCUSE, cv.SUSPICIOUS) and c.target is not None
                     for c in found)
    if not accusation:
        return False, False
    sus = sum(1 for c in found if c.kind == cv.SUSPICIOUS)
    # a Sheriff's "X is suspicious!" with a role claim is a result, hence a reason
    claimed_result = sus > 0 and any(c.kind == cv.ROLE for c in found)
    reason = (any(c.kind in RESULT_KINDS for c in found) or claimed_result
              or REASON_WORDS.search(text) is not None)
    return True, reason


def run(games: int, seed: int = 0, sizes: Iterable[int] = SIZES) -> list[SizeFigures]:
    """Play `games` seeded scripted games of each size and add up their figures."""
    out = []
    for n in sizes:
        fig = SizeFigures(players=n)
        for i in range(games):
            fig.add(play_match(GameConfig(players=n, seed=seed + i)).game)
        out.append(fig)
    return out


def _pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:5.1f}%" if b else "    -"


def report_lines(figs: list[SizeFigures]) -> list[str]:
    """The table `tossim bench pacing` prints."""
    lines = [f"{'players':>7} {'games':>5} {'days':>5} {'trial days':>16} {'trials':>6} "
             f"{'lynch T/M/N':>12} {'chat/game':>9} {'distinct/game':>13} "
             f"{'accusations':>11} {'with reason':>11}"]
    for f in figs:
        g = max(1, f.games)
        lynch = "/".join(str(f.lynches.get(k, 0)) for k in FACTIONS)
        lines.append(
            f"{f.players:>7} {f.games:>5} {f.days / g:5.1f} "
            f"{f.trial_days:>5}/{f.voting_days:<4}{_pct(f.trial_days, f.voting_days):>7} "
            f"{f.trials:>6} {lynch:>12} {f.chat_lines / g:9.1f} {f.distinct_lines / g:13.1f} "
            f"{f.accusations:>11} {_pct(f.reasoned, f.accusations):>11}")
    lines.append("Town players' verdicts, by the accused's faction (guilty / innocent / abstain):")
    for f in figs:
        cells = []
        for fac in FACTIONS:
            n = sum(v for (k, _), v in f.verdicts.items() if k == fac)
            cells.append(f"{fac} " + "/".join(
                _pct(f.verdicts.get((fac, v), 0), n).strip()
                for v in ("guilty", "innocent", "abstain")) + f" (n={n})")
        lines.append(f"{f.players:>7} " + "   ".join(cells))
    lines.append("winners:")
    lines.append(f"{'players':>7} " + " ".join(f"{r:>13}" for r in RESULTS))
    for f in figs:
        lines.append(f"{f.players:>7} " + " ".join(
            f"{f.results.get(r, 0):>5} {_pct(f.results.get(r, 0), f.games):>7}"
            for r in RESULTS))
    return lines
