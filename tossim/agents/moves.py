"""Structured speech moves: what a seat that does not write free text says.

A small model (the bundled 135M) copies prompt text, invents players and
writes headings when it is asked for free text (issue 21). A seat whose
catalogue entry says `speech = "moves"` instead chooses one move, and the
guided-decoding grammar allows only moves whose arguments exist in the game:

    claim ROLE                   a role the seat may claim (`claimable`)
    report RESULT                one of the seat's own night results
    lie NAME is (not) suspicious a made-up result (non-Town seats, Day 2 on)
    accuse NAME: REASON          a living player, a reason taken from the game
    defend NAME: REASON          (a vote, a claim, a result, a will, a death)
    will vote NAME               how the seat will vote (in a discussion or
                                 a vote: a lynch vote is still to come or open)
    ask NAME about TOPIC         a question to a living player
    <wait></wait>                stay quiet (the protocol's own wait)

Each move is written inside the protocol's speech action (`<speak>claim
Doctor</speak>`, JSON `{"action": "speak", "args": {"text": "claim
Doctor"}}`), so parsers, truncation and faults work as for free text. The
server renders the move as a sentence (`render`), using the claim
vocabulary's fixed sentences (`claims.py`) and the scripted bots' wordings
(`talk.py`), so every bot understands a model seat's claims and accusations.
The move itself is kept with the turn record (`Move.to_dict`), a clean signal
for metrics: claims, lies, accusations. Wills are built from a claimed role
and, when that role is the seat's own, its real results; death notes come from
a fixed set. Whispers are free text, so a structured seat does not whisper.

Everything here reads only the seat's `SeatMemory` (its own Views). See
docs/agents.md, "Speech moves".
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from typing import Any, ClassVar

from tossim.agents import claims as cv
from tossim.agents import talk
from tossim.agents.actions import display_name
from tossim.agents.grammar import Choice, Part
from tossim.agents.memory import SeatMemory
from tossim.agents.protocols import Parsed
from tossim.engine.legal import IllegalCommand, LegalAction
from tossim.engine.role_lists import RoleListError, parse_slot
from tossim.engine.roles import ROLES, Faction, Role, cover_claims, find_role, threat
from tossim.engine.state import MAX_WILL

SPEECH_MODES = ("free", "moves")
SPEECH_TAGS = ("speak", "will", "death_note")  # the actions a move replaces
QUESTIONS: dict[str, str] = {
    "role": "{name}, what is your role?",
    "results": "{name}, do you have any results to share?",
    "vote": "{name}, who are you voting for today?",
    "will": "{name}, what is in your last will?",
}
# questions with no answer in a phase: on Day 1 no night has passed and no
# vote is held (seen in the demo: "Player 15, who are you voting for today?"
# on Day 1); on trial the day's vote is over (seen in the demo: three seats
# asked the accused "who are you voting for today?" in one Judgement); at
# night, in jail, the day's vote is over too
MOOT: dict[str, tuple[str, ...]] = {"day1": ("results", "vote"), "defense": ("vote",),
                                    "judgement": ("vote",), "last_words": ("vote",),
                                    "night": ("vote",)}
DEATH_NOTES = ("We know your secret.", "You talked too much.", "Nothing personal.",
               "You were next on the list.", "Sleep well.")
SHERIFF_SUSPICIOUS = frozenset({"night.sheriff_mafia", "night.sheriff_sk",
                                "night.sheriff_suspicious"})
SHERIFF_INNOCENT = frozenset({"night.sheriff_innocent", "night.sheriff_innocent_modern"})

Namer = Callable[[int], str]


# ---- facts a move may cite -------------------------------------------------------------

@dataclass(frozen=True)
class Result:
    """A night result (real or made up): `kind` suspicious | innocent | group |
    visited | mafia_visited; `target` the player it is about."""

    kind: str
    target: int
    night: int = 0  # 0: a made-up result
    roles: tuple[str, ...] = ()  # group: the Investigator's three role names
    visitor: int | None = None  # visited: who visited `target`

    def phrase(self, name: Namer) -> str:
        """As the grammar and the prompt write it (no end mark)."""
        t = name(self.target)
        if self.kind == "suspicious":
            return f"{t} is suspicious"
        if self.kind == "innocent":
            return f"{t} is not suspicious"
        if self.kind == "group":
            return f"{t} could be a {self.roles[0]}, {self.roles[1]}, or {self.roles[2]}"
        if self.kind == "visited":
            return f"{name(self.visitor or 0)} visited {t}"
        return f"the Mafia visited {t}"

    def sentence(self, name: Namer) -> str:
        """The claim vocabulary's sentence, which every scripted bot reads."""
        t = name(self.target)
        if self.kind == "suspicious":
            return cv.say_suspicious(t)
        if self.kind == "innocent":
            return cv.say_innocent(t)
        if self.kind == "group":
            return cv.say_group(t, self.roles)
        if self.kind == "visited":
            return cv.say_visited(name(self.visitor or 0), t)
        return cv.say_mafia_visited(t)

    def same_as(self, other: Result) -> bool:
        return (self.kind, self.target, self.roles, self.visitor) == (
            other.kind, other.target, other.roles, other.visitor)


@dataclass(frozen=True)
class Reason:
    """Why a player is accused or defended, taken from the seat's game:
    `kind` vote | claim | result | will | death | counter | confess |
    contested | no_claim; `about` the player. `death` and `counter` disprove
    a claim: the claimed role has died, or the game deals it once
    (`dealt_once`) and this seat holds or has claimed it; `confess` is a
    claim of a role the Town must lynch (the registry's `threat`: a
    Godfather, not a Jester); `contested`: another living player (`other`)
    claims the same role, dealt once, so one of them lies and the claim
    speaks for neither (`_clears`)."""

    kind: str
    about: int
    day: int = 0
    other: int | None = None  # vote: the voted player; will: the dead writer
    role: str = ""  # claim / death: the role name
    result: Result | None = None

    def phrase(self, name: Namer) -> str:
        """Third person, about `about` ("they claimed Doctor")."""
        if self.kind == "vote":
            return f"they voted for {name(self.other or 0)} on Day {self.day}"
        if self.kind == "guilty":
            return (f"they voted guilty on {name(self.other or 0)}, "
                    f"who was the {self.role}")
        if self.kind == "claim":
            return f"they claimed {self.role}"
        if self.kind == "death":
            return f"they claimed {self.role}, but the {self.role} is dead"
        if self.kind == "counter":
            return f"they claimed {self.role}, but I am the {self.role}"
        if self.kind == "confess":
            return f"they claimed {self.role}, an enemy of the Town"
        if self.kind == "contested":
            return f"they claimed {self.role}, as {name(self.other or 0)} did"
        if self.kind == "will":
            return f"{name(self.other or 0)}'s will names them"
        if self.kind == "result" and self.result is not None:
            return "my result: " + self.result.phrase(name)
        return "they have not claimed a role"

    def sentence(self, name: Namer) -> str:
        """As the rendered speech says it (a result in the first person)."""
        r = self.result
        if self.kind != "result" or r is None:
            return self.phrase(name)
        if r.kind in ("suspicious", "innocent"):
            return "I checked them and they are " + ("suspicious" if r.kind == "suspicious"
                                                     else "not suspicious")
        if r.kind == "group":
            return f"I checked them: they could be a {r.roles[0]}, {r.roles[1]}, or {r.roles[2]}"
        if r.kind == "visited" and r.visitor == self.about:
            return f"I saw them visit {name(r.target)} on Night {r.night}"
        if r.kind == "visited":
            return f"I saw {name(r.visitor or 0)} visit them on Night {r.night}"
        return f"the Mafia visited them on Night {r.night}"


# ---- the moves -------------------------------------------------------------------------

@dataclass(frozen=True)
class Move:
    """One structured statement. `to_dict()` is what the turn record keeps."""

    kind: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        return {"move": self.kind, **asdict(self)}

    def counts(self) -> tuple[str, ...]:
        """What the seat metrics count for this move: its kind, plus `lie`
        for a result the seat chose to make up and `false_claim` for a claim
        of a role that is not the seat's."""
        extra = (("lie",) if isinstance(self, Report) and self.lie else ()) + (
            ("false_claim",) if isinstance(self, ClaimRole) and not self.true else ())
        return (self.kind, *extra)


@dataclass(frozen=True)
class ClaimRole(Move):
    kind: ClassVar[str] = "claim"
    role: str
    true: bool = False  # the seat's own role


@dataclass(frozen=True)
class Report(Move):
    kind: ClassVar[str] = "report"
    result: Result
    honest: bool = True  # one of the seat's own results
    lie: bool = False  # written as `lie ...`: the seat chose to lie


@dataclass(frozen=True)
class Accuse(Move):
    kind: ClassVar[str] = "accuse"
    target: int
    reason: Reason


@dataclass(frozen=True)
class Defend(Move):
    kind: ClassVar[str] = "defend"
    target: int
    reason: Reason


@dataclass(frozen=True)
class VotePlan(Move):
    kind: ClassVar[str] = "vote_plan"
    target: int


@dataclass(frozen=True)
class Ask(Move):
    kind: ClassVar[str] = "ask"
    target: int
    topic: str


@dataclass(frozen=True)
class WillMove(Move):
    kind: ClassVar[str] = "will"
    role: str
    true: bool = False
    results: tuple[Result, ...] = field(default=())


@dataclass(frozen=True)
class DeathNoteMove(Move):
    kind: ClassVar[str] = "death_note"
    text: str


# ---- what the seat knows ---------------------------------------------------------------

def own_results(memory: SeatMemory) -> list[Result]:
    """The seat's night results, from its own private events."""
    out: list[Result] = []
    for e in memory.private_results():
        d, key = e.get("data", {}), e["key"]
        t = d.get("target")
        if not isinstance(t, int):
            continue
        if key in SHERIFF_SUSPICIOUS:
            out.append(Result("suspicious", t, e["day"]))
        elif key in SHERIFF_INNOCENT:
            out.append(Result("innocent", t, e["day"]))
        elif key == "night.investigator" and len(d.get("roles") or ()) == 3:
            out.append(Result("group", t, e["day"], roles=tuple(d["roles"])))
        elif key == "night.lookout" and isinstance(d.get("visitor"), int):
            out.append(Result("visited", t, e["day"], visitor=d["visitor"]))
        elif key == "night.spy":
            out.append(Result("mafia_visited", t, e["day"]))
    return out


def _slot_keys(memory: SeatMemory) -> tuple[frozenset[str], ...]:
    """For each slot of this game's role list, the role keys it may deal
    (categories expanded); none when the list is unknown."""
    for e in memory.events:
        if e["key"] == "game.start":
            return _parse_slots(tuple(str(x) for x in e["data"].get("role_list", ())))
    return ()


@lru_cache(maxsize=64)
def _parse_slots(role_list: tuple[str, ...]) -> tuple[frozenset[str], ...]:
    """`_slot_keys` of one role list, parsed once (every seat of a game reads
    the same list on every turn)."""
    out: list[frozenset[str]] = []
    for s in role_list:
        try:
            out.append(frozenset(r.key for r in parse_slot(
                s.replace("_", " ")).candidates(custom=False)))
        except RoleListError:
            r = find_role(s)
            out.append(frozenset({r.key}) if r is not None else frozenset())
    return tuple(out)


def game_roles(memory: SeatMemory) -> list[str]:
    """Role names that can be in this game (its role list, categories
    expanded), in registry order; every role when the list is unknown."""
    keys = frozenset().union(*_slot_keys(memory))
    return [r.name for k, r in ROLES.items()
            if k in keys or (not keys and not r.custom_only)]


def dealt_once(memory: SeatMemory) -> frozenset[str]:
    """Role names this game has at most one of, so two claims of one cannot
    both be true: the unique roles (Jailor, Mayor, ...), and, when the role
    list is known, every role only one of its slots can deal (seen in a
    lobby: in a 7-player Classic game, whose list has one Medium, the real
    Medium seat said "I trust Player 7 for now; they claimed Medium.")."""
    return _once_of(_slot_keys(memory))


@lru_cache(maxsize=64)
def _once_of(slots: tuple[frozenset[str], ...]) -> frozenset[str]:
    once = {r.name for r in ROLES.values() if r.unique}
    if slots:
        once |= {r.name for k, r in ROLES.items() if sum(k in s for s in slots) == 1}
    return frozenset(once)


def _vocab(memory: SeatMemory) -> cv.Vocabulary | None:
    names = memory.names
    if not names:
        return None
    return cv.vocabulary(tuple(names.get(s, f"Player {s}") for s in range(1, max(names) + 1)))


def _public_said(memory: SeatMemory, events: Sequence[dict[str, Any]] | None = None
                 ) -> Iterator[tuple[int, int, cv.Claim]]:
    """(day, author, claim) for every claim read out of the public chat in
    `events` (default: all the seat has seen), in order."""
    vocab = _vocab(memory)
    if vocab is None:
        return
    for e in memory.events if events is None else events:
        data = e.get("data") or {}
        author = data.get("author")
        if e["key"] == "chat.public" and isinstance(author, int):
            for c in vocab.parse(str(data.get("text", ""))):
                yield e["day"], author, c


def _claims(memory: SeatMemory) -> dict[int, list[tuple[int, str]]]:
    """Role claims made in public chat: slot -> [(day, role name)]."""
    out: dict[int, list[tuple[int, str]]] = {}
    for day, author, c in _public_said(memory):
        if c.kind == cv.ROLE and c.role in ROLES:
            out.setdefault(author, []).append((day, ROLES[c.role].name))
    return out


def own_claim(memory: SeatMemory, made: Sequence[tuple[int, str]] | None = None) -> str | None:
    """The role the seat last claimed: in public chat (`made`, its entry of
    `_claims` when the caller has read them), else in its will."""
    said = _claims(memory).get(memory.slot) if made is None else made
    if said:
        return said[-1][1]
    vocab = _vocab(memory)
    if vocab is None or not memory.you.will:
        return None
    for c in vocab.parse(memory.you.will):
        if c.kind == cv.ROLE and c.role in ROLES:
            return ROLES[c.role].name
    return None


def claimable(memory: SeatMemory, roles: Sequence[str], said: str | None,
              claimed: Mapping[int, Sequence[tuple[int, str]]] | None = None,
              plans: Sequence[tuple[int, str]] | None = None) -> list[str]:
    """The roles the seat may claim (in chat and in its will), so that what
    it says holds together over a game: a Town seat claims its own role; any
    other seat a cover, a Town role of the game (a Neutral Benign seat may
    also claim its own), and once it has claimed one in public (`said`, its
    `own_claim`) it sticks to it. Until then the covers are those that fit
    (`_fitting_covers`; `claimed`: `_claims`, `plans`: `_team_plans`, when
    the caller has read them), or the one in its will if it still fits."""
    own = memory.you.role
    if memory.you.faction == "town" and own:
        return [own]
    own_spec = find_role(own) if own else None
    covers = [r for r in roles
              if (spec := find_role(r)) is not None and spec.faction.value == "town"]
    if own_spec is not None and own_spec.alignment == "Neutral Benign":
        covers.append(own)
    covers = covers or list(roles)
    if memory.you.jailed:  # its Jailor holds that role (seen in a lobby: a
        # jailed Framer seat told its Jailor "I am the Jailor.")
        covers = [r for r in covers if r != ROLES["jailor"].name] or covers
    claimed = _claims(memory) if claimed is None else claimed
    if said in covers and claimed.get(memory.slot):
        return [said]
    # a seat that has given a Sheriff's results in public is the Sheriff,
    # whatever its will said (seen in a lobby: a Framer said "My results:
    # Player 4 is not suspicious." and then wrote the will "I am the Medium.";
    # a Godfather's will went from Sheriff to Doctor once the real Sheriff
    # had claimed)
    if not claimed.get(memory.slot) and "Sheriff" in covers and _gave_checks(memory):
        return ["Sheriff"]
    plans = _team_plans(memory) if plans is None else plans  # it walks the team's chat
    fitting = _fitting_covers(memory, covers, claimed, plans)
    # a cover only written in the will, or told to the team, may still
    # change while it fits: nobody in the town has heard it
    intent = said or own_cover_plan(memory, plans)
    return [intent] if intent in fitting else fitting


def cover_blown(memory: SeatMemory, said: str | None) -> bool:
    """Whether a death has shown the seat's public claim `said` to be a lie:
    it is not the seat's own role, the game deals it once, and its holder
    has died. Such a claim is not said again (seen in a lobby: a Godfather
    seat said "Same as before: I am the Medium." the day after the Medium
    was lynched; a Framer went on claiming Jailor once the Jailor had died)."""
    if said is None or said == memory.you.role:
        return False
    return said in dealt_once(memory) and any(p.role == said for p in memory.dead())


def _team_plans(memory: SeatMemory) -> list[tuple[int, str]]:
    """(author, role) of every cover told in the team's chat (`talk.cover_plan`), oldest first."""
    out = []
    for e in memory.events:
        data = e.get("data") or {}
        if e["key"] in TEAM_CHAT_KEYS and isinstance(author := data.get("author"), int) and (
                role := talk.read_cover_plan(str(data.get("text", "")))) is not None:
            out.append((author, role))
    return out


def own_cover_plan(memory: SeatMemory,
                   plans: Sequence[tuple[int, str]] | None = None) -> str | None:
    """The cover this seat last told its team it will claim (None: none);
    `plans`: `_team_plans`, when the caller has read them."""
    plans = _team_plans(memory) if plans is None else plans
    mine = [role for author, role in plans if author == memory.slot]
    return mine[-1] if mine else None


RESULT_KINDS = frozenset({cv.SUSPICIOUS, cv.INNOCENT, cv.GROUP, cv.VISITED, cv.MAFIA_VISITED})


def _voiced_votes(memory: SeatMemory, public: Sequence[dict[str, Any]],
                  claims: Sequence[tuple[int, int, cv.Claim]]) -> set[int]:
    """The players whose vote today is no question: they cast one (a public
    `vote.cast`/`vote.changed` of today) or said one in `public` (today's
    public chat, whose `_public_said` claims are `claims`): a plan ("My vote
    goes to NAME."), a call to vote ("Vote NAME!") or any accusation."""
    out = {(e.get("data") or {}).get("voter") for e in memory.day_events(memory.day)
           if e["key"] in ("vote.cast", "vote.changed")}
    said = _named(memory, _VOTE_PLAN_HEADS)
    for e in public:
        data = e.get("data") or {}
        if any(sentence in str(data.get("text", "")) for sentence in said):
            out.add(data.get("author"))
    out |= {author for _day, author, c in claims if c.kind == cv.ACCUSE}
    return {s for s in out if isinstance(s, int)}


def _gave_checks(memory: SeatMemory) -> bool:
    """Whether the seat has said a Sheriff's result (suspicious or not) in
    public."""
    vocab = _vocab(memory)
    return vocab is not None and any(
        c.kind in (cv.SUSPICIOUS, cv.INNOCENT)
        for _day, text in own_public_lines(memory) for c in vocab.parse(text))


def _fitting_covers(memory: SeatMemory, covers: list[str],
                    claimed: Mapping[int, Sequence[tuple[int, str]]],
                    plans: Sequence[tuple[int, str]]) -> list[str]:
    """The covers a liar can hold: none that a teammate has claimed or said
    it will claim, nor one anyone else has claimed, nor one a death
    disproves, and the ones an Investigator's
    result cannot catch (the registry's `cover_claims`) if any are left,
    roles the game may deal more than once before the others (`dealt_once`);
    failing that, none a teammate claimed or a death disproved; failing
    that, all (seen in a lobby: a Framer seat claimed Investigator after its
    Godfather had, beside the real Investigator)."""
    mates = set(memory.you.teammates or ())
    by_team = {role for s, said in claimed.items() if s in mates for _day, role in said}
    # and the covers teammates told the team they will claim (`talk.cover_plan`;
    # seen in a lobby: a Framer and its Godfather, both model seats, each
    # planned to pose as the Medium); a teammate with a lower seat number
    # keeps its plan, so two seats that planned at once do not both give way
    by_team |= {role for author, role in plans
                if author in mates and author < memory.slot}
    by_others = {role for s, said in claimed.items()
                 if s not in mates and s != memory.slot for _day, role in said}
    dead_roles = {p.role for p in memory.dead() if p.role}
    # seen in a lobby: a Framer's will claimed Sheriff the day the Sheriff died
    once = dealt_once(memory)
    dead = {r for r in covers if _died_out(r, dead_roles) or (r in dead_roles and r in once)}
    spec = find_role(memory.you.role) if memory.you.role else None
    safe = ({ROLES[k].name for k in cover_claims(spec) if k in ROLES}
            if spec is not None else set())
    free = [r for r in covers if r not in by_team | by_others | dead]
    for tier in ([r for r in free if r in safe], free,
                 [r for r in covers if r not in by_team | dead]):
        # a role the game deals once is a poor lie while its holder may
        # still speak (seen in a lobby: a Godfather claimed Jailor and the
        # Jailor counter-claimed), so a shared role goes first if one fits
        if tier:
            return [r for r in tier if r not in once] or tier
    return covers


def reasons(memory: SeatMemory, claimed: Mapping[int, list[tuple[int, str]]] | None = None,
            results: Sequence[Result] | None = None) -> dict[int, list[Reason]]:
    """For every living player but the seat: reasons taken from the game, in
    a fixed order (results, wills, deaths, claims, votes; `no_claim` last).
    `claimed` (`_claims`) and `results` (`own_results`): already read by the
    caller, so the events are not walked again."""
    living = [p.slot for p in memory.living() if p.slot != memory.slot]
    out: dict[int, list[Reason]] = {s: [] for s in living}
    for r in own_results(memory) if results is None else results:
        about = [r.target] + ([r.visitor] if r.visitor is not None else [])
        for s in about:
            if s in out:
                out[s].append(Reason("result", s, r.night, result=r))
    dead_roles = {p.role for p in memory.dead() if p.role}
    for p in memory.dead():
        will = p.death.will if p.death is not None else ""
        for s in out:
            if will and _mentions(will, memory.name(s)):
                out[s].append(Reason("will", s, other=p.slot))
    claimed = _claims(memory) if claimed is None else claimed
    mine = own_claim(memory, claimed.get(memory.slot, ())) or memory.you.role
    once = dealt_once(memory)
    latest = {s: said[-1][1] for s, said in claimed.items() if s in out}
    for s, said in claimed.items():
        if s not in out:
            continue
        day, role = said[-1]
        if _died_out(role, dead_roles):
            out[s].append(Reason("death", s, day, role=role))
        elif role == mine and role in once:
            out[s].append(Reason("counter", s, day, role=role))
        elif _enemy(role):
            out[s].append(Reason("confess", s, day, role=role))
        elif role in once and (rival := min(
                (t for t, r in latest.items() if r == role and t != s), default=None)):
            out[s].append(Reason("contested", s, day, other=rival, role=role))
        out[s].append(Reason("claim", s, day, role=role))
    lynched = {e["day"]: e["data"] for e in memory.events if e["key"] == "lynch.death"}
    # a vote against a player since shown to be an enemy of the Town is no
    # charge (seen in a lobby: "Vote Player 4! Because they voted for Ann on
    # Day 2." after Ann was lynched as the Godfather)
    enemies = {p.slot for p in memory.dead() if p.role and _enemy(p.role)}
    guilty: list[int] = []  # guilty verdicts of the current trial (before its outcome)
    for e in memory.events:
        d = e.get("data", {})
        if e["key"] in ("vote.cast", "vote.changed") and d.get("voter") in out \
                and isinstance(d.get("target"), int) and d["target"] not in enemies:
            out[d["voter"]].append(Reason("vote", d["voter"], e["day"], other=d["target"]))
        elif e["key"] == "judge.vote" and d.get("verdict") == "guilty":
            guilty.append(d.get("voter"))
        elif e["key"] == "judge.pardon":
            guilty = []
        elif e["key"] == "judge.lynch" and isinstance(d.get("accused"), int):
            dead = lynched.get(e["day"])
            shown = find_role(str(dead["role"])) if dead and dead.get("role") else None
            # a guilty verdict is a charge only when the lynched player was
            # Town (seen in a lobby: "Player 5 has some explaining to do. They
            # voted guilty on Ann, who was the Godfather.")
            if dead and dead.get("player") == d["accused"] and shown is not None \
                    and shown.faction.value == "town":
                for voter in guilty:
                    if voter in out:
                        out[voter].append(Reason("guilty", voter, e["day"], other=d["accused"],
                                                 role=shown.name))
            guilty = []
    # nobody claims on Day 1: not having claimed is a reason from Day 2 on
    # (seen in the demo, on Day 1: "Player 1 has some explaining to do. They
    # have not claimed a role."), and only from a seat that has claimed
    # (seen in a lobby: a Sheriff seat that had claimed nothing said "Vote
    # Player 5! Why? They have not claimed a role.")
    silence = memory.day >= 2 and bool(claimed.get(memory.slot))
    for s in out:
        if s not in claimed and silence:
            out[s].append(Reason("no_claim", s))
        seen: set[str] = set()
        unique: list[Reason] = []
        for why in out[s]:  # one reason per phrase
            key = why.phrase(lambda x: str(x))
            if key not in seen:
                seen.add(key)
                unique.append(why)
        out[s] = unique
    return out


# ---- the table: every allowed move, by the text the model writes ---------------------

@dataclass
class MoveTable:
    """Every move a seat may make now, keyed by its text (as the grammar
    writes it, names escaped), grouped into the grammar's choices."""

    speak: dict[str, Move] = field(default_factory=dict)
    will: dict[str, Move] = field(default_factory=dict)
    death_note: dict[str, Move] = field(default_factory=dict)
    # (move kind, literal head, options) per speech choice, in prompt order
    groups: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)


# the phases of a day whose lynch vote is still ahead or open
VOTE_PLAN_PHASES = frozenset({"discussion", "voting"})
# the phases of a trial: the accused speaks, then the town judges them
TRIAL_PHASES = frozenset({"defense", "judgement", "last_words"})
# what the accused may say in its Defense while it has not said who it is today
STAND_FIRST = frozenset({"claim", "report"})
# how a vote plan is said (`render`); `announced_vote` reads them back
VOTE_PLAN_WORDINGS = ("I am voting {name} today.", "My vote goes to {name}.")


# how a defence is said (`render`); `defended_today` reads them back
DEFEND_WORDINGS = ("Leave {who} alone: {why}.", "I trust {who} for now; {why}.",
                   "Do not lynch {who}. {Why}.")


def _heads(wordings: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The text around each wording's name, up to its next field:
    "Leave {who} alone: {why}." -> ("Leave ", " alone: ")."""
    out = []
    for w in wordings:
        start, end = w.index("{"), w.index("}") + 1
        out.append((w[:start], w[end:].split("{", 1)[0]))
    return tuple(out)


_PLAN_HEADS = _heads(VOTE_PLAN_WORDINGS)  # a vote plan said
# a plan, or an accusation's call to vote ("Vote Player 4! ...", `render`)
_VOTE_PLAN_HEADS = _heads((*VOTE_PLAN_WORDINGS, cv.say_accuse("{name}")))
_DEFEND_HEADS = _heads(DEFEND_WORDINGS)


def unreported(memory: SeatMemory, mine: Sequence[Result] | None = None,
               lines: Sequence[tuple[int, str]] | None = None) -> list[Result]:
    """The seat's results (the latest of each phrase, oldest first) to say
    in public now: those it has never said, while it holds one (seen in a
    lobby: on Day 3 a Sheriff seat said again the Night 1 result it had
    given on Day 2, and never its Night 2 result); else those not yet said
    today, as a result is reported once a day (seen in a lobby: "Results:
    Player 4 is not suspicious." in the discussion and again in the vote).
    `mine` (`own_results`) and `lines` (`own_public_lines`): when already read."""
    lines = own_public_lines(memory) if lines is None else lines
    ever = "\n".join(text for _day, text in lines)
    today = "\n".join(text for day, text in lines if day == memory.day)
    latest = {r.phrase(_shown(memory)): r
              for r in (own_results(memory) if mine is None else mine)}
    fresh = [r for r in latest.values() if r.sentence(memory.name) not in ever]
    return fresh or [r for r in latest.values() if r.sentence(memory.name) not in today]


def own_public_lines(memory: SeatMemory, day: int | None = None) -> list[tuple[int, str]]:
    """What this seat has said in the public chat, this game or on `day`:
    (day, text), oldest first."""
    events = memory.events if day is None else memory.chat(day)
    return [(e["day"], str(e["data"].get("text", ""))) for e in events
            if e["key"] == "chat.public" and e["data"].get("author") == memory.slot]


def _named(memory: SeatMemory, heads: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Each wording whose `_heads` these are, said of each living player:
    the sentence's head with the name in it -> the player's slot."""
    return {before + display_name(p.name) + after: p.slot
            for p in memory.living() for before, after in heads}


def _said_today(memory: SeatMemory, heads: Sequence[tuple[str, str]]) -> list[int]:
    """The living players this seat's public lines of today named in one of
    the wordings whose `_heads` these are, newest first."""
    said = {sentence: slot for sentence, slot in _named(memory, heads).items()
            if slot != memory.slot}
    return [slot for _day, text in reversed(own_public_lines(memory, memory.day))
            for sentence, slot in said.items() if sentence in text]


def announced_vote(memory: SeatMemory) -> int | None:
    """The living player this seat said today it would vote for (its latest
    vote plan or call to vote in the public chat), so that its vote and its
    later plans hold to it (seen in the demo: "My vote goes to Player 4."
    and then a vote against Player 12; in the lobby journey: "Vote Player 4!
    They have not claimed a role." and then a vote against Alice)."""
    if memory.phase not in VOTE_PLAN_PHASES:
        return None
    said = _said_today(memory, _VOTE_PLAN_HEADS)
    return said[0] if said else None


def _defended(memory: SeatMemory, target: int, reason: Reason, spoken: str) -> bool:
    """Whether `spoken` (the seat's own lines) holds this defence in any of
    its wordings (`render`; names as written there: unescaped)."""
    who, why = memory.name(target), reason.sentence(as_speaker(memory.name, memory.slot))
    return any(w.format(who=who, why=why, Why=talk._cap(why)) in spoken
               for w in DEFEND_WORDINGS)


def defended_today(memory: SeatMemory) -> set[int]:
    """The living players this seat spoke up for today ("I trust Player 6
    for now; ..."): its vote example and vote plans leave them out while
    anyone else is left (seen in the demo: "I trust Player 6 for now; they
    claimed Bodyguard." and then a vote against Player 6)."""
    return set(_said_today(memory, _DEFEND_HEADS))


def trusted(memory: SeatMemory, results: Sequence[Result] | None = None,
            claimed: Mapping[int, Sequence[tuple[int, str]]] | None = None) -> set[int]:
    """The players this seat stands by now: those it spoke up for today
    (`defended_today`), those its own results found not suspicious, and
    those whose claim fits its own Investigator result on them. Its calls
    to vote, vote plans, vote example and vote leave them out while anyone
    else is left (seen in a lobby: a Sheriff seat found Player 4 not
    suspicious, then said "Vote Player 4! They have not claimed a role." and
    voted against Player 4; an Investigator seat found Ann could be a
    Sheriff, Ann claimed Sheriff, and it voted against Ann). `results`:
    `own_results`, `claimed`: `_claims`, when already read."""
    mine = own_results(memory) if results is None else results
    claimed = _claims(memory) if claimed is None else claimed
    return defended_today(memory) | proven(memory) | {
        r.target for r in mine
        if _fits(r, said[-1][1] if (said := claimed.get(r.target)) else None)}


def proven(memory: SeatMemory) -> set[int]:
    """For a Town seat, the living players whose result said in public a
    death has borne out: "Player 5 is suspicious!" or "Player 5 could be a
    Bodyguard, Godfather, or Arsonist." of a player since shown to be an
    enemy of the Town (a role the Town must lynch, among the roles the
    result named). A Town player stands by such a player (seen in a lobby:
    the Investigator's result led to the Godfather's lynch, and next day
    both Town model seats said they would vote for the Investigator).
    Empty for other seats, whose votes follow their own goals."""
    if memory.you.faction != "town":
        return set()
    shown = {p.slot: p.role for p in memory.dead() if p.role and _enemy(p.role)}
    if not shown:
        return set()
    living = {p.slot for p in memory.living()} - {memory.slot}
    return {author for _day, author, c in _public_said(memory)
            if author in living and c.target in shown
            and (c.kind == cv.SUSPICIOUS or (c.kind == cv.GROUP and shown[c.target] in c.roles))}


def spared(memory: SeatMemory, results: Sequence[Result] | None = None,
           claimed: Mapping[int, Sequence[tuple[int, str]]] | None = None) -> set[int]:
    """The players this seat's vote and vote example leave out while anyone
    else is left: those it stands by (`trusted`) and, on a team, the
    teammates its View names (seen in a lobby: a Godfather seat voted
    against its own Framer on Day 4). `results`, `claimed`: as `trusted`."""
    return trusted(memory, results, claimed) | set(memory.you.teammates or ())


def exposed(memory: SeatMemory, why: Mapping[int, Sequence[Reason]] | None = None) -> set[int]:
    """The living players a Town seat's game shows to be enemies of the
    Town (`_enemy_shown`), or lying: its own Investigator result on them
    does not hold the role they claimed. Its vote, vote plans and vote
    example go to them while one is on the ballot (seen in a lobby: an
    Investigator seat found Player 5 could be a Bodyguard, Godfather, or
    Arsonist; Player 5 claimed Investigator, and the seat voted against
    the player who had claimed Sheriff). Empty for other seats, whose
    votes follow their own goals. `why`: `reasons`, when already read."""
    if memory.you.faction != "town":
        return set()
    why = reasons(memory) if why is None else why
    out = set()
    for s, known in why.items():
        claim = next((r.role for r in known if r.kind == "claim"), None)
        if _enemy_shown(known) or (claim is not None and any(
                r.result is not None and r.result.kind == "group"
                and not _fits(r.result, claim) for r in known)):
            out.add(s)
    return out


def _fits(result: Result, claim: str | None) -> bool:
    """Whether the seat's own `result` speaks for its player, whose latest
    claim is `claim`: not suspicious, or an Investigator's group that holds
    the role they claimed."""
    return result.kind == "innocent" or (result.kind == "group" and claim in result.roles)


def _shown(memory: SeatMemory) -> Namer:
    names = memory.names
    return lambda s: display_name(names.get(s, f"Player {s}"))


def as_speaker(name: Namer, speaker: int | None) -> Namer:
    """`name`, with the speaking seat as "me": a reason is said by the seat
    (seen in a lobby: Player 3 said of Player 5 "they voted for Player 3 on
    Day 3"; now "they voted for me on Day 3"). Only a reason's players are
    named so: the player a move is about is never the speaker."""
    return lambda s: "me" if speaker is not None and s == speaker else name(s)


def move_table(memory: SeatMemory) -> MoveTable:
    """The moves allowed now (see the module docstring)."""
    name = _shown(memory)
    said_by_me = as_speaker(name, memory.slot)  # a reason's players
    table = MoveTable()
    own_role = memory.you.role
    roles = game_roles(memory)
    if own_role and own_role not in roles:
        roles.append(own_role)

    def group(what: str, head: str, items: Mapping[str, Move]) -> None:
        if not items:
            return
        table.groups.append((what, head, tuple(items)))
        for text, m in items.items():
            table.speak[head + text] = m

    claimed = _claims(memory)  # read once: it walks the public events
    made = claimed.get(memory.slot, [])
    said = own_claim(memory, made)
    plans = _team_plans(memory)  # read once, like `claimed`: it walks the team's chat
    claims = claimable(memory, roles, said, claimed, plans)
    # the dead talk only among themselves, whose roles are shown: no claim,
    # made-up result, vote plan or question to the living (seen in a lobby:
    # a lynched Mafioso told the dead chat "Tomorrow I will claim Escort.")
    alive = memory.you.alive
    team = team_night(memory)
    # a role its holder keeps to itself (the registry's `keeps_hidden`: a
    # Jailor, a Veteran) is claimed only on the stand (seen in a lobby: a
    # Jailor seat said "I am the Jailor." on Day 1 and was killed that night)
    spec = find_role(own_role) if own_role else None
    on_stand = memory.phase in TRIAL_PHASES and memory.trial.get("accused") == memory.slot
    hides = spec is not None and spec.keeps_hidden and not on_stand
    # a claim is said once a day (seen in a lobby: "Time to claim. I am the
    # Doctor." in the discussion and again in the vote of the same day), and
    # to the team at night only as the cover for tomorrow, so not once it is
    # given (seen in a lobby: a Godfather that had claimed Investigator told
    # its team "Tomorrow I will claim Investigator." that night)
    # and a cover is told to the team once (seen in a lobby: a Godfather said
    # "Tomorrow I will claim Investigator." on two nights running)
    plan_told = own_cover_plan(memory, plans)
    told = plan_told if team else None
    if alive and all(day != memory.day for day, _role in made) and not (team and made) \
            and not cover_blown(memory, said):
        group("claim", "claim ", {r: ClaimRole(r, r == own_role) for r in claims
                                  if not (hides and r == own_role) and r != told})
    mine = own_results(memory)
    lines = own_public_lines(memory)
    spoken = "\n".join(text for _day, text in lines)
    today = "\n".join(text for day, text in lines if day == memory.day)
    group("report", "report ", {r.phrase(name): Report(r) for r in unreported(memory, mine, lines)})
    living = [p.slot for p in memory.living() if p.slot != memory.slot]
    # a Mafia member never turns the town on a teammate its View names: no
    # "suspicious" lie, accusation or vote plan against one (covering is fine)
    mates = set(memory.you.teammates or ())
    others = [s for s in living if s not in mates]
    # made-up results are the deceiving side's: never a Town seat's, never
    # before a night has passed, and only while they fit the seat's claim
    # (they are a Sheriff's results), and, like a true result, one is said
    # once a day (seen in a lobby: a Framer's "What I found: Player 3 is not
    # suspicious." in the discussion and "Results: Player 3 is not
    # suspicious." in the Judgement); never to the seat's own team, which
    # knows it has no results (seen in a lobby: a Godfather told its Framer
    # "Here is what I have: Player 2 is not suspicious." at night); and not
    # from a seat whose cover is another role, told to the town, written in
    # its will or told to its team (seen in a lobby: a Godfather told its
    # team it would claim Investigator, then gave Sheriff results)
    lies: dict[str, Move] = {}
    if alive and not team and memory.you.faction != "town" and memory.day >= 2 and (
            (said or plan_told) in (None, "Sheriff")):
        for s in living:
            for kind in (("innocent",) if s in mates else ("suspicious", "innocent")):
                r = Result(kind, s)
                if r.sentence(memory.name) not in today:
                    lies[r.phrase(name)] = Report(r, any(r.same_as(x) for x in mine),
                                                  lie=True)
    group("lie", "lie ", lies)
    # a reason backs only the side it argues: a claim alone is no charge,
    # and only a claim no death has disproved or a clearing result is a
    # defence (seen in the demo: "Do not lynch Player 1. They voted for
    # Player 11 on Day 2."; in a lobby: "Something is off about Player 2;
    # they claimed Jailor.", and "Do not lynch Player 2. They claimed
    # Jailor." after the real Jailor's death)
    why = reasons(memory, claimed, mine)
    # to the team a counter-claim made on a cover is no charge (seen in a
    # lobby: a Mafioso that had claimed Jailor told its Godfather "Player 4
    # has some explaining to do. They claimed Jailor, but I am the Jailor."),
    # and a player a teammate named tonight is its charge (seen: both
    # teammates said the same accusation in the Mafia's chat)
    no_charge = {"claim", "contested"} | ({"counter"} if team and said != own_role else set())
    named = _named_by_team(memory) if team else set()
    # a seat that has voted says the vote it cast (seen in the demo: "My vote
    # goes to Player 5." right after voting against Player 14), one that has
    # said its plan today repeats it (`announced_vote`); a plan only
    # while a lynch vote is ahead or open (seen: "My vote goes to Player 10."
    # on Day 1, which has no vote, and during a Judgement). Its calls to vote
    # name the same player (seen in a lobby: a vote against Player 6, then
    # "Vote Player 7! ..."), and it speaks up for anyone but that player.
    # A verdict cast binds the same way: no defence of the accused after
    # "guilty", no charge after "innocent" (seen in a lobby: a guilty
    # verdict, then "Leave Player 7 alone: they claimed Sheriff.")
    plan: int | None = None
    if memory.phase in VOTE_PLAN_PHASES:
        plan = memory.you.vote if memory.you.vote in others else announced_vote(memory)
    trust = trusted(memory, mine, claimed)
    if plan in trust and memory.you.vote != plan:
        # a plan said gives way to trust, as the vote does (`vote_choice`;
        # seen in the demo: an Investigator seat said "I am voting Player 2
        # today.", Player 2 claimed what its result held, and it said "Vote
        # Player 2! ... I checked them: they could be a Sheriff, ...")
        plan = None
    accused = memory.trial.get("accused") if memory.phase == "judgement" else None
    spared = accused if memory.you.verdict == "innocent" else None
    condemned = accused if accused is not None and memory.you.verdict == "guilty" else plan
    # while a player stands trial the talk is about them (seen in the demo:
    # "I trust Player 5 for now; they claimed Lookout." in the Judgement of
    # Player 6): charges, defences and questions name only the accused; so
    # does a Jailor's talk with its prisoner (seen in a lobby: "Leave Ann
    # alone: they claimed Sheriff." in the jail). The accused speaks for
    # itself: its claim, its results, charges against others, but no
    # defence of anyone else and no questions (seen in a lobby: "Leave
    # Player 7 alone: they claimed Doctor." in the seat's own Defense)
    on_trial = memory.trial.get("accused") if memory.phase in TRIAL_PHASES else None
    accused_me = on_trial == memory.slot
    if memory.phase == "night" and memory.you.prisoner is not None:
        on_trial = memory.you.prisoner
    if on_trial not in living:
        on_trial = None
    if on_trial is not None:
        charged = [on_trial] if on_trial in others else []
    elif plan is not None and plan in others:
        charged = [plan]
    else:
        charged = [s for s in others if s not in trust]
    for s in charged:
        if s == spared or s in named:
            continue
        group("accuse", f"accuse {name(s)}: ",
              {r.phrase(said_by_me): Accuse(s, r) for r in why.get(s, ())
               if r.kind not in no_charge and not _clears(r, why[s])})
    # nobody speaks up for a player to its own team at night (seen in a
    # lobby: a Framer told its Godfather "Do not lynch Player 3. They
    # claimed Investigator.")
    # A defence is said once a game, or once a day for the accused (seen in
    # a lobby: "I trust Ann for now; they claimed Investigator." on Day 1,
    # in Day 2's discussion and again in its vote)
    # Outside a trial, a seat that holds a result it has never said in
    # public speaks up for nobody but by that result (seen in a lobby: an
    # Investigator seat chose to defend another player instead of telling
    # its result), as it asks nothing then (below)
    speak_for = [] if accused_me else [on_trial] if on_trial is not None else living
    # (what was said is compared as `render` wrote it: with the names unescaped)
    untold = any(r.sentence(memory.name) not in spoken for r in mine)
    withheld = on_trial is None and untold
    for s in ([] if team_night(memory) else [s for s in speak_for if s != condemned]):
        heard = today if s == on_trial else spoken
        group("defend", f"defend {name(s)}: ",
              {r.phrase(said_by_me): Defend(s, r) for r in why.get(s, ())
               if _clears(r, why[s]) and not _defended(memory, s, r, heard)
               and not (withheld and r.kind != "result")})
    # a plan is said once a day (seen in a lobby: "I am voting Player 4
    # today." in the discussion and again in the vote; the day's summary
    # quoted both)
    if alive and memory.phase in VOTE_PLAN_PHASES and not _said_today(memory, _PLAN_HEADS):
        enemies = exposed(memory, why) - trust
        planned = ([plan] if plan in others
                   else [s for s in others if s in enemies]
                   or [s for s in others if s not in trust] or others)
        group("vote_plan", "will vote ", {name(s): VotePlan(s) for s in planned})
    # nobody is asked for results their claimed role does not get (seen in
    # a lobby: "Player 7, do you have any results to share?" to a Medium)
    # a seat asks each question once a game, and none while it holds a
    # result it has not said in public (seen in a lobby: an Investigator
    # asked "Player 5, what is your role?" on Day 2 and again on Day 3,
    # and never reported its Night 2 result); nobody is asked a role they
    # have claimed (seen: "Player 2, what is your role?" after Player 2's
    # second Sheriff claim); at night only a Jailor asks, and only its
    # prisoner (seen: a Jailor asked Player 4 in its jail chat with Player 5);
    # nobody asks a teammate, whose answers it knows (seen in a lobby: a
    # Godfather seat asked its Framer "do you have any results to share?")
    askable = ([] if accused_me or not alive else [on_trial] if on_trial in others
               else [] if on_trial is not None
               else others if memory.phase != "night"
               else [s for s in others if s == memory.you.prisoner])
    if not untold and askable:
        # a question is asked once: not again by the seat, nor by anyone
        # today (seen in the demo: three model seats asked Player 15 the same
        # question in one phase; the later two are withdrawn as stale)
        public = [e for e in memory.chat(memory.day) if e["key"] == "chat.public"]
        heard = spoken + "\n" + "\n".join(str((e.get("data") or {}).get("text", ""))
                                          for e in public)
        # nor for results a player gave today (seen in a lobby: "Player 4, do
        # you have any results to share?" after Player 4's Investigator result)
        heard_claims = list(_public_said(memory, public))
        shared = {author for _day, author, c in heard_claims if c.kind in RESULT_KINDS}
        # nor how a player votes who voted or said so today (seen in a lobby:
        # "Player 3, who are you voting for today?" after Player 3's vote and
        # its "I am voting Player 5 today.")
        voiced = _voiced_votes(memory, public, heard_claims)
        for s in askable:
            group("ask", f"ask {name(s)} about ",
                  {t: Ask(s, t) for t, q in QUESTIONS.items()
                   if q.format(name=memory.name(s)) not in heard
                   and not (t == "role" and s in claimed)
                   and not (t == "vote" and s in voiced)
                   and not (t == "results" and (s in shared or (
                       s in claimed and not _investigates(claimed[s][-1][1]))))
                   and t not in MOOT.get(memory.phase, ())})
    # the accused says who it is before anything else (seen in a lobby: a
    # Medium seat on the stand accused another player, claimed only in its
    # last words, and was lynched as the Medium)
    if accused_me and memory.phase == "defense" and any(
            what == "claim" for what, _head, _items in table.groups):
        first = [g for g in table.groups if g[0] in STAND_FIRST]
        heads = tuple(head for _what, head, _items in first)
        table.groups = first
        table.speak = {text: m for text, m in table.speak.items() if text.startswith(heads)}
    for r_name in claims:
        true = r_name == own_role
        table.will[r_name] = WillMove(r_name, true, tuple(mine[-8:]) if true else ())
    for note in DEATH_NOTES:
        table.death_note[note] = DeathNoteMove(note)
    return table


# ---- grammar ---------------------------------------------------------------------------

def rewrites(memory: SeatMemory, table: MoveTable, tag: str) -> list[str]:
    """The `will` or `death_note` options that would change what the seat
    has written: one it has already written is no move (seen in a lobby: an
    Investigator rewrote the same will in every phase, a turn each time),
    and nor is any death note once one is written."""
    now = (memory.you.will if tag == "will" else memory.you.death_note).strip()
    if tag == "death_note" and now:
        # a note once written stands (seen in a lobby: a Godfather seat
        # swapped its two notes back and forth, five turns of sixteen)
        return []
    return [text for text, move in getattr(table, tag).items()
            if render(move, memory.names).strip() != now]


def structured_choices(memory: SeatMemory, choices: Sequence[Choice],
                       table: MoveTable | None = None) -> list[Choice]:
    """`choices` (the turn's final actions) with free text replaced by moves:
    `speak` becomes one choice per move group (its literal head, then one of
    its options), `will` a role to claim, `death_note` one of DEATH_NOTES;
    `whisper` (free text only) is left out, and so is a will or note that
    would not change (`rewrites`) unless nothing else is left."""
    table = table or move_table(memory)
    out: list[Choice] = []
    kept: list[Choice] = []  # what a turn with nothing new to write may still do
    for c in choices:
        if c.tag == "whisper":
            continue
        if c.tag == "speak":
            for _what, head, options in table.groups:
                out.append(Choice("speak", "final", "move",
                                  body=(Part("lit", head), Part("opt", options=options))))
        elif c.tag in ("will", "death_note"):
            fresh = tuple(rewrites(memory, table, c.tag))
            (out if fresh else kept).append(Choice(c.tag, "final", "move", body=(
                Part("opt", options=fresh or tuple(getattr(table, c.tag))),)))
        else:
            out.append(held_choice(memory, c))
    return out or kept


def held_choice(memory: SeatMemory, choice: Choice) -> Choice:
    """A vote, verdict, prisoner or night target held to what this seat knows
    and said (`vote_choice`, `judge_choice`, `jail_choice`, `night_choice`);
    any other choice as it is. The grammar and the prompt's list of what is
    available both read it, so the prompt never offers a name the grammar
    then refuses."""
    if choice.tag == "vote":
        return vote_choice(memory, choice)
    if choice.tag == "judge":
        return judge_choice(memory, choice)
    if choice.tag == "jail":
        return jail_choice(memory, choice)
    if choice.tag == "night" and choice.arg == "names":
        return night_choice(memory, choice)
    return choice


def _investigates(role: str) -> bool:
    """Whether a role gets night results to share (the registry's Town
    Investigative roles: Sheriff, Investigator, Lookout, Spy ...)."""
    spec = find_role(role)
    return spec is not None and spec.alignment == "Town Investigative"


def _died_out(role: str, dead_roles: set[str]) -> bool:
    """Whether a death disproves a claim of `role`: its holder has died (the
    roles the game may deal again, or that pass on, excepted)."""
    return role in dead_roles and role not in ("Mafioso", "Vigilante")


def _enemy(role: str) -> bool:
    """Whether a claimed role is one the Town must lynch (seen in a lobby: a
    Town seat said "I trust Ann for now; they claimed Godfather.")."""
    spec = find_role(role)
    return spec is not None and spec.faction.value != "town" and threat(spec) > 0


DISPROVING = frozenset({"death", "counter", "confess"})
"""Reason kinds that show a player's claim false, or the player an enemy of
the Town by their own word."""


def _enemy_shown(known: Sequence[Reason]) -> bool:
    """Whether the reasons about a player (`reasons`) show them an enemy of
    the Town to this seat: a claim a death or the seat's own role (dealt
    once) disproved, a claim of a role the Town must lynch, or the seat's
    own suspicious result. A Jailor seat executes on it
    (`execution_warranted`); a Town seat never spares such an accused
    (`judge_choice`)."""
    return any(r.kind in DISPROVING or (
        r.kind == "result" and r.result is not None and r.result.kind == "suspicious")
        for r in known)


def _clears(reason: Reason, known: Sequence[Reason]) -> bool:
    """Whether `reason` speaks for its player: a claim that neither a death
    nor the seat's own role (dealt once) has disproved and no other living
    player contests (`known`: every reason about them), the seat's result
    that they are not suspicious, or its Investigator result that holds the
    role they claimed (and nothing has disproved)."""
    disproved = any(r.kind in DISPROVING for r in known)
    if reason.kind == "claim":  # (seen in a lobby: "I trust Player 5 for now;
        # they claimed Sheriff." while Player 6 claimed Sheriff too)
        return not disproved and not any(r.kind == "contested" for r in known)
    result = reason.result
    if reason.kind != "result" or result is None:
        return False
    claim = next((r.role for r in known if r.kind == "claim"), None)
    return _fits(result, claim) and (result.kind == "innocent" or not disproved)


def vote_choice(memory: SeatMemory, vote: Choice) -> Choice:
    """The vote's targets held to what this seat said today: only the player
    it said it would vote for, else anyone but the players it stands by
    (`spared`: spoken up for today, found not suspicious, or a teammate)
    while others are left; a Town seat with no plan votes for a player its
    game shows to be an enemy (`exposed`) while one is on the ballot. A seat
    that speaks in moves votes as it spoke (seen in a lobby: "I am voting
    Player 4 today." and then a vote against Player 5; "Leave Player 4
    alone" and then a vote against Player 4)."""
    shown = _shown(memory)
    plan = announced_vote(memory)
    mine, claimed = own_results(memory), _claims(memory)  # read once for both
    spare = spared(memory, mine, claimed)
    if plan is not None and plan not in spare and shown(plan) in vote.options:
        return replace(vote, options=(shown(plan),))
    return _suspects(memory, vote, spare, reasons(memory, claimed, mine))


def _suspects(memory: SeatMemory, choice: Choice, spare: set[int],
              why: Mapping[int, Sequence[Reason]]) -> Choice:
    """`choice`'s players the game shows to be enemies (`exposed`) while one
    is among them, else all but those in `spare`, while others are left."""
    shown = _shown(memory)
    enemies = [o for o in (shown(s) for s in sorted(exposed(memory, why) - spare))
               if o in choice.options]
    if enemies:
        return replace(choice, options=tuple(enemies))
    return _leaving_out(choice, {shown(s) for s in spare})


def jail_choice(memory: SeatMemory, jail: Choice) -> Choice:
    """Tonight's prisoner held to what the Jailor seat knows: a player its
    game shows to be an enemy while one is living, else anyone but the
    players it stands by (`spared`): a Jailor jails a suspect to question,
    not a player it cleared."""
    mine, claimed = own_results(memory), _claims(memory)
    return _suspects(memory, jail, spared(memory, mine, claimed),
                     reasons(memory, claimed, mine))


def judge_choice(memory: SeatMemory, judge: Choice) -> Choice:
    """The verdicts held to what this seat knows and said, as its vote is
    (seen in a lobby: an Investigator seat voted innocent on a player who had
    claimed Framer). A Town seat votes guilty on an accused the game has
    shown to be an enemy of the Town (`exposed`): a confessed enemy role, a
    claim a death or the seat's own role disproves, its own suspicious
    result, or its Investigator result that does not hold their claim (seen
    in a lobby: an Investigator seat abstained on a Framer whose Jailor claim
    its result and the dead Jailor disproved). Any seat
    spares a player it spoke up for today or found not suspicious, and does
    not spare one it called to vote against today. A team seat never votes
    guilty on a teammate its View names."""
    accused = memory.trial.get("accused")
    if not isinstance(accused, int) or accused == memory.slot:
        return judge
    if accused in (memory.you.teammates or ()):
        return _leaving_out(judge, {"guilty"})  # nor lynches one (as `vote_choice`)
    mine, claimed = own_results(memory), _claims(memory)
    why = reasons(memory, claimed, mine).get(accused, [])
    if accused in exposed(memory, {accused: why}):
        return _leaving_out(judge, {"innocent", "abstain"})
    if accused in trusted(memory, mine, claimed):
        return _leaving_out(judge, {"guilty"})
    if accused in _said_today(memory, _VOTE_PLAN_HEADS):
        return _leaving_out(judge, {"innocent"})
    return judge


def _leaving_out(choice: Choice, names: set[str]) -> Choice:
    """`choice` without the options in `names`, unless that leaves none."""
    return replace(choice, options=tuple(o for o in choice.options if o not in names)
                   or choice.options)


CHECKS = ("suspicious", "innocent", "group")
"""Result kinds that tell what a player is (a Sheriff's, an Investigator's):
a second check of the same player tells nothing new."""


def night_choice(memory: SeatMemory, night: Choice) -> Choice:
    """The night ability's targets less the players the seat has already
    checked, while others are left (seen in a lobby: a Sheriff seat found
    Ann not suspicious on Night 2 and interrogated Ann again on Night 3)."""
    shown = _shown(memory)
    return _leaving_out(night, {shown(r.target) for r in own_results(memory)
                                if r.kind in CHECKS})


def _guilty_shot(spec: Role | None) -> bool:
    """Whether a role is Town and its night attack can kill the Town it
    serves, at a cost to itself (its `guilt` passive: the Vigilante; a
    Vampire Hunter's stake harms only Vampires)."""
    return (spec is not None and spec.faction is Faction.TOWN and spec.night is not None
            and "attack" in spec.night.labels and any(p.name == "guilt" for p in spec.passives))


def execution_warranted(memory: SeatMemory, prisoner: int) -> bool:
    """Whether a Jailor seat has a charge against its prisoner: a claim a
    death or the seat's own role (dealt once) disproved, a claim of a role
    the Town must lynch (in public, or in jail tonight), a suspicious result
    of the seat's own, or a refusal to claim in jail tonight."""
    if _enemy_shown(reasons(memory).get(prisoner, [])):
        return True
    vocab = _vocab(memory)
    if vocab is None:
        return False
    for e in memory.events:
        data = e.get("data") or {}
        if e["key"] != "chat.jail" or e["day"] != memory.day or data.get("author") != prisoner:
            continue
        for c in vocab.parse(str(data.get("text", ""))):
            if c.kind == cv.NO_CLAIM or (c.kind == cv.ROLE and c.role in ROLES
                                          and _enemy(ROLES[c.role].name)):
                return True
    return False


def offered(memory: SeatMemory) -> list[LegalAction]:
    """The legal actions a structured seat is offered (it may not abstain from
    its phase's action, so what it is offered it does): a Jailor's execution
    only with a charge against the prisoner (`execution_warranted`; seen in a
    lobby: a Jailor seat executed its prisoner, the Doctor, who had claimed
    Doctor in jail); any other Town killer's shot (the Vigilante's) only at
    the players its game shows to be enemies (`exposed`), and none while
    nobody is (seen in the demo: a Vigilante seat shot the Escort it had
    defended the day before, a Town player who had claimed Escort)."""
    prisoner = memory.you.prisoner
    spec = find_role(memory.you.role) if memory.you.role else None
    shot = spec.night.name if spec is not None and spec.night and _guilty_shot(spec) else None
    out = []
    for a in memory.legal:
        if a.kind == "night" and a.ability == "execute":
            if prisoner is not None and not execution_warranted(memory, prisoner):
                continue
        elif a.kind == "night" and a.ability == shot:
            enemies = exposed(memory)
            a = replace(a, targets=tuple(t for t in a.targets if t in enemies))
            if not a.targets:
                continue
        out.append(a)
    return out


# ---- parsing and rendering -------------------------------------------------------------

def parse_move(memory: SeatMemory, tag: str, text: str,
               table: MoveTable | None = None) -> Move:
    """The move a speech/will/death note action's text stands for. An
    expression fault (IllegalCommand) when it is not an allowed move (only
    an unguided backend can write one)."""
    table = table or move_table(memory)
    moves: dict[str, Move] = getattr(table, tag)
    move = moves.get(text.strip())
    if move is None:
        heads = sorted({h.split(" ", 1)[0] for _w, h, _o in table.groups}) if tag == "speak" \
            else sorted(moves)[:8]
        raise IllegalCommand(f"'{text.strip()[:60]}' is not a move you can make now; "
                             f"start with one of: {', '.join(heads)}.", "expression")
    return move


def team_night(memory: SeatMemory) -> bool:
    """Whether the seat's speech now goes to its own team: a night, alive and
    out of jail, with teammates (the Mafia's chat)."""
    return (memory.phase == "night" and memory.you.alive and bool(memory.you.teammates)
            and not memory.you.jailed)


TEAM_CHAT_KEYS = frozenset({"chat.mafia", "chat.team"})


def _named_by_team(memory: SeatMemory) -> set[int]:
    """The living players a teammate's line in the team's chat named tonight."""
    lines = [str(e["data"].get("text", "")) for e in memory.day_events(memory.day)
             if e["key"] in TEAM_CHAT_KEYS and e["data"].get("author") != memory.slot]
    return {p.slot for p in memory.living()
            if any(_mentions(line, memory.name(p.slot)) for line in lines)}


def _mentions(text: str, name: str) -> bool:
    """Whether `text` names the player called `name` (as a whole name:
    "Player 1" is not in "Player 12")."""
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def speak_move(memory: SeatMemory, parsed: Parsed, seed: int = 0) -> tuple[Parsed, Move]:
    """A parsed speech / will / death-note action whose text is a move ->
    the same action with the rendered sentence as its text, and the move.
    The wording is drawn from `seed` (the turn's), so a replayed turn says
    the same."""
    move = parse_move(memory, parsed.name, str(parsed.args.get("text", "")))
    again = isinstance(move, ClaimRole) and parsed.name == "speak" and claimed_before(memory, move)
    # a false claim in the team's night chat is the cover for tomorrow (seen
    # in a lobby: a Framer told its Godfather "I am the Investigator.")
    text = render(move, memory.names, random.Random(seed), again=again,
                  no_vote=memory.phase not in VOTE_PLAN_PHASES, cover=team_night(memory),
                  speaker=memory.slot)
    # a true claim comes with the results not yet said today, as a player
    # gives them (seen in a lobby: a Sheriff seat said "Again: I am the
    # Sheriff." on Day 3 and its Night 2 result only in its will)
    if isinstance(move, ClaimRole) and move.true and parsed.name == "speak":
        found = [r.sentence(memory.name) for r in unreported(memory)[-2:]]
        text = " ".join([text, *found])
    return Parsed(parsed.kind, parsed.name, {**parsed.args, "text": text}, parsed.thought), move


def claimed_before(memory: SeatMemory, claim: ClaimRole) -> bool:
    """Whether this seat made the same claim in public on an earlier day
    (seen in a lobby: "Time to claim. I am the Doctor." on Day 2 and again,
    word for word, on Day 3): a claim said again is worded as one."""
    return any(day < memory.day and role == claim.role
               for day, role in _claims(memory).get(memory.slot, ()))


def will_lines(results: Sequence[Result], name: Namer) -> list[str]:
    """A will's result lines, oldest first, as a player keeps them: a Spy's
    night in one sentence ("N2: The Mafia visited Player 1 and Player 10 last
    night."), and a result found again on a later night once, with its nights
    ("N1, N3: Player 5 is not suspicious."), so no sentence is said twice."""
    spied: dict[int, list[int]] = {}
    for r in results:
        if r.kind == "mafia_visited" and r.target not in spied.setdefault(r.night, []):
            spied[r.night].append(r.target)
    lines: list[tuple[list[int], str]] = []
    for r in results:
        if r.kind == "mafia_visited":
            if r.night not in spied:
                continue
            said = cv.say_mafia_visited(*(name(t) for t in spied.pop(r.night)))
        else:
            said = r.sentence(name)
        same = next((line for line in lines if line[1] == said), None)
        if same is None:
            lines.append(([r.night], said))
        elif r.night not in same[0]:
            same[0].append(r.night)
    return [", ".join(f"N{n}" for n in nights) + f": {said}" for nights, said in lines]


def render(move: Move, names: Mapping[int, str], rng: random.Random | None = None,
           again: bool = False, no_vote: bool = False, cover: bool = False,
           speaker: int | None = None) -> str:
    """The sentence a move says in the chat (or the will / death note text).
    Claims and results are the claim vocabulary's sentences; wordings around
    them come from `talk.py`, picked with `rng` (`again`: a claim made on an
    earlier day already, `claimed_before`; `no_vote`: said where there is no
    lynch vote to call for (Day 1, a trial, a night chat: seen, a jailed
    seat's "Vote Player 4!" to its Jailor and a demo seat's on Day 1), so an
    accusation is a suspicion; `cover`: said to the seat's team at night, so
    a false claim is the cover it will give tomorrow). Without one a claim or a
    result is the plain vocabulary sentence (the scripted bots add their own
    wording around it) and other moves take their first wording. `speaker`:
    the seat that says it, named "me" in a reason (`as_speaker`)."""
    def name(s: int | None) -> str:
        return names.get(s or 0, f"Player {s}")

    why_name = as_speaker(name, speaker)

    # moves that draw no wording first: the scripted bots render their wills
    # and claims on most turns, and a fresh RNG costs more than the text
    if isinstance(move, WillMove):
        results = will_lines(move.results, name)
        while results and len("\n".join([cv.say_role(move.role), *results])) > MAX_WILL:
            results.pop(0)  # the oldest results go first: a will holds 400 characters
        return "\n".join([cv.say_role(move.role), *results])
    if isinstance(move, Ask):
        return QUESTIONS[move.topic].format(name=name(move.target))
    if isinstance(move, DeathNoteMove):
        return move.text
    if rng is None:
        if isinstance(move, ClaimRole):
            return cv.say_role(move.role)
        if isinstance(move, Report):
            return move.result.sentence(name)
        rng = random.Random(0)  # the first wording

    if isinstance(move, ClaimRole):
        if cover and not move.true:
            return talk.cover_plan(rng, move.role)
        intro = talk.claim_again(rng) if again else talk.claim_intro(rng, False)
        return intro + cv.say_role(move.role)
    if isinstance(move, Report):
        return f"{talk.results_intro(rng)} {move.result.sentence(name)}"
    if isinstance(move, Accuse):
        if no_vote:
            return talk.suspect_aside(rng, name(move.target),
                                      move.reason.sentence(why_name) + ".")
        return talk.accuse(rng, name(move.target), move.reason.sentence(why_name) + ".")
    if isinstance(move, Defend):
        who, why = name(move.target), move.reason.sentence(why_name)
        return talk.pick(rng, tuple(w.format(who=who, why=why, Why=talk._cap(why))
                                    for w in DEFEND_WORDINGS))
    if isinstance(move, VotePlan):
        return talk.pick(rng, tuple(w.format(name=name(move.target))
                                    for w in VOTE_PLAN_WORDINGS))
    raise TypeError(f"not a move: {move!r}")


def action_lines(memory: SeatMemory, tag: str, protocol: str = "xml",
                 table: MoveTable | None = None) -> list[str]:
    """The prompt's lines for one action as moves: an example of each kind
    of move (a real option, rotated by seat) and what it may name."""
    import json

    table = table or move_table(memory)

    def call(text: str) -> str:
        if protocol == "json":
            return json.dumps({"action": tag, "args": {"text": text}}, ensure_ascii=False)
        return f"<{tag}>{text}</{tag}>"

    if tag in ("will", "death_note"):
        opts = rewrites(memory, table, tag)
        if not opts:
            return []
        pick = (memory.you.role if tag == "will" and memory.you.role in opts
                else opts[memory.slot % len(opts)])
        what = ("replace your last will with a role claim (your own role adds your results)"
                if tag == "will" else "replace your death note")
        return [f"{call(str(pick))} - {what}: " + ", ".join(opts)]
    out: list[str] = []
    done: set[str] = set()
    label = {"claim": "claim a role", "report": "tell one of your results",
            "lie": "tell a made-up result", "accuse": "call for a vote on a player, "
            "with a reason", "defend": "speak up for a player, with a reason",
            "vote_plan": "say how you will vote", "ask": "ask a player"}
    for kind, head, options in table.groups:
        if kind in ("accuse", "defend", "ask"):
            continue
        opt = options[memory.slot % len(options)]
        out.append(f"{call(head + opt)} - {label[kind]}: " + ", ".join(options))
    for kind in ("accuse", "defend", "ask"):
        rows = [(h, o) for k, h, o in table.groups if k == kind]
        if not rows or kind in done:
            continue
        done.add(kind)
        h, o = rows[memory.slot % len(rows)]
        out.append(f"{call(h + o[0])} - {label[kind]}:")
        out += [f"{h.strip()} " + " | ".join(opts) for h, opts in rows]
    return out

