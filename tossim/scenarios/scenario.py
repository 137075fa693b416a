"""Scenario files: small YAML games with expectations, run against the engine.

A scenario fixes the roles seat by seat, optionally jumps to a starting phase
and prior state, plays a list of steps (commands, timeouts, checks) and checks
what each player could see through the projection (`view.visible_events`),
never raw hidden state, for everything that is a message. The format is
documented in `docs/scenarios.md`.

Outside the engine, which stays pure (docs/architecture.md, "Layers"): a
scenario's prior state is set through the engine's setup API
(`engine.setup.apply_prior_state`); YAML with line numbers and the field checks
are `lines.py`, the `deal:` blocks `deal_check.py`. Here:

* `load_string(text, file)` parses YAML (with line numbers) and compiles it
  into `Scenario` objects; structural problems (unknown fields, unknown
  roles, bad phase names ...) are recorded on the scenario with `file:line`.
* `load_file(path)` is the only function here that reads a file.
* `run(scenario)` plays one scenario and returns a `ScenarioResult`.
* `run_paths(paths)` loads and runs files and folders (``*.yaml`` inside).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tossim.engine.commands import (
    Chat,
    Command,
    DayAction,
    Judge,
    NightAction,
    PhaseTimeout,
    Vote,
    Whisper,
    WriteDeathNote,
    WriteWill,
)
from tossim.engine.events import Event
from tossim.engine.legal import IllegalCommand
from tossim.engine.modes import RuleFlags
from tossim.engine.roles import ROLES, find_role
from tossim.engine.rules import apply, new_game
from tossim.engine.setup import PriorState, SetupError, apply_prior_state
from tossim.engine.state import Game, GameConfig, Phase
from tossim.engine.view import OMNISCIENT_VIEWER, PUBLIC_VIEWER, Viewer, view, visible_events
from tossim.scenarios.deal_check import DealSpec, compile_deal, run_deal
from tossim.scenarios.lines import FieldReader, Invalid, LineDict, LineList, LineLoader, kind

FAULTS = ("intention", "premise", "parameter", "expression")
RESULTS = ("town", "mafia", "serial_killer", "arsonist", "werewolf", "vampire", "draw",
           "none")
SHERIFF_RESULTS = ("suspicious", "not_suspicious", "none")
MAX_UNTIL = 1000  # PhaseTimeouts an `until` step may send before giving up


class ScenarioError(ValueError):
    """A scenario file that cannot be read at all (YAML syntax, wrong top level)."""


# ---- compiled scenario -------------------------------------------------------------------

_PHASE_WORDS = {
    "discussion": Phase.DISCUSSION, "voting": Phase.VOTING, "defense": Phase.DEFENSE,
    "judgement": Phase.JUDGEMENT, "judgment": Phase.JUDGEMENT,
    "last words": Phase.LAST_WORDS, "last_words": Phase.LAST_WORDS,
}
_PHASE_RE = re.compile(r"^(day|night)\s+(\d+)(?:\s+(.+))?$")
# Position of each phase inside a day, for "is this before or after" questions.
_PHASE_ORDER = {Phase.DAY1: 0, Phase.DISCUSSION: 1, Phase.VOTING: 2, Phase.DEFENSE: 3,
                Phase.JUDGEMENT: 4, Phase.LAST_WORDS: 5, Phase.NIGHT: 9}


@dataclass(frozen=True)
class PhaseSpec:
    """A point of the game: ("day 1"), ("day 2 voting"), ("night 3"), ("ended")."""

    day: int
    phase: Phase

    @staticmethod
    def parse(text: object) -> PhaseSpec:
        if not isinstance(text, str):
            raise ValueError(f"a phase is written like 'day 2 voting' or 'night 1', not {text!r}")
        t = " ".join(text.strip().lower().split())
        if t == "ended":
            return PhaseSpec(0, Phase.ENDED)
        m = _PHASE_RE.match(t)
        if m is None:
            raise ValueError(f"unknown phase {text!r}: use 'day 1', 'night N', 'day N', "
                             f"'day N voting' (defense, judgement, last words) or 'ended'")
        word, day, rest = m.group(1), int(m.group(2)), m.group(3)
        if day < 1:
            raise ValueError(f"unknown phase {text!r}: days start at 1")
        if word == "night":
            if rest:
                raise ValueError(f"unknown phase {text!r}: a night has no sub-phases")
            return PhaseSpec(day, Phase.NIGHT)
        if day == 1:
            if rest and rest != "day1":
                raise ValueError(f"unknown phase {text!r}: Day 1 has no {rest}")
            return PhaseSpec(1, Phase.DAY1)
        if rest is None:
            return PhaseSpec(day, Phase.DISCUSSION)
        if rest not in _PHASE_WORDS:
            raise ValueError(f"unknown phase {text!r}: a day phase is one of discussion, "
                             f"voting, defense, judgement, last words")
        return PhaseSpec(day, _PHASE_WORDS[rest])

    @staticmethod
    def of(game: Game) -> PhaseSpec:
        if game.phase is Phase.ENDED:
            return PhaseSpec(0, Phase.ENDED)
        return PhaseSpec(game.day, game.phase)

    def position(self) -> tuple[int, int]:
        if self.phase is Phase.ENDED:
            return (1 << 30, 0)
        return (self.day, _PHASE_ORDER[self.phase])

    def __str__(self) -> str:
        if self.phase is Phase.ENDED:
            return "ended"
        if self.phase is Phase.NIGHT:
            return f"night {self.day}"
        if self.phase is Phase.DAY1:
            return "day 1"
        return f"day {self.day} {self.phase.value.replace('_', ' ')}"


@dataclass(frozen=True)
class Matcher:
    """Which events count as "this message": every given field must match."""

    key: str | None = None
    text: str | None = None
    text_contains: str | None = None
    data: dict[str, Any] | None = None
    day: int | None = None
    phase: str | None = None
    count: int | None = None  # exactly this many matching events (default: at least one)

    def matches(self, e: Event) -> bool:
        if self.key is not None and e.key != self.key:
            return False
        if self.text is not None and e.text != self.text:
            return False
        if self.text_contains is not None and self.text_contains not in e.text:
            return False
        if self.day is not None and e.day != self.day:
            return False
        if self.phase is not None and e.phase != self.phase:
            return False
        if self.data is not None:
            for k, v in self.data.items():
                if k not in e.data or not _same(e.data[k], v):
                    return False
        return True

    def describe(self) -> str:
        parts = []
        if self.key is not None:
            parts.append(self.key)
        if self.text is not None:
            parts.append(f"text {self.text!r}")
        if self.text_contains is not None:
            parts.append(f"text containing {self.text_contains!r}")
        if self.data is not None:
            parts.append(f"data {self.data!r}")
        if self.day is not None:
            parts.append(f"on day {self.day}")
        if self.phase is not None:
            parts.append(f"in phase {self.phase}")
        if self.count is not None:
            parts.append(f"x{self.count}")
        return " ".join(parts) or "(any message)"


def _same(actual: Any, expected: Any) -> bool:
    if isinstance(actual, list | tuple) and isinstance(expected, list | tuple):
        return len(actual) == len(expected) and all(
            _same(a, b) for a, b in zip(actual, expected, strict=True))
    if isinstance(actual, dict) and isinstance(expected, dict):
        return actual.keys() == expected.keys() and all(
            _same(actual[k], expected[k]) for k in actual)
    return bool(actual == expected)


@dataclass(frozen=True)
class Check:
    """One atomic expectation, with the line it was written on."""

    line: int
    kind: str
    slot: int | None = None
    value: Any = None


@dataclass(frozen=True)
class Step:
    line: int
    kind: str  # commands | timeout | until | illegal | expect
    commands: tuple[Command, ...] = ()
    count: int = 1
    until: PhaseSpec | None = None
    fault: str | None = None
    reason_contains: str | None = None
    checks: tuple[Check, ...] = ()


@dataclass
class Scenario:
    name: str
    file: str
    line: int
    roles: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    flags: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    start: PhaseSpec = PhaseSpec(1, Phase.DAY1)
    state: dict[str, Any] = field(default_factory=dict)
    state_line: int = 0
    steps: list[Step] = field(default_factory=list)
    expect: tuple[Check, ...] = ()
    covers: tuple[str, ...] = ()
    notes: str = ""
    errors: list[str] = field(default_factory=list)
    # A mode-dealing check (deal_check.py) instead of a game.
    deal: DealSpec | None = None


@dataclass
class ScenarioResult:
    name: str
    file: str
    line: int
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


# ---- compiling ---------------------------------------------------------------------------

TOP_FIELDS = ("name", "notes", "covers", "seed", "flags", "players", "start", "state",
              "steps", "expect", "deal")
STATE_FIELDS = ("dead", "uses", "revealed_mayor", "framed", "executioner_target", "wills",
                "death_notes", "guilty_conscience")
# Prior state of effects: see `_effect_state` / `engine.setup.apply_prior_state`.
EFFECT_STATE_FIELDS = ("jailed", "doused", "blackmailed", "disguised", "forged_will",
                       "trials_today")
EXPECT_FIELDS = ("dead", "alive", "phase", "messages", "no_messages", "public", "no_public",
                 "investigator", "sheriff", "roles", "uses", "causes", "result", "winners")
# Negative, goal and graveyard checks see `_extra_check`.
EXTRA_EXPECT_FIELDS = ("not_attacked", "won", "lost", "graveyard", "consigliere")
GRAVEYARD_FIELDS = ("role", "cleaned", "will", "forged", "death_notes")
# message keys that tell a player it was attacked last night
ATTACK_KEYS = ("death.", "night.healed", "night.guarded", "night.vest_saved",
               "night.defense_held", "night.jail_attack", "night.bodyguard_died")
MATCHER_FIELDS = ("key", "text", "text_contains", "data", "day", "phase", "night", "count")
# step word -> (required fields, optional fields)
COMMAND_STEPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "night": (("actor",), ("targets", "target")),
    "vote": (("actor",), ("target",)),
    "judge": (("actor", "verdict"), ()),
    "jail": (("actor",), ("target",)),
    "seance": (("actor",), ("target",)),
    "reveal": (("actor",), ()),
    "chat": (("actor", "text"), ("channel",)),
    "whisper": (("actor", "target", "text"), ()),
    "will": (("actor", "text"), ()),
    "death_note": (("actor", "text"), ()),
}
MACRO_STEPS = ("votes", "verdicts")
OTHER_STEPS = ("timeout", "until", "illegal", "expect")


class _Compiler(FieldReader):
    # -- the scenario --
    def scenario(self, doc: Any, line: int) -> Scenario:
        if not isinstance(doc, LineDict):
            self.err(line, f"a scenario must be a mapping, not {kind(doc)}")
            return Scenario(name=f"{self.file}:{line}", file=self.file, line=line,
                            errors=list(self.errors))
        sc = Scenario(name=f"{self.file}:{doc.line}", file=self.file, line=doc.line)
        self.unknown_fields(doc, TOP_FIELDS, "a scenario")
        self._guard(lambda: self._header(doc, sc))
        if "deal" in doc:
            self._guard(lambda: self._deal(doc, sc))
        elif "players" not in doc:
            self.err(doc.line, "a scenario needs a `players` list")
        else:
            self._guard(lambda: self._players(doc["players"], doc.line_of("players"), sc))
        if self.roles:  # everything below refers to players
            if "start" in doc:
                self._guard(lambda: self._start(doc["start"], doc.line_of("start"), sc))
            if "state" in doc:
                self._guard(lambda: self._state(doc["state"], doc.line_of("state"), sc))
            if "steps" in doc:
                self._guard(lambda: self._steps(doc["steps"], doc.line_of("steps"), sc))
            if "expect" in doc:
                sc.expect = tuple(self._checks_guarded(doc["expect"], doc.line_of("expect")))
        sc.errors = list(self.errors)
        return sc

    def _deal(self, doc: LineDict, sc: Scenario) -> None:
        for name in ("players", "start", "state", "steps"):
            if name in doc:
                self.err(doc.line_of(name), f"a `deal` scenario has no `{name}`")
        block = self.mapping(doc["deal"], doc.line_of("deal"), "deal")
        expect = self.mapping(doc["expect"], doc.line_of("expect"), "expect") \
            if "expect" in doc else None
        sc.deal = compile_deal(self, block, expect)

    def _guard(self, fn: Callable[[], None]) -> None:
        with contextlib.suppress(Invalid):
            fn()

    def _header(self, doc: LineDict, sc: Scenario) -> None:
        if "name" not in doc:
            self.err(doc.line, "a scenario needs a `name`")
        else:
            sc.name = self.text(doc["name"], doc.line_of("name"), "name").strip()
        if "notes" in doc:
            sc.notes = self.text(doc["notes"], doc.line_of("notes"), "notes")
        if "seed" in doc:
            sc.seed = self.integer(doc["seed"], doc.line_of("seed"), "seed")
        if "covers" in doc:
            items = self.sequence(doc["covers"], doc.line_of("covers"), "covers")
            sc.covers = tuple(self.text(x, items.line_at(i), "covers")
                              for i, x in enumerate(items))
        if "flags" in doc:
            flags = self.mapping(doc["flags"], doc.line_of("flags"), "flags")
            try:
                RuleFlags.from_dict(dict(flags))
            except (ValueError, TypeError) as exc:
                self.err(flags.line, f"flags: {exc}")
                raise Invalid from None
            sc.flags = dict(flags)

    def _players(self, value: Any, line: int, sc: Scenario) -> None:
        items = self.sequence(value, line, "players")
        if not items:
            self.err(line, "players must not be empty")
            raise Invalid
        roles: list[str] = []
        names: list[str | None] = []
        ok = True
        for i, item in enumerate(items):
            at = items.line_at(i)
            try:
                if isinstance(item, LineDict):
                    self.unknown_fields(item, ("name", "role"), "a player")
                    if "role" not in item:
                        self.err(at, "a player needs a `role`")
                        raise Invalid
                    roles.append(self.role_key(item["role"], item.line_of("role"), "role"))
                    names.append(self.text(item["name"], item.line_of("name"), "name").strip()
                                 if "name" in item else None)
                else:
                    roles.append(self.role_key(item, at, f"player {i + 1}"))
                    names.append(None)
            except Invalid:
                ok = False
        if not ok:
            raise Invalid
        full = [n if n else f"Player {i}" for i, n in enumerate(names, start=1)]
        seen: dict[str, int] = {}
        for i, n in enumerate(full, start=1):
            if n.lower() in seen:
                self.err(items.line_at(i - 1), f"player name {n!r} is used twice")
                raise Invalid
            if n.isdigit():
                self.err(items.line_at(i - 1), f"player name {n!r} looks like a seat number")
                raise Invalid
            seen[n.lower()] = i
        self.roles = roles
        self.names = seen
        self.full_names = full
        sc.roles = tuple(roles)
        sc.names = tuple(full) if any(names) else ()

    def _start(self, value: Any, line: int, sc: Scenario) -> None:
        try:
            spec = PhaseSpec.parse(value)
        except ValueError as exc:
            self.err(line, f"start: {exc}")
            raise Invalid from None
        if spec.phase not in (Phase.DAY1, Phase.NIGHT, Phase.DISCUSSION, Phase.VOTING):
            self.err(line, f"start: {value!r} is not a start point; use 'day 1', 'night N', "
                           f"'day N' or 'day N voting'")
            raise Invalid
        sc.start = spec

    def _state(self, value: Any, line: int, sc: Scenario) -> None:
        state = self.mapping(value, line, "state")
        self.unknown_fields(state, (*STATE_FIELDS, *EFFECT_STATE_FIELDS), "state")
        sc.state_line = state.line
        out: dict[str, Any] = {}
        for key in STATE_FIELDS:
            if key not in state:
                continue
            at = state.line_of(key)
            raw = state[key]
            try:
                if key in ("dead", "framed", "revealed_mayor", "guilty_conscience"):
                    slots = self.refs(raw, at, f"state.{key}")
                    need = {"revealed_mayor": "mayor", "guilty_conscience": "vigilante"}.get(key)
                    for slot, where in slots:
                        if need and self.roles[slot - 1] != need:
                            self.err(where, f"state.{key}: player {slot} is a "
                                            f"{ROLES[self.roles[slot - 1]].name}, not a "
                                            f"{ROLES[need].name}")
                    out[key] = [s for s, _ in slots]
                elif key == "uses":
                    uses: dict[int, dict[str, int]] = {}
                    for slot, item, where in self.per_player(raw, at, "state.uses"):
                        m = self.mapping(item, where, f"state.uses for player {slot}")
                        known = ROLES[self.roles[slot - 1]].uses
                        for use, n in m.items():
                            if use not in known:
                                self.err(m.line_of(use),
                                         f"state.uses: a {ROLES[self.roles[slot - 1]].name} "
                                         f"has no {use!r} (has: {', '.join(known) or 'none'})")
                                continue
                            uses.setdefault(slot, {})[use] = self.integer(
                                n, m.line_of(use), f"state.uses.{use}")
                    out[key] = uses
                elif key == "executioner_target":
                    targets: dict[int, int] = {}
                    for slot, item, where in self.per_player(raw, at, key):
                        if self.roles[slot - 1] != "executioner":
                            self.err(where, f"state.executioner_target: player {slot} is not "
                                            f"an Executioner")
                            continue
                        targets[slot] = self.ref(item, where, "state.executioner_target")
                    out[key] = targets
                else:  # wills, death_notes
                    texts: dict[int, str] = {}
                    for slot, item, where in self.per_player(raw, at, f"state.{key}"):
                        texts[slot] = self.text(item, where, f"state.{key}")
                    out[key] = texts
            except Invalid:
                continue
        self._effect_state(state, out)
        sc.state = out

    def _effect_state(self, state: LineDict, out: dict[str, Any]) -> None:
        """Prior effects: jailed / doused / blackmailed (lists of players),
        disguised (player -> role), forged_will (Forger -> its forgery),
        trials_today (a number)."""
        for key in EFFECT_STATE_FIELDS:
            if key not in state:
                continue
            at, raw = state.line_of(key), state[key]
            try:
                if key in ("jailed", "doused", "blackmailed"):
                    out[key] = [s for s, _ in self.refs(raw, at, f"state.{key}")]
                    if key == "jailed" and len(out[key]) > 1:
                        self.err(at, "state.jailed: the Jailor jails one player")
                elif key == "disguised":
                    out[key] = {slot: self.role_key(item, where, "state.disguised")
                                for slot, item, where in self.per_player(raw, at, key)}
                elif key == "forged_will":
                    out[key] = {slot: self.text(item, where, "state.forged_will")
                                for slot, item, where in self.per_player(raw, at, key)}
                else:
                    out[key] = self.integer(raw, at, "state.trials_today")
            except Invalid:
                continue

    # -- steps --
    def _steps(self, value: Any, line: int, sc: Scenario) -> None:
        items = self.sequence(value, line, "steps")
        for i, item in enumerate(items):
            at = items.line_at(i)
            try:
                sc.steps.append(self._step(item, at))
            except Invalid:
                continue

    def _step(self, item: Any, line: int) -> Step:
        if item == "timeout":
            return Step(line, "timeout")
        if not isinstance(item, LineDict) or len(item) != 1:
            known = ", ".join([*COMMAND_STEPS, *MACRO_STEPS, *OTHER_STEPS])
            self.err(line, f"a step is a one-key mapping ({known}) or the word timeout, "
                           f"not {item!r}")
            raise Invalid
        (kind, arg), = item.items()
        at = item.line_of(kind)
        if kind == "timeout":
            n = 1 if arg is None else self.integer(arg, at, "timeout", minimum=1)
            return Step(line, "timeout", count=n)
        if kind == "until":
            try:
                return Step(line, "until", until=PhaseSpec.parse(arg))
            except ValueError as exc:
                self.err(at, f"until: {exc}")
                raise Invalid from None
        if kind == "expect":
            return Step(line, "expect", checks=tuple(self._checks_guarded(arg, at)))
        if kind == "illegal":
            return self._illegal(arg, at)
        if kind in MACRO_STEPS:
            return Step(line, "commands", commands=self._macro(kind, arg, at))
        if kind in COMMAND_STEPS:
            return Step(line, "commands", commands=(self._command(kind, arg, at),))
        known = ", ".join([*COMMAND_STEPS, *MACRO_STEPS, *OTHER_STEPS])
        self.err(at, f"unknown step {kind!r} (known: {known})")
        raise Invalid

    def _illegal(self, arg: Any, line: int) -> Step:
        m = self.mapping(arg, line, "illegal")
        kinds = [k for k in m if k in COMMAND_STEPS]
        self.unknown_fields(m, (*COMMAND_STEPS, "fault", "reason_contains"), "illegal")
        if len(kinds) != 1:
            self.err(m.line, f"illegal needs exactly one command ({', '.join(COMMAND_STEPS)})")
            raise Invalid
        kind = kinds[0]
        cmd = self._command(kind, m[kind], m.line_of(kind), strict=False)
        fault = None
        if "fault" in m:
            fault = self.text(m["fault"], m.line_of("fault"), "fault")
            if fault not in FAULTS:
                self.err(m.line_of("fault"), f"fault must be one of {', '.join(FAULTS)}")
                raise Invalid
        reason = None
        if "reason_contains" in m:
            reason = self.text(m["reason_contains"], m.line_of("reason_contains"),
                               "reason_contains")
        return Step(line, "illegal", commands=(cmd,), fault=fault, reason_contains=reason)

    def _command(self, kind: str, arg: Any, line: int, strict: bool = True) -> Command:
        required, optional = COMMAND_STEPS[kind]
        if kind == "reveal" and not isinstance(arg, LineDict):
            arg = _single("actor", arg, line)
        m = self.mapping(arg, line, kind)
        self.unknown_fields(m, (*required, *optional), kind)
        missing = [f for f in required if f not in m]
        if missing:
            self.err(m.line, f"{kind} needs {', '.join(missing)}")
            raise Invalid

        def who(name: str) -> int:
            return self.ref(m[name], m.line_of(name), f"{kind}.{name}", strict=strict)

        def maybe(name: str) -> int | None:
            return None if m.get(name) is None else who(name)

        def words(name: str) -> str:
            return self.text(m[name], m.line_of(name), f"{kind}.{name}")

        actor = who("actor")
        if kind == "night":
            if "targets" in m and "target" in m:
                self.err(m.line, "night takes `targets` or `target`, not both")
                raise Invalid
            if "target" in m:
                targets: tuple[int, ...] = () if m["target"] is None else (who("target"),)
            elif m.get("targets") is not None:
                seq = self.sequence(m["targets"], m.line_of("targets"), "night.targets")
                targets = tuple(self.ref(x, seq.line_at(i), "night.targets", strict=strict)
                                for i, x in enumerate(seq))
            else:
                targets = ()
            return NightAction(actor, targets)
        if kind == "vote":
            return Vote(actor, maybe("target"))
        if kind == "judge":
            return Judge(actor, words("verdict"))
        if kind in ("jail", "seance"):
            return DayAction(actor, kind, maybe("target"))
        if kind == "reveal":
            return DayAction(actor, "reveal")
        if kind == "chat":
            channel = None if m.get("channel") is None else words("channel")
            return Chat(actor, words("text"), channel)
        if kind == "whisper":
            return Whisper(actor, who("target"), words("text"))
        if kind == "will":
            return WriteWill(actor, words("text"))
        return WriteDeathNote(actor, words("text"))

    def _macro(self, kind: str, arg: Any, line: int) -> tuple[Command, ...]:
        m = self.mapping(arg, line, kind)
        if kind == "votes":
            self.unknown_fields(m, ("target", "voters"), "votes")
            if "target" not in m or "voters" not in m:
                self.err(m.line, "votes needs target and voters")
                raise Invalid
            target = self.ref(m["target"], m.line_of("target"), "votes.target")
            voters = self.refs(m["voters"], m.line_of("voters"), "votes.voters")
            return tuple(Vote(v, target) for v, _ in voters)
        self.unknown_fields(m, ("guilty", "innocent", "abstain"), "verdicts")
        out: list[Command] = []
        for verdict in ("guilty", "innocent", "abstain"):
            if verdict in m:
                for v, _ in self.refs(m[verdict], m.line_of(verdict), f"verdicts.{verdict}"):
                    out.append(Judge(v, verdict))
        return tuple(out)

    # -- expectations --
    def _checks_guarded(self, value: Any, line: int) -> list[Check]:
        try:
            return self._checks(value, line)
        except Invalid:
            return []

    def _checks(self, value: Any, line: int) -> list[Check]:
        m = self.mapping(value, line, "expect")
        self.unknown_fields(m, (*EXPECT_FIELDS, *EXTRA_EXPECT_FIELDS), "expect")
        out: list[Check] = []
        for key in EXTRA_EXPECT_FIELDS:
            if key in m:
                try:
                    out.extend(self._extra_check(key, m[key], m.line_of(key)))
                except Invalid:
                    continue
        for key in EXPECT_FIELDS:
            if key not in m:
                continue
            at = m.line_of(key)
            raw = m[key]
            try:
                out.extend(self._check(key, raw, at))
            except Invalid:
                continue
        out.sort(key=lambda c: c.line)  # report failures in file order
        return out

    def _check(self, key: str, raw: Any, at: int) -> list[Check]:
        if key in ("dead", "alive"):
            return [Check(where, key, slot) for slot, where in self.refs(raw, at, key)]
        if key == "phase":
            try:
                return [Check(at, key, value=PhaseSpec.parse(raw))]
            except ValueError as exc:
                self.err(at, f"phase: {exc}")
                raise Invalid from None
        if key == "result":
            result = "none" if raw is None else raw
            if result not in RESULTS:
                self.err(at, f"result must be one of {', '.join(RESULTS)}, not {raw!r}")
                raise Invalid
            return [Check(at, key, value=None if result == "none" else result)]
        if key == "winners":
            return [Check(at, key, value=frozenset(s for s, _ in self.refs(raw, at, key)))]
        if key in ("public", "no_public"):
            items = self.sequence(raw, at, key)
            return [Check(items.line_at(i), key,
                          value=self._matcher(x, items.line_at(i), negative=key == "no_public"))
                    for i, x in enumerate(items)]
        out: list[Check] = []
        for slot, item, where in self.per_player(raw, at, key):
            try:
                out.extend(self._player_check(key, slot, item, where))
            except Invalid:
                continue
        return out

    def _extra_check(self, key: str, raw: Any, at: int) -> list[Check]:
        """not_attacked: [X] (no attack message last night); won / lost: [X]
        (X is / is not among the winners); consigliere: {X: Role} (X's last
        Consigliere result); graveyard: {X: {role, cleaned, will, forged,
        death_notes}} read from the public view's roster."""
        if key in ("not_attacked", "won", "lost"):
            return [Check(where, key, slot) for slot, where in self.refs(raw, at, key)]
        out: list[Check] = []
        for slot, item, where in self.per_player(raw, at, key):
            if key == "consigliere":
                out.append(Check(where, key, slot, self.role_key(item, where, key)))
                continue
            m = self.mapping(item, where, f"graveyard for player {slot}")
            self.unknown_fields(m, GRAVEYARD_FIELDS, "graveyard")
            for field_name in GRAVEYARD_FIELDS:
                if field_name in m:
                    value = m[field_name]
                    if field_name == "death_notes":
                        value = tuple(self.sequence(value, m.line_of(field_name),
                                                    "death_notes"))
                    out.append(Check(m.line_of(field_name), key, slot, (field_name, value)))
        return out

    def _player_check(self, key: str, slot: int, item: Any, where: int) -> list[Check]:
        if key in ("messages", "no_messages"):
            items = self.sequence(item, where, f"{key} for player {slot}")
            return [Check(items.line_at(i), key, slot,
                          self._matcher(x, items.line_at(i), negative=key == "no_messages"))
                    for i, x in enumerate(items)]
        if key == "investigator":
            if item == "none" or item is None:
                return [Check(where, key, slot, None)]
            items = self.sequence(item, where, "investigator")
            return [Check(where, key, slot,
                          frozenset(self.text(x, where, "investigator").strip().lower()
                                    for x in items))]
        if key == "sheriff":
            value = "none" if item is None else item
            if value not in SHERIFF_RESULTS:
                self.err(where, f"sheriff must be one of {', '.join(SHERIFF_RESULTS)}, "
                                f"not {item!r}")
                raise Invalid
            return [Check(where, key, slot, None if value == "none" else value)]
        if key == "roles":
            return [Check(where, key, slot, self.role_key(item, where, "roles"))]
        if key == "uses":
            m = self.mapping(item, where, f"uses for player {slot}")
            return [Check(m.line_of(u), key, slot,
                          (self.text(u, m.line_of(u), "uses"),
                           self.integer(n, m.line_of(u), f"uses.{u}")))
                    for u, n in m.items()]
        # causes
        items = self.sequence(item, where, "causes")
        return [Check(where, key, slot,
                      tuple(sorted(self.text(x, where, "causes") for x in items)))]

    def _matcher(self, raw: Any, line: int, negative: bool) -> Matcher:
        if isinstance(raw, str):
            return Matcher(key=raw)
        m = self.mapping(raw, line, "a message")
        self.unknown_fields(m, MATCHER_FIELDS, "a message")
        if not m:
            self.err(line, "an empty message pattern matches everything")
            raise Invalid
        if negative and "count" in m:
            self.err(m.line_of("count"), "count has no meaning in no_messages/no_public")
            raise Invalid
        if "night" in m and ("day" in m or "phase" in m):
            self.err(m.line_of("night"), "use `night: N` or `day`/`phase`, not both")
            raise Invalid

        def opt_text(name: str) -> str | None:
            return None if name not in m else self.text(m[name], m.line_of(name), name)

        data = None
        if "data" in m:
            data = dict(self.mapping(m["data"], m.line_of("data"), "data"))
        day = phase = None
        if "night" in m:
            day, phase = self.integer(m["night"], m.line_of("night"), "night", 1), "night"
        if "day" in m:
            day = self.integer(m["day"], m.line_of("day"), "day", 1)
        if "phase" in m:
            phase = self.text(m["phase"], m.line_of("phase"), "phase").replace(" ", "_")
            if phase not in {p.value for p in Phase}:
                self.err(m.line_of("phase"), f"unknown event phase {phase!r} "
                                             f"(one of {', '.join(p.value for p in Phase)})")
                raise Invalid
        count = None
        if "count" in m:
            count = self.integer(m["count"], m.line_of("count"), "count")
        return Matcher(key=opt_text("key"), text=opt_text("text"),
                       text_contains=opt_text("text_contains"), data=data, day=day,
                       phase=phase, count=count)


def _single(name: str, value: Any, line: int) -> LineDict:
    out = LineDict({name: value})
    out.line = line
    out.key_lines = {name: line}
    return out


# ---- loading -----------------------------------------------------------------------------

def load_string(text: str, file: str = "<string>") -> list[Scenario]:
    """Parse scenario YAML: one scenario mapping, a list of them, or several
    YAML documents. Problems inside a scenario are recorded on it (its
    `errors`, reported by `run`); a file that is not YAML raises ScenarioError."""
    try:
        docs = list(yaml.load_all(text, Loader=LineLoader))  # noqa: S506 - safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{file}:{mark.line + 1}" if mark is not None else file
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScenarioError(f"{where}: invalid YAML: {problem}") from None
    out: list[Scenario] = []
    for doc in docs:
        if doc is None:
            continue
        if isinstance(doc, LineList):
            for i, item in enumerate(doc):
                out.append(_Compiler(file).scenario(item, doc.line_at(i)))
        elif isinstance(doc, LineDict):
            out.append(_Compiler(file).scenario(doc, doc.line))
        else:
            raise ScenarioError(f"{file}:1: a scenario file holds a scenario mapping or a "
                                f"list of them, not {kind(doc)}")
    return out


def load_file(path: str | Path) -> list[Scenario]:
    """Read one scenario file (the only I/O in this module)."""
    p = Path(path)
    return load_string(p.read_text(encoding="utf-8"), str(path))


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given; folders become their ``*.yaml`` / ``*.yml`` files, recursively, sorted."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.suffix in (".yaml", ".yml")
                              and f.is_file()))
        elif p.exists():
            out.append(p)
        else:
            raise FileNotFoundError(f"no such scenario file or folder: {p}")
    return out


def run_paths(paths: Iterable[str | Path]) -> list[ScenarioResult]:
    """Load and run every scenario in these files and folders. A file that
    cannot be parsed gives one failed result named after the file."""
    results: list[ScenarioResult] = []
    for path in expand_paths(paths):
        try:
            scenarios = load_file(path)
        except ScenarioError as exc:
            results.append(ScenarioResult(str(path), str(path), 0, [str(exc)]))
            continue
        results.extend(run(sc) for sc in scenarios)
    return results


# ---- running -----------------------------------------------------------------------------

class _Stop(Exception):
    """Internal: the scenario cannot go on (a step failed and changed nothing useful)."""


class _Runner:
    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.result = ScenarioResult(sc.name, sc.file, sc.line)
        self.game: Game | None = None

    @property
    def g(self) -> Game:
        assert self.game is not None
        return self.game

    def fail(self, line: int, message: str) -> None:
        self.result.failures.append(f"{self.sc.file}:{line}: {message}")

    def stop(self, line: int, message: str) -> None:
        self.fail(line, message)
        raise _Stop

    def who(self, slot: int) -> str:
        p = self.g.player(slot)
        return f"player {slot} ({p.name}, {p.spec.name})"

    def apply(self, line: int, cmd: Command) -> None:
        try:
            apply(self.g, cmd)
        except IllegalCommand as exc:
            self.stop(line, f"{_describe(cmd)} was rejected ({exc.fault}): {exc.reason} "
                            f"[at {PhaseSpec.of(self.g)}]")
        except Exception as exc:  # an engine bug: report it where it happened
            self.stop(line, f"engine error on {_describe(cmd)}: {type(exc).__name__}: {exc}")

    # -- the run --
    def run(self) -> ScenarioResult:
        sc = self.sc
        if sc.errors:
            self.result.failures.extend(sc.errors)
            return self.result
        if sc.deal is not None:
            run_deal(sc.deal, sc.seed, sc.flags, self.fail)
            return self.result
        try:
            self.setup()
            for step in sc.steps:
                self.step(step)
            for check in sc.expect:
                self.check(check)
        except _Stop:
            pass
        return self.result

    def setup(self) -> None:
        sc = self.sc
        config = GameConfig(players=len(sc.roles), seed=sc.seed, roles=sc.roles,
                            names=sc.names, flags=dict(sc.flags))
        try:
            self.game = new_game(config)
        except ValueError as exc:
            self.stop(sc.line, f"cannot create the game: {exc}")
        g = self.g
        target = sc.start
        alive = len(g.living())
        for _ in range(MAX_UNTIL):
            here = PhaseSpec.of(g)
            if here == target:
                break
            if g.ended or here.position() > target.position():
                self.stop(sc.line, f"start {target} cannot be reached by timeouts alone "
                                   f"(got to {here})")
            self.apply(sc.line, PhaseTimeout())
            if len(g.living()) != alive:
                self.stop(sc.line, f"reaching start {target} killed someone")
        try:
            apply_prior_state(g, PriorState(**self.sc.state))
        except SetupError as exc:
            self.stop(self.sc.state_line, f"state.{exc}")

    def step(self, step: Step) -> None:
        g = self.g
        if step.kind == "commands":
            for cmd in step.commands:
                self.apply(step.line, cmd)
        elif step.kind == "timeout":
            for i in range(step.count):
                if g.ended:
                    self.stop(step.line, f"timeout {i + 1} of {step.count}: the game is "
                                         f"already over (result {g.result})")
                self.apply(step.line, PhaseTimeout())
        elif step.kind == "until":
            self.until(step)
        elif step.kind == "illegal":
            self.illegal(step)
        else:
            for check in step.checks:
                self.check(check)

    def until(self, step: Step) -> None:
        g = self.g
        target = step.until
        assert target is not None
        for _ in range(MAX_UNTIL):
            here = PhaseSpec.of(g)
            if here == target:
                return
            if g.ended:
                self.stop(step.line, f"until {target}: the game ended first "
                                     f"(result {g.result}, on day {g.day})")
            if here.position() > target.position():
                self.stop(step.line, f"until {target}: already past it (now {here})")
            self.apply(step.line, PhaseTimeout())
        self.stop(step.line, f"until {target}: not reached after {MAX_UNTIL} timeouts")

    def illegal(self, step: Step) -> None:
        cmd = step.commands[0]
        try:
            apply(self.g, cmd)
        except IllegalCommand as exc:
            if step.fault is not None and exc.fault != step.fault:
                self.fail(step.line, f"{_describe(cmd)} was rejected with fault {exc.fault!r}, "
                                     f"expected {step.fault!r} (reason: {exc.reason})")
            if step.reason_contains is not None and step.reason_contains not in exc.reason:
                self.fail(step.line, f"{_describe(cmd)} was rejected, but the reason "
                                     f"{exc.reason!r} does not contain "
                                     f"{step.reason_contains!r}")
            return
        except Exception as exc:
            self.stop(step.line, f"engine error on {_describe(cmd)}: "
                                 f"{type(exc).__name__}: {exc}")
        self.stop(step.line, f"{_describe(cmd)} was accepted, but it should have been "
                             f"rejected [at {PhaseSpec.of(self.g)}]")

    # -- checks --
    def check(self, c: Check) -> None:
        problem = getattr(self, f"check_{c.kind}")(c)
        if problem:
            self.fail(c.line, problem)

    def check_dead(self, c: Check) -> str | None:
        assert c.slot is not None
        return f"{self.who(c.slot)} expected dead; is alive" if self.g.player(c.slot).alive \
            else None

    def check_alive(self, c: Check) -> str | None:
        assert c.slot is not None
        p = self.g.player(c.slot)
        if p.alive:
            return None
        causes = ", ".join(p.death.causes) if p.death else "?"
        return f"{self.who(c.slot)} expected alive; is dead ({causes or 'state'})"

    def check_phase(self, c: Check) -> str | None:
        here = PhaseSpec.of(self.g)
        if here == c.value:
            return None
        extra = f", result {self.g.result}" if self.g.ended else ""
        return f"expected phase {c.value}; now {here}{extra}"

    def check_result(self, c: Check) -> str | None:
        if self.g.result == c.value:
            return None
        return f"expected result {c.value or 'none'}; got {self.g.result or 'none'} " \
               f"(now {PhaseSpec.of(self.g)})"

    def check_winners(self, c: Check) -> str | None:
        got = frozenset(self.g.winners)
        if got == c.value:
            return None
        return f"expected winners {sorted(c.value)}; got {sorted(got)} " \
               f"(result {self.g.result or 'none'})"

    def check_roles(self, c: Check) -> str | None:
        assert c.slot is not None
        p = self.g.player(c.slot)
        if p.role == c.value:
            return None
        return f"player {c.slot} ({p.name}) expected role {ROLES[c.value].name}; " \
               f"is {p.spec.name}"

    def check_uses(self, c: Check) -> str | None:
        assert c.slot is not None
        use, n = c.value
        p = self.g.player(c.slot)
        if use not in p.uses:
            return f"{self.who(c.slot)} has no use counter {use!r} " \
                   f"(has: {', '.join(p.uses) or 'none'})"
        if p.uses[use] == n:
            return None
        return f"{self.who(c.slot)} expected {use} = {n}; is {p.uses[use]}"

    def check_causes(self, c: Check) -> str | None:
        assert c.slot is not None
        p = self.g.player(c.slot)
        if p.alive or p.death is None:
            return f"{self.who(c.slot)} expected dead of {list(c.value)}; is alive"
        got = tuple(sorted(p.death.causes))
        if got == c.value:
            return None
        return f"{self.who(c.slot)} expected death causes {list(c.value)}; got {list(got)}"

    def _messages(self, viewer: Viewer) -> list[Event]:
        return visible_events(self.g, viewer)

    def _match(self, events: list[Event], m: Matcher, negative: bool, whose: str,
               private_only: bool) -> str | None:
        hits = [e for e in events if m.matches(e)]
        if negative:
            if not hits:
                return None
            return f"{whose} expected no message {m.describe()}; got: " \
                   f"{[e.text for e in hits]}"
        if (m.count is None and hits) or (m.count is not None and len(hits) == m.count):
            return None
        if m.count is not None and hits:
            return f"{whose} expected message {m.describe()} {m.count} time(s); got " \
                   f"{len(hits)}: {[e.text for e in hits]}"
        same_key = [e for e in events if m.key is not None and e.key == m.key]
        if same_key:
            got = [f"{e.key} (day {e.day} {e.phase}): {e.text}" for e in same_key]
        else:
            pool = [e for e in events if not private_only or e.audience.kind != "public"]
            got = list(dict.fromkeys(e.key for e in pool))
        return f"{whose} expected message {m.describe()}; got: {got}"

    def check_messages(self, c: Check) -> str | None:
        assert c.slot is not None
        return self._match(self._messages(Viewer.player(c.slot)), c.value, False,
                           f"player {c.slot}", private_only=True)

    def check_no_messages(self, c: Check) -> str | None:
        assert c.slot is not None
        return self._match(self._messages(Viewer.player(c.slot)), c.value, True,
                           f"player {c.slot}", private_only=True)

    def check_public(self, c: Check) -> str | None:
        return self._match(self._messages(PUBLIC_VIEWER), c.value, False, "public",
                           private_only=False)

    def check_no_public(self, c: Check) -> str | None:
        return self._match(self._messages(PUBLIC_VIEWER), c.value, True, "public",
                           private_only=False)

    def _last_night(self, slot: int, keys: tuple[str, ...]) -> list[Event]:
        night = self.g.day - 1
        return [e for e in self._messages(Viewer.player(slot))
                if e.phase == "night" and e.day == night and e.key.startswith(keys)]

    def check_investigator(self, c: Check) -> str | None:
        assert c.slot is not None
        found = self._last_night(c.slot, ("night.investigator",))
        got = frozenset(str(r).lower() for r in found[-1].data.get("roles", ())) \
            if found else None
        if got == c.value:
            return None
        want = "no result" if c.value is None else sorted(c.value)
        have = "no result" if got is None else sorted(got)
        return f"player {c.slot} expected investigator result {want} on night " \
               f"{self.g.day - 1}; got {have}"

    def check_sheriff(self, c: Check) -> str | None:
        assert c.slot is not None
        found = self._last_night(c.slot, ("night.sheriff_",))
        got = found[-1].data.get("result") if found else None
        if got == c.value:
            return None
        return f"player {c.slot} expected sheriff result {c.value or 'none'} on night " \
               f"{self.g.day - 1}; got {got or 'none'}"


    # -- negative, goal and graveyard checks --
    def check_not_attacked(self, c: Check) -> str | None:
        assert c.slot is not None
        hits = [e for e in self._last_night(c.slot, ATTACK_KEYS)]
        if not hits:
            return None
        return f"{self.who(c.slot)} expected not attacked on night {self.g.day - 1}; " \
               f"got: {[e.text for e in hits]}"

    def check_won(self, c: Check) -> str | None:
        assert c.slot is not None
        if c.slot in self.g.winners:
            return None
        return f"{self.who(c.slot)} expected to win; winners {sorted(self.g.winners)} " \
               f"(result {self.g.result or 'none'})"

    def check_lost(self, c: Check) -> str | None:
        assert c.slot is not None
        if c.slot not in self.g.winners:
            return None
        return f"{self.who(c.slot)} expected not to win; it is among the winners " \
               f"(result {self.g.result or 'none'})"

    def check_consigliere(self, c: Check) -> str | None:
        assert c.slot is not None
        found = self._last_night(c.slot, ("night.consigliere",))
        got = found[-1].data.get("role") if found else None
        want = ROLES[c.value].name
        if got == want:
            return None
        return f"player {c.slot} expected consigliere result {want} on night " \
               f"{self.g.day - 1}; got {got or 'none'}"

    def check_graveyard(self, c: Check) -> str | None:
        """Read through the public projection, as the town sees the body."""
        assert c.slot is not None
        field_name, want = c.value
        entry = view(self.g, PUBLIC_VIEWER).roster[c.slot - 1]
        death = entry.death
        if entry.alive or death is None:
            return f"{self.who(c.slot)} has no graveyard entry (alive)"
        # the forged mark is the omniscient view's alone while the game is live
        grave = view(self.g, OMNISCIENT_VIEWER).roster[c.slot - 1].death
        forged = grave is not None and grave.forged
        got = {"role": entry.role, "cleaned": death.cleaned,
               "will": death.will, "forged": forged,
               "death_notes": death.death_notes}[field_name]
        if field_name == "role":
            found = find_role(str(want))
            want = found.name if found is not None else want
        if _same(got, want):
            return None
        return f"player {c.slot} graveyard {field_name}: expected {want!r}; got {got!r}"


def _describe(cmd: Command) -> str:
    fields = ", ".join(f"{k}={v!r}" for k, v in cmd.to_dict().items() if k != "type")
    return f"{cmd.type}({fields})"


def run(scenario: Scenario) -> ScenarioResult:
    """Play one scenario and check its expectations."""
    return _Runner(scenario).run()
