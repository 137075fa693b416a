"""Robustness of seats under faulty context (seed 002, Drift-Bench).

A *situation* is one decision of one seat in a small game played by engine
commands from a seed: the seat's full observation up to that moment (one
`View`, `since=0`), the decision it must take (its legal actions narrowed to
that one kind, so a turn spent talking is a miss), and the action the engine
knows to be correct or clearly better:

- `sheriff_judge`: a Sheriff whose Night 1 result says the accused is "a
  member of the Mafia" votes guilty;
- `sheriff_vote`: the same Sheriff puts that player on trial;
- `will_judge`: a Town player judges the accused whom a dead Sheriff's will
  names as suspicious, while the accused claims a role another living player
  also claims;
- `doctor_heal`: a Doctor heals the Sheriff whose accusation was confirmed by
  the lynched player's role, rather than an unclaimed player.

Each situation is run clean and with one fault of each kind injected into the
seat's context (its View as given to the seat), never into the engine:

- premise: a false claim or a forged will contradicting what the seat knows
  (its own result, the graveyard, a confirmed claim);
- expression: the key evidence names the player by a misspelled name;
- parameter: the key evidence reaches the seat in an earlier observation (an
  earlier turn), so the decision's prompt does not show it; the seat's tools
  (`my_results`, `check_will`, `chat_history`, `graveyard`) still find it;
- intention: irrelevant chatter and an off-topic question bury the decision.

`run_drift(situations, player)` plays every situation/fault pair once (each on
a fresh seat with a fixed seed), so two runs give the same table; `table()`
gives per fault kind the success rate clean and faulted, the performance drop
(clean - faulted) / clean, and the share of faulted runs in which the seat
used a tool before acting (the paper's clarification).
"""

from __future__ import annotations

import asyncio
import csv
import json
import random
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tossim.engine import (
    Chat,
    Command,
    Game,
    GameConfig,
    Judge,
    NightAction,
    PhaseTimeout,
    Vote,
    WriteWill,
    apply,
    new_game,
)
from tossim.engine.roles import ROLES
from tossim.engine.state import Phase
from tossim.engine.view import View, Viewer, view

FAULTS = ("premise", "expression", "parameter", "intention")
KINDS = ("sheriff_judge", "sheriff_vote", "will_judge", "doctor_heal")
NAMES = ("Alma", "Bruno", "Cleo", "Dmitri", "Edda", "Felix", "Greta", "Hugo", "Ines",
         "Jonas", "Kira", "Luca")
ROLE_SET = ("sheriff", "doctor", "investigator", "lookout", "escort", "mafioso", "framer")
CHATTER = (
    "Did anyone else sleep badly? The wind kept me up all night.",
    "My grandmother used to bake bread on days like this.",
    "lol this town has the worst tavern",
    "Anyone know a good recipe for fish stew?",
    "I think it is going to rain later.",
    "brb, feeding my cat",
    "The church bell is out of tune again.",
    "Has anyone seen my lucky hat? It is blue.",
    "I once walked to the next village and back in a day.",
    "What a lovely sunrise that was.",
)


@dataclass(frozen=True)
class Expected:
    """The right decision: `kind` judge (verdict), vote (target) or night (targets)."""

    kind: str
    verdict: str = ""
    target: int | None = None
    targets: tuple[int, ...] = ()

    def met_by(self, commands: Sequence[Command]) -> bool:
        for c in commands:
            if self.kind == "judge" and isinstance(c, Judge):
                return c.verdict == self.verdict
            if self.kind == "vote" and isinstance(c, Vote):
                return c.target == self.target
            if self.kind == "night" and isinstance(c, NightAction):
                return tuple(c.targets) == self.targets
        return False

    def describe(self, names: dict[int, str]) -> str:
        if self.kind == "judge":
            return self.verdict
        if self.kind == "vote":
            return f"vote {names.get(self.target or 0, '?')}"
        return f"{'/'.join(names[t] for t in self.targets)} at night"


@dataclass
class Situation:
    """One decision (see the module docstring). `evidence` are the versions
    of the events that carry the key fact; `subject` the player they are about;
    `liar` a living player a premise fault puts words into; `forge` whether the
    premise fault rewrites a will instead."""

    id: str
    kind: str
    slot: int
    view: View
    expected: Expected
    evidence: tuple[int, ...]
    subject: int
    liar: int
    forge_will_of: int | None = None
    names: dict[int, str] = field(default_factory=dict)
    seed: int = 0


# ---- building situations from scripted games ---------------------------------------------

class _Script:
    """A 7-player game with a seeded seating, driven by explicit commands."""

    def __init__(self, rng: random.Random) -> None:
        keys = list(ROLE_SET)
        rng.shuffle(keys)
        names = tuple(rng.sample(NAMES, len(keys)))
        self.game: Game = new_game(GameConfig(
            players=len(keys), seed=rng.randrange(1 << 30), names=names,
            roles=tuple(ROLES[k].name for k in keys)))
        self.at = {k: i for i, k in enumerate(keys, start=1)}
        self.rng = rng

    def __call__(self, *cmds: Command) -> tuple[int, ...]:
        """Apply commands; the versions of the events they produced."""
        before = len(self.game.events)
        for c in cmds:
            apply(self.game, c)
        return tuple(range(before + 1, len(self.game.events) + 1))

    def until(self, phase: Phase) -> tuple[int, ...]:
        before = len(self.game.events)
        while self.game.phase is not phase:
            apply(self.game, PhaseTimeout(self.game.phase_seq))
        return tuple(range(before + 1, len(self.game.events) + 1))

    def name(self, slot: int) -> str:
        return self.game.name(slot)

    def decision(self, slot: int, kind: str) -> View:
        v = view(self.game, Viewer.player(slot), since=0)
        legal = [a for a in v.legal if a.kind == kind]
        if not legal:
            raise AssertionError(f"{kind} is not legal for seat {slot} here")
        return replace(v, legal=legal)


def _versions(game: Game, versions: tuple[int, ...], *keys: str) -> tuple[int, ...]:
    return tuple(v for v in versions if game.events[v - 1].key in keys)


def _sheriff(rng: random.Random, judge: bool) -> Situation:
    s = _Script(rng)
    a = s.at
    sheriff, maf, doc, inv, look = (a["sheriff"], a["mafioso"], a["doctor"],
                                    a["investigator"], a["lookout"])
    s.until(Phase.NIGHT)
    ev = s(NightAction(sheriff, (maf,)))
    s(NightAction(maf, (look,)), NightAction(doc, (inv,)))
    ev += _versions(s.game, s.until(Phase.DISCUSSION), "night.sheriff_mafia")
    s(Chat(maf, f"I am the Escort. {s.name(look)} is dead, we must find who did it."),
      Chat(a["escort"], "I have nothing to report yet."))
    s.until(Phase.VOTING)
    liar = inv
    if judge:
        s(*(Vote(v, maf) for v in (doc, inv, a["escort"], a["framer"])))
        s(Chat(maf, "I am innocent! I am the Escort."))
        s.until(Phase.JUDGEMENT)
        return Situation("", "sheriff_judge", sheriff, s.decision(sheriff, "judge"),
                         Expected("judge", verdict="guilty"), ev, maf, liar)
    s(Vote(a["framer"], doc))
    return Situation("", "sheriff_vote", sheriff, s.decision(sheriff, "vote"),
                     Expected("vote", target=maf), ev, maf, liar)


def _will_judge(rng: random.Random) -> Situation:
    s = _Script(rng)
    a = s.at
    sheriff, maf, doc, inv, look, esc, framer = (a[k] for k in (
        "sheriff", "mafioso", "doctor", "investigator", "lookout", "escort", "framer"))
    seat = rng.choice([inv, look, esc])
    others = [p for p in (inv, look, esc) if p != seat]
    s.until(Phase.NIGHT)
    s(NightAction(sheriff, (maf,)), NightAction(doc, (inv,)))
    s.until(Phase.DISCUSSION)
    s(WriteWill(sheriff, f"I am the Sheriff.\n{s.name(maf)} is suspicious!"))
    s.until(Phase.NIGHT)
    s(NightAction(maf, (sheriff,)), NightAction(doc, (doc,)))
    ev = _versions(s.game, s.until(Phase.DISCUSSION), "dawn.will")
    s(Chat(doc, "I am the Doctor."), Chat(maf, "I am the Doctor. Trust me."),
      Chat(others[0], f"Two Doctors? One of {s.name(doc)} and {s.name(maf)} is lying."))
    s.until(Phase.VOTING)
    s(*(Vote(v, maf) for v in (doc, others[0], others[1])))
    s(Vote(framer, doc))
    if s.game.phase is not Phase.DEFENSE:
        s(Vote(seat, maf))
    s.until(Phase.JUDGEMENT)
    return Situation("", "will_judge", seat, s.decision(seat, "judge"),
                     Expected("judge", verdict="guilty"), ev, maf, others[1],
                     forge_will_of=sheriff)


def _doctor_heal(rng: random.Random) -> Situation:
    s = _Script(rng)
    a = s.at
    sheriff, maf, doc, inv, look, esc = (a["sheriff"], a["mafioso"], a["doctor"],
                                         a["investigator"], a["lookout"], a["escort"])
    s.until(Phase.NIGHT)
    s(NightAction(sheriff, (maf,)), NightAction(maf, (look,)), NightAction(doc, (esc,)))
    s.until(Phase.DISCUSSION)
    ev = s(Chat(sheriff, f"I am the Sheriff. {s.name(maf)} is suspicious!"))
    s(Chat(maf, "That is a lie, I am the Escort."))
    s.until(Phase.VOTING)
    s(*(Vote(v, maf) for v in (sheriff, inv, esc, doc)))
    s.until(Phase.JUDGEMENT)
    s(*(Judge(v, "guilty") for v in (sheriff, inv, esc, doc)))
    ev += _versions(s.game, s.until(Phase.NIGHT), "lynch.death")
    return Situation("", "doctor_heal", doc, s.decision(doc, "night"),
                     Expected("night", targets=(sheriff,)), ev, sheriff, inv)


BUILDERS: dict[str, Callable[[random.Random], Situation]] = {
    "sheriff_judge": lambda rng: _sheriff(rng, judge=True),
    "sheriff_vote": lambda rng: _sheriff(rng, judge=False),
    "will_judge": _will_judge,
    "doctor_heal": _doctor_heal,
}


def build_situations(n: int, seed: int, kinds: Sequence[str] = KINDS) -> list[Situation]:
    """`n` situations, the kinds in turn, each from its own seeded game."""
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        sub = seed * 1000 + i
        sit = BUILDERS[kind](random.Random(sub))
        sit.id, sit.seed = f"{kind}#{i}", sub
        sit.names = {r.slot: r.name for r in sit.view.roster}
        out.append(sit)
    return out


# ---- faults: edits of the seat's View only -------------------------------------------------

def misspell(name: str) -> str:
    """A recognisable misspelling: the second and third letters swapped
    ("Greta" -> "Gerta"), or a letter dropped for short names."""
    if len(name) >= 4 and name[1] != name[2]:
        return name[0] + name[2] + name[1] + name[3:]
    return name[:-1]


def _copy(v: View) -> View:
    return replace(v, events=[dict(e, data=dict(e.get("data") or {})) for e in v.events],
                   roster=list(v.roster))


def _rewrite_will(v: View, slot: int, rewrite: Callable[[str], str]) -> None:
    """Give `slot`'s graveyard entry in `v` the will `rewrite` makes of it."""
    v.roster = [replace(r, death=replace(r.death, will=rewrite(r.death.will)))
                if r.slot == slot and r.death is not None else r for r in v.roster]


def _renumber(v: View) -> View:
    for i, e in enumerate(v.events, start=1):
        e["v"] = i
    v.version = len(v.events)
    return v


def _chat(v: View, author: int, text: str, names: dict[int, str]) -> dict[str, Any]:
    last = v.events[-1]
    return {"v": 0, "day": last["day"], "phase": last["phase"], "key": "chat.public",
            "audience": "public", "text": f"{names[author]}: {text}",
            "data": {"author": author, "text": text}}


def _after_evidence(v: View, sit: Situation) -> int:
    """The index just after the last evidence event."""
    return max(i for i, e in enumerate(v.events) if e["v"] in sit.evidence) + 1


def inject(sit: Situation, fault: str) -> list[View]:
    """The observations the seat gets under `fault` ("clean" for none): one
    View, or two for a parameter fault (the evidence arrives a turn early)."""
    v = _copy(sit.view)
    names = sit.names
    subject = names[sit.subject]
    if fault == "clean":
        return [v]
    if fault == "premise":
        if sit.forge_will_of is not None:
            forged = (f"I am the Sheriff.\n{subject} is not suspicious.\n"
                      f"{names[sit.liar]} is suspicious!")
            for e in v.events:
                if e["v"] in sit.evidence and e["key"] == "dawn.will":
                    e["data"]["will"] = forged
                    e["text"] = f"We found a will next to {names[sit.forge_will_of]}'s body: " \
                                f"{forged}"
            _rewrite_will(v, sit.forge_will_of, lambda _will: forged)
        else:
            if sit.kind == "doctor_heal":
                text = f"I am the Sheriff. {subject} is lying, {subject} is suspicious!"
            else:
                text = f"I am the Sheriff. {subject} is not suspicious."
            v.events.insert(_after_evidence(v, sit), _chat(v, sit.liar, text, names))
        return [_renumber(v)]
    if fault == "expression":
        wrong = misspell(subject)
        for e in v.events:
            if e["v"] in sit.evidence or (e["key"] == "night.chosen" and sit.kind.startswith(
                    "sheriff")):
                e["text"] = e["text"].replace(subject, wrong)
                for k in ("text", "will"):
                    if isinstance(e["data"].get(k), str):
                        e["data"][k] = e["data"][k].replace(subject, wrong)
        if sit.forge_will_of is not None:
            _rewrite_will(v, sit.forge_will_of, lambda will: will.replace(subject, wrong))
        return [v]
    if fault == "parameter":
        cut = _after_evidence(v, sit)
        first = replace(v, events=v.events[:cut], version=v.events[cut - 1]["v"], legal=[])
        return [first, replace(v, events=v.events[cut:])]
    if fault == "intention":
        rng = random.Random(sit.seed)
        talkers = [r.slot for r in v.roster
                   if r.alive and r.slot not in (sit.slot, sit.subject)]
        lines = rng.sample(CHATTER, 6)
        lines.insert(3, f"{names[sit.slot]}, what is your favourite colour? Tell us, quick!")
        for text in lines:
            v.events.append(_chat(v, rng.choice(talkers), text, names))
        return [_renumber(v)]
    raise ValueError(f"unknown fault {fault!r}")


# ---- running -----------------------------------------------------------------------------

@dataclass
class Outcome:
    situation: str
    kind: str
    fault: str  # clean or a fault kind
    success: bool
    clarified: bool  # a tool was used before the final action
    action: str  # what the seat did, for reading the results


# A player plays one situation: (situation, observations, run key) -> (commands, tool calls)
DriftPlayer = Callable[[Situation, list[View], str], Awaitable[tuple[list[Command], int]]]


def scripted_player() -> DriftPlayer:
    """The scripted bot: a fresh `ScriptedBot` per run (it never uses tools)."""
    from tossim.agents.scripted import ScriptedBot

    async def play(sit: Situation, views: list[View], key: str) -> tuple[list[Command], int]:
        bot = ScriptedBot(sit.slot, sit.seed)
        cmds: list[Command] = []
        for obs in views:
            cmds = bot.decide(obs)
        return cmds, 0

    return play


def model_player(backend: Any, protocol: str = "xml") -> DriftPlayer:
    """A model seat (`seat_from_spec`, as the server builds it) per run; an
    earlier observation is remembered as a finished turn."""
    from tossim.agents.llm_seat import seat_from_spec

    async def play(sit: Situation, views: list[View], key: str) -> tuple[list[Command], int]:
        seat = seat_from_spec({"protocol": protocol}, sit.slot, sit.seed, backend,
                              game_id=f"drift:{key}")
        for obs in views[:-1]:
            seat.memory.update(obs)
            seat.memory.end_turn()
        cmds = await seat.decide(views[-1])
        return cmds, seat.metrics.tool_calls

    return play


def _describe(cmds: Sequence[Command], names: dict[int, str]) -> str:
    for c in cmds:
        if isinstance(c, Judge):
            return c.verdict
        if isinstance(c, Vote):
            return f"vote {names.get(c.target or 0, 'nobody')}"
        if isinstance(c, NightAction):
            return f"{'/'.join(names.get(t, '?') for t in c.targets)} at night"
    return "wait" if not cmds else type(cmds[0]).__name__.lower()


async def run_drift(situations: Sequence[Situation], player: DriftPlayer, *,
                    concurrency: int = 16,
                    on_done: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Every situation clean and under each fault, in a fixed order; up to
    `concurrency` runs at once (a model backend batches them). `on_done` is
    told about each run as it finishes (progress for slow models)."""
    jobs = [(sit, fault) for sit in situations for fault in ("clean", *FAULTS)]
    gate = asyncio.Semaphore(concurrency)

    async def one(sit: Situation, fault: str) -> Outcome:
        async with gate:
            cmds, tools = await player(sit, inject(sit, fault), f"{sit.id}:{fault}")
        out = Outcome(sit.id, sit.kind, fault, sit.expected.met_by(cmds), tools > 0,
                      _describe(cmds, sit.names))
        if on_done is not None:
            on_done(out)
        return out

    return list(await asyncio.gather(*(one(s, f) for s, f in jobs)))


def table(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Per fault kind (paired with the clean runs of the same situations):
    n, success clean, success faulted, drop, clarification share."""
    clean = {o.situation: o for o in outcomes if o.fault == "clean"}
    rows = []
    for fault in FAULTS:
        runs = [o for o in outcomes if o.fault == fault and o.situation in clean]
        n = len(runs)
        if not n:
            continue
        ok_clean = sum(clean[o.situation].success for o in runs) / n
        ok_fault = sum(o.success for o in runs) / n
        rows.append({
            "fault": fault, "n": n, "success_clean": round(ok_clean, 3),
            "success_faulted": round(ok_fault, 3),
            "drop": round((ok_clean - ok_fault) / ok_clean, 3) if ok_clean else None,
            "clarified": round(sum(o.clarified for o in runs) / n, 3),
        })
    return rows


def format_table(label: str, rows: Sequence[dict[str, Any]]) -> list[str]:
    out = [f"drift: {label}",
           f"  {'fault':<11} {'n':>3} {'clean':>6} {'faulted':>8} {'drop':>6} {'clarified':>10}"]
    for r in rows:
        drop = "-" if r["drop"] is None else f"{100 * r['drop']:.0f}%"
        out.append(f"  {r['fault']:<11} {r['n']:>3} {100 * r['success_clean']:>5.0f}% "
                   f"{100 * r['success_faulted']:>7.0f}% {drop:>6} "
                   f"{100 * r['clarified']:>9.0f}%")
    return out


def write_results(path: Path, label: str, seed: int, outcomes: Sequence[Outcome],
                  rows: Sequence[dict[str, Any]]) -> tuple[Path, Path]:
    """`path` with .json (runs and table) and .csv (one line per run)."""
    js, cs = path.with_suffix(".json"), path.with_suffix(".csv")
    js.write_text(json.dumps({
        "model": label, "seed": seed, "situations": len({o.situation for o in outcomes}),
        "table": list(rows), "runs": [o.__dict__ for o in outcomes]}, indent=1) + "\n")
    with cs.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["model", *Outcome.__dataclass_fields__])
        w.writeheader()
        for o in outcomes:
            w.writerow({"model": label, **o.__dict__})
    return js, cs


def evaluate(ai: str, *, model: str | None = None, url: str | None = None,
             protocol: str = "xml", situations: int = 8, seed: int = 1,
             out: Path | None = None) -> list[str]:
    """`tossim eval drift`: build the situations, play them with `ai`
    (scripted, or model seats on a backend), and return the table's lines
    (writing the runs to `out` .json/.csv when given). Raises
    `BackendUnavailable` when the backend cannot run here."""
    sits = build_situations(situations, seed)
    if ai == "scripted":
        label = "scripted bots"
        outcomes = asyncio.run(run_drift(sits, scripted_player()))
    else:
        from tossim.inference.registry import make_backend

        backend = make_backend(ai, model=model, url=url)
        label = f"{ai} {model or '(bundled model)'} ({protocol})"

        total = len(sits) * (1 + len(FAULTS))
        done: list[Outcome] = []

        def progress(o: Outcome) -> None:
            done.append(o)
            print(f"[{len(done)}/{total}] {o.situation} {o.fault}: {o.action} "
                  f"({'right' if o.success else 'wrong'})", file=sys.stderr, flush=True)

        async def go() -> list[Outcome]:
            await backend.start()
            try:
                return await run_drift(sits, model_player(backend, protocol), on_done=progress)
            finally:
                await backend.close()

        outcomes = asyncio.run(go())
    rows = table(outcomes)
    lines = format_table(f"{label}, {situations} situations, seed {seed}", rows)
    if out is not None:
        js, cs = write_results(out, label, seed, outcomes, rows)
        lines.append(f"  wrote {js} and {cs}")
    return lines
