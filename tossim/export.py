"""`tossim export`: stored games as a dataset (JSON Lines and Parquet).

Two tables, each written as `NAME.jsonl` and `NAME.parquet`, loadable with
`datasets.load_dataset("json" | "parquet", data_files=...)`:

- `games`: one row per game: id, mode, players, status, result, winners, the
  seed and the dealt roles (only where the server would show them: finished
  or all-AI games), the seats (kind, backend, model, persona, protocol, and
  the arena entry that played it) and the arena it belongs to.
- `turns`: one row per seat turn. Where the store has model-seat traces
  (table `seat_turns`: the seat's prompt, output, tool-call steps, action and
  tokens) those are the rows; otherwise every command a seat sent, with the
  day and phase it was sent in, is a row whose prompt and output are null.

Nothing secret leaves: no seat token hashes (seats are exported field by
field), no hidden event payloads, no API keys (the store holds none).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from tossim.engine.commands import command_from_dict
from tossim.engine.roles import ROLES
from tossim.engine.rules import apply, new_game
from tossim.engine.state import GameConfig

SEAT_FIELDS = ("slot", "name", "kind", "backend", "model", "persona", "protocol", "entry")


def _schemas() -> tuple[Any, Any]:
    import pyarrow as pa

    seat = pa.struct([("slot", pa.int32()), ("name", pa.string()), ("kind", pa.string()),
                      ("backend", pa.string()), ("model", pa.string()),
                      ("persona", pa.string()), ("protocol", pa.string()),
                      ("entry", pa.string())])
    games = pa.schema([
        ("id", pa.string()), ("arena", pa.string()), ("mode", pa.string()),
        ("players", pa.int32()), ("status", pa.string()), ("created_at", pa.string()),
        ("seed", pa.int64()), ("result", pa.string()), ("winners", pa.list_(pa.int32())),
        ("roles", pa.list_(pa.string())), ("days", pa.int32()),
        ("seats", pa.list_(seat)),
    ])
    turns = pa.schema([
        ("game_id", pa.string()), ("slot", pa.int32()), ("seq", pa.int32()),
        ("day", pa.int32()), ("phase", pa.string()), ("entry", pa.string()),
        ("role", pa.string()), ("source", pa.string()), ("prompt", pa.string()),
        ("output", pa.string()), ("steps", pa.string()), ("action", pa.string()),
        ("tokens", pa.string()),
    ])
    return games, turns


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


async def export_rows(store: Any, game_ids: Sequence[str] | None = None,
                      arena_id: str | None = None) -> tuple[list[dict[str, Any]],
                                                           list[dict[str, Any]]]:
    """(game rows, turn rows) for these games, this arena's games, or every
    finished game. ValueError for an unknown arena or game."""
    if arena_id is not None:
        arena = await store.get_arena(arena_id)
        if arena is None:
            raise ValueError(f"no arena {arena_id!r}")
        statuses = await store.game_statuses([g.game_id for g in arena.games])
        ids = [g.game_id for g in arena.games if statuses.get(g.game_id) in ("live",
                                                                             "finished")]
    elif game_ids:
        ids = list(game_ids)
    else:
        ids = [r.id for r in reversed(await store.list_games(status="finished",
                                                             limit=1_000_000))]
    arenas = await store.arenas_of_games(ids)
    games, turns = [], []
    for gid in ids:
        row = await store.get_game(gid)
        if row is None:
            raise ValueError(f"no game {gid!r}")
        if row.status not in ("live", "finished"):
            continue
        config = GameConfig.from_dict(row.config)
        # the seed and roles only where the server would show them (replay rules)
        allowed = row.status == "finished" or not any(
            s.kind == "human" and s.claimed for s in row.seats)
        arena_of, labels = arenas.get(gid, (None, None))
        commands = await store.commands(gid)
        game = new_game(config)
        positions = []  # (seq, origin, data, day, phase) as each command was sent
        for seq, origin, data in commands:
            positions.append((seq, origin, data, game.day, game.phase.value))
            apply(game, command_from_dict(data))
        roles = [p.original_role for p in game.players]
        seats = []
        for s in row.seats:
            entry = labels[s.slot - 1] if labels else (s.model or s.backend or s.kind)
            seats.append({"slot": s.slot, "name": s.name, "kind": s.kind,
                          "backend": s.backend, "model": s.model, "persona": s.persona,
                          "protocol": s.protocol, "entry": entry})
        games.append({
            "id": gid, "arena": arena_of, "mode": config.mode,
            "players": config.players, "status": row.status,
            "created_at": row.created_at.isoformat(),
            "seed": config.seed if allowed else None, "result": row.result,
            "winners": list(row.winners),
            "roles": [ROLES[r].name for r in roles] if allowed else None,
            "days": game.day, "seats": seats})
        entry_of = {s["slot"]: s["entry"] for s in seats}

        def role_of(slot: int, allowed: bool = allowed, roles: list[str] = roles) -> str | None:
            return ROLES[roles[slot - 1]].name if allowed and 1 <= slot <= len(roles) else None

        traces = await store.turns(gid)  # model seats' turns, when the game had any
        if traces:
            for d in traces:
                turns.append({
                    "game_id": gid, "slot": d["slot"], "seq": d["seq"], "day": d["day"],
                    "phase": d["phase"], "entry": entry_of.get(d["slot"]),
                    "role": role_of(d["slot"]), "source": "seat_turns",
                    "prompt": d.get("prompt"), "output": d.get("output"),
                    "steps": _json(d.get("steps")), "action": _json(d.get("action")),
                    "tokens": _json(d.get("tokens")), "standin": False})
            continue
        for seq, origin, data, day, phase in positions:
            actor = data.get("actor")
            if origin == "timer" or not isinstance(actor, int):
                continue
            turns.append({
                "game_id": gid, "slot": actor, "seq": seq, "day": day, "phase": phase,
                "entry": entry_of.get(actor), "role": role_of(actor), "source": "commands",
                "prompt": None, "output": None, "steps": None, "action": _json(data),
                # a scripted bot's turn for an absent human (docs/api.md, "Stand-ins")
                "tokens": None, "standin": origin.startswith("standin:")})
    return games, turns


def write_dataset(games: list[dict[str, Any]], turns: list[dict[str, Any]],
                  out: Path) -> list[Path]:
    """games.jsonl, games.parquet, turns.jsonl, turns.parquet in `out`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    game_schema, turn_schema = _schemas()
    written = []
    for name, rows, schema in (("games", games, game_schema), ("turns", turns, turn_schema)):
        jsonl = out / f"{name}.jsonl"
        with jsonl.open("w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        parquet = out / f"{name}.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), parquet)
        written += [jsonl, parquet]
    return written


def export_command(
    out: Path = typer.Option(..., help="Folder for games.{jsonl,parquet} and "
                                       "turns.{jsonl,parquet}."),
    db: str | None = typer.Option(None, help="Database URL (default: $TOSSIM_DATABASE_URL "
                                             "or ./tossim.db)."),
    game: list[str] = typer.Option([], "--game", help="A game id (repeat); default: every "
                                                      "finished game."),
    arena: str | None = typer.Option(None, help="Every game of this arena."),
) -> None:
    """Write stored games as a dataset: one row per game and one per seat turn,
    as JSON Lines and Parquet (load with `datasets.load_dataset`)."""
    from tossim.server.settings import Settings
    from tossim.store import Store

    if game and arena:
        raise typer.BadParameter("either --game or --arena", param_hint="--arena")

    async def run() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        store = await Store.open(db or Settings().database_url)
        try:
            return await export_rows(store, game, arena)
        finally:
            await store.close()

    try:
        games, turns = asyncio.run(run())
    except ValueError as exc:
        typer.echo(f"tossim export: {exc}", err=True)
        raise typer.Exit(2) from None
    for path in write_dataset(games, turns, out):
        typer.echo(f"wrote {path}")
    typer.echo(f"{len(games)} games, {len(turns)} turns")
