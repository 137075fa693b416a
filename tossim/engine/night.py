"""Night resolution: one ordered pass over the night's actions (rules reference A2).

Submissions are collected during the night and resolved once, in priority
order. Each step is a small method; results are gathered and delivered at the
end, so that reports can use every visit of the night (a Lookout sees a
priority-5 killer, a same-night frame changes a priority-4 result).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tossim.engine.events import to
from tossim.engine.log import emit
from tossim.engine.roles import FRAMER_GROUP, GROUP_OF, Faction, Level
from tossim.engine.state import Death, Game

ATTACK_CAUSE = {
    "godfather": "mafia",
    "mafioso": "mafia",
    "serial_killer": "serial_killer",
    "vigilante": "vigilante",
    "jailor": "jailor",
}


@dataclass
class Attack:
    attacker: int
    target: int
    level: Level
    cause: str
    visiting: bool


class NightResolver:
    def __init__(self, game: Game) -> None:
        self.g = game
        self.flags = game.flags
        self.actions = dict(game.night_actions)
        self.prisoner = game.prisoner
        self.swaps: list[tuple[int, int]] = []
        self.blocked: set[int] = set()
        self.visits: list[tuple[int, int]] = []  # (visitor, house), in order
        self.healers: dict[int, list[int]] = {}
        self.guards: dict[int, list[int]] = {}
        self.vested: set[int] = set()
        self.alert: set[int] = set()
        self.deaths: dict[int, list[str]] = {}
        self.notes: dict[int, list[str]] = {}
        self.revived: list[int] = []
        self.investigated: set[int] = set()
        self.lookouts: list[tuple[int, int]] = []
        self.sk_counters: list[tuple[int, int]] = []  # (serial killer, blocker)
        self.town_kills_by_vigilante: set[int] = set()
        self.executed = False
        # (recipient, key, text params, structured data)
        self.messages: list[tuple[int, str, dict[str, Any], dict[str, Any]]] = []
        self._sent: set[tuple[int, str, str]] = set()

    # ---- helpers -----------------------------------------------------------------
    def actors(self, *roles: str) -> list[int]:
        """Living actors of these roles with an action tonight, in slot order."""
        return [s for s in sorted(self.actions)
                if self.g.player(s).alive and self.g.player(s).role in roles]

    def msg(self, slot: int, key: str, data: dict[str, Any] | None = None,
            **params: Any) -> None:
        """Queue a private message; `data` holds slots where the text has names."""
        sig = (slot, key, repr(sorted(params.items())))
        if sig not in self._sent:  # one copy of each message per player and night
            self._sent.add(sig)
            self.messages.append((slot, key, params, params if data is None else data))

    def redirect(self, target: int) -> int:
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

    def target_of(self, actor: int) -> int:
        return self.actions[actor][0]

    # ---- the pipeline --------------------------------------------------------------
    def resolve(self) -> None:
        self.transports()
        self.alerts()
        self.guilt()
        self.haunt()
        if self.flags.retributionist_priority == 1:
            self.revives()
        self.roleblocks()
        if self.flags.retributionist_priority != 1:
            self.revives()
        self.protect_and_frame()
        self.investigations()
        self.attacks()
        self.veteran_shots()
        self.spies()
        self.lookout_reports()
        self.finish()

    def transports(self) -> None:
        for t in self.actors("transporter"):
            a, b = self.actions[t]
            # visiting yourself is not a visit, whichever target you are
            self.visits.extend((t, x) for x in (a, b) if x != t)
            jailed = [x for x in (a, b) if x == self.prisoner]
            if jailed:
                self.msg(t, "night.transport_failed")
                for x in jailed:
                    self.msg(x, "night.jail_transport")
                continue
            self.swaps.append((a, b))
            self.msg(t, "night.transporter_note", {"targets": [a, b]},
                     first=self.g.name(a), second=self.g.name(b))
            for x in (a, b):
                self.msg(x, "night.transported")

    def alerts(self) -> None:
        for v in self.actors("veteran"):
            self.g.player(v).uses["alerts"] -= 1
            self.alert.add(v)

    def guilt(self) -> None:
        for p in self.g.living():
            if p.role == "vigilante" and p.guilty_conscience:
                p.guilty_conscience = False
                self.actions.pop(p.slot, None)  # the night's shot is void
                self.die(p.slot, "guilt", None)

    def haunt(self) -> None:
        jester = self.g.haunter
        if jester is None:
            return
        candidates = [c for c in self.g.haunt_candidates if self.g.player(c).alive]
        chosen = self.actions.get(jester)
        if chosen and chosen[0] in candidates:
            target = chosen[0]
        elif candidates:
            target = self.g.rng.choice(candidates)
        else:
            return
        self.die(target, "haunt", jester)  # ignores jail, heals and Bodyguards

    def revives(self) -> None:
        for r in self.actors("retributionist"):
            if r in self.blocked:
                continue
            target = self.target_of(r)
            if self.g.player(target).alive:
                continue
            self.g.player(r).uses["revive"] -= 1
            self.revived.append(target)
            self.msg(r, "night.revive_done", {"target": target}, target=self.g.name(target))
            self.msg(target, "night.revived")

    def roleblocks(self) -> None:
        for e in self.actors("escort"):
            house = self.redirect(self.target_of(e))
            if not self.visit(e, house, "night.jail_roleblock"):
                continue
            target = self.g.player(house)
            if target.role == "serial_killer" and self.flags.sk_cautious:
                self.blocked.add(house)  # a cautious SK stays home
                self.msg(house, "night.roleblock_immune")
            elif target.spec.roleblock_immune:
                self.msg(house, "night.roleblock_immune")
                if target.role == "serial_killer":
                    self.sk_counters.append((house, e))
                    self.msg(house, "night.sk_blocker")
            else:
                self.blocked.add(house)
                self.msg(house, "night.roleblocked")

    def protect_and_frame(self) -> None:
        for actor in self.actors("bodyguard", "doctor", "framer"):
            if actor in self.blocked:
                continue
            p = self.g.player(actor)
            chosen = self.target_of(actor)
            if chosen == actor:  # self-heal / vest: not a visit, not moved
                if p.role == "doctor":
                    p.uses["self_heal"] -= 1
                    self.healers.setdefault(actor, []).append(actor)
                elif p.role == "bodyguard":
                    p.uses["vest"] -= 1
                    self.vested.add(actor)
                continue
            house = self.redirect(chosen)
            if not self.visit(actor, house):
                continue
            if p.role == "doctor":
                if not self.g.player(house).revealed:
                    self.healers.setdefault(house, []).append(actor)
            elif p.role == "bodyguard":
                self.guards.setdefault(house, []).append(actor)
            else:
                self.g.player(house).framed = True

    def investigations(self) -> None:
        for actor in self.actors("sheriff", "investigator", "lookout"):
            if actor in self.blocked:
                continue
            role = self.g.player(actor).role
            house = self.redirect(self.target_of(actor))
            if not self.visit(actor, house):
                continue
            if role == "lookout":
                self.lookouts.append((actor, house))
                continue
            self.investigated.add(house)
            if role == "sheriff":
                self.sheriff_result(actor, house)
            else:
                self.investigator_result(actor, house)

    def sheriff_result(self, sheriff: int, house: int) -> None:
        t = self.g.player(house)
        modern = self.flags.sheriff_wording == "modern"
        if t.framed or (t.faction is Faction.MAFIA and not t.spec.detection_immune):
            key, result = ("night.sheriff_suspicious" if modern else "night.sheriff_mafia",
                           "suspicious")
        elif t.role == "serial_killer":
            key, result = ("night.sheriff_suspicious" if modern else "night.sheriff_sk",
                           "suspicious")
        else:
            key, result = ("night.sheriff_innocent_modern" if modern
                           else "night.sheriff_innocent", "not_suspicious")
        self.msg(sheriff, key, {"target": house, "result": result})

    def investigator_result(self, inv: int, house: int) -> None:
        t = self.g.player(house)
        group = FRAMER_GROUP if t.framed else GROUP_OF[t.spec.name]
        self.msg(inv, "night.investigator", {"target": house, "roles": list(group)},
                 first=group[0], second=group[1], third=group[2])

    def attacks(self) -> None:
        g = self.g
        queue: list[Attack] = []
        for j in self.actors("jailor"):
            if j in self.blocked or self.prisoner is None:
                continue
            g.player(j).uses["executions"] -= 1
            self.executed = True
            queue.append(Attack(j, self.prisoner, Level.UNSTOPPABLE, "jailor", False))
        for v in self.actors("vigilante"):
            if v in self.blocked:
                if self.flags.vigilante_blocked_spends_bullet:
                    g.player(v).uses["bullets"] -= 1
                continue
            g.player(v).uses["bullets"] -= 1
            queue.append(Attack(v, self.target_of(v), Level.BASIC, "vigilante", True))
        queue.extend(self.mafia_attack())
        countered = {sk for sk, _ in self.sk_counters}
        for sk in self.actors("serial_killer"):
            if sk in self.blocked:
                continue
            if sk in countered and self.flags.sk_blocker == "instead":
                continue
            queue.append(Attack(sk, self.target_of(sk), Level.BASIC, "serial_killer", True))
        for sk, blocker in self.sk_counters:
            queue.append(Attack(sk, blocker, Level.BASIC, "sk_blocker", False))
        prisoner = g.player(self.prisoner) if self.prisoner is not None else None
        if (prisoner is not None and prisoner.alive and prisoner.role == "serial_killer"
                and not self.executed and not self.flags.sk_cautious):
            jailor = next((p.slot for p in g.living() if p.role == "jailor"), None)
            if jailor is not None:
                queue.append(Attack(prisoner.slot, jailor, Level.BASIC, "sk_jailed", False))
        for atk in queue:
            self.resolve_attack(atk)

    def mafia_attack(self) -> list[Attack]:
        """The Godfather's pick overrides the Mafioso's; only the one who kills visits."""
        g = self.g

        def able(slot: int | None) -> bool:
            return slot is not None and slot in self.actions and slot not in self.blocked

        gf = next((s for s in self.actors("godfather")), None)
        maf = next((p.slot for p in g.living() if p.role == "mafioso"), None)
        maf_free = maf is not None and maf != self.prisoner and maf not in self.blocked
        if able(gf):
            assert gf is not None
            target = self.target_of(gf)
            if maf_free:
                assert maf is not None
                self.msg(maf, "night.godfather_order", {"target": target},
                         target=g.name(target))
                return [Attack(maf, target, Level.BASIC, "mafia", True)]
            return [Attack(gf, target, Level.BASIC, "mafia", True)]
        if able(maf):
            assert maf is not None
            return [Attack(maf, self.target_of(maf), Level.BASIC, "mafia", True)]
        return []

    def resolve_attack(self, atk: Attack) -> None:
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
        self.strike(atk.attacker, house, atk.level, atk.cause)

    def defense(self, slot: int) -> Level:
        p = self.g.player(slot)
        level = p.spec.defense
        if slot in self.alert or slot in self.vested:
            level = max(level, Level.BASIC)
        return level

    def strike(self, attacker: int, target: int, level: Level, cause: str) -> None:
        base = self.defense(target)
        healed = bool(self.healers.get(target))
        if level > max(base, Level.POWERFUL if healed else Level.NONE):
            self.die(target, cause, attacker)
            return
        if healed and level > base:
            self.msg(target, "night.healed")
            for doctor in self.healers[target]:
                if doctor != target:
                    self.msg(doctor, "night.doctor_saved")
        elif target in self.vested and level > self.g.player(target).spec.defense:
            self.msg(target, "night.vest_saved")
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
        killer = self.g.player(attacker)
        if killer.spec.death_note and killer.death_note:
            notes = self.notes.setdefault(target, [])
            if killer.death_note not in notes:
                notes.append(killer.death_note)
        victim = self.g.player(target)
        if cause == "vigilante" and victim.faction is Faction.TOWN:
            self.town_kills_by_vigilante.add(attacker)
        if cause == "jailor" and victim.faction is Faction.TOWN:
            killer.uses["executions"] = 0
            self.msg(attacker, "night.jailor_lost_executions")

    def veteran_shots(self) -> None:
        for vet in sorted(self.alert):
            shot: list[int] = []
            for visitor, house in self.visits:
                if house == vet and visitor != vet and visitor not in shot:
                    shot.append(visitor)
            for visitor in shot:
                self.strike(vet, visitor, Level.POWERFUL, "veteran")
            if shot:
                self.msg(vet, "night.veteran_shot")

    def spies(self) -> None:
        spies = [p.slot for p in self.g.living()
                 if p.role == "spy" and p.slot != self.prisoner and p.slot not in self.blocked]
        if not spies:
            return
        houses = sorted({h for v, h in self.visits
                         if self.g.player(v).faction is Faction.MAFIA and h != v})
        for spy in spies:
            for h in houses:
                self.msg(spy, "night.spy", {"target": h}, target=self.g.name(h))

    def lookout_reports(self) -> None:
        for lookout, house in self.lookouts:
            seen = sorted({v for v, h in self.visits if h == house and v != lookout})
            for v in seen:
                self.msg(lookout, "night.lookout", {"visitor": v, "target": house},
                         visitor=self.g.name(v))

    # ---- delivery ------------------------------------------------------------------
    def finish(self) -> None:
        g = self.g
        for slot, key, params, data in self.messages:
            emit(g, key, to(slot), data=data, **params)
        if self.flags.frame_duration == "night":
            for p in g.players:
                p.framed = False
        else:
            for slot in self.investigated:
                g.player(slot).framed = False
        for vig in self.town_kills_by_vigilante:
            if vig not in self.deaths:
                g.player(vig).guilty_conscience = True
        for slot in sorted(self.deaths):
            p = g.player(slot)
            p.alive = False
            p.death = Death(day=g.day, at_night=True, causes=self.deaths[slot], will=p.will,
                            death_notes=self.notes.get(slot, []), role_shown=p.spec.name)
            g.last_death_day = g.day
        for slot in self.revived:
            p = g.player(slot)
            if slot not in self.deaths:
                p.alive = True
                p.death = None
        g.night_deaths = sorted(self.deaths)
        g.night_revived = [s for s in self.revived if s not in self.deaths]


def resolve_night(game: Game) -> None:
    NightResolver(game).resolve()
