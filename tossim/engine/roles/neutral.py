"""Night handlers of the Neutral roles (rules reference A2.4, A2.8, A3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tossim.engine.roles.handlers import (
    AVAILABLE,
    Act,
    Attack,
    available,
    handler,
    messages,
    reaction,
)
from tossim.engine.roles.registry import ROLES, Ability, Faction, Level, TargetRule

if TYPE_CHECKING:
    from tossim.engine.night import Night
    from tossim.engine.state import Game, Player


# ---- Jester --------------------------------------------------------------------------

@handler("haunt")
def haunt(n: Night, act: Act) -> None:
    """A lynched Jester haunts a guilty (or abstaining) voter, chosen at random
    if it picks nobody; ignores jail, heals and Bodyguards (A2.8)."""
    jester = n.g.haunter
    if jester is None or act.actor != jester:
        return
    candidates = [c for c in n.g.haunt_candidates if n.player(c).alive]
    chosen = n.actions.get(jester)
    if chosen and chosen[0] in candidates:
        target = chosen[0]
    elif candidates:
        target = n.g.rng.choice(candidates)
    else:
        return
    n.die(target, "haunt", jester)


# ---- Serial Killer -------------------------------------------------------------------

@reaction("sk_on_block")
def sk_on_block(n: Night, sk: int, blocker: int) -> None:
    """Role block immune; attacks the blocker, or stays home when cautious (A2.4)."""
    if n.flags.sk_cautious:
        n.blocked.add(sk)
        n.msg(sk, "night.roleblock_immune")
        return
    n.msg(sk, "night.roleblock_immune")
    n.memo.setdefault("sk_counters", []).append((sk, blocker))
    n.msg(sk, "night.sk_blocker")


@handler("sk_kill")
def sk_kill(n: Night, act: Act) -> None:
    sk = act.actor
    if sk in n.blocked:
        return
    countered = any(s == sk for s, _ in n.memo.get("sk_counters", ()))
    if countered and n.flags.sk_blocker == "instead":
        return
    n.attack(Attack(sk, act.target, Level.BASIC, "serial_killer", True))


@handler("sk_counter")
def sk_counter(n: Night, act: Act) -> None:
    for sk, blocker in n.memo.get("sk_counters", ()):
        if sk == act.actor:
            n.attack(Attack(sk, blocker, Level.BASIC, "sk_blocker", False))


@handler("sk_jailed")
def sk_jailed(n: Night, act: Act) -> None:
    """An unexecuted, not cautious Serial Killer kills the Jailor who jailed it (A2.5)."""
    if act.actor != n.prisoner or n.executed or n.flags.sk_cautious:
        return
    jailor = next((p.slot for p in n.living_roles("jailor")), None)
    if jailor is not None:
        n.attack(Attack(act.actor, jailor, Level.BASIC, "sk_jailed", False))


# ---- Survivor --------------------------------------------------------------------------

messages({
    "night.vest_on": "You put on a bulletproof vest.",
    "night.remembered": "You have remembered that you were like the {role}!",
    "dawn.remembered": "An Amnesiac has remembered that they were like the {role}!",
    "night.controlled": "You feel a mystical power dominating you. You were controlled "
                        "by a Witch!",
    "night.witch_learned": "Your target is a {role}.",
    "night.control_failed": "Your target could not be controlled.",
    "night.control_immune": "Someone tried to control you but you are immune!",
    "night.full_moon": "There is a full moon out tonight.",
    "night.sheriff_werewolf": "Your target is a Werewolf!",
    "night.doused": "You were doused in gas!",
    "death.arsonist": "You were set on fire by an Arsonist!",
    "death.werewolf": "You were attacked by a Werewolf!",
    "death.werewolf_jailed": "You were killed by the Werewolf you jailed!",
}, causes={
    "arsonist": "incinerated by an Arsonist",
    "werewolf": "mauled by a Werewolf",
    "werewolf_jailed": "mauled by a Werewolf",
})


@handler("vest")
def vest(n: Night, act: Act) -> None:
    """Four vests; a vest is lost when the Survivor is role blocked or controlled (A2.6)."""
    n.player(act.actor).uses["vests"] -= 1
    if n.is_blocked(act.actor) or act.controlled_by is not None:
        return
    n.vested.add(act.actor)


# ---- Amnesiac ----------------------------------------------------------------------------

@handler("remember")
def remember(n: Night, act: Act) -> None:
    """Priority 6: take a dead, uncleaned player's role; dying the same night
    fails (A2.9). Unique roles follow `amnesiac_unique`; a remembered
    Godfather with no Mafia alive gives a Mafioso."""
    amnesiac, target = n.player(act.actor), n.player(act.target)
    if act.actor in n.deaths or target.alive or (target.death and target.death.cleaned):
        return
    key = target.role
    spec = ROLES[key]
    if spec.unique:
        holders = [p for p in n.g.living() if p.role == key and p.slot not in n.deaths]
        if n.flags.amnesiac_unique == "barred" or holders:
            return
    if key == "godfather" and not any(p.faction is Faction.MAFIA for p in n.g.living()
                                      if p.slot != amnesiac.slot):
        key = "mafioso"
    amnesiac.uses["remember"] -= 1
    amnesiac.role = key
    amnesiac.uses = ROLES[key].starting_uses(n.flags)
    amnesiac.effects["remembered"] = True
    n.msg(act.actor, "night.remembered", {"role": ROLES[key].name}, role=ROLES[key].name)
    n.announce("dawn.remembered", {"role": ROLES[key].name}, role=ROLES[key].name)


# ---- Witch -------------------------------------------------------------------------------

@handler("control")
def control(n: Night, act: Act) -> None:
    """Target A uses A's ability on target B, visiting B (A2.7). Fails on a
    jailed, role-blocked, control-immune or exhausted A; forces even a
    Night-1 Vigilante shot. Self-only abilities are spoiled (a vest is lost)."""
    witch = act.actor
    a = n.redirect(act.targets[0])
    b = act.targets[1]
    if not n.visit(witch, a):
        return
    victim = n.player(a)
    if victim.spec.control_immune:
        n.msg(a, "night.control_immune")
        n.msg(witch, "night.control_failed")
        return
    n.msg(witch, "night.witch_learned", {"target": a, "role": victim.spec.name},
          role=victim.spec.name)
    ability = victim.spec.night
    exhausted = ability is None or (ability.uses is not None
                                    and victim.uses.get(ability.uses, 0) <= 0)
    if exhausted or a in n.blocked or (ability is not None and ability.targets != 1) \
            or (ability is not None and ability.available
                                       and not AVAILABLE[ability.available](n.g, victim)):
        n.msg(witch, "night.control_failed")
        return
    assert ability is not None
    n.msg(a, "night.controlled")
    if ability.rule is TargetRule.PRISONER:
        return  # a Jailor's execution cannot be turned on someone else
    forced = (b,) if ability.rule is not TargetRule.SELF else (a,)
    n.actions[a] = forced
    old = n.acts.get(a)
    if old is not None:
        old.targets = forced
        old.controlled_by = witch
    else:
        new = Act(a, ability, forced, chosen=True, controlled_by=witch)
        n.acts[a] = new
        n.push(new)


# ---- Arsonist ---------------------------------------------------------------------------

@handler("douse")
def douse(n: Night, act: Act) -> None:
    """Douse a target (priority 3), or choose yourself to ignite (priority 5)."""
    if act.target == act.actor:
        n.push(Act(act.actor, IGNITE, (act.actor,)))
        return
    house = n.redirect(act.target)
    if n.visit(act.actor, house):
        n.player(house).effects["doused"] = n.player(act.actor).role
        if n.flags.douse_message:
            n.msg(house, "night.doused")


@handler("ignite")
def ignite(n: Night, act: Act) -> None:
    """Unstoppable, not a visit: every doused player burns (A2.8)."""
    for p in n.g.players:
        if p.alive and "doused" in p.effects:
            del p.effects["doused"]
            n.attack(Attack(act.actor, p.slot, Level.UNSTOPPABLE, "arsonist", False))


@handler("wash")
def wash(n: Night, act: Act) -> None:
    """An Arsonist who does nothing cleans the gas off itself."""
    if act.actor not in n.acts and act.actor != n.prisoner:
        n.player(act.actor).effects.pop("doused", None)


IGNITE = Ability("ignite", 5, order=6, visits=False, cause="arsonist")


# ---- Werewolf ----------------------------------------------------------------------------

@available("full_moon")
def full_moon(game: Game, p: Player) -> bool:
    return game.day % 2 == 0


@reaction("werewolf_on_block")
def werewolf_on_block(n: Night, ww: int, blocker: int) -> None:
    """Immune; blocked on a full moon it stays home and mauls its visitors."""
    n.msg(ww, "night.roleblock_immune")
    if n.full_moon:
        n.memo.setdefault("werewolf_home", set()).add(ww)


@handler("maul")
def maul(n: Night, act: Act) -> None:
    ww = act.actor
    if act.target == ww or ww in n.memo.get("werewolf_home", ()):
        _rampage(n, ww, ww)
        return
    house = n.redirect(act.target)
    if not n.visit(ww, house, "night.jail_attack"):
        return
    _rampage(n, ww, house)


def _rampage(n: Night, ww: int, house: int) -> None:
    """A Powerful attack on the house's owner (unless it is home) and every visitor.
    The full moon itself is announced to everyone when the night begins."""
    if house != ww:
        n.strike(ww, house, Level.POWERFUL, "werewolf")
    for v in n.visitors(house):
        if v != ww:
            n.strike(ww, v, Level.POWERFUL, "werewolf")


@handler("werewolf_home")
def werewolf_home(n: Night, act: Act) -> None:
    """A full-moon Werewolf that chose nobody stays home and mauls its visitors;
    jailed and not executed, it mauls the Jailor (A2.5)."""
    ww = act.actor
    if not n.full_moon or ww in n.acts:
        return
    if ww == n.prisoner:
        if not n.executed:
            jailor = next((p.slot for p in n.living_roles("jailor")), None)
            if jailor is not None:
                n.strike(ww, jailor, Level.POWERFUL, "werewolf_jailed")
        return
    _rampage(n, ww, ww)
