"""An arena's figures: what `tossim arena report`, `GET /api/arenas/{id}/report`
and the leaderboard page show.

Computed from the store alone (finished games: their config and command log,
re-run through the engine for the roles and who survived; the seat metrics
the game's actor stored), so the figures never depend on the process that
played the games. Per entry:

- win rate overall, per faction and per role, with 95% Wilson intervals
  (a seat wins when its slot is among the game's winners);
- an OpenSkill rating (Plackett-Luce): each game ranks the entries in it by
  the share of their seats that won; mu, sigma and the ordinal mu - 3 sigma,
  the conservative figure the leaderboard sorts by (averaged over several
  orders of the games, see `openskill_ratings`);
- survival (alive at the end), and the share of votes cast by its non-Mafia
  seats that went to a player who turned out to be Mafia;
- malformed, fault, timeout and error rates; tokens; cost ("-" when the
  entry has no price); seconds per decision (measured by the actor around
  every seat alike) and per model turn. Timeouts and errors are counted per
  turn from the stored turn records, as the seat metrics count them
  (`agents.turn_records`), plus the decisions the actor gave up on (no
  record): a seat that abstains on its own deadline is a timeout too.

It lives below the server (whose `/api/arenas/{id}/report` and leaderboard
read it) and the arena (which plays the games and prints it), in the analysis
layer (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import csv
import html
import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tossim.agents.turn_records import abstentions
from tossim.engine.replay import rerun
from tossim.engine.roles import ROLES
from tossim.engine.state import GameConfig
from tossim.inference.catalogue import ModelEntry, load_catalogue
from tossim.store import Store

Z95 = 1.959963984540054


def wilson(k: int | float, n: int | float) -> tuple[float | None, float | None]:
    """The 95% Wilson score interval of k successes in n trials (None, None when n = 0)."""
    if n <= 0:
        return None, None
    p = k / n
    z2 = Z95 * Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _rate(k: int | float, n: int | float) -> dict[str, float | None]:
    lo, hi = wilson(k, n)
    return {"rate": (k / n) if n else None, "lo": lo, "hi": hi}


@dataclass
class Tally:
    """Sums over one entry's seats."""

    games: set[str] = field(default_factory=set)
    seats: int = 0
    wins: int = 0
    survived: int = 0
    votes: int = 0  # votes cast by its non-Mafia seats
    mafia_votes: int = 0  # ... of them on a player who was Mafia
    decisions: int = 0
    faults: int = 0
    timeouts: int = 0
    errors: int = 0
    records: int = 0  # stored turn records (model seats)
    decisions_unrecorded: int = 0  # decisions that timed out or failed in the actor
    seconds: float = 0.0
    turns: int = 0  # model turns (agent metrics)
    malformed: int = 0
    turn_seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    priced: bool = False


def _prices(catalogue: str | None, spec: dict[str, Any]) -> dict[str, ModelEntry]:
    """label -> the catalogue's entry, where the catalogue knows the entry and
    gives it a price (no price: no cost figure, "-", not 0)."""
    try:
        cat = load_catalogue(catalogue)
    except ValueError:  # CatalogueError: no prices at all
        return {}
    out: dict[str, ModelEntry] = {}
    for e in spec.get("entries", []):
        try:
            entry = cat.get(e["entry"])
        except KeyError:
            continue
        if entry.priced:
            out[e["label"]] = entry
    return out


async def arena_report(store: Store, arena_id: str, *,
                       catalogue: str | None = None) -> dict[str, Any] | None:
    """The report of arena `arena_id` (None: no such arena). Games not
    finished yet are counted but left out of the figures."""
    arena = await store.get_arena(arena_id)
    if arena is None:
        return None
    spec = arena.spec
    labels = [e["label"] for e in spec["entries"]]
    priced = _prices(catalogue, spec)
    statuses = await store.game_statuses([g.game_id for g in arena.games])
    tallies = {label: Tally() for label in labels}
    by_faction: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    by_role: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    results: dict[str, int] = defaultdict(int)
    # per finished game: label -> (seats, seats that won)
    shares: list[dict[str, tuple[int, int]]] = []
    finished = 0
    for g in arena.games:
        if statuses.get(g.game_id) != "finished":
            continue
        row = await store.get_game(g.game_id)
        if row is None:
            continue
        finished += 1
        results[row.result or "none"] += 1
        game = rerun(GameConfig.from_dict(row.config),
                     [c for _, _, c in await store.commands(g.game_id)])
        metrics = await store.metrics(g.game_id)
        records: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for rec in await store.turns(g.game_id):
            records[int(rec["slot"])].append(rec)
        winners = set(row.winners)
        mafia = {p.slot for p in game.players
                 if ROLES[p.original_role].faction.value == "mafia"}
        votes: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        for c in game.commands:
            if c.get("type") == "vote" and c.get("target") is not None:
                votes[int(c["actor"])][0] += 1
                votes[int(c["actor"])][1] += int(c["target"]) in mafia
        share: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for p in game.players:
            label = g.seats[p.slot - 1]
            t = tallies[label]
            role = p.original_role
            faction = ROLES[role].faction.value
            won = p.slot in winners
            t.games.add(g.game_id)
            t.seats += 1
            t.wins += won
            t.survived += p.alive
            if p.slot not in mafia:
                t.votes += votes[p.slot][0]
                t.mafia_votes += votes[p.slot][1]
            by_faction[(label, faction)][0] += 1
            by_faction[(label, faction)][1] += won
            by_role[(label, role)][0] += 1
            by_role[(label, role)][1] += won
            share[label][0] += 1
            share[label][1] += won
            _add_metrics(t, metrics.get(p.slot, {}), priced.get(label))
            _add_records(t, records.get(p.slot, []))
        shares.append({lb: (n, w) for lb, (n, w) in share.items()})
    ratings = openskill_ratings(labels, shares)
    entries = []
    for e in spec["entries"]:
        label = e["label"]
        t, r = tallies[label], ratings[label]
        turns = max(t.turns, 1)
        # per turn where there are turn records; per decision for seats without
        per_turn = t.records + t.decisions_unrecorded if t.records else t.decisions
        entries.append({
            "label": label, "entry": e["entry"], "backend": e["backend"],
            "games": len(t.games), "seats": t.seats, "wins": t.wins,
            "win": _rate(t.wins, t.seats),
            "rating": {"mu": round(r[0], 3), "sigma": round(r[1], 3),
                       "ordinal": round(r[0] - 3 * r[1], 3)},
            "survival": _rate(t.survived, t.seats),
            "mafia_votes": {"votes": t.votes, "on_mafia": t.mafia_votes,
                            **_rate(t.mafia_votes, t.votes)},
            "decisions": t.decisions,
            "fault_rate": _ratio(t.faults, t.decisions), "faults": t.faults,
            "timeout_rate": _ratio(t.timeouts, per_turn), "timeouts": t.timeouts,
            "error_rate": _ratio(t.errors, per_turn), "errors": t.errors,
            "model_turns": t.turns, "malformed": t.malformed,
            "malformed_rate": _ratio(t.malformed, t.turns),
            "prompt_tokens": t.prompt_tokens, "completion_tokens": t.completion_tokens,
            "cached_tokens": t.cached_tokens,
            "tokens_per_turn": round((t.prompt_tokens + t.completion_tokens) / turns, 1)
            if t.turns else None,
            "cost_usd": round(t.cost_usd, 6) if t.priced else None,
            "decision_seconds": round(t.seconds / t.decisions, 4) if t.decisions else None,
            "turn_seconds": round(t.turn_seconds / t.turns, 4) if t.turns else None,
        })
    entries.sort(key=lambda x: -x["rating"]["ordinal"])
    for rank, item in enumerate(entries, start=1):
        item["rank"] = rank
    return {
        "arena": {"id": arena.id, "status": arena.status,
                  "created_at": arena.created_at.isoformat(), "spec": spec,
                  "planned": len(arena.games), "finished": finished,
                  "live": sum(1 for s in statuses.values() if s == "live"),
                  "results": dict(sorted(results.items()))},
        "entries": entries,
        "factions": [{"label": lb, "faction": f, "seats": n, "wins": w, **_rate(w, n)}
                     for (lb, f), (n, w) in sorted(by_faction.items(),
                                                   key=lambda kv: (labels.index(kv[0][0]),
                                                                   kv[0][1]))],
        "roles": [{"label": lb, "role": ROLES[role].name,
                   "faction": ROLES[role].faction.value, "seats": n, "wins": w,
                   **_rate(w, n)}
                  for (lb, role), (n, w) in sorted(by_role.items(),
                                                   key=lambda kv: (labels.index(kv[0][0]),
                                                                   kv[0][1]))],
    }


RATING_ORDERS = 16  # game orders averaged over (OpenSkill updates depend on order)


def openskill_ratings(labels: list[str], games: list[dict[str, tuple[int, int]]]
                      ) -> dict[str, tuple[float, float]]:
    """label -> (mu, sigma): OpenSkill (Plackett-Luce), one update per game
    ranking the entries in it by the share of their seats that won.

    OpenSkill is an online rating: the same games in another order give other
    figures. The games of an arena have no meaningful order (they run at the
    same time), so the ratings are averaged over the games' stored order and
    RATING_ORDERS - 1 seeded shuffles of it."""
    import random

    from openskill.models import PlackettLuce

    model = PlackettLuce()
    rng = random.Random(0)
    sums = {lb: [0.0, 0.0] for lb in labels}
    order = list(range(len(games)))
    for k in range(RATING_ORDERS):
        if k:
            rng.shuffle(order)
        ratings = {lb: model.rating(name=lb) for lb in labels}
        for i in order:
            present = [lb for lb in labels if games[i].get(lb, (0, 0))[0]]
            if len(present) < 2:
                continue
            new = model.rate([[ratings[lb]] for lb in present],
                             scores=[games[i][lb][1] / games[i][lb][0] for lb in present])
            for lb, team in zip(present, new, strict=True):
                ratings[lb] = team[0]
        for lb in labels:
            sums[lb][0] += ratings[lb].mu
            sums[lb][1] += ratings[lb].sigma
    return {lb: (mu / RATING_ORDERS, sigma / RATING_ORDERS) for lb, (mu, sigma) in sums.items()}


def _ratio(k: int, n: int) -> float | None:
    return round(k / n, 4) if n else None


def _num(d: dict[str, Any], key: str) -> float:
    v = d.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0


def _add_records(t: Tally, records: list[dict[str, Any]]) -> None:
    """A seat's stored turns: each abstention on a timeout or an error is
    counted as the seat's metrics count it (`turn_records.abstention`)."""
    t.records += len(records)
    counted = abstentions(records)
    t.timeouts += counted["timeout"]
    t.errors += counted["error"]


def _add_metrics(t: Tally, data: dict[str, Any], entry: ModelEntry | None) -> None:
    t.decisions += int(_num(data, "decisions"))
    t.faults += int(_num(data, "faults"))
    # decisions the actor gave up on: no turn record was stored for them
    lost_timeouts, lost_errors = int(_num(data, "timeouts")), int(_num(data, "errors"))
    t.timeouts += lost_timeouts
    t.errors += lost_errors
    t.decisions_unrecorded += lost_timeouts + lost_errors
    t.seconds += _num(data, "seconds")
    agent = data.get("agent")
    if not isinstance(agent, dict):
        return
    turns = int(_num(agent, "turns"))
    t.turns += turns
    t.malformed += int(_num(agent, "malformed"))
    t.turn_seconds += _num(agent, "seconds")
    # every request's context, as an API bills it (`prompt_tokens` is only
    # each turn's first prompt; `cached_tokens` counts all requests)
    prompt = int(_num(agent, "requested_tokens") or _num(agent, "prompt_tokens"))
    completion = int(_num(agent, "completion_tokens") or _num(agent, "generated_tokens"))
    t.prompt_tokens += prompt
    t.completion_tokens += completion
    t.cached_tokens += int(_num(agent, "cached_tokens"))
    if agent.get("cost_usd") is not None:  # the chat backend prices each call itself
        t.cost_usd += _num(agent, "cost_usd")
        t.priced = True
    elif entry is not None:
        t.cost_usd += entry.cost(prompt, completion)
        t.priced = True


# ---- output ------------------------------------------------------------------------------

def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _ci(d: dict[str, Any]) -> str:
    if d.get("rate") is None:
        return "-"
    return f"{_pct(d['rate'])} [{_pct(d['lo'])}, {_pct(d['hi'])}]"


def print_report(data: dict[str, Any]) -> None:
    """The figures as rich tables on stdout."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 180))
    a = data["arena"]
    console.print(f"[bold]arena {a['id']}[/] ({a['status']}): {a['finished']}/{a['planned']} "
                  f"games finished; results: "
                  + (", ".join(f"{k} {v}" for k, v in a["results"].items()) or "none"))
    table = Table(title="leaderboard (OpenSkill ordinal = mu - 3 sigma)")
    for col in ("#", "entry", "ordinal", "mu", "sigma", "win [95% CI]", "survival",
                "votes on Mafia", "malformed", "faults", "timeouts", "tokens", "cost $",
                "s/decision"):
        table.add_column(col)
    for e in data["entries"]:
        r = e["rating"]
        table.add_row(str(e["rank"]), f"{e['label']} ({e['entry']})", f"{r['ordinal']:.2f}",
                      f"{r['mu']:.2f}", f"{r['sigma']:.2f}", _ci(e["win"]),
                      _pct(e["survival"]["rate"]), _ci(e["mafia_votes"]),
                      _pct(e["malformed_rate"]), _pct(e["fault_rate"]),
                      _pct(e["timeout_rate"]),
                      str(e["prompt_tokens"] + e["completion_tokens"]),
                      "-" if e["cost_usd"] is None else f"{e['cost_usd']:.4f}",
                      "-" if e["decision_seconds"] is None else f"{e['decision_seconds']:.3f}")
    console.print(table)
    table = Table(title="win rate per faction [95% CI]")
    for col in ("entry", "faction", "seats", "wins", "win [95% CI]"):
        table.add_column(col)
    for f in data["factions"]:
        table.add_row(f["label"], f["faction"], str(f["seats"]), str(f["wins"]), _ci(f))
    console.print(table)


ENTRY_COLUMNS = ("rank", "label", "entry", "backend", "games", "seats", "wins", "win_rate",
                 "win_lo", "win_hi", "mu", "sigma", "ordinal", "survival", "survival_lo",
                 "survival_hi", "votes", "votes_on_mafia", "mafia_vote_rate",
                 "mafia_vote_lo", "mafia_vote_hi", "decisions", "fault_rate",
                 "timeout_rate", "error_rate", "model_turns", "malformed_rate",
                 "prompt_tokens", "completion_tokens", "cached_tokens", "tokens_per_turn",
                 "cost_usd", "decision_seconds", "turn_seconds")


def entry_rows(data: dict[str, Any]) -> Iterable[dict[str, Any]]:
    for e in data["entries"]:
        yield {
            "rank": e["rank"], "label": e["label"], "entry": e["entry"],
            "backend": e["backend"], "games": e["games"], "seats": e["seats"],
            "wins": e["wins"], "win_rate": e["win"]["rate"], "win_lo": e["win"]["lo"],
            "win_hi": e["win"]["hi"], **e["rating"],
            "survival": e["survival"]["rate"], "survival_lo": e["survival"]["lo"],
            "survival_hi": e["survival"]["hi"], "votes": e["mafia_votes"]["votes"],
            "votes_on_mafia": e["mafia_votes"]["on_mafia"],
            "mafia_vote_rate": e["mafia_votes"]["rate"],
            "mafia_vote_lo": e["mafia_votes"]["lo"], "mafia_vote_hi": e["mafia_votes"]["hi"],
            **{k: e[k] for k in ("decisions", "fault_rate", "timeout_rate", "error_rate",
                                 "model_turns", "malformed_rate", "prompt_tokens",
                                 "completion_tokens", "cached_tokens", "tokens_per_turn",
                                 "cost_usd", "decision_seconds", "turn_seconds")},
        }


def _write_csv(path: Path, columns: Iterable[str], rows: Iterable[dict[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})


def write_report(data: dict[str, Any], out: Path) -> list[Path]:
    """report.html (tables and SVG plots), report.json, and entries.csv,
    factions.csv, roles.csv in `out` (made if missing); the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "entries.csv", out / "factions.csv", out / "roles.csv",
             out / "report.json", out / "report.html"]
    _write_csv(paths[0], ENTRY_COLUMNS, entry_rows(data))
    _write_csv(paths[1], ("label", "faction", "seats", "wins", "rate", "lo", "hi"),
               data["factions"])
    _write_csv(paths[2], ("label", "role", "faction", "seats", "wins", "rate", "lo", "hi"),
               data["roles"])
    paths[3].write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    paths[4].write_text(report_html(data), encoding="utf-8")
    return paths


# ---- HTML with inline SVG ---------------------------------------------------------------------

FACTION_COLOURS = {"town": "#3f9e4b", "mafia": "#d64545", "neutral": "#8a5cd6"}


def svg_bars(title: str, bars: list[tuple[str, float | None, float | None, float | None]], *,
             maximum: float = 1.0, percent: bool = True,
             colours: list[str] | None = None) -> str:
    """A horizontal bar chart with error bars, as an SVG element: one bar per
    (label, value, low, high); values from 0 to `maximum`."""
    row, left, width, right = 22, 170, 360, 70
    height = 28 + row * len(bars)
    esc = html.escape
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="plot" '
             f'width="{left + width + right}" height="{height}" aria-label="{esc(title)}">',
             f'<title>{esc(title)}</title>',
             f'<text x="0" y="14" font-weight="bold">{esc(title)}</text>']
    scale = width / maximum if maximum > 0 else 0.0
    for i, (label, value, lo, hi) in enumerate(bars):
        y = 24 + i * row
        colour = (colours[i] if colours else "#4f7fd9")
        parts.append(f'<text x="{left - 6}" y="{y + 14}" text-anchor="end">'
                     f'{esc(label)}</text>')
        if value is None:
            parts.append(f'<text x="{left}" y="{y + 14}">no data</text>')
            continue
        w = max(0.0, min(value, maximum)) * scale
        parts.append(f'<rect x="{left}" y="{y + 3}" width="{w:.1f}" height="{row - 8}" '
                     f'fill="{colour}"/>')
        if lo is not None and hi is not None:
            x1, x2 = left + lo * scale, left + min(hi, maximum) * scale
            mid = y + row / 2 - 1
            parts.append(f'<path d="M{x1:.1f} {mid}H{x2:.1f}M{x1:.1f} {mid - 5}V{mid + 5}'
                         f'M{x2:.1f} {mid - 5}V{mid + 5}" stroke="#111" stroke-width="1.5" '
                         f'fill="none"/>')
        text = f"{100 * value:.0f}%" if percent else f"{value:.2f}"
        parts.append(f'<text x="{left + width + 6}" y="{y + 14}">{esc(text)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def report_plots(data: dict[str, Any]) -> list[str]:
    entries = data["entries"]
    plots = [svg_bars("Win rate (95% Wilson interval)",
                      [(e["label"], e["win"]["rate"], e["win"]["lo"], e["win"]["hi"])
                       for e in entries])]
    top = max([e["rating"]["mu"] + 2 * e["rating"]["sigma"] for e in entries] + [1.0])
    plots.append(svg_bars("OpenSkill mu (bars: mu ± 2 sigma)",
                          [(e["label"], e["rating"]["mu"],
                            max(0.0, e["rating"]["mu"] - 2 * e["rating"]["sigma"]),
                            e["rating"]["mu"] + 2 * e["rating"]["sigma"]) for e in entries],
                          maximum=top, percent=False))
    plots.append(svg_bars("Win rate per faction (95% Wilson interval)",
                          [(f"{f['label']} · {f['faction']}", f["rate"], f["lo"], f["hi"])
                           for f in data["factions"]],
                          colours=[FACTION_COLOURS.get(f["faction"], "#4f7fd9")
                                   for f in data["factions"]]))
    plots.append(svg_bars("Survival (95% Wilson interval)",
                          [(e["label"], e["survival"]["rate"], e["survival"]["lo"],
                            e["survival"]["hi"]) for e in entries]))
    plots.append(svg_bars("Votes on Mafia, by non-Mafia seats (95% Wilson interval)",
                          [(e["label"], e["mafia_votes"]["rate"], e["mafia_votes"]["lo"],
                            e["mafia_votes"]["hi"]) for e in entries]))
    return plots


def report_html(data: dict[str, Any]) -> str:
    from jinja2 import Environment, PackageLoader, select_autoescape
    from markupsafe import Markup

    env = Environment(loader=PackageLoader("tossim.analysis", "."),
                      autoescape=select_autoescape(["html", "j2"]))
    template = env.get_template("arena_report.html.j2")
    return template.render(data=data, a=data["arena"], plots=[Markup(p) for p in
                                                               report_plots(data)],
                           pct=_pct, ci=_ci)
