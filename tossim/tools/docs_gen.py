"""Generate `docs/roles.md` from the role registry, so the docs cannot drift
from the rules the engine plays (a test compares the file with this output)."""

from __future__ import annotations

from itertools import groupby

from tossim.engine.modes import MODES, RuleFlags
from tossim.engine.roles import GROUP_OF, ROLES, Level, Role
from tossim.engine.victory import STALEMATES, WIN_CONDITIONS


def _level(level: Level, defense: bool = False) -> str:
    if defense and level is Level.UNSTOPPABLE:
        return "Invincible"
    return level.name.title()


def _ability(r: Role) -> str:
    parts = []
    for label, a in (("night", r.night), ("day", r.day)):
        if a is None:
            continue
        uses = f", uses: {r.uses[a.uses]}" if a.uses and a.uses in r.uses else ""
        extra = []
        if label == "night":
            extra.append(f"priority {a.priority}")
            extra.append("visits" if a.visits else "no visit")
            if a.not_first_night:
                extra.append("not Night 1")
            if a.available:
                extra.append(f"only when {a.available.replace('_', ' ')}")
            extra.append(f"handler {a.handler_key}")
        parts.append(f"{label}: {a.name} ({a.rule.value}{uses}; {', '.join(extra)})"
                     if extra else f"{label}: {a.name} ({a.rule.value}{uses})")
    return "; ".join(parts) or "none"


def roles_markdown() -> str:
    lines = [
        "# Roles",
        "",
        "Generated from `tossim/engine/roles/registry.py` by `tossim docs`; do not edit by "
        "hand (a test fails when this file and the registry differ).",
        "",
        "| Role | Alignment | Attack | Defense | Abilities | Immunities | Investigator group "
        "| Unique |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in ROLES.values():
        immune = [name for flag, name in ((r.roleblock_immune, "role block"),
                                          (r.control_immune, "control"),
                                          (r.detection_immune, "detection")) if flag]
        group = ", ".join(GROUP_OF[r.name])
        lines.append(
            f"| {r.name} | {r.alignment} | {_level(r.attack)} | {_level(r.defense, True)} "
            f"| {_ability(r)} | {', '.join(immune) or '-'} | {group} "
            f"| {'yes' if r.unique else 'no'} |")
    lines += ["", "Dealt only from custom role lists: "
              + ", ".join(r.name for r in ROLES.values() if r.custom_only) + "."]
    lines += ["", "## Night order", "",
              "Every night ability and passive, as the queue runs them (priority, order "
              "within the priority, then seat).", "",
              "| Priority | Order | Role | Ability | Handler | Labels |",
              "|---|---|---|---|---|---|"]
    entries = []
    for r in ROLES.values():
        for a in (r.night, *r.passives):
            if a is not None:
                entries.append((a.priority, a.order, r.name, a.name, a.handler_key,
                                ", ".join(sorted(a.labels)) or "-"))
    lines += [f"| {p} | {o} | {n} | {a} | {h} | {lab} |" for p, o, n, a, h, lab in sorted(entries)]
    lines += ["", "## Win conditions", "", "| Role | Wins with | Co-win |", "|---|---|---|"]
    for r in ROLES.values():
        wc = WIN_CONDITIONS[r.win]
        lines.append(f"| {r.name} | {wc.label or '-'} | {wc.co_win or '-'} |")
    lines += ["", "## Stalemate table", "",
              "With two players left on opposing sides (flag `stalemate_table`):", "",
              "| Last two | Awarded to | Reason |", "|---|---|---|"]
    for entry in STALEMATES:
        pair = " vs ".join(sorted(ROLES[k].name for k in entry.roles))
        lines.append(f"| {pair} | {WIN_CONDITIONS[entry.winner].label} | {entry.reason} |")
    lines += ["", "## Role cards", ""]
    for r in ROLES.values():
        lines += [f"### {r.name}", "", f"*{r.alignment}.* {r.summary}", "", f"Goal: {r.goal}", ""]
    lines += ["## Modes and role lists", "",
              "A slot is a role, an alignment category (`Town Investigative`), a faction "
              "(`Random Town`, `Random Mafia`, `Random Neutral`) or `Any`. Slots are dealt "
              "most specific first, unique roles at most once, then shuffled over the "
              "seats. Custom-only roles "
              f"({', '.join(r.name for r in ROLES.values() if r.custom_only) or 'none'}) "
              "come only from custom lists (`tossim play --roles \"Jailor, Any, ...\"`).", ""]
    for m in MODES.values():
        players = (f"{m.min_players}-{m.max_players}" if m.min_players != m.max_players
                   else str(m.max_players))
        lines += [f"### {m.name} (`{m.key}`, {players} players)", "", m.description, ""]
        if m.custom:
            continue
        names = [slot.replace("_", " ").title() if slot.islower() else slot for slot in m.slots]
        runs = [(name, len(list(group))) for name, group in groupby(names)]
        lines += ["- " + ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in runs), ""]
    lines += ["## Rule flags and their defaults", "",
              "| Flag | Default |", "|---|---|"]
    for name, value in RuleFlags().to_dict().items():
        lines.append(f"| `{name}` | `{value}` |")
    return "\n".join(lines) + "\n"
