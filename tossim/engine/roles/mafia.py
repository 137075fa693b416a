"""Night handlers of the Mafia roles (rules reference A2.7, A2.8, A3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tossim.engine.roles.handlers import Act, Attack, handler
from tossim.engine.roles.registry import Level

if TYPE_CHECKING:
    from tossim.engine.night import Night


@handler("mafia_order")
def mafia_order(n: Night, act: Act) -> None:
    """The Mafia's one kill a night is decided when the killings start (the
    Godfather's order reaches the Mafioso then): the Godfather's pick
    overrides the Mafioso's; only the one who kills visits (A2.8). Run once,
    by whichever Mafia killer comes first in the queue."""
    if "mafia_order" in n.done:
        return
    n.done.add("mafia_order")
    n.memo["mafia_attack"] = _mafia_attack(n)


@handler("mafia_kill")
def mafia_kill(n: Night, act: Act) -> None:
    atk = n.memo.pop("mafia_attack", None)
    if atk is not None:
        n.attack(atk)


def _mafia_attack(n: Night) -> Attack | None:
    def able(slot: int | None) -> bool:
        return slot is not None and slot in n.actions and slot not in n.blocked

    gf = next((p.slot for p in n.living_roles("godfather") if p.slot in n.actions), None)
    maf = next((p.slot for p in n.living_roles("mafioso")), None)
    maf_free = maf is not None and maf != n.prisoner and maf not in n.blocked
    if able(gf):
        assert gf is not None
        target = n.actions[gf][0]
        if maf_free:
            assert maf is not None
            n.msg(maf, "night.godfather_order", {"target": target}, target=n.name(target))
            return Attack(maf, target, Level.BASIC, "mafia", True)
        return Attack(gf, target, Level.BASIC, "mafia", True)
    if able(maf):
        assert maf is not None
        return Attack(maf, n.actions[maf][0], Level.BASIC, "mafia", True)
    return None


@handler("frame")
def frame(n: Night, act: Act) -> None:
    house = n.redirect(act.target)
    if n.visit(act.actor, house):
        n.player(house).framed = True
