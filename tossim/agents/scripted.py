"""Scripted bots: a heuristic baseline and a seat filler that needs no model.

`ScriptedBot(slot, seed)` decides only from its own observations (the `View`
the match driver hands it), only ever picks actions from `obs.legal`, and is
deterministic given its seed. It keeps a small memory: who claimed what in
public chat (see `claims.py` for the shared phrasing), reported investigation
results, deaths and revealed roles; from that it computes a suspicion score
per player and votes, judges and acts at night on it.

Town shares investigation results and claims when accused; Mafia and the
Serial Killer kill (claimed investigators first) and fake-claim Town roles
when accused; the Framer frames; the Executioner pushes its target; the Jester
acts suspicious; everyone keeps a last will with their role and results.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tossim.agents import bot_hints, talk
from tossim.agents import claims as cv
from tossim.agents.moves import ClaimRole, Move, Report, Result, WillMove, render
from tossim.engine.commands import (
    Chat,
    Command,
    DayAction,
    Judge,
    NightAction,
    Vote,
    Whisper,
    WriteWill,
)
from tossim.engine.legal import LegalAction
from tossim.engine.role_lists import RoleListError, SlotKind, parse_slot
from tossim.engine.roles import (
    FRAMER_GROUP,
    GROUP_OF,
    ROLES,
    Faction,
    Role,
    cover_claims,
    find_role,
    threat,
)
from tossim.engine.roles.town import SHERIFF_KEYS
from tossim.engine.view import SelfView, View

# The claim kinds, as module names: `_hear` compares each claim heard with them.
_ROLE, _NO_CLAIM, _BEG, _ACCUSE = cv.ROLE, cv.NO_CLAIM, cv.BEG, cv.ACCUSE
_SUSPICIOUS, _INNOCENT, _GROUP = cv.SUSPICIOUS, cv.INNOCENT, cv.GROUP
_VISITED, _MAFIA_VISITED = cv.VISITED, cv.MAFIA_VISITED
KEY_CLAIMS = ("sheriff", "investigator", "lookout")  # roles that share results
# Town roles whose visit to a player who then died is no sign of guilt (a Doctor's
# or Bodyguard's would have saved a player from an ordinary attack).
VISITING_TOWN = frozenset({"sheriff", "investigator", "escort", "lookout", "transporter",
                           "vigilante"})
REVIVE_ORDER = ("jailor", "sheriff", "investigator", "doctor", "lookout", "escort",
                "vigilante", "bodyguard", "transporter", "spy", "medium", "mayor", "veteran")
# Roles whose night ability finds something every night: one claimed with no
# result to tell by the claim round is likely a cover.
ALWAYS_FIND = ("sheriff", "investigator")
SILENT_INVESTIGATOR = 0.5
CLAIM_DAY = 3  # from this day on, everybody is expected to claim a role
GUILTY_AT = 0.6
CLEAR_CLAIM_AT = 0.75  # evidence it takes to lynch an uncontested Town claim
CONTESTED_AT = 0.88  # ... and a claim someone else makes too, or of a dead role
RIVAL_MARGIN = 0.2  # with a lynch needed today: how far below the top suspect still hangs
VOTE_AT = 0.7
# evidence thresholds shrink as the share of enemies among the living grows
URGENT_BASE, URGENT_SLOPE, URGENT_FLOOR = 1.5, 1.5, 0.5
# this few alive (at least 4, or 40% of the seats) with a killer among them: lynch today
MUST_LYNCH_ALIVE, MUST_LYNCH_SHARE = 4, 0.4
# how much less a Sheriff's "suspicious" weighs while the deal may hold a
# framer nobody has seen dead (its victims look guilty)
FRAME_DOUBT = 0.4
SHOOT_AT = 0.8
EXECUTE_AT = 0.7
TUNNEL_DAYS = 2  # calls on one player on this many days, with no result: tunnelling
TUNNEL_SUS = 0.3  # ... which makes the caller a little suspect
ACCUSE_CAP = 0.3  # the most that calls for a player's lynch alone add to suspicion
# what an uncontested claim adds, times the chance it is the cover of a
# killer a body proved alive; and times the chance it is any liar's cover,
# when it is made on the stand
AT_LARGE_DOUBT = 0.9
STAND_DOUBT = 0.6
CLEARED = 0.8  # an own "not suspicious" result, less the chance it hides a killer
NOT_TOWN_CLAIM = 0.4  # what a claim of a harmless role that is not Town adds
CORROBORATED = 0.3  # an Investigator's result that fits its target's claim speaks for them
LONE_RESULT = 0.7  # what a claimed Sheriff's "X is suspicious!" weighs
PLAUSIBLE = 0.7  # the average deal of a role at which its claim is believed in full
WAGON_AT = 0.1  # what it takes to join a wagon of two or more
CALLED_AT = 1.0  # trust in those calling for a vote on a player, to join them
PUT_UP_P = 0.4  # a Town player puts a quiet player up on a day nobody accuses
DAY1_TALK_P = 0.4  # how often a bot says hello on Day 1
VOTE_TALK_P = 0.35  # ... says why as it votes
VERDICT_TALK_P = 0.25  # ... comments on a defence as it judges
DRAW_WATCH_DAY = 6  # from here on a day without deaths brings a draw by time closer


_ENEMY: dict[str, tuple[Role, bool]] = {}  # role key -> (the role read, an enemy?)


def _enemy(role: str) -> bool:
    """A role the Town must lynch (the registry's threat fact, docs/rules.md#role-facts).
    Asked for every claim on every suspicion update, so the answer is kept
    per role (and read again if the registry's role under that key changes)."""
    r = ROLES.get(role)
    if r is None:
        return False
    hit = _ENEMY.get(role)
    if hit is None or hit[0] is not r:
        hit = _ENEMY[role] = (r, threat(r) >= 1.0)
    return hit[1]


def _frames(role: str) -> bool:
    """A role whose night ability frames (the registry's "frame" handler): a
    Sheriff's or an Investigator's result on its victim is false."""
    r = ROLES.get(role)
    return r is not None and r.night is not None and r.night.handler_key == "frame"


def _looks_innocent(role: str) -> bool:
    """A role a Sheriff finds not suspicious (the registry's Sheriff facts)."""
    r = ROLES[role]
    return not r.suspicious or r.detection_immune


def _pushes(role: str) -> bool:
    """A role that wins when the Town lynches someone else it names (the
    registry's Executioner win): it calls for that lynch day after day."""
    r = ROLES.get(role)
    return r is not None and r.win == "executioner"


@dataclass(frozen=True)
class _Grave:
    """What a bot reads off the graveyard and the bodies, kept until the next
    death: the killers proven alive, each role's players left on average,
    the doubt on a "not suspicious" and on a "suspicious" result, and how
    many players who push a lynch to win may be left."""

    key: tuple[int, int, int]
    at_large: frozenset[str]
    left: dict[str, float]
    green: float
    frame: float
    pushers: float
    # (role, proven only) -> (the cover table it was read with, the cover
    # doubt): every bot of a game that has seen the same graveyard shares
    # this object, so each doubt is worked out once, not once per bot
    doubts: dict[tuple[str, bool], tuple[object, float]] = field(
        default_factory=dict, compare=False)


# The graveyard as read by the bots of a game: the same deaths, bodies and
# living count under the same role list give the same _Grave, so the 15 bots
# of a game share one instead of each working it out after every death.
# Key: (id of the RoleOdds, the roles seen dead, the killers bodies showed,
# how many are alive); the RoleOdds is kept with the entry, so an id is only
# ever matched to the same object.
_GRAVES: dict[tuple[int, tuple[str, ...], frozenset[str], int], tuple[RoleOdds, _Grave]] = {}


def _grave_of(odds: RoleOdds, dead_role: dict[int, str], killers_seen: dict[str, int],
              n_alive: int) -> _Grave:
    """`ScriptedBot._grave`'s reading of the graveyard (shared, see _GRAVES)."""
    memo = (id(odds), tuple(sorted(dead_role.values())), frozenset(killers_seen), n_alive)
    hit = _GRAVES.get(memo)
    if hit is not None and hit[0] is odds:
        return hit[1]
    dead = Counter(dead_role.values())
    at_large = frozenset(k for k in killers_seen if k in ROLES and k not in dead)
    left = {k: max(0.0, n - dead.get(k, 0)) for k, n in odds.expected.items()}
    hidden = sum(max(n, 1.0) if k in at_large else n for k, n in left.items()
                 if _enemy(k) and _looks_innocent(k))
    framers = sum(n for k, n in left.items() if _frames(k))
    g = _Grave(
        (len(dead_role), len(killers_seen), n_alive), at_large, left,
        green=min(1.0, hidden / max(1, n_alive - 1)),
        frame=FRAME_DOUBT * min(1.0, framers),
        pushers=sum(n for k, n in left.items() if _pushes(k)))
    if len(_GRAVES) > 4096:
        _GRAVES.clear()
    _GRAVES[memo] = (odds, g)
    return g


# Town role -> the liars hiding behind it, per role list (`_cover_table`):
# (id of the RoleOdds, the roles it may deal) -> (that RoleOdds, the table).
_COVERS: dict[tuple[int, frozenset[str]], tuple[RoleOdds, dict[str, list[tuple[str, float]]]]] = {}


@dataclass(frozen=True)
class RoleOdds:
    """What a game's role list says about who may be who, read through the
    engine's own slot parser (so "Town Investigative", "Any" and keys count
    as the deal does): per role, how many slots can deal it and how many of
    it the deal gives on average (each slot's candidates equally likely);
    the roles a narrow slot (a role or an alignment category) can deal (a
    claim only a Random or Any slot explains is a little less likely); and
    how many enemies of the Town the deal gives on average."""

    slots: dict[str, int]
    expected: dict[str, float]
    narrow: frozenset[str]
    enemies: float

    @staticmethod
    def of(role_list: list[str], custom: bool) -> RoleOdds:
        slots: dict[str, int] = {}
        expected: dict[str, float] = {}
        narrow: set[str] = set()
        for text in role_list:
            try:
                slot = parse_slot(text)
            except RoleListError:
                continue
            cands = slot.candidates(custom=custom, any_custom_only=custom)
            for r in cands:
                slots[r.key] = slots.get(r.key, 0) + 1
                expected[r.key] = expected.get(r.key, 0.0) + 1.0 / len(cands)
                if slot.kind in (SlotKind.ROLE, SlotKind.CATEGORY):
                    narrow.add(r.key)
        if not slots:  # no list: every role as likely as any other
            slots = {k: 15 for k in ROLES}
            expected = {k: 1.0 for k in ROLES}
        enemies = sum(n for k, n in expected.items() if _enemy(k))
        return RoleOdds(slots, expected, frozenset(narrow or slots), enemies)


_ODDS: dict[tuple[tuple[str, ...], bool], RoleOdds] = {}


def _odds(role_list: tuple[str, ...], custom: bool) -> RoleOdds:
    """`RoleOdds.of`, read once per list (every bot of a game reads the same
    list; nothing changes a RoleOdds once made)."""
    hit = _ODDS.get((role_list, custom))
    if hit is None:
        if len(_ODDS) > 256:
            _ODDS.clear()
        hit = _ODDS[(role_list, custom)] = RoleOdds.of(list(role_list), custom)
    return hit


NO_ODDS = RoleOdds({k: 15 for k in ROLES}, {k: 1.0 for k in ROLES}, frozenset(ROLES), 4.0)


def _group_evil(roles: tuple[str, ...], odds: RoleOdds,
                at_large: frozenset[str] = frozenset()) -> float:
    """How bad an Investigator's result is: the threat of the roles in it,
    each weighed by how many of it this game's list deals on average, or at
    least one of a killer a body proved alive (`at_large`; a "don't lynch"
    role counts as harmless here)."""
    weights = [(r, max(odds.expected.get(r.key, 0.0), 1.0 if r.key in at_large else 0.0))
               for n in roles if (r := find_role(n)) is not None]
    total = sum(w for _, w in weights)
    if total <= 0.0:
        return 0.0
    return sum(max(0.0, threat(r)) * w for r, w in weights) / total


def _legal(obs: View) -> dict[str, LegalAction]:
    return {a.kind: a for a in obs.legal}


class ScriptedBot:
    """A heuristic player. `decide(obs)` -> commands; see the module docstring."""

    def __init__(self, slot: int, seed: int) -> None:
        self.slot = slot
        self.rng = random.Random(seed * 1000 + slot)
        self.ready = False
        self.names: tuple[str, ...] = ()
        self.vocab: cv.Vocabulary | None = None
        self.possible: frozenset[str] = frozenset(ROLES)
        self.odds = NO_ODDS
        self.role = ""
        self.mafia = False
        self.team: frozenset[int] = frozenset()
        self.exe_target: int | None = None
        self.day = 1
        self.ev_day = 1  # the day of the event being handled
        self.alive: set[int] = set()
        self.dead_role: dict[int, str] = {}  # slot -> role key shown at death
        self.claims: dict[int, str] = {}  # slot -> claimed role key (public)
        self.revealed: set[int] = set()  # revealed Mayors
        # (source, kind, target, weight, extra): what others (and wills) reported
        self.reports: list[tuple[int, str, int, float, Any]] = []
        self.heard: set[tuple[int, str, int, int | None]] = set()
        self.own: dict[int, float] = {}  # this bot's own evidence
        self.own_groups: dict[int, tuple[str, ...]] = {}
        self.credit: dict[int, float] = {}
        self.group_cache: dict[tuple[tuple[str, ...], frozenset[str]], float] = {}
        self._covers: dict[str, list[tuple[str, float]]] | None = None
        self._grave_cache: _Grave | None = None
        self.checked: set[int] = set()
        self.results: list[Result] = []  # own night results (the will's lines)
        self.unshared: list[Result] = []  # results not yet said in public
        self.will = ""
        self.claimed = ""  # the role this bot has claimed in public (maybe fake)
        self.cover = ""  # an evil role's made-up Town role
        self.team_covers: set[str] = set()  # covers teammates said they will claim
        self.accused_me = False
        self.votes: dict[int, int] = {}
        self.my_vote: int | None = None
        self.accused: int | None = None
        self.verdicts: dict[int, str] = {}
        self.pardoned: set[int] = set()
        self.night_deaths: dict[int, set[int]] = {}  # night -> deaths found next morning
        self.burned: set[int] = set()  # players an Arsonist's fire killed
        self.killers_seen: dict[str, int] = {}  # enemy killer kind -> last day a body showed it
        self.last_death_day = 0  # the day this bot last saw someone die (draws by time)
        self.draw_warned = 0  # the day the game warned of a draw by time tomorrow
        self.team_target: int | None = None
        self.night_kills: set[int] = set()  # kill targets chosen last night (own or team)
        self.failed: dict[int, int] = {}  # kill targets that survived, and how often
        self.jail_claims: dict[int, str] = {}
        self.jailed: dict[int, int] = {}  # the Jailor's prisoners so far
        self.promised: set[int] = set()  # players a protector whispered to
        self.jail_choice: int | None = None
        self.fake_sheriff_done = False
        self.said_dead = False
        self.claim_round = False  # the town has been asked to claim
        self.changed: dict[int, tuple[str, str]] = {}  # slot -> (first claim, new claim)
        self.refused: set[int] = set()  # said they will not claim
        self.gave_results: set[int] = set()  # players who have said a result of their own
        self.pushed: dict[tuple[int, int], set[int]] = {}  # (caller, target) -> days called
        self.begged: dict[int, int] = {}  # who dared the Town to lynch them, and when
        self.lines_heard: set[str] = set()  # public lines so far (never said twice)
        # slot -> what their verdicts showed: (kind, lynched slot, role key)
        self.marks: dict[int, list[tuple[str, int, str]]] = {}
        self.news: list[tuple[str, int, str]] = []  # (dawn|lynch, slot, role) to react to
        self.spoke_day = 0  # the last day this bot accused someone in public
        self.accused_today: set[int] = set()
        # today's calls for a vote in public: target -> the players who made them
        # (a "Vote X!" or a claimed Sheriff's "X is suspicious!"), and the day
        self.calls: dict[int, set[int]] = {}
        self.calls_day = 0
        self.talked: dict[int, int] = {}  # slot -> public messages so far
        self.checked_sus: set[int] = set()  # own Sheriff results that came back guilty
        self.cleared: set[int] = set()  # own Sheriff results that came back not suspicious
        self.known: dict[int, str] = {}  # slot -> role a Consigliere's check showed
        self.outed: set[int] = set()  # known killers this bot has named in public
        self.acted: list[tuple[int, int]] = []  # (night, target) of own night actions
        self._said: dict[int, list[cv.Claim]] = {}  # Lookout sentences, by speaker
        self.good_vote: int | None = None  # an evil player this bot voted guilty on
        self.vote_log: dict[int, tuple[int, int]] = {}  # voter -> (day, target) last vote
        self._sus: dict[int, float] | None = None
        self._stats: tuple[set[str], dict[str, int]] | None = None
        self._name_map: dict[int, str] | None = None  # slot -> name, for `render`
        self._will_key: tuple[str, int] | None = None  # what the last will was made of
        # the roster object last read and the living read off it (`decide`)
        self._roster_seen: object = None
        self._alive_seen: set[int] | None = None

    # ---- observing -----------------------------------------------------------------
    def decide(self, obs: View) -> list[Command]:
        you = obs.you
        if you is None:
            return []
        if not self.ready:
            self._setup(obs, you)
        if you.role_key != self.role:
            self.role = you.role_key
            self._sus = self._stats = None
        self.day = obs.day
        roster = obs.roster
        # a game hands out the same roster object while nobody has died or
        # come back (view._roster), and then the living are as last time
        if roster is self._roster_seen and self.alive is self._alive_seen:
            alive = self.alive
        else:
            alive = {e.slot for e in roster if e.alive}
        if alive != self.alive:
            self._sus = self._stats = None
            for s in alive - self.alive:  # revived
                self.dead_role.pop(s, None)
            for s in sorted(self.alive - alive):
                role = find_role(roster[s - 1].role or "")
                self._on_death(s, role.key if role else "")
            if self.alive - alive:
                self.last_death_day = obs.day
            self.alive = alive
        self._roster_seen, self._alive_seen = roster, self.alive
        handlers = _HANDLERS
        for ev in obs.events:
            entry = handlers.get(ev["key"])
            if entry is not None:
                self.ev_day = ev["day"]
                entry[0](self, ev["data"])
                if entry[1]:
                    self._sus = self._stats = None
        if not you.alive:
            return self._dead(obs)
        phase = _PHASES.get(obs.phase)
        return phase(self, obs) if phase is not None else []

    def _setup(self, obs: View, you: SelfView) -> None:
        self.ready = True
        self.names = tuple(e.name for e in obs.roster)
        self.vocab = cv.vocabulary(self.names)
        self.alive = {e.slot for e in obs.roster if e.alive}
        for e in obs.roster:  # a seat that first looks late: the graveyard so far
            if not e.alive:
                role = find_role(e.role or "")
                self.dead_role[e.slot] = role.key if role else ""
        self.mafia = you.faction == Faction.MAFIA.value
        self.team = frozenset(you.teammates or ())
        self.exe_target = you.target
        self.role = you.role_key

    def _on_death(self, slot: int, role: str) -> None:
        self.dead_role[slot] = role
        evil = _enemy(role)
        for src, kind, target, _w, _x in self.reports:
            if target != slot or src == slot:
                continue
            c = self.credit.get(src, 1.0)
            if kind in (cv.SUSPICIOUS, cv.ACCUSE, cv.VISITED):
                self.credit[src] = min(2.0, c * 1.5) if evil else c * 0.5
            elif kind == cv.INNOCENT and evil and role != "godfather":
                self.credit[src] = c * 0.2

    def _name(self, slot: int) -> str:
        return self.names[slot - 1]

    def _slot(self, name: Any) -> int | None:
        assert self.vocab is not None
        return self.vocab.slot_of.get(name) if isinstance(name, str) else None

    def _hear(self, src: int, text: str, day: int) -> bool:
        """Public chat or a will: record every claim `src` makes; whether there
        was any (most lines claim nothing and change no suspicion)."""
        assert self.vocab is not None
        if src == self.slot:
            # the seat's own claim holds: a stand-in keeps the one its absent
            # player made (seen in a lobby: a stand-in claimed another role)
            if not self.claimed:
                self.claimed = next((c.role for c in self.vocab.parse(text)
                                     if c.kind == _ROLE), "")
            return False
        said = self.vocab.parse(text)
        for c in said:
            kind = c.kind
            if kind == _ROLE:
                before = self.claims.get(src)
                if before is not None and before != c.role and src not in self.dead_role:
                    self.own[src] = self.own.get(src, 0.0) + 1.0  # changed their story
                    self.changed[src] = (before, c.role)
                self.claims[src] = c.role
                continue
            if kind == _NO_CLAIM:
                self.own[src] = self.own.get(src, 0.0) + 0.3
                self.refused.add(src)
                continue
            if kind == _BEG:
                self.begged[src] = day
                continue
            if c.target is None or kind == _MAFIA_VISITED:
                continue
            if kind == _ACCUSE or (kind == _SUSPICIOUS and self.claims.get(src) == "sheriff"):
                self._call(src, c.target, day)
            if kind == _ACCUSE:
                self.pushed.setdefault((src, c.target), set()).add(day)
            if kind == _VISITED:
                self._said.setdefault(src, []).append(c)
            w = 0.0
            extra: Any = None
            if kind == _SUSPICIOUS:
                w = LONE_RESULT  # one living player's word, until a flip or another result backs it
            elif kind == _INNOCENT:
                w = -0.7
            elif kind == _ACCUSE:
                w = 0.15  # the reason given, if any, is evidence each bot weighs itself
            elif kind == _GROUP:
                extra = c.roles
            elif kind == _VISITED:
                died = c.target in self.night_deaths.get(day - 1, ())
                w, extra = (1.0 if died else 0.1), c.target  # the house visited
            target = c.visitor if kind == _VISITED else c.target
            assert target is not None
            sig = (src, kind, target, c.target if kind == _VISITED else None)
            if sig in self.heard:
                continue  # saying it again adds nothing
            self.heard.add(sig)
            self.reports.append((src, kind, target, w, extra))
            if kind in (_SUSPICIOUS, _INNOCENT, _GROUP):
                self.gave_results.add(src)
            if target == self.slot and kind != _INNOCENT:
                self.accused_me = True
        return bool(said)

    def tunnels(self, src: int, target: int) -> bool:
        """`src` has called for `target`'s lynch on several days with no
        result of their own against them: what an Executioner does, so the
        calls alone move nobody (docs/rules.md, fairness figures)."""
        days = self.pushed.get((src, target))
        if days is None or len(days) < TUNNEL_DAYS or src == self.slot \
                or self._grave().pushers <= 0.0:
            return False  # (no role of the list wins by a lynch it pushes)
        return not any(r[0] == src and r[2] == target and r[1] != cv.ACCUSE
                       for r in self.reports)

    def _call(self, src: int, target: int, day: int) -> None:
        """Someone called for a vote on `target` today (in public)."""
        if day != self.calls_day:
            self.calls, self.calls_day = {}, day
        self.calls.setdefault(target, set()).add(src)

    # ---- judging people ------------------------------------------------------------
    def trust(self, src: int, grave: _Grave | None = None) -> float:
        """How far `src`'s word counts (0: not at all). `grave`: `_grave()`,
        when the caller has read it already (`sus` asks for every source)."""
        if src == self.slot:
            return 1.0
        if self.mafia and src in self.team:
            return 0.0
        claim = self.claims.get(src)
        if src in self.dead_role:
            dead = self.dead_role[src]
            if _enemy(dead):
                return 0.0
            return 1.0 if claim is None or claim == dead else 0.0
        if src in self.revealed:
            return 1.0
        if self.own.get(src, 0.0) >= 1.5:
            return 0.0
        base = 0.75
        if claim is not None:
            dead_roles, claimants = self._claim_stats()
            if claim in dead_roles:
                base = 0.15
            elif claimants.get(claim, 0) > 1:
                base = 0.4
            # a role this list seldom deals is more often a cover than the truth
            base *= min(1.0, self.odds.expected.get(claim, 0.0) / PLAUSIBLE)
            base *= 1.0 - self._doubt(claim, False, grave)
        return base * self.credit.get(src, 1.0)

    def _once(self, role: str) -> bool:
        """Whether this game has at most one `role`, so two claims of it
        cannot both be true: a unique role, or one only one slot of the list
        deals (a 7-player Classic list has one Medium: seen in a lobby, the
        Framer claimed Medium there; the model seats' `moves.dealt_once` is
        the same rule)."""
        return ROLES[role].unique or self.odds.slots.get(role, 2) <= 1

    def _died_out(self, claim: str) -> bool:
        """Whether a death has disproved a claim of `claim`: the game's only
        one of that role has died."""
        return self._once(claim) and claim in self._claim_stats()[0]

    def _claim_stats(self) -> tuple[set[str], dict[str, int]]:
        """Roles seen at death, and how many living players claim each role."""
        if self._stats is None:
            claimants: dict[str, int] = {}
            for p, c in self.claims.items():
                if p in self.alive and p not in self.revealed:
                    claimants[c] = claimants.get(c, 0) + 1
            self._stats = (set(self.dead_role.values()), claimants)
        return self._stats

    def group_weight(self, roles: tuple[str, ...], claim: str | None) -> float:
        at_large = self._grave().at_large
        evil = self.group_cache.get((roles, at_large))
        if evil is None:
            evil = self.group_cache[(roles, at_large)] = _group_evil(roles, self.odds, at_large)
        if claim is not None:
            if ROLES[claim].name in roles:
                # an evil role hides behind a Town role of its own group, so
                # a fitting claim clears only as far as the group is Town
                return evil - 0.2
            # caught lying; but a Jester lies on purpose to get lynched, and a
            # player an Arsonist doused shows the Arsonist's group (rules A4)
            if "Jester" in roles:
                w = 0.7
            else:
                w = 0.7 if "Arsonist" in roles and "arsonist" in self.possible else 1.5
        else:
            w = 1.2 * evil
        if roles == FRAMER_GROUP:  # a framed player shows the Framer's group
            w *= 1.0 - self._frame_doubt()
        return w

    def sus(self) -> dict[int, float]:
        """Suspicion per living player (higher: more likely evil)."""
        if self._sus is not None:
            return self._sus
        self._stats = None
        own = self.own
        s = {p: own.get(p, 0.0) for p in self.alive}
        trusts: dict[int, float] = {}
        claim_of = self.claims.get
        dead_role = self.dead_role
        group, suspicious, innocent, visited = cv.GROUP, cv.SUSPICIOUS, cv.INNOCENT, cv.VISITED
        accuse = cv.ACCUSE
        called: dict[int, float] = {}  # target -> suspicion from calls so far
        grave = self._grave()  # (nothing below changes what it is read from)
        framed = 1.0 - grave.frame  # _frame_doubt
        green = 1.0 - grave.green  # _green_doubt
        for p in self.cleared:
            if p in s:
                s[p] -= CLEARED * green
        for src, kind, target, w, extra in self.reports:  # in order: the sums stay exact
            if target not in s:
                continue
            t = trusts.get(src)
            if t is None:
                t = trusts[src] = self.trust(src, grave)
            if t <= 0.0:
                continue
            if kind == group:
                tc = claim_of(target)
                w = self.group_weight(extra, tc)
                if src in s and tc is not None and tc in ROLES and ROLES[tc].name in extra \
                        and w < 0.0:
                    s[src] -= CORROBORATED  # their result fits what the player claimed
                if claim_of(src) != "investigator" and src not in dead_role:
                    w *= 0.5
            elif kind in (suspicious, innocent) and src in dead_role:
                w = 1.0 if kind == suspicious else w  # a will: the flip backs it
                if kind == suspicious:
                    w *= framed
            elif kind in (suspicious, innocent) and claim_of(src) != "sheriff":
                w *= 0.4 * (framed if kind == suspicious else green)
            elif kind == suspicious:
                w *= framed
            elif kind == innocent:
                w *= green
            elif kind == visited:
                if extra in self.burned:
                    w = 1.0  # the house burned later: a douse leaves no other trace
                if claim_of(target) in VISITING_TOWN:
                    w *= 0.3
            elif kind == accuse:
                if self.tunnels(src, target):
                    if src in s:
                        s[src] += TUNNEL_SUS / max(1, len(self.pushed[(src, target)]) - 1)
                    continue
                # a chorus of calls is not evidence: their sum is capped
                room = ACCUSE_CAP - called.get(target, 0.0)
                w = min(t * w, room) / t if room > 0 else 0.0
                called[target] = called.get(target, 0.0) + t * w
            s[target] += t * w
        for p, roles in self.own_groups.items():
            if p in s:
                s[p] += self.group_weight(roles, self.claims.get(p))
        dead_roles, claimants = self._claim_stats()
        town_me = ROLES[self.role].faction is Faction.TOWN
        revealed, my_role, me = self.revealed, self.role, self.slot
        for p, c in self.claims.items():
            if p not in s or p in revealed:
                continue
            if _enemy(c):
                s[p] += 3.0
            elif ROLES[c].faction is not Faction.TOWN:
                # not Town by their own word: any evil may say as much, and
                # their lynch costs the Town nobody (a Jester's claim excepted)
                r = threat(ROLES[c])
                s[p] += NOT_TOWN_CLAIM + r if r >= 0.0 else 0.0
            elif c in dead_roles:
                # a second player of a dead role: unlikely when few slots can deal it
                s[p] += 1.5 if self._once(c) else 1.6 / max(2, self.odds.slots.get(c, 2))
            else:
                if claimants[c] > 1:  # two living players claim the same role
                    s[p] += 0.7 / max(2, self.odds.slots.get(c, 2))  # unless the list deals many
                # a killer a body proved alive hides behind a role like this
                s[p] += AT_LARGE_DOUBT * self._doubt(c, True, grave)
            if town_me and c == my_role and p != me:
                # I know who has my role; a role the list may deal twice is
                # still more often a cover than a second one
                s[p] += 2.0 if ROLES[c].unique else 0.6
        if self.claim_round:
            for p in s:
                if p not in self.claims:
                    s[p] += 0.25
                elif self.claims[p] in ALWAYS_FIND and p not in self.gave_results:
                    s[p] += SILENT_INVESTIGATOR  # an investigator with nothing to show
        for p in self.revealed:
            if p in s:
                s[p] -= 3.0
        if self.mafia:
            for p in self.team:
                if p in s:
                    s[p] = -5.0
        s.pop(self.slot, None)
        self._sus = s
        return s

    def _best(self, candidates: tuple[int, ...] | list[int],
              score: Callable[[int], float]) -> tuple[int | None, float]:
        best: list[int] = []
        top = float("-inf")
        for c in candidates:
            v = score(c)
            if v > top + 1e-9:
                best, top = [c], v
            elif v > top - 1e-9:
                best.append(c)
        if not best:
            return None, top
        return (best[0] if len(best) == 1 else self.rng.choice(best)), top

    def _top_suspect(self, candidates: tuple[int, ...] | list[int]) -> tuple[int | None, float]:
        s = self.sus()
        return self._best([c for c in candidates if c in s], lambda c: s[c])

    # ---- talking -------------------------------------------------------------------
    def _my_claim(self) -> str:
        """The role this bot says it has: the truth for Town, a cover for evil roles."""
        if self.claimed:
            return self.claimed
        role = self.role
        if self._truthful():
            return role  # the Town, and a neutral that harms nobody, tell the truth
        if not self.cover:  # chosen once, so the story never changes
            # a role of its own Investigator group, so a result cannot catch
            # the lie; else any Town role this game may have that nobody took
            taken = (set(self.claims.values()) | set(self.dead_role.values())
                     | self.team_covers)
            options = [r for r in cover_claims(ROLES[role])
                       if r not in taken and r in self.possible]
            if options:
                self.cover = options[0]
            else:
                common = [r.key for r in ROLES.values() if r.faction is Faction.TOWN
                          and not r.unique and not r.custom_only and r.key in self.possible]
                options = [r for r in common if r not in taken] or common
                self.cover = self.rng.choice(options or ["doctor"])
        return self.cover

    def _truthful(self) -> bool:
        """Whether this bot tells its real role: the Town, and a neutral that
        harms nobody; every other role lies (`_my_claim`)."""
        r = ROLES[self.role]
        return r.faction is Faction.TOWN or threat(r) == 0.0

    def _claim_text(self) -> str:
        accused = self.accused_me
        if self.claimed and self.claimed == self.role and self.unshared and not accused:
            # claimed already: only the new results
            text = talk.results_update(self.rng, ROLES[self.role].name) + " " + " ".join(
                self._move_text(Report(r)) for r in self.unshared)
            self.unshared = []
            return text
        self.claimed = self._my_claim()
        self.accused_me = False
        claim = self._move_text(ClaimRole(ROLES[self.claimed].name))
        text = talk.claim_intro(self.rng, accused) + claim
        if self.unshared and self.claimed == self.role:
            text += f" {talk.results_intro(self.rng)} " + " ".join(
                self._move_text(Report(r)) for r in self.unshared)
            self.unshared = []
        return text

    def _move_text(self, move: Move) -> str:
        """A claim, result or will through the model seats' renderer (moves.py),
        in its plain vocabulary form (no RNG: the bot draws its own wording)."""
        if self._name_map is None:
            self._name_map = dict(enumerate(self.names, start=1))
        return render(move, self._name_map)

    def _will_cmd(self) -> list[Command]:
        # the will is the role and the last results, and results are only ever
        # added: the same role and count write the same will again. A role
        # that lies writes the role it has claimed in public, with no results,
        # and nothing before it claims (seen in a lobby: a Framer that had
        # claimed Investigator all game left "I am the Framer.")
        truthful = self._truthful()
        if not truthful and not self.claimed:
            return []
        key = (self.role, len(self.results)) if truthful else (self.claimed, -1)
        if key == self._will_key:
            return []
        self._will_key = key
        if truthful:
            move = WillMove(ROLES[self.role].name, True, tuple(self.results[-8:]))
        else:
            move = WillMove(ROLES[self.claimed].name, self.claimed == self.role, ())
        text = self._move_text(move)[:400]
        if text == self.will:
            return []
        self.will = text
        return [WriteWill(self.slot, text)]

    # ---- phases --------------------------------------------------------------------
    def _day1(self, obs: View) -> list[Command]:
        out = self._will_cmd()
        chat = _legal(obs).get("chat")
        if chat is not None and "public" in chat.options and self.rng.random() < DAY1_TALK_P:
            others = sorted(self.alive - {self.slot})
            if others:
                other = self._name(self.rng.choice(others))
                said = {self._shape(t) for t in self.lines_heard}
                fresh = [t for t in talk.day1_openers(self._name(self.slot), other)
                         if self._shape(t) not in said]
                if fresh:  # the same words with another name read like a script
                    out += self._say(self.rng.choice(fresh))
        out += self._jail(obs)
        return out

    def _shape(self, text: str) -> str:
        """A line with the players' names taken out (two lines of one shape
        differ only in whom they name)."""
        for name in self.names:
            text = text.replace(name, "#")
        return text

    def _say(self, text: str, channel: str = "public") -> list[Command]:
        """A public line, unless someone already said exactly that in this
        game (a repeated line reads like a script, not a player)."""
        text = text[:500]
        if not text or text in self.lines_heard:
            return []
        self.lines_heard.add(text)
        return [Chat(self.slot, text, channel)]

    def _discussion(self, obs: View) -> list[Command]:
        acts = _legal(obs)
        out = self._will_cmd()
        chat = acts.get("chat")
        if chat is not None and "public" in chat.options:
            parts = [self._react(), self._speech()]
            if not parts[1]:
                parts.append(self._accusation())
            said = self._say(" ".join(p for p in parts if p))
            if not said and parts[0]:  # the reaction was someone else's words
                said = self._say(" ".join(p for p in parts[1:] if p))
            out += said
        if "seance" in acts:
            out += self._seance(acts["seance"])
        whisper = acts.get("whisper")
        if whisper is not None and self.role in ("doctor", "bodyguard"):
            out += self._promise(whisper)
        out += self._jail(obs)
        return out

    def _promise(self, whisper: LegalAction) -> list[Command]:
        """A protector quietly tells a claimed investigator it will be protected."""
        key = [t for t in whisper.targets if self.claims.get(t) in KEY_CLAIMS
               and t not in self.promised and self.trust(t) >= 0.5]
        if not key:
            return []
        t = key[0]
        self.promised.add(t)
        return [Whisper(self.slot, t, "I will protect you tonight.")]

    # ---- talk: reactions, accusations with reasons, defences ---------------------------
    def _react(self) -> str:
        """What this bot makes of the night's deaths, wills and yesterday's lynch
        (said at most once, by some of the players)."""
        news, self.news = self.news, []
        if not news or self.rng.random() >= 0.35:
            return ""
        kind, slot, role = news[self.rng.randrange(len(news))]
        name, rname = self._name(slot), ROLES[role].name if role in ROLES else "unknown"
        # in public everyone speaks as the Town would, the Mafia included
        evil = _enemy(role)
        if kind == "lynch":
            return talk.lynch_reaction(self.rng, name, rname, evil)
        side = "enemy" if evil else "town" if role in ROLES and \
            ROLES[role].faction is Faction.TOWN else "neither"
        text = talk.death_reaction(self.rng, name, rname, side)
        named = next((t for src, k, t, _w, _x in self.reports if src == slot and t in self.alive
                      and t != self.slot and k in (cv.SUSPICIOUS, cv.GROUP, cv.VISITED)), None)
        if named is not None:
            text += " " + talk.will_names(self.rng, name, self._name(named))
        elif any(src == slot for src, *_ in self.reports) and self.rng.random() < 0.6:
            text += " " + talk.will_reaction(self.rng, name)
        return text

    def _why(self, t: int) -> str | None:
        """A reason to suspect `t` that points at something this bot saw (a
        result, a claim, a vote, a will, a death), or None."""
        rng = self.rng
        claim = self.claims.get(t)
        if t in self.checked_sus:
            return talk.pick(rng, talk.reason_own_check())
        roles = self.own_groups.get(t)
        if roles is not None and self.group_weight(roles, claim) >= 0.6:
            return talk.pick(rng, talk.reason_group(roles))
        if t in self.changed:
            a, b = self.changed[t]
            return talk.pick(rng, talk.reason_changed(ROLES[a].name, ROLES[b].name))
        if claim is not None and t not in self.revealed:
            cname = ROLES[claim].name
            if self._died_out(claim):
                return talk.pick(rng, talk.reason_claimed_dead_role(cname))
            if claim == self.role and ROLES[self.role].faction is Faction.TOWN \
                    and self._once(claim):
                return talk.pick(rng, talk.reason_my_role(cname))
            other = next((p for p, c in sorted(self.claims.items()) if c == claim and p != t
                          and p in self.alive and p != self.slot), None)
            if other is not None and self._once(claim):
                return talk.pick(rng, talk.reason_counterclaim(cname, self._name(other)))
        for kind, dead, role in self.marks.get(t, ()):
            rname = ROLES[role].name if role in ROLES else role
            if kind == "guilty_on_town":
                return talk.pick(rng, talk.reason_voted_town(self._name(dead), rname))
            return talk.pick(rng, talk.reason_defended_evil(self._name(dead), rname))
        for src, kind, target, _w, extra in self.reports:
            if target != t or kind not in (cv.SUSPICIOUS, cv.VISITED, cv.GROUP) \
                    or self.trust(src) <= 0.2:
                continue
            if kind == cv.GROUP and self.group_weight(extra, claim) < 0.6:
                continue
            if src in self.dead_role:
                return talk.pick(rng, talk.reason_will(self._name(src)))
            if kind == cv.VISITED:
                victim = next((c.target for c in self._visits(src) if c.visitor == t), None)
                if victim is not None and victim in self.dead_role:
                    return talk.pick(rng, talk.reason_visit(self._name(src), self._name(victim)))
                continue
            return talk.pick(rng, talk.reason_reported(self._name(src)))
        if t in self.refused:
            return talk.pick(rng, talk.reason_refused())
        if self.claim_round and claim is None:
            return talk.pick(rng, talk.reason_no_claim())
        voted = self.vote_log.get(t)
        if voted is not None and voted[1] != self.slot and voted[1] not in self.team \
                and (t, cv.ACCUSE, voted[1], None) not in self.heard:
            return talk.pick(rng, talk.reason_wagon(self._name(voted[1])))
        return None

    def _visits(self, src: int) -> list[cv.Claim]:
        """The Lookout sentences `src` said (visitor and house)."""
        return [c for c in self._said.get(src, ()) if c.kind == cv.VISITED]

    def _push_target(self) -> str:
        """The Executioner pushes its target, on whatever grounds it can find."""
        assert self.exe_target is not None
        t = self.exe_target
        self.spoke_day = self.day
        why = self._why(t)
        if why is None:
            claim = self.claims.get(t)
            why = talk.pick(self.rng, talk.reason_doubt_claim(ROLES[claim].name) if claim
                            else talk.reason_no_claim())
        return talk.accuse(self.rng, self._name(t), why)

    def _accusation(self) -> str:
        """Call for a vote on the player this bot suspects most, with the reason;
        the Mafia and the Serial Killer accuse Town players on real grounds."""
        if self.spoke_day == self.day or self.day < 2:
            return ""
        s = self.sus()
        role = self.role
        if role == "jester":
            return ""
        if role == "executioner" and self.exe_target in self.alive:
            t = self.exe_target
            return self._push_target()
        evil = self.mafia or role == "serial_killer"
        mine = self.team | {self.slot}
        if evil:
            if self.rng.random() >= 0.45:
                return ""
            threat = self._sheriff_threat() if self.mafia else None
            cands = [threat] if threat is not None else [
                p for p in sorted(s) if p not in mine and p not in self.revealed]
            scored = [(p, w) for p in cands if (w := self._why(p))]
            if not scored:
                return ""
            t, why = scored[self.rng.randrange(len(scored))]
        else:
            at = (0.45 if self.claim_round else 0.6) * self._urgency()
            must = self._must_lynch()
            top_t, top = self._top_suspect([p for p in sorted(s) if p not in self.revealed])
            reason = self._why(top_t) if top_t is not None and (top >= at or must) else None
            if reason is None and must and top_t is not None:
                reason = talk.pick(self.rng, talk.reason_must_lynch())
            if top_t is None or reason is None:
                return self._put_up(s)
            t, why = top_t, reason
        self.spoke_day = self.day
        self.accused_today.add(t)
        self._call(self.slot, t, self.day)
        return talk.accuse(self.rng, self._name(t), why)

    def _draw_near(self) -> bool:
        """Nobody died yesterday or today late in the game, or the game warned
        that it ends in a draw tomorrow: without a lynch the game may end in a
        draw by time (docs/rules.md), so the Town presses on whoever it
        suspects most."""
        return self.draw_warned == self.day or (
            self.day >= DRAW_WATCH_DAY and self.day - self.last_death_day >= 1)

    def _cover_doubt(self, role: str) -> float:
        """How likely an uncontested claim of `role` is an enemy's cover: an
        enemy claims a Town role of its own Investigator group (the
        registry's `cover_claims`), and a real holder alive would have
        answered the claim, so the cover is likely when the list seldom deals
        the role and deals enemies that hide behind it."""
        return self._doubt(role, False)

    def _doubt(self, role: str, proven: bool, grave: _Grave | None = None) -> float:
        """`_cover_doubt`, or (`proven`) counting only the killers a body
        proved alive (each at least one). `grave`: `_grave()`, when the
        caller has read it already."""
        if grave is None:
            grave = self._grave()
        table = self._cover_table()
        hit = grave.doubts.get((role, proven))
        if hit is not None and hit[0] is table:
            return hit[1]
        at_large, left = grave.at_large, grave.left
        real = left.get(role, 0.0)
        fake = 0.0
        for e, share in table.get(role, ()):
            if proven and e not in at_large:
                continue
            n = left.get(e, 0.0)
            fake += (max(1.0, n) if e in at_large else n) * share
        fake *= max(0.0, 1.0 - real)  # ... and no real one to answer the claim
        doubt = fake / (fake + real) if fake > 0.0 else 0.0
        grave.doubts[(role, proven)] = (table, doubt)
        return doubt

    def _cover_table(self) -> dict[str, list[tuple[str, float]]]:
        """Town role -> the liars (roles that harm the Town) this list may
        deal that hide behind it, each with its share of their covers."""
        if self._covers is None:
            odds, possible = self.odds, self.possible
            hit = _COVERS.get((id(odds), possible))
            if hit is None or hit[0] is not odds:
                table: dict[str, list[tuple[str, float]]] = {}
                for e in odds.expected:
                    if threat(ROLES[e]) <= 0.0:
                        continue
                    covers = [r for r in cover_claims(ROLES[e]) if r in possible]
                    for c in covers:
                        table.setdefault(c, []).append((e, 1.0 / len(covers)))
                if len(_COVERS) > 256:
                    _COVERS.clear()
                hit = _COVERS[(id(odds), possible)] = (odds, table)
            self._covers = hit[1]  # (shared: read, never changed)
        return self._covers

    def _grave(self) -> _Grave:
        """What the graveyard and the bodies say now (kept until a death)."""
        key = (len(self.dead_role), len(self.killers_seen), len(self.alive))
        g = self._grave_cache
        if g is not None and g.key == key:
            return g
        g = self._grave_cache = _grave_of(self.odds, self.dead_role, self.killers_seen,
                                          len(self.alive))
        return g

    def _green_doubt(self) -> float:
        """The chance that a "not suspicious" result hides an enemy: the
        enemies left that a Sheriff cannot see (the registry's
        `suspicious` and `detection_immune`), a killer a body proved alive
        counted in full, over the other living players."""
        return self._grave().green

    def _left_of(self, role: str) -> float:
        """How many of `role` the deal holds on average, less those seen dead."""
        return self._grave().left.get(role, 0.0)

    def _frame_doubt(self) -> float:
        """How much a "suspicious" result is doubted: FRAME_DOUBT while the
        deal may hold a framer nobody has seen dead."""
        return self._grave().frame

    def _enemies_left(self) -> float:
        """How many enemies of the Town the deal holds on average, less those
        already seen dead (the graveyard is public)."""
        dead = sum(1 for r in self.dead_role.values() if _enemy(r))
        return max(float(self._killers_at_large()), self.odds.enemies - dead)

    def _killers_at_large(self) -> int:
        """Enemy killers the graveyard proves alive: a body showed their kind
        of kill, and no player of that kind has been seen dead since (the
        Mafia: a Mafia kill last night)."""
        dead = set(self.dead_role.values())
        n = 0
        for kind, day in self.killers_seen.items():
            if kind == "mafia":
                n += day >= self.day - 1
            elif kind not in dead:
                n += 1
        return n

    def _must_lynch(self) -> bool:
        """Few players left, or a draw by time near: the game goes on, so
        someone among the living still stops the Town's win (a killer, or a
        Witch while a Vigilante has bullets), and a day without a lynch is
        the game lost or drawn, so the Town lynches its best suspect
        (docs/rules.md, fairness figures)."""
        few = max(MUST_LYNCH_ALIVE, round(MUST_LYNCH_SHARE * len(self.names)))
        return self._draw_near() or len(self.alive) <= few

    def _urgency(self) -> float:
        """How much less evidence a lynch needs today (1: none less): the more
        of the other living players the deal says are still enemies, the
        better the odds that today's best suspect is one, and a day without
        a lynch is a night more for every killer."""
        others = max(1, len(self.alive) - 1)
        density = self._enemies_left() / others
        return min(1.0, max(URGENT_FLOOR, URGENT_BASE - URGENT_SLOPE * density))

    def _put_up(self, s: dict[int, float]) -> str:
        """A quiet day (nobody has called for a vote yet): some Town players
        put the quietest player without a claim on the stand, to hear a claim
        (the defence is evidence too)."""
        if (self.calls_day == self.day and self.calls) or (
                self.rng.random() >= PUT_UP_P and not self._draw_near()):
            return ""
        quiet = [p for p in sorted(s) if p not in self.claims and p not in self.revealed
                 and s[p] >= -0.1]
        if not quiet:
            return ""
        fewest = min(self.talked.get(p, 0) for p in quiet)
        t = self.rng.choice([p for p in quiet if self.talked.get(p, 0) == fewest])
        self.spoke_day = self.day
        self.accused_today.add(t)
        self._call(self.slot, t, self.day)
        said = self.talked.get(t, 0)
        return talk.accuse(self.rng, self._name(t), talk.pick(self.rng, talk.reason_quiet(said)))

    def _speech(self) -> str:
        role = self.role
        fac = ROLES[role].faction
        if role == "jester":
            if self.day >= CLAIM_DAY and not self.claimed and self.rng.random() < 0.75:
                return self._claim_text()  # a cover story, as the others do
            if self.accused_me or self.rng.random() < 0.1:
                self.accused_me = False
                return cv.say_no_claim()
            return ""
        if role == "executioner" and self.exe_target in self.alive:
            t = self._name(self.exe_target)
            if self.day >= 2 and self._may_fake_sheriff() and self.rng.random() < 0.25 \
                    and "sheriff" not in self.claims.values():
                self.fake_sheriff_done = True
                self.claimed = "sheriff"
                return f"{cv.say_role('Sheriff')} {cv.say_suspicious(t)}"
            if (self.accused_me or self.day >= CLAIM_DAY) and not self.claimed:
                return self._claim_text()
            return self._push_target()
        if fac is Faction.TOWN:
            if self._counterclaim():
                return self._claim_text()
            if self.unshared and role in KEY_CLAIMS:
                # a result worth a claim; once claimed (or from the claim
                # day) every result is told, or the claim looks empty
                worth = self.accused_me or self.claimed == role or self.day >= CLAIM_DAY \
                    or any(r.kind in ("suspicious", "visited", "group") for r in self.unshared)
                if worth:
                    return self._claim_text()
            if (self.accused_me or self.day >= CLAIM_DAY) and not self.claimed \
                    and not ROLES[role].keeps_hidden:
                return self._claim_text()
            return ""
        # Mafia and the Serial Killer
        rival = self._rival_killer()
        if rival is not None and self.day >= 2:
            # a killer of another side the Consigliere found: the Town may
            # lynch it for us (its true Investigator group, said as a result)
            self.outed.add(rival)
            claim = "" if self.claimed else self._claim_text() + " "
            group = GROUP_OF.get(ROLES[self.known[rival]].name)
            if group:
                return claim + cv.say_group(self._name(rival), group)
        team_faked = any(self.claims.get(t) == "sheriff" for t in self.team)
        if self.mafia and self._may_fake_sheriff() and self.day >= 2 and not team_faked:
            threat = self._sheriff_threat()
            if threat is not None and self.rng.random() < 0.35:
                self.fake_sheriff_done = True
                self.claimed = "sheriff"
                buddy = next((r[2] for r in self.reports if r[0] == threat
                              and r[1] == cv.SUSPICIOUS and r[2] in self.team), None)
                text = cv.say_role("Sheriff") + " " + cv.say_suspicious(self._name(threat))
                if buddy is not None and buddy in self.alive:
                    text += " " + cv.say_innocent(self._name(buddy))
                return text
            if role == "framer" and self.rng.random() < 0.12 \
                    and "sheriff" not in self.claims.values():
                victims = [p for p in self.alive if p not in self.team and p != self.slot
                           and p not in self.claims]
                if victims:
                    self.fake_sheriff_done = True
                    self.claimed = "sheriff"
                    v = self.rng.choice(sorted(victims))
                    return f"{cv.say_role('Sheriff')} {cv.say_suspicious(self._name(v))}"
        if (self.accused_me or self.day >= CLAIM_DAY) and not self.claimed:
            return self._claim_text()
        return ""

    def _may_fake_sheriff(self) -> bool:
        """A made-up Sheriff's result is said once, and only by a bot whose
        story it fits: one that has claimed nothing else (seen in the demo: a
        Godfather bot claimed Bodyguard on Day 2 and "I am the Sheriff. Player 7
        is suspicious!" on Day 4)."""
        return not self.fake_sheriff_done and self.claimed in ("", "sheriff")

    def _counterclaim(self) -> bool:
        """Someone else claims my (Town) role: say who I really am."""
        if self.claimed == self.role or ROLES[self.role].keeps_hidden:
            return False
        return any(r == self.role and s != self.slot and s in self.alive
                   for s, r in self.claims.items())

    def _rival_killer(self) -> int | None:
        """A living killer of another side this bot's checks found and has
        not named yet."""
        for t, role in sorted(self.known.items()):
            if t in self.alive and t not in self.outed and t not in self.team \
                    and t != self.slot and _enemy(role) \
                    and ROLES[role].faction is not Faction.MAFIA:
                return t
        return None

    def _sheriff_threat(self) -> int | None:
        """A living player claiming to have found one of the Mafia."""
        for src, kind, target, _w, _x in self.reports:
            if src in self.alive and target in self.team and kind in (
                    cv.SUSPICIOUS, cv.GROUP, cv.VISITED) and src not in self.team:
                return src
        return None

    def _voting(self, obs: View) -> list[Command]:
        acts = _legal(obs)
        out: list[Command] = []
        chat = acts.get("chat")
        if chat is not None and ROLES[self.role].faction is Faction.TOWN \
                and self._counterclaim():
            out += self._say(self._claim_text())
        if "reveal" in acts and self._mayor_should_reveal():
            out.append(DayAction(self.slot, "reveal"))
        vote = acts.get("vote")
        if vote is None:
            return out
        target = self._vote_target(vote.targets)
        if target is not None and target != self.my_vote:
            self.my_vote = target
            out.append(Vote(self.slot, target))
            if chat is not None and "public" in chat.options \
                    and self.rng.random() < VOTE_TALK_P:
                why = self._why(target) if not self.mafia else None
                out += self._say(talk.vote_reason(self.rng, self._name(target), why))
        out += self._jail(obs)
        return out

    def _mayor_should_reveal(self) -> bool:
        if self.day < 2:
            return False
        _t, s = self._top_suspect(sorted(self.alive))
        return s >= VOTE_AT and (self.day >= 3 or self.rng.random() < 0.3)

    def _vote_target(self, targets: tuple[int, ...]) -> int | None:
        cands = [t for t in targets if t not in self.pardoned]
        if not cands:
            return None
        role = self.role
        tally: dict[int, int] = {}
        for t in self.votes.values():
            tally[t] = tally.get(t, 0) + 1
        if role == "executioner" and self.exe_target in cands:
            return self.exe_target
        endgame = len(self.alive) <= 4 or self._must_lynch()
        if role == "jester":
            wagon = [t for t in sorted(tally, key=lambda t: -tally[t]) if t in cands]
            return wagon[0] if wagon and self.rng.random() < 0.5 else None
        s = self.sus()
        if self.mafia or role == "serial_killer":
            # follow the Town's wagon against anyone but ourselves
            mine = self.team | {self.slot}
            wagon = [t for t in sorted(tally, key=lambda t: -tally[t])
                     if t not in mine and t in cands]
            if wagon:
                return wagon[0]
            rivals = [t for t in cands if t in self.outed and t in self.alive]
            if rivals:
                return rivals[0]
            threat = self._sheriff_threat() if self.mafia else None
            if threat is not None and threat in cands and self.rng.random() < 0.5:
                return threat
            if endgame:
                others = [t for t in cands if t not in mine]
                return self._kill_pick(others) if others else None
            return None
        if role == "executioner":  # the target is gone: help whoever is winning
            wagon = [t for t in sorted(tally, key=lambda t: -tally[t]) if t in cands]
            return wagon[0] if wagon else None
        best, top = self._best(cands, lambda c: s.get(c, 0.0))
        at = 0.2 if endgame else (0.45 if self.claim_round else VOTE_AT)
        at *= self._urgency()
        if best is not None and top >= at:
            return best
        called = self._called(cands, s)
        if called is not None:
            return called
        if endgame and self._must_lynch():
            # today's lynch matters more than whose: join the biggest wagon on
            # anyone this bot has nothing for, else vote its best suspect
            wagon = [t for t in sorted(tally, key=lambda t: -tally[t]) if t in cands
                     and s.get(t, 0.0) >= -0.1 and t not in self.revealed]
            return wagon[0] if wagon else best
        wagon = [t for t in sorted(tally, key=lambda t: -tally[t]) if t in cands]
        # join a wagon with momentum on someone this bot has something against
        if wagon and s.get(wagon[0], 0.0) >= (WAGON_AT if tally[wagon[0]] >= 2 else 0.45) \
                and wagon[0] not in self.revealed:
            return wagon[0]
        return None

    def _called(self, cands: list[int], s: dict[int, float]) -> int | None:
        """The player today's discussion put forward: the one this bot called
        for itself, or the one most called for by players it trusts (a claimed
        Sheriff's result counts), unless it has reasons to think them Town or
        they have claimed a role that nothing contradicts.
        Everyone hears the same discussion, so the Town's votes meet on one
        player and the day reaches a trial, where the defence is heard."""
        if self.calls_day != self.day:
            return None
        best: int | None = None
        top = (CALLED_AT, 0.0)
        for t in sorted(self.calls):
            if t not in cands or t in self.revealed or s.get(t, 0.0) < -0.1:
                continue
            if t in self.claims and s.get(t, 0.0) < 0.2:
                continue  # they have claimed since, and nothing speaks against the claim
            if self.slot in self.calls[t]:
                return t  # vote as one spoke
            # the callers' word, and what this bot holds against them already
            weight = sum(self.trust(src) for src in self.calls[t]
                         if src != t and not self.tunnels(src, t)) + s.get(t, 0.0)
            if (weight, s.get(t, 0.0)) > top:
                best, top = t, (weight, s.get(t, 0.0))
        return best

    def _defense(self, obs: View) -> list[Command]:
        acts = _legal(obs)
        out: list[Command] = []
        if "reveal" in acts:
            return [DayAction(self.slot, "reveal")]
        chat = acts.get("chat")
        if chat is None or self.accused != self.slot:
            return out
        if self.role == "jester":
            return self._say(f"{cv.say_no_claim()} {talk.jester_defence(self.rng)}") or self._say(
                f"{talk.jester_defence(self.rng)} {cv.say_no_claim()}")
        text = self._claim_text()
        if self.results and self.claimed == self.role:
            text += f" {talk.results_intro(self.rng)} " + " ".join(
                self._move_text(Report(r)) for r in self.results[-3:])
        if self.good_vote is not None and self.rng.random() < 0.5:
            text += " " + talk.plea_with_vote(self.rng, self._name(self.good_vote))
        for _ in range(4):  # a defence nobody has heard in this game
            said = self._say(f"{text} {talk.defence(self.rng)}")
            if said:
                return said
        return []

    def _judgement(self, obs: View) -> list[Command]:
        acts = _legal(obs)
        out: list[Command] = []
        if "judge" not in acts or self.accused is None:
            return out
        verdict = self._verdict(self.accused)
        if verdict != "abstain":
            out.append(Judge(self.slot, verdict))
            chat = acts.get("chat")
            if chat is not None and "public" in chat.options \
                    and self.rng.random() < VERDICT_TALK_P:
                claim = self.claims.get(self.accused)
                out += self._say(talk.verdict_comment(
                    self.rng, self._name(self.accused), verdict,
                    ROLES[claim].name if claim in ROLES else None))
        out += self._jail(obs)
        return out

    def _verdict(self, accused: int) -> str:
        """How this bot judges the accused: on what it knows and on the
        defence. A Town bot lynches on evidence, or an accused who gives no
        defence; it pardons an uncontested Town claim and a player who dares
        the Town to lynch them (a Jester wins by being lynched)."""
        role = self.role
        if role == "executioner":
            return "guilty" if accused == self.exe_target else "abstain"
        if role == "jester":
            return "abstain"
        if self.mafia:
            if accused not in self.team:
                return "guilty"
            # a teammate who has named a role of the Mafia in public, or whose
            # claim a death has disproved, is lost: sparing them out loud only
            # ties this bot to them (seen in lobbies: "Nothing contradicts Ann
            # as Framer. Let them live."; "Player 3 claimed Jailor and nothing
            # speaks against it." after the Jailor had died)
            claim = self.claims.get(accused)
            lost = claim is not None and (_enemy(claim) or self._died_out(claim))
            return "abstain" if lost else "innocent"
        if role == "serial_killer":
            return "guilty"
        if _enemy(role) and self._must_lynch():
            return "guilty"  # a lone killer near the end: every lynch brings its win closer
        if accused in self.revealed:
            return "innocent"
        s = self.sus().get(accused, 0.0)
        if self.begged.get(accused) == self.day and s < 3.5:
            return "innocent"  # begging for the rope: too good for a Jester
        claim = self.claims.get(accused)
        if claim is None:
            return "guilty"  # no role, no defence: the Town cannot clear them
        dead_roles, claimants = self._claim_stats()
        r = ROLES[claim]
        if self._died_out(claim) or (self._once(claim) and claim == self.role):
            return "guilty"  # the game's only one of that role is dead, or is me
        if r.faction is not Faction.TOWN:
            return "guilty"  # claims an evil role
        contested = claim in dead_roles or claimants.get(claim, 0) > 1
        # an uncontested Town claim needs real evidence (a result, a caught lie);
        # with a draw by time near, a lynch on slighter grounds beats none
        if not contested:  # on the stand, a claim the list seldom backs is weighed again
            s += STAND_DOUBT * self._cover_doubt(claim)
        at = (CONTESTED_AT if contested else CLEAR_CLAIM_AT) * self._urgency()
        if s >= at:
            return "guilty"
        if self._must_lynch() and s >= at / 4:
            # a lynch today matters more than whose, but not this one if
            # someone else is clearly more suspect (a later trial may come)
            sus = self.sus()
            rival = max((v for p, v in sus.items() if p != accused and p not in self.revealed),
                        default=float("-inf"))
            return "guilty" if s >= rival - RIVAL_MARGIN else "innocent"
        return "innocent"

    def _last_words(self, obs: View) -> list[Command]:
        return []

    # ---- day abilities ---------------------------------------------------------------
    def _jail(self, obs: View) -> list[Command]:
        jail = _legal(obs).get("jail")
        if jail is None:
            return []
        cands = [t for t in jail.targets if t != self.accused and t not in self.revealed]
        if not cands:
            return []
        s = self.sus()
        town_claimed = {p for p, r in self.claims.items() if ROLES[r].faction is Faction.TOWN}
        def score(c: int) -> float:
            return s.get(c, 0.0) - (0.3 if c in town_claimed else 0.0) \
                - 0.3 * self.jailed.get(c, 0)

        best, _ = self._best(cands, score)
        if best is None or best == self.jail_choice:
            return []
        self.jail_choice = best
        return [DayAction(self.slot, "jail", best)]

    def _seance(self, action: LegalAction) -> list[Command]:
        key = [t for t in action.targets if self.claims.get(t) in KEY_CLAIMS]
        target = self.rng.choice(key or list(action.targets))
        return [DayAction(self.slot, "seance", target)]

    # ---- night -----------------------------------------------------------------------
    def _night(self, obs: View) -> list[Command]:
        acts = _legal(obs)
        you = obs.you or SelfView()
        out = self._will_cmd()
        chat = acts.get("chat")
        if you.jailed and chat is not None and "jail" in chat.options:
            text = cv.say_no_claim() if self.role == "jester" else self._jail_claim()
            out.append(Chat(self.slot, text, "jail"))
        night = acts.get("night")
        out += bot_hints.pad(self.slot, self.role, you, acts)  # a Forger's forgery
        if night is not None:
            handler = _NIGHT.get(night.ability)
            targets = handler(self, night) if handler is not None \
                else bot_hints.choose(self, night)  # roles scripted in bot_hints.py
            if targets:
                out.append(NightAction(self.slot, targets))
                if self.role == "godfather" and chat is not None and "mafia" in chat.options:
                    out.append(Chat(self.slot, f"Let's kill {self._name(targets[0])}.", "mafia"))
        elif chat is not None and "dead" in chat.options and self.role == "medium" \
                and self.rng.random() < 0.25:
            out.append(Chat(self.slot, "Who killed you?", "dead"))
        return out

    def _jail_claim(self) -> str:
        claim = self._my_claim()
        return self._move_text(ClaimRole(ROLES[claim].name))

    def _investigate(self, action: LegalAction) -> tuple[int, ...] | None:
        s = self.sus()
        cands = [t for t in action.targets if t not in self.checked and t not in self.revealed]
        if not cands:
            cands = list(action.targets)
        town_claimed = {p for p, r in self.claims.items() if ROLES[r].faction is Faction.TOWN}
        conflicted = {p for p, r in self.claims.items() if p in self.alive and any(
            r == r2 and p2 != p and p2 in self.alive for p2, r2 in self.claims.items())}

        def score(c: int) -> float:
            v = s.get(c, 0.0)
            if c in conflicted and self.claims.get(c) != self.role:
                return v + 0.8
            return v - (0.4 if c in town_claimed else 0.0)

        best, _ = self._best(cands, score)
        if best is None:
            return None
        self.checked.add(best)
        return (best,)

    def _watch(self, action: LegalAction) -> tuple[int, ...] | None:
        key = [t for t in action.targets if self.claims.get(t) in KEY_CLAIMS
               or t in self.revealed]
        return (self.rng.choice(key or list(action.targets)),)

    def _protect(self, action: LegalAction) -> tuple[int, ...] | None:
        targets = action.targets
        if self.claimed and self.slot in targets and self.rng.random() < 0.5:
            return (self.slot,)
        key = [t for t in targets if t != self.slot and self.claims.get(t) in KEY_CLAIMS
               and self.trust(t) >= 0.5]
        if key:
            return (max(key, key=lambda t: (self.trust(t), -t)),)
        s = self.sus()
        others = [t for t in targets if t != self.slot and s.get(t, 0.0) < 0.3]
        return (self.rng.choice(others or list(targets)),)

    def _block(self, action: LegalAction) -> tuple[int, ...] | None:
        best, top = self._top_suspect(action.targets)
        if best is not None and top >= 0.4:
            return (best,)
        quiet = [t for t in action.targets if t not in self.claims]
        return (self.rng.choice(quiet or list(action.targets)),)

    def _execute(self, action: LegalAction) -> tuple[int, ...] | None:
        prisoner = action.targets[0]
        self.jailed[prisoner] = self.jailed.get(prisoner, 0) + 1
        if prisoner in self.revealed:
            return None
        s = self.sus().get(prisoner, 0.0)
        claim = self.jail_claims.get(prisoner) or self.claims.get(prisoner)
        town_claim = claim is not None and ROLES[claim].faction is Faction.TOWN
        if self._must_lynch() and s >= EXECUTE_AT / 2 and s >= max(
                (v for p, v in self.sus().items() if p not in self.revealed), default=0.0):
            return (prisoner,)  # the game needs a death, and this is the best suspect
        if town_claim and s < 0.9:
            return None  # never execute a Town claim without evidence
        if s >= EXECUTE_AT or (claim is None and s >= 0.4):
            return (prisoner,)
        return None

    def _shoot(self, action: LegalAction) -> tuple[int, ...] | None:
        s = self.sus()
        best, top = self._best([t for t in action.targets if t in s and not self.failed.get(t)],
                               lambda c: s[c])
        if best is None or top < (SHOOT_AT / 2 if self._must_lynch() else SHOOT_AT):
            return None
        self.night_kills.add(best)
        return (best,)

    def _alert(self, action: LegalAction) -> tuple[int, ...] | None:
        p = 0.5 if (self.claimed or self.accused_me) else 0.3
        return (self.slot,) if self.rng.random() < p else None

    def _revive(self, action: LegalAction) -> tuple[int, ...] | None:
        by_role = {self.dead_role.get(t, ""): t for t in sorted(action.targets, reverse=True)}
        for role in REVIVE_ORDER[:5]:
            if role in by_role:
                return (by_role[role],)
        return None

    def _transport(self, action: LegalAction) -> tuple[int, ...] | None:
        key = [t for t in action.targets if t != self.slot and self.claims.get(t) in KEY_CLAIMS]
        if key and self.slot in action.targets and self.rng.random() < 0.5:
            return (self.slot, self.rng.choice(key))
        return None

    def _kill(self, action: LegalAction) -> tuple[int, ...] | None:
        if self.role == "mafioso" and self.team_target in action.targets:
            return (self.team_target,)  # the Godfather's pick
        best = self._kill_pick([t for t in action.targets if t != self.slot])
        if best is None:
            return None
        self.night_kills.add(best)
        return (best,)

    def _kill_pick(self, targets: list[int]) -> int | None:
        """Claimed investigators first, then other key roles; not a claimed
        Veteran, and not someone an attack already failed on."""
        s_threat = self._sheriff_threat() if self.mafia else None

        def score(t: int) -> float:
            c = self.claims.get(t)
            v = 0.0
            if c in KEY_CLAIMS:
                v += 3.0
            elif t in self.revealed:
                v += 2.5
            elif c in ("doctor", "jailor", "bodyguard"):
                v += 1.5
            elif c == "veteran":
                v -= 2.0
            if t == s_threat:
                v += 1.0
            return v - 2.5 * self.failed.get(t, 0)

        return self._best(targets, score)[0]

    def _frame(self, action: LegalAction) -> tuple[int, ...] | None:
        quiet = [t for t in action.targets if t not in self.claims and t not in self.revealed]
        return (self.rng.choice(quiet or list(action.targets)),)

    def _haunt(self, action: LegalAction) -> tuple[int, ...] | None:
        guilty = [t for t in action.targets if self.verdicts.get(t) == "guilty"]
        return (self.rng.choice(guilty or list(action.targets)),)

    # ---- the dead --------------------------------------------------------------------
    def _dead(self, obs: View) -> list[Command]:
        acts = _legal(obs)
        out: list[Command] = []
        night = acts.get("night")
        if night is not None and night.ability == "haunt":
            targets = self._haunt(night)
            if targets:
                out.append(NightAction(self.slot, targets))
        if "seance" in acts and obs.phase == "discussion":
            out += self._seance(acts["seance"])
        chat = acts.get("chat")
        if chat is not None and not self.said_dead and obs.phase == "night" \
                and "dead" in chat.options:
            self.said_dead = True
            if self.rng.random() < 0.3:
                out.append(Chat(self.slot, f"I was the {ROLES[self.role].name}.", "dead"))
        if chat is not None and "seance" in chat.options and self.role == "medium":
            out.append(Chat(self.slot, "Tell me what you know.", "seance"))
        return out


# ---- event handlers ----------------------------------------------------------------

def _on_chat(b: ScriptedBot, d: dict[str, Any]) -> None:
    author = d.get("author")
    text = d.get("text", "")
    b.lines_heard.add(str(text))
    if isinstance(author, int):
        b.talked[author] = b.talked.get(author, 0) + 1
        if b._hear(author, text, b.ev_day):  # most lines leave the suspicion as it was
            b._sus = b._stats = None


def _on_start(b: ScriptedBot, d: dict[str, Any]) -> None:
    role_list = [str(r) for r in d.get("role_list") or ()]
    b.odds = _odds(tuple(role_list), d.get("mode") == "custom") if role_list else NO_ODDS
    b.possible = frozenset(b.odds.slots)
    b.group_cache = {}
    b._covers, b._grave_cache = None, None


def _on_team_chat(b: ScriptedBot, d: dict[str, Any]) -> None:
    """A teammate's cover for tomorrow (a model seat tells its team): this
    bot's own cover will be another (seen in a lobby: a Framer seat and its
    Godfather both claimed Investigator)."""
    if d.get("author") == b.slot:
        return
    role = talk.read_cover_plan(str(d.get("text", "")))
    spec = find_role(role) if role else None
    if spec is not None:
        b.team_covers.add(spec.key)


def _on_jail_chat(b: ScriptedBot, d: dict[str, Any]) -> None:
    author = d.get("author")
    if b.role != "jailor" or not isinstance(author, int) or author == b.slot:
        return
    assert b.vocab is not None
    for c in b.vocab.parse(d.get("text", "")):
        if c.kind == cv.ROLE:
            b.jail_claims[author] = c.role
        elif c.kind == cv.NO_CLAIM:
            b.own[author] = b.own.get(author, 0.0) + 0.4
            b._sus = b._stats = None


def _on_will(b: ScriptedBot, d: dict[str, Any]) -> None:
    player = d.get("player")
    if isinstance(player, int):
        b.claims.pop(player, None)
        b._hear(player, d.get("will", ""), b.ev_day)


def _on_vote(b: ScriptedBot, d: dict[str, Any]) -> None:
    b.votes[d["voter"]] = d["target"]
    b.vote_log[d["voter"]] = (b.ev_day, d["target"])


def _on_vote_cancel(b: ScriptedBot, d: dict[str, Any]) -> None:
    b.votes.pop(d["voter"], None)


def _on_voting(b: ScriptedBot, d: dict[str, Any]) -> None:
    if b.ev_day >= CLAIM_DAY and not b.claim_round:
        b.claim_round = True
        b._sus = b._stats = None  # the only part of a vote that changes suspicion
    b.votes = {}
    b.my_vote = None
    b.accused = None


def _on_discussion(b: ScriptedBot, d: dict[str, Any]) -> None:
    b.pardoned = set()
    for t in b.night_kills:  # the roster is already up to date
        if t in b.alive:
            b.failed[t] = b.failed.get(t, 0) + 1
    b.night_kills = set()


def _on_draw_warning(b: ScriptedBot, d: dict[str, Any]) -> None:
    b.draw_warned = b.ev_day


def _on_night(b: ScriptedBot, d: dict[str, Any]) -> None:
    b.votes = {}
    b.my_vote = None


def _on_trial(b: ScriptedBot, d: dict[str, Any]) -> None:
    b.accused = d["accused"]
    b.verdicts = {}
    if b.accused == b.slot:
        b.accused_me = True


def _on_verdict(b: ScriptedBot, d: dict[str, Any]) -> None:
    b.verdicts[d["voter"]] = d["verdict"]


def _on_pardon(b: ScriptedBot, d: dict[str, Any]) -> None:
    b.pardoned.add(d["accused"])


def _on_dawn_death(b: ScriptedBot, d: dict[str, Any]) -> None:
    b.night_deaths.setdefault(b.ev_day - 1, set()).add(d["player"])
    for cause in d.get("causes") or ():  # a killer's kind, read off the body
        if isinstance(cause, str) and (cause == "mafia" or _enemy(cause)):
            b.killers_seen[cause] = b.ev_day
        if cause == "arsonist":
            b.burned.add(d["player"])


def _on_dawn_role(b: ScriptedBot, d: dict[str, Any]) -> None:
    role = find_role(str(d.get("role", "")))
    if isinstance(d.get("player"), int) and role is not None:
        b.news.append(("dawn", d["player"], role.key))


def _on_lynch(b: ScriptedBot, d: dict[str, Any]) -> None:
    """A lynch shows the role: the verdicts cast on it become evidence about
    the voters (guilty on a Town member, innocent on a Mafia member)."""
    slot = d.get("player")
    role = find_role(str(d.get("role", "")))
    if not isinstance(slot, int) or role is None:
        return
    b.news.append(("lynch", slot, role.key))
    town = role.faction is Faction.TOWN
    evil = _enemy(role.key)
    for voter, verdict in b.verdicts.items():
        if voter == b.slot:
            if evil and verdict == "guilty":
                b.good_vote = slot
            continue
        if town and verdict == "guilty":
            b.own[voter] = b.own.get(voter, 0.0) + 0.25
            b.marks.setdefault(voter, []).append(("guilty_on_town", slot, role.key))
        elif evil and verdict == "innocent":
            b.own[voter] = b.own.get(voter, 0.0) + 0.5
            b.marks.setdefault(voter, []).append(("innocent_on_evil", slot, role.key))
        elif evil and verdict == "guilty":
            b.own[voter] = b.own.get(voter, 0.0) - 0.15


def _on_reveal(b: ScriptedBot, d: dict[str, Any]) -> None:
    b.revealed.add(d["player"])
    b.claims[d["player"]] = "mayor"


def _on_sheriff(suspicious: bool) -> Callable[[ScriptedBot, dict[str, Any]], None]:
    def handle(b: ScriptedBot, d: dict[str, Any]) -> None:
        t = d["target"]
        if suspicious:
            b.own[t] = b.own.get(t, 0.0) + 2.0 * (1.0 - b._frame_doubt())
            b.checked_sus.add(t)
        else:
            b.cleared.add(t)  # weighed in `sus`, as the hidden killers left allow
        r = Result("suspicious" if suspicious else "innocent", t, b.ev_day)
        b.results.append(r)
        b.unshared.append(r)
    return handle


def _on_investigator(b: ScriptedBot, d: dict[str, Any]) -> None:
    t = d["target"]
    roles = tuple(d["roles"])
    b.own_groups[t] = roles
    r = Result("group", t, b.ev_day, roles=roles)
    b.results.append(r)
    b.unshared.append(r)


def _on_lookout(b: ScriptedBot, d: dict[str, Any]) -> None:
    visitor, house = d.get("visitor"), d.get("target")
    if not isinstance(visitor, int) or not isinstance(house, int):
        return
    r = Result("visited", house, b.ev_day, visitor=visitor)
    b.results.append(r)
    b.unshared.append(r)


def _on_spy(b: ScriptedBot, d: dict[str, Any]) -> None:
    t = d.get("target")
    if isinstance(t, int):
        b.results.append(Result("mafia_visited", t, b.ev_day))


def _on_consigliere(b: ScriptedBot, d: dict[str, Any]) -> None:
    role = find_role(str(d.get("role", "")))
    if isinstance(d.get("target"), int) and role is not None:
        b.known[d["target"]] = role.key


def _on_mafia_chosen(b: ScriptedBot, d: dict[str, Any]) -> None:
    actor = d.get("actor")
    targets = d.get("targets") or []
    if targets and d.get("ability") == "kill":
        b.night_kills.add(targets[0])
        if actor != b.slot:
            b.team_target = targets[0]


def _on_new_night(b: ScriptedBot, d: dict[str, Any]) -> None:
    b.team_target = None
    b.votes = {}
    b.my_vote = None
    b.accused = None


_HANDLER_FUNCS: dict[str, Callable[[ScriptedBot, dict[str, Any]], None]] = {
    "game.start": _on_start,
    "chat.public": _on_chat,
    "dawn.draw_warning": _on_draw_warning,
    "chat.jail": _on_jail_chat,
    "chat.mafia": _on_team_chat,
    "dawn.will": _on_will,
    "lynch.will": _on_will,
    "vote.cast": _on_vote,
    "vote.changed": _on_vote,
    "vote.cancel": _on_vote_cancel,
    "phase.voting": _on_voting,
    "phase.discussion": _on_discussion,
    "phase.night": _on_new_night,
    "trial.start": _on_trial,
    "judge.vote": _on_verdict,
    "judge.pardon": _on_pardon,
    "dawn.death": _on_dawn_death,
    "dawn.role": _on_dawn_role,
    "lynch.death": _on_lynch,
    "mayor.reveal": _on_reveal,
    # every suspicious result the Sheriff can get (a Werewolf's on a full moon too)
    **{f"night.sheriff_{k}": _on_sheriff(True) for k in (*SHERIFF_KEYS.values(), "suspicious")},
    "night.sheriff_innocent": _on_sheriff(False),
    "night.sheriff_innocent_modern": _on_sheriff(False),
    "night.investigator": _on_investigator,
    "night.lookout": _on_lookout,
    "night.spy": _on_spy,
    "night.mafia_chosen": _on_mafia_chosen,
    "night.consigliere": _on_consigliere,
}

# Events after which suspicion must be computed again (a chat line only when
# it claims something, a vote only when it opens the claim round: their
# handlers say so themselves).
_CHANGES_SUSPICION = frozenset({
    "dawn.will", "lynch.will", "mayor.reveal", "lynch.death", "night.investigator",
    *(k for k in _HANDLER_FUNCS if k.startswith("night.sheriff_")),
})
# event key -> (handler, whether suspicion must be computed again afterwards)
_HANDLERS: dict[str, tuple[Callable[[ScriptedBot, dict[str, Any]], None], bool]] = {
    k: (f, k in _CHANGES_SUSPICION) for k, f in _HANDLER_FUNCS.items()
}

_PHASES: dict[str, Callable[[ScriptedBot, View], list[Command]]] = {
    "day1": ScriptedBot._day1,
    "discussion": ScriptedBot._discussion,
    "voting": ScriptedBot._voting,
    "defense": ScriptedBot._defense,
    "judgement": ScriptedBot._judgement,
    "last_words": ScriptedBot._last_words,
    "night": ScriptedBot._night,
}

_NIGHT: dict[str, Callable[[ScriptedBot, LegalAction], tuple[int, ...] | None]] = {
    "interrogate": ScriptedBot._investigate,
    "investigate": ScriptedBot._investigate,
    "watch": ScriptedBot._watch,
    "heal": ScriptedBot._protect,
    "guard": ScriptedBot._protect,
    "distract": ScriptedBot._block,
    "execute": ScriptedBot._execute,
    "shoot": ScriptedBot._shoot,
    "alert": ScriptedBot._alert,
    "revive": ScriptedBot._revive,
    "transport": ScriptedBot._transport,
    "kill": ScriptedBot._kill,
    "frame": ScriptedBot._frame,
    "haunt": ScriptedBot._haunt,
}
