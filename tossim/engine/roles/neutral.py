"""Night handlers of the Neutral roles (rules reference A2.4, A2.8, A3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tossim.engine.roles.handlers import Act, Attack, handler, reaction
from tossim.engine.roles.registry import Level

if TYPE_CHECKING:
    from tossim.engine.night import Night


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
