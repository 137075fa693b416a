"""Night resolution: a priority queue of ability handlers (rules reference A2).

Every night ability in the role registry names a handler (a small function
in `engine/roles/<family>.py`), a priority and labels. `Night.resolve` queues
each chosen action, and every passive ability, by (priority, order, seat)
and runs the handlers in that order; a handler may push a later entry (the
Arsonist's ignite). This module holds only the queue and the primitives the
handlers share: visit (jail check, visit log), block, redirect/control,
protection (heal, guard, vest, alert, barrier), attacks with levels, the
investigation override chain (A4) and the night's messages, delivered
together at the end so that reports can use every visit of the night.

Player effects that outlive the night (framed, doused, blackmailed,
disguised) live on `Player` with the lifetimes listed in `state.EFFECTS`;
night-only ones (healed, guarded, vested, cleaned, forged) live here.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from tossim.engine.events import to
from tossim.engine.log import emit
from tossim.engine.roles import FRAMER_GROUP, GROUP_OF, ROLES, Level
from tossim.engine.roles.handlers import HANDLERS, REACTIONS, Act, Attack
from tossim.engine.state import Death, Game, Player

__all__ = ["Act", "Attack", "Night", "resolve_night"]


class Night:
    def __init__(self, game: Game) -> None:
        self.g = game
        self.flags = game.flags
        self.actions = dict(game.night_actions)
        self.prisoner = game.prisoner
        self.full_moon = game.day % 2 == 0  # Werewolf nights (A2.8): even nights
        self.swaps: list[tuple[int, int]] = []
        self.blocked: set[int] = set()
        self.cancelled: set[int] = set()
        self.done: set[str] = set()  # team steps already run (the Mafia's one kill)
        self.visits: list[tuple[int, int]] = []  # (visitor, house), in order
        self.healers: dict[int, list[int]] = {}
        self.guards: dict[int, list[int]] = {}
        self.vested: set[int] = set()
        self.alert: set[int] = set()
        self.deaths: dict[int, list[str]] = {}
        self.notes: dict[int, list[str]] = {}
        self.revived: list[int] = []
        self.investigated: set[int] = set()
        self.cleaned: dict[int, int] = {}  # target -> Janitor
        self.forged: dict[int, str] = {}  # target -> forged will
        self.executed = False
        self.acts: dict[int, Act] = {}  # chosen actions by actor
        # role families' own bookkeeping for the night (counters, lookouts ...)
        self.memo: dict[str, Any] = {}
        # (recipient, key, text params, structured data)
        self.messages: list[tuple[int, str, dict[str, Any], dict[str, Any]]] = []
        self._sent: set[tuple[int, str, str]] = set()
        self._queue: list[tuple[int, int, int, int, Act]] = []
        self._seq = 0

    # ---- the queue -----------------------------------------------------------------
    def push(self, act: Act, priority: int | None = None, order: int | None = None) -> None:
        """Queue an ability use; handlers may push later entries (same night)."""
        a = act.ability
        prio = priority if priority is not None else a.priority
        if priority is None and a.priority_flag:
            prio = int(getattr(self.flags, a.priority_flag))
        if order is None:
            order = a.order if prio == a.priority else 0
        self._seq += 1
        heapq.heappush(self._queue, (prio, order, act.actor, self._seq, act))

    def build(self) -> None:
        actions = self.actions
        for p in self.g.players:
            spec = ROLES[p.role]
            a = spec.night
            if a is not None and (a.always or (p.alive and p.slot in actions)):
                targets = actions.get(p.slot, ())
                act = Act(p.slot, a, targets, chosen=bool(targets))
                if targets:
                    self.acts[p.slot] = act
                self.push(act)
            if p.alive and spec.passives:
                for passive in spec.passives:
                    self.push(Act(p.slot, passive))

    def resolve(self) -> None:
        self.build()
        while self._queue:
            act = heapq.heappop(self._queue)[4]
            if act.chosen and act.actor in self.cancelled:
                continue
            labels = act.ability.labels
            if act.actor in self.blocked and not labels & {"unblockable", "own_block"}:
                continue
            HANDLERS[act.ability.handler_key](self, act)
        self.finish()

    def cancel(self, slot: int) -> None:
        """The actor's chosen action tonight is void (Vigilante guilt, Witch)."""
        self.actions.pop(slot, None)
        self.cancelled.add(slot)

    # ---- helpers -------------------------------------------------------------------
    def player(self, slot: int) -> Player:
        return self.g.player(slot)

    def name(self, slot: int) -> str:
        return self.g.name(slot)

    def living_roles(self, *roles: str) -> list[Player]:
        return [p for p in self.g.living() if p.role in roles]

    def msg(self, slot: int, key: str, data: dict[str, Any] | None = None,
            **params: Any) -> None:
        """Queue a private message; `data` holds slots where the text has names."""
        sig = (slot, key, repr(sorted(params.items())))
        if sig not in self._sent:  # one copy of each message per player and night
            self._sent.add(sig)
            self.messages.append((slot, key, params, params if data is None else data))

    def announce(self, key: str, data: dict[str, Any] | None = None, **params: Any) -> None:
        """A public announcement at dawn, after the deaths (an Amnesiac remembered)."""
        self.g.memo.setdefault("dawn", []).append((key, params if data is None else data,
                                                   params))

    def is_blocked(self, slot: int) -> bool:
        return slot in self.blocked or slot == self.prisoner

    # ---- visits, blocks, control -----------------------------------------------------
    def redirect(self, target: int) -> int:
        """Where an action aimed at `target` lands after tonight's transports."""
        for a, b in self.swaps:
            if target == a:
                target = b
            elif target == b:
                target = a
        return target

    def visit(self, visitor: int, house: int, jail_key: str | None = None) -> bool:
        """Record a visit; visits to the prisoner fail (A2.5)."""
        if house == self.prisoner and visitor != house:
            self.msg(visitor, "night.target_jailed")
            if jail_key:
                self.msg(house, jail_key)
            return False
        self.visits.append((visitor, house))
        return True

    def visitors(self, house: int) -> list[int]:
        """Everyone who visited `house` so far tonight, in order, once each."""
        return list(dict.fromkeys(v for v, h in self.visits if h == house and v != house))

    def block(self, blocker: int, chosen: int) -> None:
        """A role block (A2.4): cancels the target's later actions unless the
        target is immune (then its `on_block` reaction, if any, runs)."""
        house = self.redirect(chosen)
        if not self.visit(blocker, house, "night.jail_roleblock"):
            return
        target = self.player(house)
        if target.spec.on_block:
            REACTIONS[target.spec.on_block](self, house, blocker)
        elif target.spec.roleblock_immune:
            self.msg(house, "night.roleblock_immune")
        else:
            self.blocked.add(house)
            self.msg(house, "night.roleblocked")

    # ---- protection ----------------------------------------------------------------
    def heal(self, doctor: int, house: int) -> None:
        if not self.player(house).revealed:
            self.healers.setdefault(house, []).append(doctor)

    def guard(self, bodyguard: int, house: int) -> None:
        self.guards.setdefault(house, []).append(bodyguard)

    def defense(self, slot: int) -> Level:
        p = self.player(slot)
        level = p.spec.defense
        if slot in self.alert or slot in self.vested or p.uses.get("barrier", 0) > 0:
            level = max(level, Level.BASIC)
        return level

    # ---- attacks -------------------------------------------------------------------
    def attack(self, atk: Attack) -> None:
        """Resolve one attack now: a visiting attack is redirected by transports,
        fails on the prisoner and is intercepted by a Bodyguard."""
        house = self.redirect(atk.target) if atk.visiting else atk.target
        if atk.visiting:
            if not self.visit(atk.attacker, house, "night.jail_attack"):
                return
            guards = self.guards.get(house)
            if guards:
                bodyguard = guards.pop(0)
                self.msg(house, "night.guarded")
                self.strike(bodyguard, atk.attacker, Level.POWERFUL, "bodyguard")
                self.strike(atk.attacker, bodyguard, atk.level, "bodyguard_sacrifice")
                return
        self.strike(atk.attacker, house, atk.level, atk.cause, atk.on_kill)

    def strike(self, attacker: int, target: int, level: Level, cause: str,
               on_kill: Callable[[Night, int, int], None] | None = None) -> None:
        p = self.player(target)
        base = self.defense(target)
        healed = bool(self.healers.get(target))
        if level > max(base, Level.POWERFUL if healed else Level.NONE):
            self.die(target, cause, attacker)
            if on_kill is not None:
                on_kill(self, attacker, target)
            return
        if healed and level > base:
            self.msg(target, "night.healed")
            for doctor in self.healers[target]:
                if doctor != target:
                    self.msg(doctor, "night.doctor_saved")
        elif target in self.vested and level > p.spec.defense:
            self.msg(target, "night.vest_saved")
        elif (level > p.spec.defense and target not in self.alert
              and p.uses.get("barrier", 0) > 0):
            p.uses["barrier"] -= 1  # the Witch's one-time barrier: the attacker hears nothing
            self.msg(target, "night.defense_held")
            return
        else:
            self.msg(target, "night.defense_held")
        if cause not in ("veteran", "bodyguard"):
            self.msg(attacker, "night.defense_too_strong")

    def die(self, target: int, cause: str, attacker: int | None) -> None:
        causes = self.deaths.setdefault(target, [])
        causes.append(cause)
        victim_key = {"bodyguard_sacrifice": "night.bodyguard_died"}.get(cause, f"death.{cause}")
        self.msg(target, victim_key)
        if attacker is None:
            return
        killer = self.player(attacker)
        if killer.spec.death_note and killer.death_note:
            notes = self.notes.setdefault(target, [])
            if killer.death_note not in notes:
                notes.append(killer.death_note)

    # ---- investigation: one override chain (A4) --------------------------------------
    def apparent_group(self, slot: int) -> tuple[str, ...]:
        """Investigator: framed -> doused -> disguised -> true role."""
        t = self.player(slot)
        if t.framed:
            return FRAMER_GROUP
        if "doused" in t.effects:  # the effect holds the douser's role key
            return GROUP_OF[ROLES[t.effects["doused"]].name]
        disguise = t.effects.get("disguised")
        if disguise:
            return GROUP_OF[ROLES[disguise].name]
        return GROUP_OF[t.spec.name]

    def apparent_suspicion(self, slot: int) -> str:
        """Sheriff: "" (not suspicious) or the key of what they look like.
        Framed -> Mafia; douse and disguise do not fool the Sheriff."""
        t = self.player(slot)
        if t.framed:
            return "mafia"
        spec = t.spec
        immune = spec.detection_immune and not (spec.detected_on_full_moon
                                                and self.full_moon)
        return "" if immune else spec.suspicious

    def apparent_role(self, slot: int) -> str:
        """Consigliere: doused -> Arsonist; frames and disguises do not fool it."""
        t = self.player(slot)
        return str(t.effects.get("doused", t.role))

    # ---- delivery ------------------------------------------------------------------
    def finish(self) -> None:
        g = self.g
        for hook in self.memo.get("finish_hooks", []):  # role families' end of night
            hook(self)
        for slot, key, params, data in self.messages:
            emit(g, key, to(slot), data=data, **params)
        if self.flags.frame_duration == "night":
            for p in g.players:
                p.framed = False
        else:
            for slot in self.investigated:
                g.player(slot).framed = False
        for slot in sorted(self.deaths):
            p = g.player(slot)
            p.alive = False
            will = self.forged.get(slot, p.will)
            shown = shown_role(p)
            if slot in self.cleaned:
                will, shown = "", CLEANED
            p.death = Death(day=g.day, at_night=True, causes=self.deaths[slot], will=will,
                            death_notes=self.notes.get(slot, []), role_shown=shown,
                            cleaned=slot in self.cleaned, forged=slot in self.forged)
            g.last_death_day = g.day
        for slot in self.revived:
            p = g.player(slot)
            if slot not in self.deaths:
                p.alive = True
                p.death = None
        g.night_deaths = sorted(self.deaths)
        g.night_revived = [s for s in self.revived if s not in self.deaths]


CLEANED = "Cleaned"


def shown_role(p: Player) -> str:
    """The role the town sees on `p`'s body: a disguise, or the true role."""
    disguise = p.effects.get("disguised")
    return ROLES[disguise].name if disguise else p.spec.name


def resolve_night(game: Game) -> None:
    Night(game).resolve()
