"""A game's prior state: what a scenario (or a test) says happened before its
first step — who is dead, uses spent, a revealed Mayor, effects in force — set
on a freshly started game.

This is the engine's setup API: a typed `PriorState` and one pure function,
`apply_prior_state`, with no file, no YAML and no clock. Reading the state from
a scenario file (its format, its line numbers) is `tossim.scenarios`'s
(docs/scenarios.md, "state"; docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tossim.engine.state import Death, Game, Phase


class SetupError(ValueError):
    """A prior state this game cannot be in (e.g. a jailed player with no
    living Jailor at night)."""


@dataclass
class PriorState:
    """Each field names players by seat; empty means "as dealt"."""

    dead: list[int] = field(default_factory=list)
    uses: dict[int, dict[str, int]] = field(default_factory=dict)
    revealed_mayor: list[int] = field(default_factory=list)
    framed: list[int] = field(default_factory=list)
    executioner_target: dict[int, int] = field(default_factory=dict)
    wills: dict[int, str] = field(default_factory=dict)
    death_notes: dict[int, str] = field(default_factory=dict)
    guilty_conscience: list[int] = field(default_factory=list)
    # effects in force at the start point (state.EFFECTS)
    jailed: list[int] = field(default_factory=list)
    doused: list[int] = field(default_factory=list)
    blackmailed: list[int] = field(default_factory=list)
    disguised: dict[int, str] = field(default_factory=dict)  # player -> role key
    forged_will: dict[int, str] = field(default_factory=dict)  # Forger -> its forgery
    trials_today: int | None = None


def apply_prior_state(g: Game, state: PriorState) -> None:
    """Set `state` on `g` (at the phase the game has reached). SetupError when
    the game cannot be in that state; `g` is then only partly set up."""
    for slot in state.dead:
        p = g.player(slot)
        p.alive = False
        p.death = Death(day=g.day, at_night=g.phase is Phase.NIGHT, causes=[], will=p.will,
                        death_notes=[], role_shown=p.spec.name)
    for slot, uses in state.uses.items():
        g.player(slot).uses.update(uses)
    for slot in state.revealed_mayor:
        g.player(slot).revealed = True
    for slot in state.framed:
        g.player(slot).framed = True
    for slot, target_slot in state.executioner_target.items():
        g.player(slot).target = target_slot
    for slot, text in state.wills.items():
        g.player(slot).will = text
    for slot, text in state.death_notes.items():
        g.player(slot).death_note = text
    for slot in state.guilty_conscience:
        g.player(slot).guilty_conscience = True
    for slot in state.jailed:
        if g.phase is not Phase.NIGHT or not any(p.role == "jailor" for p in g.living()):
            raise SetupError("jailed needs a night start and a living Jailor")
        g.prisoner = slot
    for slot in state.doused:
        g.player(slot).effects["doused"] = "arsonist"
    for slot in state.blackmailed:
        g.player(slot).effects["blackmailed"] = True
    for slot, key in state.disguised.items():
        g.player(slot).effects["disguised"] = key
    for slot, text in state.forged_will.items():
        g.player(slot).death_note = text
    if state.trials_today is not None:
        g.trials = state.trials_today
