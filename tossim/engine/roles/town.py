"""Night handlers of the Town roles (rules reference A2, A3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tossim.engine.roles.handlers import Act, Attack, handler
from tossim.engine.roles.registry import Ability, Faction, Level

if TYPE_CHECKING:
    from tossim.engine.night import Night


REPORT = Ability("report", 7, visits=False, handler="lookout_report")


@handler("transport")
def transport(n: Night, act: Act) -> None:
    t = act.actor
    a, b = act.targets
    # visiting yourself is not a visit, whichever target you are
    n.visits.extend((t, x) for x in (a, b) if x != t)
    jailed = [x for x in (a, b) if x == n.prisoner]
    if jailed:
        n.msg(t, "night.transport_failed")
        for x in jailed:
            n.msg(x, "night.jail_transport")
        return
    n.swaps.append((a, b))
    n.msg(t, "night.transporter_note", {"targets": [a, b]},
          first=n.name(a), second=n.name(b))
    for x in (a, b):
        n.msg(x, "night.transported")


@handler("alert")
def alert(n: Night, act: Act) -> None:
    n.player(act.actor).uses["alerts"] -= 1
    n.alert.add(act.actor)


@handler("veteran_shots")
def veteran_shots(n: Night, act: Act) -> None:
    vet = act.actor
    if vet not in n.alert:
        return
    shot = n.visitors(vet)
    for visitor in shot:
        n.strike(vet, visitor, Level.POWERFUL, "veteran")
    if shot:
        n.msg(vet, "night.veteran_shot")


@handler("guilt")
def guilt(n: Night, act: Act) -> None:
    p = n.player(act.actor)
    if p.guilty_conscience:
        p.guilty_conscience = False
        n.cancel(p.slot)  # the night's shot is void
        n.die(p.slot, "guilt", None)


@handler("revive")
def revive(n: Night, act: Act) -> None:
    r, target = act.actor, act.target
    if n.player(target).alive:
        return
    n.player(r).uses["revive"] -= 1
    n.revived.append(target)
    n.msg(r, "night.revive_done", {"target": target}, target=n.name(target))
    n.msg(target, "night.revived")


@handler("roleblock")
def roleblock(n: Night, act: Act) -> None:
    n.block(act.actor, act.target)


def _self_protect(n: Night, act: Act, use: str) -> bool:
    """A protector choosing itself: not a visit, not moved by transports."""
    if act.target != act.actor:
        return False
    n.player(act.actor).uses[use] -= 1
    return True


@handler("heal")
def heal(n: Night, act: Act) -> None:
    if _self_protect(n, act, "self_heal"):
        n.healers.setdefault(act.actor, []).append(act.actor)
        return
    house = n.redirect(act.target)
    if n.visit(act.actor, house):
        n.heal(act.actor, house)


@handler("guard")
def guard(n: Night, act: Act) -> None:
    if _self_protect(n, act, "vest"):
        n.vested.add(act.actor)
        return
    house = n.redirect(act.target)
    if n.visit(act.actor, house):
        n.guard(act.actor, house)


@handler("interrogate")
def interrogate(n: Night, act: Act) -> None:
    house = n.redirect(act.target)
    if not n.visit(act.actor, house):
        return
    n.investigated.add(house)
    found = n.apparent_suspicion(house)
    modern = n.flags.sheriff_wording == "modern"
    if found:
        key = "night.sheriff_suspicious" if modern else f"night.sheriff_{SHERIFF_KEYS[found]}"
        result = "suspicious"
    else:
        key = "night.sheriff_innocent_modern" if modern else "night.sheriff_innocent"
        result = "not_suspicious"
    n.msg(act.actor, key, {"target": act.target, "result": result})


# Role.suspicious -> the classic Sheriff message key suffix (rules reference A4)
SHERIFF_KEYS = {"mafia": "mafia", "serial_killer": "sk", "werewolf": "werewolf"}


@handler("investigate")
def investigate(n: Night, act: Act) -> None:
    house = n.redirect(act.target)
    if not n.visit(act.actor, house):
        return
    n.investigated.add(house)
    group = n.apparent_group(house)
    n.msg(act.actor, "night.investigator", {"target": act.target, "roles": list(group)},
          first=group[0], second=group[1], third=group[2])


@handler("watch")
def watch(n: Night, act: Act) -> None:
    house = n.redirect(act.target)
    if not n.visit(act.actor, house):
        return
    # reported after every visit of the night: who visited the house, said
    # of the player the Lookout chose
    n.push(Act(act.actor, REPORT, (house, act.target)))


@handler("lookout_report")
def lookout_report(n: Night, act: Act) -> None:
    house, chosen = act.targets[0], act.targets[-1]
    for v in sorted({v for v, h in n.visits if h == house and v != act.actor}):
        n.msg(act.actor, "night.lookout", {"visitor": v, "target": chosen},
              visitor=n.name(v))


@handler("spy_feed")
def spy_feed(n: Night, act: Act) -> None:
    if act.actor == n.prisoner:
        return
    houses = sorted({h for v, h in n.visits
                     if n.player(v).faction is Faction.MAFIA and h != v})
    for h in houses:
        n.msg(act.actor, "night.spy", {"target": h}, target=n.name(h))


@handler("execute")
def execute(n: Night, act: Act) -> None:
    if n.prisoner is None:
        return
    n.player(act.actor).uses["executions"] -= 1
    n.executed = True
    n.attack(Attack(act.actor, n.prisoner, Level.UNSTOPPABLE, "jailor", False,
                    _executed_town))


def _executed_town(n: Night, jailor: int, victim: int) -> None:
    if n.player(victim).faction is Faction.TOWN:
        n.player(jailor).uses["executions"] = 0
        n.msg(jailor, "night.jailor_lost_executions")


@handler("shoot")
def shoot(n: Night, act: Act) -> None:
    v = n.player(act.actor)
    if n.is_blocked(act.actor):
        if n.flags.vigilante_blocked_spends_bullet:
            v.uses["bullets"] -= 1
        return
    v.uses["bullets"] -= 1
    level = Level.BASIC
    n.attack(Attack(act.actor, act.target, level, act.ability.cause or "vigilante", True,
                    _shot_town))


def _shot_town(n: Night, vigilante: int, victim: int) -> None:
    if n.player(victim).faction is Faction.TOWN:
        guilty = n.memo.setdefault("guilty", set())
        if not guilty:
            n.memo.setdefault("finish_hooks", []).append(_guilt_pending)
        guilty.add(vigilante)


def _guilt_pending(n: Night) -> None:
    for vig in n.memo["guilty"]:
        if vig not in n.deaths:
            n.player(vig).guilty_conscience = True

