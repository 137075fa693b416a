"""Play-quality metrics per seat, computed from a game's event log and its
roles with the engine's full knowledge (no model judge).

`seat_quality(events, roles, names)` walks the omniscient event log once and
returns `{slot: {metric: value}}`; `game_quality(game)` does it for a played
(or replayed) `Game`, `record_quality(record)` for a stored log (`tossim play
--save`), and `aggregate(per_seat, slots)` averages a group of seats (the model
seats of a match, say). Rates are None where a seat had nothing to measure
(a Doctor has no results to use), so an average only counts seats that could.

Who is an enemy depends on the seat's side: for Town, the Mafia and the
Serial Killer (Town cannot win while they live); for the Mafia, everyone
outside the Mafia; for the Serial Killer, everyone; for the Executioner, its
target; the Jester has no enemies worth voting for (its votes are not scored).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from tossim.agents.guard import COPY_RUN, shingles, words
from tossim.agents.prompting import example_texts
from tossim.engine.roles import ROLES, Faction
from tossim.engine.state import Game

RESULT_KEYS = frozenset({
    "night.sheriff_mafia", "night.sheriff_sk", "night.sheriff_suspicious",
    "night.sheriff_innocent", "night.sheriff_innocent_modern", "night.investigator",
    "night.lookout", "night.spy",
})
CHAT_KEYS = frozenset({"chat.public", "chat.dead", "chat.mafia", "chat.jail", "chat.seance",
                       "chat.whisper"})
INFO_ABILITIES = frozenset({"interrogate", "investigate", "watch"})
PROTECT_ABILITIES = frozenset({"heal", "guard"})
KILL_ABILITIES = frozenset({"kill", "shoot", "execute"})
# words that give a reason for what a speech says about a player
REASON = re.compile(
    r"\b(because|since|claim\w*|said|says|voted|votes|visit\w*|result\w*|will|lie[sd]?|"
    r"lying|suspicious|innocent|mafia|evil|town|found|checked|investigat\w*|interrogat\w*|"
    r"defen[cs]e\w*|quiet|killed|attacked|framed|sheriff|doctor|jailor|mayor|guilty|"
    r"contradict\w*|proof|evidence)\b", re.IGNORECASE)

COPIED_SHARE = 0.5
"""A text at least this much covered by runs of `guard.COPY_RUN` words from
the prompt's examples or earlier lines of the game is a copy, not the seat's
own words: it earns no reasoned speech and uses no result."""
_CHOSEN = re.compile(r"(?:decided to|will) (.+?) tonight\.$")

RATES = ("vote_accuracy", "results_use_rate", "claim_accuracy", "night_plausibility",
         "reasoned_rate", "repetition_rate")
COUNTS = ("votes", "guilty", "town_lynched_with_guilty", "results", "role_claims",
          "night_actions", "speeches", "chat_lines", "repeats")


def _side(role: str) -> str:
    r = ROLES[role]
    if r.faction is Faction.NEUTRAL:
        return role  # each neutral is its own side
    return r.faction.value


def is_enemy(seat_role: str, target_role: str, *, target: int | None = None,
             exe_target: int | None = None) -> bool | None:
    """Whether `target_role` is an enemy of a seat with `seat_role` (None: the
    seat has no enemies worth scoring, e.g. the Jester)."""
    side = _side(seat_role)
    if side == Faction.TOWN.value:
        return ROLES[target_role].faction is Faction.MAFIA or target_role == "serial_killer"
    if side == Faction.MAFIA.value:
        return ROLES[target_role].faction is not Faction.MAFIA
    if seat_role == "serial_killer":
        return True
    if seat_role == "executioner":
        return target is not None and target == exe_target
    return None


def _ally(seat_role: str, target_role: str) -> bool:
    """Same side (a Town member for a Town seat, a Mafia member for the Mafia)."""
    side = _side(seat_role)
    return side in (Faction.TOWN.value, Faction.MAFIA.value) and side == _side(target_role)


@lru_cache(maxsize=1)
def _claim_pattern() -> re.Pattern[str]:
    names = sorted((r.name for r in ROLES.values()), key=len, reverse=True)
    alts = "|".join(re.escape(n) for n in names)
    return re.compile(rf"\bI(?:'m| am)(?: the| a| an)? ({alts})\b", re.IGNORECASE)


def claimed_roles(text: str) -> list[str]:
    """Role keys a line claims for its speaker ("I am the Sheriff", "I'm a doctor")."""
    by_name = {r.name.lower(): k for k, r in ROLES.items()}
    return [by_name[m.group(1).lower()] for m in _claim_pattern().finditer(text)]


def _mentions(text: str, names: Mapping[int, str], me: int) -> list[int]:
    low = text.lower()
    return [s for s, n in names.items()
            if s != me and re.search(rf"(?<!\w){re.escape(n.lower())}(?!\w)", low)]


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def copied_share(text: str, sources: set[tuple[str, ...]]) -> float:
    """The share of a text's words inside a run of `COPY_RUN` words that is
    also in `sources` (0.0: all its own words, 1.0: a copy)."""
    w = words(text)
    covered = [False] * len(w)
    for i in range(len(w) - COPY_RUN + 1):
        if tuple(w[i:i + COPY_RUN]) in sources:
            covered[i:i + COPY_RUN] = [True] * COPY_RUN
    return sum(covered) / len(w) if w else 1.0


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


def _event(e: Any) -> dict[str, Any]:
    return e.to_dict() if hasattr(e, "to_dict") else dict(e)


def seat_quality(events: Iterable[Any], roles: Mapping[int, str],
                 names: Mapping[int, str]) -> dict[int, dict[str, Any]]:
    """Per-seat metrics from an omniscient event log (Event objects or their
    dicts), the seats' role keys and their names (see the module docstring)."""
    c: dict[int, dict[str, Any]] = {s: {
        "role": ROLES[r].name, "faction": ROLES[r].faction.value,
        "votes": 0, "votes_on_enemies": 0, "guilty": 0, "guilty_on_enemies": 0,
        "innocent_on_enemies": 0, "town_lynched_with_guilty": 0,
        "results": 0, "results_used": 0, "role_claims": 0, "true_claims": 0,
        "night_actions": 0, "night_plausible": 0, "speeches": 0, "reasoned": 0,
        "chat_lines": 0, "repeats": 0,
    } for s, r in roles.items()}
    exe_target: dict[int, int] = {}
    accused: int | None = None
    verdicts: dict[int, str] = {}
    revealed: set[int] = set()
    checked: dict[int, set[int]] = {s: set() for s in roles}
    said: dict[int, set[str]] = {s: set() for s in roles}
    # results not yet named in a will or a speech: (seat, names that count as naming it)
    pending: list[tuple[int, frozenset[str]]] = []
    # the final night choice per (actor, day): (ability, targets)
    night: dict[tuple[int, int], tuple[str, tuple[int, ...]]] = {}
    # what a seat's text is compared with before it is credited: the prompt's
    # examples, every earlier line of the game, and per seat the example will
    # its prompt built from its results (less the engine's own result text)
    copied: set[tuple[str, ...]] = shingles(example_texts(dict(names)))
    example_will: dict[int, set[tuple[str, ...]]] = {s: set() for s in roles}
    chosen_text: dict[tuple[int, int], str] = {}

    def own(seat: int, text: str) -> bool:
        return copied_share(text, copied | example_will[seat]) < COPIED_SHARE

    def enemy(seat: int, target: int) -> bool | None:
        return is_enemy(roles[seat], roles[target], target=target,
                        exe_target=exe_target.get(seat))

    def use_results(seat: int, text: str) -> None:
        low = text.lower()
        keep = []
        for s, wanted in pending:
            if s == seat and any(n.lower() in low for n in wanted):
                c[s]["results_used"] += 1
            else:
                keep.append((s, wanted))
        pending[:] = keep

    for raw in events:
        e = _event(raw)
        key, data, day = e["key"], e.get("data") or {}, e["day"]
        if key == "game.executioner_target":
            for s in (e.get("audience") or {}).get("players", ()):
                exe_target[s] = data["target"]
        elif key in ("vote.cast", "vote.changed"):
            voter, target = data["voter"], data["target"]
            if voter in c and target in roles:
                verdict = enemy(voter, target)
                if verdict is not None:
                    c[voter]["votes"] += 1
                    c[voter]["votes_on_enemies"] += int(verdict)
        elif key == "phase.judgement":
            accused, verdicts = data.get("accused"), {}
        elif key == "judge.vote":
            voter, v = data["voter"], data["verdict"]
            verdicts[voter] = v
            if voter in c and accused is not None and accused in roles:
                verdict = enemy(voter, accused)
                if verdict is not None and v == "guilty":
                    c[voter]["guilty"] += 1
                    c[voter]["guilty_on_enemies"] += int(verdict)
                elif verdict and v == "innocent":
                    c[voter]["innocent_on_enemies"] += 1
        elif key == "lynch.death":
            lynched = data["player"]
            if ROLES[roles[lynched]].faction is Faction.TOWN:
                for voter, v in verdicts.items():
                    if v == "guilty" and voter in c \
                            and ROLES[roles[voter]].faction is Faction.TOWN:
                        c[voter]["town_lynched_with_guilty"] += 1
        elif key == "mayor.reveal":
            revealed.add(data["player"])
        elif key in ("night.chosen", "night.mafia_chosen"):
            actor = data.get("actor")
            if actor is None:
                actor = next(iter((e.get("audience") or {}).get("players", ())), None)
            if isinstance(actor, int) and actor in roles:
                night[(actor, day)] = (data["ability"], tuple(data["targets"]))
                chosen_text[(actor, day)] = str(e.get("text", ""))
        elif key == "night.cancel":
            for s in (e.get("audience") or {}).get("players", ()):
                night.pop((s, day), None)
        elif key in ("phase.discussion", "game.end"):
            # the night that just ended: score its final choices (a target
            # counts as checked only once the night has resolved)
            for (actor, _day), (ability, targets) in sorted(night.items()):
                c[actor]["night_actions"] += 1
                c[actor]["night_plausible"] += int(_plausible(
                    actor, ability, targets, roles, revealed, checked[actor]))
                if ability in INFO_ABILITIES:
                    checked[actor].update(targets)
            night.clear()
        elif key in RESULT_KEYS:
            seat = next(iter((e.get("audience") or {}).get("players", ())), None)
            if seat in c:
                c[seat]["results"] += 1
                wanted = {names[data["target"]]} if "target" in data else set()
                if "visitor" in data:
                    wanted.add(names[data["visitor"]])
                pending.append((seat, frozenset(wanted)))
                # the example will's line for this result (prompting.results_lines)
                m_chosen = _CHOSEN.search(chosen_text.get((seat, day), ""))
                result = str(e.get("text", ""))
                if m_chosen is not None:
                    example_will[seat] |= (shingles([f"Night {day} {m_chosen.group(1)}: {result}"])
                                           - shingles([result]))
        elif key == "dawn.will":
            copied |= shingles([str(data.get("will", ""))])
        elif key == "will.saved":
            seat = next(iter((e.get("audience") or {}).get("players", ())), None)
            if seat in c and own(seat, str(data.get("will", ""))):
                use_results(seat, data.get("will", ""))
        elif key in CHAT_KEYS:
            author = data.get("author")
            if author not in c:
                continue
            text = str(data.get("text", ""))
            m = c[author]
            m["chat_lines"] += 1
            n = _norm(text)
            if n in said[author]:
                m["repeats"] += 1
            said[author].add(n)
            mine = own(author, text)
            copied |= shingles([text])
            if key in ("chat.public", "chat.whisper") and mine:
                use_results(author, text)
            if key == "chat.public":
                m["speeches"] += 1
                if mine and _mentions(text, names, author) and REASON.search(text):
                    m["reasoned"] += 1
                for claim in claimed_roles(text):
                    m["role_claims"] += 1
                    m["true_claims"] += int(claim == roles[author])
    for m in c.values():
        town = m["faction"] == Faction.TOWN.value
        m["vote_accuracy"] = _ratio(m["votes_on_enemies"] + m["guilty_on_enemies"],
                                    m["votes"] + m["guilty"])
        m["results_use_rate"] = _ratio(m["results_used"], m["results"])
        m["claim_accuracy"] = _ratio(m["true_claims"], m["role_claims"]) if town else None
        m["night_plausibility"] = _ratio(m["night_plausible"], m["night_actions"])
        m["reasoned_rate"] = _ratio(m["reasoned"], m["speeches"])
        m["repetition_rate"] = _ratio(m["repeats"], m["chat_lines"])
    return c


def _plausible(actor: int, ability: str, targets: tuple[int, ...], roles: Mapping[int, str],
               revealed: set[int], checked: set[int]) -> bool:
    """A night choice that can help the actor's side (engine knowledge)."""
    me = roles[actor]
    if ability in PROTECT_ABILITIES:
        return all(t != actor and is_enemy(me, roles[t]) is not True for t in targets)
    if ability in KILL_ABILITIES:
        return all(t != actor and not _ally(me, roles[t]) for t in targets)
    if ability in INFO_ABILITIES:
        return all(t != actor and t not in revealed and t not in checked for t in targets)
    if ability == "distract":
        return all(not _ally(me, roles[t]) for t in targets)
    return True  # alert, frame, transport, revive, haunt: any legal choice is reasonable


def game_quality(game: Game) -> dict[int, dict[str, Any]]:
    """`seat_quality` of a played or replayed game."""
    return seat_quality(game.events, {p.slot: p.role for p in game.players},
                        {p.slot: p.name for p in game.players})


def record_quality(record: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """`seat_quality` of a stored game log (`tossim play --save`): replayed
    from its config and commands, so roles come from the engine itself."""
    from tossim.engine import GameConfig
    from tossim.engine import replay as replay_mod

    game = replay_mod.rerun(GameConfig.from_dict(record["config"]), list(record["commands"]))
    return game_quality(game)


def aggregate(per_seat: Mapping[int, Mapping[str, Any]],
              slots: Sequence[int] | None = None) -> dict[str, Any]:
    """Counts summed and rates averaged over `slots` (all seats by default);
    a rate is averaged over the seats where it is defined."""
    chosen = [per_seat[s] for s in (slots if slots is not None else sorted(per_seat))
              if s in per_seat]
    out: dict[str, Any] = {"seats": len(chosen)}
    for k in COUNTS:
        out[k] = sum(int(m.get(k, 0)) for m in chosen)
    for k in RATES:
        vals = [float(m[k]) for m in chosen if m.get(k) is not None]
        out[k] = round(sum(vals) / len(vals), 3) if vals else None
    return out


def format_quality(per_seat: Mapping[int, Mapping[str, Any]],
                   groups: Mapping[str, Sequence[int]]) -> list[str]:
    """Lines for the command line: one per group of seats."""
    def pct(v: Any) -> str:
        return "-" if v is None else f"{100 * float(v):.0f}%"

    lines = []
    for label, slots in groups.items():
        a = aggregate(per_seat, slots)
        if not a["seats"]:
            continue
        lines.append(
            f"  play quality, {label} ({a['seats']} seats): vote accuracy "
            f"{pct(a['vote_accuracy'])} of {a['votes'] + a['guilty']} votes/guilty, "
            f"Town lynched with own guilty {a['town_lynched_with_guilty']}, results used "
            f"{pct(a['results_use_rate'])}, true Town claims {pct(a['claim_accuracy'])}, "
            f"plausible night targets {pct(a['night_plausibility'])}, reasoned speech "
            f"{pct(a['reasoned_rate'])} of {a['speeches']}, repeated lines "
            f"{pct(a['repetition_rate'])}")
    return lines


def quality_report(game: Game, groups: Mapping[str, Sequence[int]]) -> dict[str, Any]:
    """The JSON form written by `tossim play --metrics`: every seat's metrics
    and one aggregate per group of seats."""
    per_seat = game_quality(game)
    return {"seats": {str(s): m for s, m in sorted(per_seat.items())},
            "groups": {label: aggregate(per_seat, slots) for label, slots in groups.items()}}
