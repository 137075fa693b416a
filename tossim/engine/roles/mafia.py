"""Night handlers of the Mafia roles (rules reference A2.7, A2.8, A3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tossim.engine.roles.handlers import Act, Attack, handler, messages
from tossim.engine.roles.registry import ROLES, Ability, Level

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


# ---- Mafia Support and Deception ------------------------------------------------------

messages({
    "night.blackmailed": "Someone threatened to reveal your secrets. You are blackmailed!",
    "night.jail_blackmail": "Someone tried to blackmail you but you were in jail!",
    "night.consigliere": "Your target {flavour}. They must be a {role}.",
    "night.disguised": "You have disguised yourself as {target}.",
    "night.forged": "You forged {target}'s last will.",
    "night.janitor_role": "You secretly know that your target's role was {role}.",
    "night.janitor_will": "Your target's last will: {will}",
})


@handler("blackmail")
def blackmail(n: Night, act: Act) -> None:
    house = n.redirect(act.target)
    if n.visit(act.actor, house, "night.jail_blackmail"):
        n.player(house).effects["blackmailed"] = True
        n.msg(house, "night.blackmailed")


@handler("consigliere")
def consigliere(n: Night, act: Act) -> None:
    house = n.redirect(act.target)
    if not n.visit(act.actor, house):
        return
    role = ROLES[n.apparent_role(house)]
    n.msg(act.actor, "night.consigliere", {"target": act.target, "role": role.name},
          flavour=role.flavour, role=role.name)


@handler("disguise")
def disguise(n: Night, act: Act) -> None:
    """[VER] 2017-19 Disguiser (rule flag-free: the reference's own choice): the
    disguise is put on with the other deceptions (priority 3) so that the same
    night's investigations see it; it lasts that night and the next day."""
    house = n.redirect(act.target)
    if not n.visit(act.actor, house):
        return
    n.player(act.actor).effects["disguised"] = n.player(house).role
    n.msg(act.actor, "night.disguised", {"target": house}, target=n.name(house))


@handler("forge")
def forge(n: Night, act: Act) -> None:
    forger = n.player(act.actor)
    house = n.redirect(act.target)
    if not n.visit(act.actor, house):
        return
    forger.uses["forges"] -= 1
    n.forged[house] = forger.death_note
    n.msg(act.actor, "night.forged", {"target": house}, target=n.name(house))


@handler("clean")
def clean(n: Night, act: Act) -> None:
    house = n.redirect(act.target)
    if not n.visit(act.actor, house):
        return
    n.cleaned[house] = act.actor
    n.push(Act(act.actor, JANITOR_REPORT, (house,)))


@handler("janitor_report")
def janitor_report(n: Night, act: Act) -> None:
    """After every attack of the night: a cleaning is spent only on a body
    (unless `janitor_spends_on_survivor`), and the Janitor learns role and will."""
    house, janitor = act.target, n.player(act.actor)
    died = house in n.deaths
    if died or n.flags.janitor_spends_on_survivor:
        janitor.uses["cleans"] -= 1
    if not died:
        n.cleaned.pop(house, None)
        return
    target = n.player(house)
    n.msg(act.actor, "night.janitor_role", {"target": house, "role": target.spec.name},
          role=target.spec.name)
    if target.will:
        n.msg(act.actor, "night.janitor_will", {"target": house, "will": target.will},
              will=target.will)


JANITOR_REPORT = Ability("janitor_report", 7, visits=False)
