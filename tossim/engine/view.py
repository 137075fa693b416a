"""The projection: `view(game, viewer)` is the ONLY way information leaves the engine.

The server, the replay viewer, the prompt builder, the AI tools and the
scripted bots all read games through this module, so a hidden role, another
faction's chat or another player's night result can only reach a viewer if
this file lets it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from tossim.engine import phases
from tossim.engine.events import Event, FrozenDict
from tossim.engine.legal import LegalAction, legal_actions
from tossim.engine.roles import ROLES, Faction
from tossim.engine.state import Death, Game, Phase, Player

# Effects a player is told about (a douse is secret: A2.8).
SELF_KNOWN_EFFECTS = frozenset({"blackmailed", "disguised"})


@dataclass(frozen=True, slots=True)
class Viewer:
    kind: str  # player | public | omniscient
    slot: int | None = None

    @staticmethod
    def player(slot: int) -> Viewer:
        return Viewer("player", slot)

    def label(self) -> str:
        return f"player {self.slot}" if self.kind == "player" else self.kind


PUBLIC_VIEWER = Viewer("public")
OMNISCIENT_VIEWER = Viewer("omniscient")


def parse_viewer(game: Game, text: str) -> Viewer:
    """"public", "omniscient", a seat number or a player name."""
    t = text.strip()
    if t.lower() in ("public", "omniscient"):
        return Viewer(t.lower())
    if t.isdigit() and game.has_slot(int(t)):
        return Viewer.player(int(t))
    for p in game.players:
        if p.name.lower() == t.lower():
            return Viewer.player(p.slot)
    raise ValueError(f"unknown viewer {text!r}: use public, omniscient, a seat number or a name")


def can_see(event: Event, viewer: Viewer) -> bool:
    if viewer.kind == "omniscient" or event.audience.kind == "public":
        return True
    return viewer.kind == "player" and viewer.slot in event.audience.players


def project_event(event: Event, viewer: Viewer) -> dict[str, Any]:
    """An event as this viewer receives it (read-only): without the audience's
    member list or any secret (a dead-chat audience would name the living
    Medium), except for omniscient viewers, who see both."""
    if viewer.kind != "omniscient":
        return event.shared
    out = dict(event.shared)
    if event.audience.players:
        out["to"] = sorted(event.audience.players)
    if event.secret:
        out["secret"] = event.secret
    return out


def visible_events(game: Game, viewer: Viewer, since: int = 0) -> list[Event]:
    """Events after version `since` that this viewer may see."""
    if viewer.kind == "omniscient":
        return game.events[since:]
    if viewer.kind != "player":
        return [e for e in game.events[since:] if e.audience.kind == "public"]
    slot = viewer.slot
    return [e for e in game.events[since:]
            if e.audience.kind == "public" or slot in e.audience.players]


@dataclass(frozen=True, slots=True)
class Grave:
    """A dead player's graveyard entry as a viewer sees it. `forged` is only
    ever true for a viewer who knows everything (an omniscient viewer, or any
    viewer once the game is over): the town reads a forgery as the will, as in
    the game (docs/rules.md)."""

    day: int
    at_night: bool
    causes: tuple[str, ...]
    will: str
    death_notes: tuple[str, ...]
    cleaned: bool
    forged: bool

    def to_dict(self) -> dict[str, Any]:
        return {"day": self.day, "at_night": self.at_night, "causes": list(self.causes),
                "will": self.will, "death_notes": list(self.death_notes),
                "cleaned": self.cleaned, "forged": self.forged}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Grave:
        return cls(day=int(d["day"]), at_night=bool(d["at_night"]),
                   causes=tuple(str(c) for c in d["causes"]), will=str(d["will"]),
                   death_notes=tuple(str(n) for n in d["death_notes"]),
                   cleaned=bool(d["cleaned"]), forged=bool(d["forged"]))


@dataclass(frozen=True, slots=True)
class RosterEntry:
    """One seat as a viewer sees it: `role` is None while the viewer may not
    know it; a dead seat shows the role the town saw at death and its grave."""

    slot: int
    name: str
    alive: bool
    role: str | None
    revealed_mayor: bool = False
    death: Grave | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"slot": self.slot, "name": self.name, "alive": self.alive,
                               "role": self.role, "revealed_mayor": self.revealed_mayor}
        if self.death is not None:
            out["death"] = self.death.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RosterEntry:
        role, death = d.get("role"), d.get("death")
        return cls(slot=int(d["slot"]), name=str(d["name"]), alive=bool(d["alive"]),
                   role=None if role is None else str(role),
                   revealed_mayor=bool(d.get("revealed_mayor", False)),
                   death=None if death is None else Grave.from_dict(death))


@dataclass(frozen=True)
class SelfView:
    """A seat's own card (`View.you`). The optional parts exist only for some
    seats, and `to_dict` writes their keys only then: `target` for an
    Executioner with a target, `prisoner` and `jail_choice` for the Jailor,
    `teammates` for a team with a night chat (Mafia, Vampires), `effects` for
    a seat with a lasting effect. Every field has a default so a memory that
    has seen no view yet has a blank card (`SelfView()`)."""

    slot: int = 0
    name: str = ""
    role: str = ""
    role_key: str = ""
    faction: str = ""
    alignment: str = ""
    summary: str = ""
    goal: str = ""
    alive: bool = True
    uses: Mapping[str, int] = field(default_factory=FrozenDict)
    will: str = ""
    death_note: str = ""
    jailed: bool = False
    night_action: tuple[int, ...] = ()
    vote: int | None = None
    # the seat's verdict on the player standing trial now: set in the
    # Judgement and its Last Words, None otherwise (the engine keeps the
    # last trial's verdicts until the next Judgement; seen: a seat's "Your
    # verdict: guilty." on the next day's vote, which let it speak up for the
    # player it had just voted against)
    verdict: str | None = None
    target: int | None = None
    prisoner: int | None = None
    jail_choice: int | None = None
    teammates: tuple[int, ...] | None = None
    effects: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "slot": self.slot, "name": self.name, "role": self.role, "role_key": self.role_key,
            "faction": self.faction, "alignment": self.alignment, "summary": self.summary,
            "goal": self.goal, "alive": self.alive, "uses": dict(self.uses), "will": self.will,
            "death_note": self.death_note, "jailed": self.jailed,
            "night_action": list(self.night_action), "vote": self.vote, "verdict": self.verdict,
        }
        if self.target is not None:
            out["target"] = self.target
        if self.role_key == "jailor":
            out["prisoner"] = self.prisoner
            out["jail_choice"] = self.jail_choice
        if self.teammates is not None:
            out["teammates"] = list(self.teammates)
        if self.effects is not None:
            out["effects"] = list(self.effects)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SelfView:
        def opt_int(key: str) -> int | None:
            value = d.get(key)
            return None if value is None else int(value)

        mates, effects, verdict = d.get("teammates"), d.get("effects"), d.get("verdict")
        return cls(
            slot=int(d["slot"]), name=str(d["name"]), role=str(d["role"]),
            role_key=str(d["role_key"]), faction=str(d["faction"]),
            alignment=str(d["alignment"]), summary=str(d["summary"]), goal=str(d["goal"]),
            alive=bool(d["alive"]),
            uses=FrozenDict({str(k): int(v) for k, v in dict(d.get("uses") or {}).items()}),
            will=str(d.get("will") or ""), death_note=str(d.get("death_note") or ""),
            jailed=bool(d.get("jailed")),
            night_action=tuple(int(t) for t in d.get("night_action") or ()),
            vote=opt_int("vote"), verdict=None if verdict is None else str(verdict),
            target=opt_int("target"), prisoner=opt_int("prisoner"),
            jail_choice=opt_int("jail_choice"),
            teammates=None if mates is None else tuple(int(s) for s in mates),
            effects=None if effects is None else tuple(str(e) for e in effects))


@dataclass
class View:
    viewer: str
    version: int
    day: int
    phase: str
    phase_seq: int
    roster: Sequence[RosterEntry]
    events: list[dict[str, Any]]
    legal: list[LegalAction]
    you: SelfView | None = None
    trial: dict[str, Any] = field(default_factory=dict)
    result: str | None = None
    winners: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "viewer": self.viewer, "version": self.version, "day": self.day,
            "phase": self.phase, "phase_seq": self.phase_seq,
            "roster": [r.to_dict() for r in self.roster],
            "events": self.events, "legal": [a.to_dict() for a in self.legal],
            "you": None if self.you is None else self.you.to_dict(), "trial": self.trial,
            "result": self.result, "winners": self.winners,
        }

    @classmethod
    def from_dict(cls, data: object) -> View:
        """The inverse of `to_dict` (raises ValueError on a malformed view):
        how a seat played in another process receives what its seat may see."""
        def objects(value: object) -> list[dict[str, Any]]:
            if not isinstance(value, list) or not all(isinstance(x, dict) for x in value):
                raise ValueError("malformed view: expected a list of objects")
            return [dict(x) for x in value]

        if not isinstance(data, dict):
            raise ValueError("a view is an object")
        you, trial = data.get("you"), data.get("trial") or {}
        if not (you is None or isinstance(you, dict)) or not isinstance(trial, dict):
            raise ValueError("malformed view: 'you' and 'trial' are objects")
        try:
            out = cls(
                viewer=str(data["viewer"]), version=int(data["version"]),
                day=int(data["day"]), phase=str(data["phase"]),
                phase_seq=int(data["phase_seq"]),
                roster=[RosterEntry.from_dict(r) for r in objects(data["roster"])],
                events=objects(data["events"]),
                legal=[LegalAction.from_dict(a) for a in data.get("legal", [])],
                you=SelfView.from_dict(you) if you is not None else None, trial=dict(trial),
                result=data.get("result"), winners=[int(w) for w in data.get("winners", [])],
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed view: {exc!r}") from exc
        if not all(type(e.get("v")) is int for e in out.events):
            raise ValueError("malformed view: every event needs an integer 'v'")
        return out


def _roster_entry(p: Player, known: bool, all_known: bool) -> RosterEntry:
    """`all_known`: an omniscient viewer, or the game is over; only then does
    a forged will carry its label (the town reads a forgery as the will, as
    in the game; a label would undo the Forger: docs/rules.md)."""
    death = p.death
    if p.alive or death is None:
        return RosterEntry(p.slot, p.name, p.alive, ROLES[p.role].name if known else None,
                           p.revealed)
    # a dead player shows the role the town saw at death, and the graveyard entry
    return RosterEntry(p.slot, p.name, False, death.role_shown, p.revealed,
                       _graveyard(death, all_known))


# The graveyard entry of each death as viewers see it, made once: a Death is
# never changed once the engine has made it, and every view of the rest of
# the game shows it. Kept with the Death itself, so an entry is only ever
# found again for the same object.
_GRAVEYARD: dict[tuple[int, bool], tuple[Death, Grave]] = {}


def _graveyard(death: Death, all_known: bool) -> Grave:
    key = (id(death), all_known)
    hit = _GRAVEYARD.get(key)
    if hit is None or hit[0] is not death:
        if len(_GRAVEYARD) > 4096:
            _GRAVEYARD.clear()
        hit = _GRAVEYARD[key] = (death, Grave(
            day=death.day, at_night=death.at_night, causes=tuple(death.causes),
            will=death.will, death_notes=tuple(death.death_notes), cleaned=death.cleaned,
            forged=death.forged and all_known))
    return hit[1]


_FACTION_VALUE = {f: f.value for f in Faction}
_PHASE_VALUE = {p: p.value for p in Phase}
# the phases in which a seat's verdict is about the trial under way (`SelfView.verdict`)
_VERDICT_PHASES = frozenset({Phase.JUDGEMENT, Phase.LAST_WORDS})


_new = object.__new__


def _self_view(game: Game, p: Player, teammates: tuple[int, ...] | None) -> SelfView:
    """The seat's card. Built by filling the new object's `__dict__` in one
    step, not through the frozen dataclass's `__init__` (one guarded setattr
    per field, 21 of them): a game builds a card for every view it hands out,
    and that `__init__` alone cost more than the rest of a view. SelfView has
    no `__post_init__`, so the result is the same object `SelfView(...)` makes
    (`tests/test_view_typed.py` checks that it holds exactly the fields).
    `teammates`: the other members of the seat's night-chat team, in slot
    order (None without a team; `_team`)."""
    spec = ROLES[p.role]
    slot = p.slot
    jailor = p.role == "jailor"
    card = _new(SelfView)
    card.__dict__.update(
        slot=slot, name=p.name, role=spec.name, role_key=p.role,
        faction=_FACTION_VALUE[spec.faction], alignment=spec.alignment,
        summary=spec.summary, goal=spec.goal, alive=p.alive,
        uses=FrozenDict(p.uses), will=p.will, death_note=p.death_note,
        jailed=game.prisoner == slot, night_action=tuple(game.night_actions.get(slot, ())),
        vote=game.votes.get(slot),
        verdict=game.verdicts.get(slot) if game.phase in _VERDICT_PHASES else None,
        target=p.target if p.role == "executioner" else None,
        prisoner=game.prisoner if jailor else None,
        jail_choice=game.jail_choice if jailor else None,
        teammates=teammates,
        # your own lasting effects (blackmailed; being doused is not told)
        effects=tuple(sorted(k for k in p.effects if k in SELF_KNOWN_EFFECTS))
        if p.effects else None)
    return card


# What a roster entry shows of a player (alive, revealed, role, name, death),
# read in one C call per player; a death's shown role is read off the Death
# itself (`_rosters`).
_PUBLIC = attrgetter("alive", "revealed", "role", "name", "death")


@dataclass(slots=True)
class _Rosters:
    """One game's rosters as its viewers see them, kept while no seat's
    public state (alive, revealed, role, name, death and its shown role)
    changes: a game hands out a view per seat and turn (some 280 in a
    15-player game) and its roster changes only a dozen times. `entries`
    holds each seat's entry per (slot, role shown or forged label shown,
    dead); `variants` each viewer's whole roster, by (`known`, `all_known`);
    `teams` each night-chat team's members in slot order and `known` the
    roles each viewer may know (`_known_slots`), both read off the roles
    (part of the state)."""

    game: weakref.ref[Game]
    state: tuple[list[tuple[Any, ...]], list[str]]
    entries: dict[tuple[int, bool, bool], RosterEntry] = field(default_factory=dict)
    variants: dict[tuple[frozenset[int] | None, bool], tuple[RosterEntry, ...]] = field(
        default_factory=dict)
    teams: dict[str, tuple[int, ...]] = field(default_factory=dict)
    known: dict[int | str, frozenset[int]] = field(default_factory=dict)


_ROSTERS: dict[int, _Rosters] = {}


def _forget(game_id: int) -> Callable[[weakref.ref[Game]], None]:
    def drop(ref: weakref.ref[Game]) -> None:
        hit = _ROSTERS.get(game_id)
        if hit is not None and hit.game is ref:
            del _ROSTERS[game_id]
    return drop


def _rosters(game: Game) -> _Rosters:
    """The game's `_Rosters`, emptied first if anything a roster shows has
    changed since the last view."""
    public = list(map(_PUBLIC, game.players))
    state = (public, [t[4].role_shown for t in public if t[4] is not None])
    cache = _ROSTERS.get(id(game))
    if cache is None or cache.game() is not game:
        cache = _ROSTERS[id(game)] = _Rosters(weakref.ref(game, _forget(id(game))), state)
    elif cache.state != state:
        cache.state = state
        cache.entries.clear()
        cache.variants.clear()
        cache.teams.clear()
        cache.known.clear()
    return cache


def _team(cache: _Rosters, game: Game, team: str) -> tuple[int, ...]:
    """The players of a night-chat team (Mafia, Vampires), in slot order."""
    members = cache.teams.get(team)
    if members is None:
        members = cache.teams[team] = tuple(
            q.slot for q in game.players if ROLES[q.role].night_chat == team)
    return members


def _known_slots(cache: _Rosters, game: Game, me: Player | None) -> frozenset[int]:
    """Whose role `me` may know while the game runs, besides the dead and a
    revealed Mayor: yourself and, in a team with a night chat (Mafia,
    Vampires), your teammates. Everyone's once the game is over or for an
    omniscient viewer (`view` does not ask then)."""
    if me is None:
        return frozenset()
    team = me.spec.night_chat
    key: int | str = team or me.slot
    known = cache.known.get(key)
    if known is None:
        known = cache.known[key] = frozenset(_team(cache, game, team) if team else (me.slot,))
    return known


def _roster(game: Game, cache: _Rosters, known: frozenset[int] | None,
            all_known: bool) -> tuple[RosterEntry, ...]:
    """Every seat as `_roster_entry` writes it (`known` None: every role is
    known), from the game's `_Rosters` (`_rosters`: entries are frozen, so
    viewers may share them)."""
    key = (known, all_known)
    hit = cache.variants.get(key)
    if hit is not None:
        return hit
    entries = cache.entries
    out: list[RosterEntry] = []
    append = out.append
    for p in game.players:
        death, slot = p.death, p.slot
        if p.alive or death is None:
            alive = p.alive
            seen = (known is None or not alive or slot in known
                    or (p.revealed and p.role == "mayor"))
            entry_key = (slot, seen, False)
            entry = entries.get(entry_key)
            if entry is None:
                entry = entries[entry_key] = RosterEntry(
                    slot, p.name, alive, ROLES[p.role].name if seen else None, p.revealed)
        else:  # as `_roster_entry` writes a dead player
            entry_key = (slot, all_known, True)
            entry = entries.get(entry_key)
            if entry is None:
                entry = entries[entry_key] = RosterEntry(
                    slot, p.name, False, death.role_shown, p.revealed,
                    _graveyard(death, all_known))
        append(entry)
    roster = cache.variants[key] = tuple(out)
    return roster


def view(game: Game, viewer: Viewer, since: int = 0) -> View:
    """Everything `viewer` may know now; `events` holds the visible events after
    version `since` (0: all of them)."""
    kind = viewer.kind
    all_known = kind == "omniscient" or game.phase is Phase.ENDED
    me = game.player(viewer.slot) if kind == "player" and viewer.slot is not None else None
    cache = _rosters(game)
    roster = _roster(game, cache, None if all_known else _known_slots(cache, game, me),
                     all_known)
    tail = game.events[since:]
    if kind == "omniscient":
        events = [project_event(e, viewer) for e in tail]
    elif kind == "player":
        slot = viewer.slot
        events = [e.shared for e in tail
                  if e.audience.kind == "public" or slot in e.audience.players]
    else:
        events = [e.shared for e in tail if e.audience.kind == "public"]
    you = None
    actions: list[LegalAction] = []
    if me is not None:
        team = ROLES[me.role].night_chat
        you = _self_view(game, me, tuple(s for s in _team(cache, game, team) if s != me.slot)
                         if team else None)
        actions = legal_actions(game, me.slot)
    trial: dict[str, Any] = {"trials_today": game.trials, "accused": game.accused}
    if game.phase is Phase.VOTING:
        trial["votes"] = {str(k): v for k, v in sorted(phases.tally(game).items())}
        trial["needed"] = phases.votes_needed(game)
    return View(
        viewer=viewer.label(), version=len(game.events), day=game.day,
        phase=_PHASE_VALUE[game.phase],
        phase_seq=game.phase_seq, roster=roster, events=events, legal=actions, you=you,
        trial=trial, result=game.result, winners=list(game.winners),
    )


def role_card(key: str) -> dict[str, Any]:
    """Public facts about a role (anyone may look a role up)."""
    r = ROLES[key]
    return {"name": r.name, "alignment": r.alignment, "summary": r.summary, "goal": r.goal,
            "attack": r.attack.name.title(), "defense": r.defense.name.title(),
            "unique": r.unique}
