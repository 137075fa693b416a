"""Vampires and the Vampire Hunter (rules reference A3, Vampire modes).

The Vampires share a night chat; every other night the youngest living
Vampire bites (legal only for it, on a bite night). A bite converts a
convertible target, and attacks (Basic) one who cannot be converted or when
there are 4 or more Vampires. A Vampire Hunter reads the Vampires' chat
anonymously, stakes Vampires, stakes a Vampire who bites it, and becomes a
Vigilante with one bullet once no Vampire is left.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tossim.engine.roles.handlers import (
    Act,
    Attack,
    available,
    condition,
    handler,
    messages,
)
from tossim.engine.roles.registry import Faction, Level

if TYPE_CHECKING:
    from tossim.engine.night import Night
    from tossim.engine.state import Game, Player

messages({
    "night.converted": "You were bitten by a Vampire. You are now a Vampire!",
    "night.vampire_joined": "{name} has been converted into a Vampire.",
    "night.bite_failed": "Your target could not be converted.",
    "night.staked_vampire": "You staked a Vampire!",
    "night.no_vampire": "Your target is not a Vampire.",
    "death.vampire": "You were attacked by a Vampire!",
    "death.vampire_hunter": "You were staked by a Vampire Hunter!",
}, causes={
    "vampire": "bitten by a Vampire",
    "vampire_hunter": "staked by a Vampire Hunter",
})

MAX_VAMPIRES = 4  # with this many Vampires alive a bite attacks instead of converting


def vampires(game: Game) -> list[Player]:
    return [p for p in game.living() if p.role == "vampire"]


def youngest(game: Game) -> Player | None:
    """The most recently turned living Vampire (dealt ones count in seat order)."""
    order: list[int] = game.memo.get("vampire_order", [])
    living = vampires(game)
    if not living:
        return None
    return max(living, key=lambda p: (order.index(p.slot) if p.slot in order else -1,
                                      p.slot))


@available("vampire_bite")
def can_bite(game: Game, p: Player) -> bool:
    """Every other night: not the night after a bite; only the youngest bites."""
    if game.memo.get("vampire_bite_night") == game.day - 1:
        return False
    y = youngest(game)
    return y is not None and y.slot == p.slot


@condition("no_vampires")
def no_vampires(game: Game, p: Player) -> bool:
    return not vampires(game)


def convertible(p: Player) -> bool:
    """Town (not the Vampire Hunter or a revealed Mayor) and Neutral
    Benign/Evil players without defense of their own (not the Witch); Mafia
    and Neutral Killing roles are attacked."""
    if p.faction is Faction.MAFIA or p.role == "vampire_hunter" or p.revealed:
        return False
    if p.spec.alignment == "Neutral Killing" or p.spec.defense > Level.NONE:
        return False
    # The Witch is never converted: the bite is an attack, which her one-time
    # barrier absorbs (docs/rules.md, Vampires).
    return p.role not in ("vampire", "witch")


@handler("bite")
def bite(n: Night, act: Act) -> None:
    vamp = act.actor
    n.g.memo["vampire_bite_night"] = n.g.day
    house = n.redirect(act.target)
    target = n.player(house)
    if target.role == "vampire_hunter":  # the Hunter stakes the biter
        if n.visit(vamp, house, "night.jail_attack"):
            n.strike(house, vamp, Level.BASIC, "vampire_hunter")
        return
    if len(vampires(n.g)) >= MAX_VAMPIRES or not convertible(target):
        n.attack(Attack(vamp, act.target, Level.BASIC, "vampire", True))
        return
    if not n.visit(vamp, house, "night.jail_attack"):
        return
    protected = (n.healers.get(house) or n.guards.get(house) or house in n.vested
                 or house in n.alert)
    if protected:
        n.msg(vamp, "night.bite_failed")
        return
    n.memo.setdefault("converted", []).append(house)
    if len(n.memo["converted"]) == 1:
        n.memo.setdefault("finish_hooks", []).append(_convert)


def _convert(n: Night) -> None:
    """At the end of the night, a bitten player who did not die turns."""
    for slot in n.memo["converted"]:
        if slot in n.deaths:
            continue
        p = n.player(slot)
        p.role = "vampire"
        p.uses = {}
        n.g.memo.setdefault("vampire_order", []).append(slot)
        n.msg(slot, "night.converted")
        for v in vampires(n.g):
            if v.slot != slot:
                n.msg(v.slot, "night.vampire_joined", {"player": slot}, name=n.name(slot))


@handler("stake")
def stake(n: Night, act: Act) -> None:
    """A stake on a Vampire is an attack like any other (A2.3, A2.6): it goes
    through the attack path, so a Bodyguard guarding the Vampire fights the
    Hunter off and a heal saves the Vampire."""
    house = n.redirect(act.target)
    if n.player(house).role != "vampire" or house == n.prisoner:
        if n.visit(act.actor, house, "night.jail_attack"):
            n.msg(act.actor, "night.no_vampire")
        return
    n.msg(act.actor, "night.staked_vampire")
    n.attack(Attack(act.actor, act.target, Level.BASIC, "vampire_hunter", True))
