"""Mode-dealing checks for scenario files: deal a mode or a custom role list
over many seeds and check every deal against constraints written in the file.

A rules scenario about a role list cannot be one game: "Ranked Practice deals
9 Town, 4 Mafia and 2 Neutral" is a statement about every deal. So a
scenario with a `deal:` block (instead of `players`) deals the list for
`seeds` seeds and checks each deal; one with `refused:` checks that the list
is refused with a reason that names the slot. The format is in
docs/scenarios.md; this module compiles and runs that part, and
`scenario.py` only dispatches to it.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from tossim.engine import role_lists
from tossim.engine.modes import get_mode
from tossim.engine.roles import ROLES, Faction
from tossim.engine.rules import ConfigError, deal, make_config, role_list
from tossim.scenarios.lines import FieldReader, LineDict

DEAL_FIELDS = ("mode", "roles", "players", "seeds", "refused")
DEAL_EXPECT_FIELDS = ("factions", "slots", "never", "sometimes", "always")
MAX_SEEDS = 5000
MAX_PROBLEMS = 5  # a deal check stops after this many broken deals


@dataclass
class DealSpec:
    """What a `deal:` block asks: the list, how many seeds, and the checks."""

    mode: str = "classic"
    roles: list[str] | None = None
    players: int | None = None
    seeds: int = 100
    refused: str | None = None  # the list must be refused with this text in the reason
    factions: dict[str, tuple[int, int]] = field(default_factory=dict)
    slots: dict[int, frozenset[str]] = field(default_factory=dict)
    never: frozenset[str] = frozenset()
    sometimes: frozenset[str] = frozenset()
    always: frozenset[str] = frozenset()
    line: int = 0


def _role_keys(c: FieldReader, value: Any, line: int, what: str) -> frozenset[str]:
    items = c.sequence(value, line, what)
    return frozenset(c.role_key(x, items.line_at(i), what) for i, x in enumerate(items))


def compile_deal(c: FieldReader, block: LineDict, expect: LineDict | None) -> DealSpec:
    """Read a `deal:` block and its `expect:`; problems go to the compiler's
    errors with their line, like every other part of a scenario file."""
    spec = DealSpec(line=block.line)
    c.unknown_fields(block, DEAL_FIELDS, "deal")
    if "mode" in block:
        spec.mode = c.text(block["mode"], block.line_of("mode"), "deal.mode")
    if "roles" in block:
        items = c.sequence(block["roles"], block.line_of("roles"), "deal.roles")
        spec.roles = [c.text(x, items.line_at(i), "deal.roles") for i, x in enumerate(items)]
    if "players" in block:
        spec.players = c.integer(block["players"], block.line_of("players"), "deal.players", 1)
    if "seeds" in block:
        spec.seeds = c.integer(block["seeds"], block.line_of("seeds"), "deal.seeds", 1)
        if spec.seeds > MAX_SEEDS:
            c.err(block.line_of("seeds"), f"deal.seeds: at most {MAX_SEEDS}")
    if "refused" in block:
        spec.refused = c.text(block["refused"], block.line_of("refused"), "deal.refused")
    if expect is None:
        return spec
    c.unknown_fields(expect, DEAL_EXPECT_FIELDS, "expect (of a deal)")
    if "factions" in expect:
        fac = c.mapping(expect["factions"], expect.line_of("factions"), "factions")
        for name, value in fac.items():
            at = fac.line_of(name)
            if name not in {f.value for f in Faction}:
                c.err(at, f"factions: unknown faction {name!r}")
                continue
            if isinstance(value, list) and len(value) == 2:
                lo, hi = (c.integer(v, at, f"factions.{name}") for v in value)
            else:
                lo = hi = c.integer(value, at, f"factions.{name}")
            spec.factions[str(name)] = (lo, hi)
    if "slots" in expect:
        slots = c.mapping(expect["slots"], expect.line_of("slots"), "slots")
        for key, value in slots.items():
            at = slots.line_of(key)
            index = c.integer(key, at, "slots (a slot number)", 1)
            spec.slots[index] = _role_keys(c, value, at, f"slots.{index}")
    for name in ("never", "sometimes", "always"):
        if name in expect:
            setattr(spec, name, _role_keys(c, expect[name], expect.line_of(name), name))
    return spec


def run_deal(spec: DealSpec, seed: int, flags: dict[str, Any],
             fail: Any) -> None:
    """Deal `spec` for seeds seed..seed+seeds-1 and report each broken
    constraint through `fail(line, message)` (at most a few per check)."""
    try:
        config = make_config(spec.mode, spec.players, seed, spec.roles, flags=dict(flags))
    except ConfigError as exc:
        if spec.refused is None:
            fail(spec.line, f"the list was refused: {exc}")
        elif spec.refused.lower() not in str(exc).lower():
            fail(spec.line, f"refused, but the reason {str(exc)!r} does not contain "
                            f"{spec.refused!r}")
        return
    if spec.refused is not None:
        fail(spec.line, f"expected the list to be refused ({spec.refused!r}), but it was "
                        "accepted")
        return
    mode = get_mode(config.mode)
    slots = role_lists.parse_role_list(role_list(config))
    any_custom = config.rule_flags().any_deals_custom_only
    accepts = [frozenset(r.key for r in s.candidates(custom=mode.custom,
                                                     any_custom_only=any_custom))
               for s in slots]
    for index, allowed in spec.slots.items():
        if index > len(slots):
            fail(spec.line, f"slots: the list has no slot {index}")
            return
        accepts[index - 1] = allowed
    seen: Counter[str] = Counter()
    problems: list[str] = []
    dealt = 0
    for s in range(seed, seed + spec.seeds):
        keys = deal(replace(config, seed=s), random.Random(s))
        dealt += 1
        seen.update(set(keys))
        problems.extend(f"seed {s}: {p}" for p in _deal_problems(spec, keys, accepts))
        if len(problems) >= MAX_PROBLEMS:
            break
    for p in problems[:MAX_PROBLEMS]:
        fail(spec.line, p)
    if dealt < spec.seeds:
        # Stopped early: "never dealt" would be a claim about seeds not dealt.
        if spec.sometimes:
            fail(spec.line, f"stopped after {MAX_PROBLEMS} problems at seed {seed + dealt - 1}; "
                            "`sometimes` was not checked")
        return
    for key in sorted(spec.sometimes - set(seen)):
        fail(spec.line, f"{ROLES[key].name} was never dealt in {spec.seeds} seeds")


def _deal_problems(spec: DealSpec, keys: list[str],
                   accepts: list[frozenset[str]]) -> list[str]:
    out = []
    names = ", ".join(ROLES[k].name for k in keys)
    counts = Counter(ROLES[k].faction.value for k in keys)
    for faction, (lo, hi) in spec.factions.items():
        if not lo <= counts[faction] <= hi:
            want = str(lo) if lo == hi else f"{lo}-{hi}"
            out.append(f"{counts[faction]} {faction} roles, expected {want} ({names})")
    for k, n in Counter(keys).items():
        if ROLES[k].unique and n > 1:
            out.append(f"unique role {ROLES[k].name} dealt {n} times")
    for k in sorted(spec.never & set(keys)):
        out.append(f"{ROLES[k].name} was dealt ({names})")
    for k in sorted(spec.always - set(keys)):
        out.append(f"{ROLES[k].name} was not dealt ({names})")
    if role_lists.assign(keys, accepts) is None:
        out.append(f"the deal does not fit the slots ({names})")
    return out
