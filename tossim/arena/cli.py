"""`tossim arena` (play a tournament) and `tossim arena report` (its figures)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import typer

arena_app = typer.Typer(help="Tournaments among model-catalogue entries, with ratings.")


def _db_url(db: str | None) -> str:
    from tossim.server.settings import Settings

    return db or Settings().database_url


@arena_app.callback(invoke_without_command=True)
def arena(
    ctx: typer.Context,
    entry: list[str] = typer.Option([], "--entry", "-e",
                                    help="An entry: ENTRY or LABEL=ENTRY (a catalogue entry "
                                         "under a label of its own). Repeat for each."),
    games: int = typer.Option(12, help="Games to play (a multiple of the number of entries "
                                       "balances seats exactly)."),
    players: int = typer.Option(7, help="Players per game."),
    mode: str = typer.Option("classic", help="Game mode."),
    roles: str | None = typer.Option(None, help="A custom role list instead of the mode's "
                                                "(comma-separated slots, e.g. \"Sheriff, "
                                                "Mafioso, Doctor\"; its length is the player "
                                                "count): short games."),
    seed: int = typer.Option(0, help="First seed of the plan."),
    arena_id: str | None = typer.Option(None, "--arena", "--id",
                                        help="The arena's id: an existing one resumes "
                                             "(default: a new id)."),
    db: str | None = typer.Option(None, help="Database URL (default: $TOSSIM_DATABASE_URL "
                                             "or ./tossim.db)."),
    redis: str | None = typer.Option(None, help="Redis URL: a `tossim serve` on the same "
                                                "database and Redis shows the games live."),
    parallel: int = typer.Option(2, help="Games played at once."),
    catalogue: str | None = typer.Option(None, help="The model catalogue (models.toml)."),
) -> None:
    """Play an arena: every entry in every seat and faction equally often,
    games stored like any other. Run the same command again (or just
    `tossim arena --arena ID`) to resume a stopped arena."""
    if ctx.invoked_subcommand is not None:
        return
    from tossim.arena.entries import LABEL_RE, resolve_entries
    from tossim.arena.runner import new_arena_id

    if not entry and arena_id is None:
        raise typer.BadParameter("name the entries (--entry scripted --entry smollm2 ...), "
                                 "or the arena to resume (--arena ID)", param_hint="--entry")
    try:
        entries = resolve_entries(entry, catalogue) if entry else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--entry") from None
    role_list: list[str] | None = None
    if roles:
        from tossim.engine.role_lists import split_role_list
        role_list = list(split_role_list(roles))
    if arena_id is not None and (len(arena_id) > 32 or not LABEL_RE.match(arena_id)):
        raise typer.BadParameter("1-32 letters, digits, _ . : -", param_hint="--arena")
    from tossim.server.settings import Settings

    overrides: dict[str, Any] = {"database_url": _db_url(db), "resume": False}
    if redis:
        overrides["redis_url"] = redis
    if catalogue:
        overrides["models"] = catalogue
    settings = Settings(**overrides)
    logging.basicConfig(level=logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        done = asyncio.run(_run(settings, arena_id or new_arena_id(), entries, games=games,
                                players=players, mode=mode, seed=seed, parallel=parallel,
                                catalogue=catalogue, roles=role_list))
    except ValueError as exc:
        typer.echo(f"tossim arena: {exc}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        typer.echo("tossim arena: stopped; run the same command to resume", err=True)
        raise typer.Exit(130) from None
    if not done:
        raise typer.Exit(1)


async def _run(settings: Any, arena_id: str, entries: Any, *, games: int, players: int,
               mode: str, seed: int, parallel: int, catalogue: str | None,
               roles: list[str] | None = None) -> bool:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from tossim.arena.entries import resolve_entries
    from tossim.arena.runner import ArenaProgress, open_arena, play_arena
    from tossim.server.bus import make_bus
    from tossim.store import Store

    console = Console(stderr=True)
    store = await Store.open(settings.database_url)
    bus = make_bus(settings.redis_url, settings.redis_prefix)
    try:
        if entries is None:  # resume a stored arena by its id alone
            stored = await store.get_arena(arena_id)
            if stored is None:
                raise ValueError(f"no arena {arena_id!r}: name its entries to make it")
            spec = stored.spec
            entries = resolve_entries([f"{e['label']}={e['entry']}" for e in spec["entries"]],
                                      catalogue)
            games, players, mode, seed = (int(spec["games"]), int(spec["players"]),
                                          str(spec["mode"]), int(spec["seed"]))
            roles = spec.get("roles")
        arena = await open_arena(store, arena_id, entries, games=games, players=players,
                                 mode=mode, seed=seed, roles=roles)
        players = int(arena.spec["players"])
        labels = ", ".join(f"{e.label} ({e.entry})" for e in entries)
        console.print(f"arena {arena.id}: {len(arena.games)} games of {players} players "
                      f"among {labels}")
        columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[running]} running, {task.fields[errors]} errors"),
                   TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
        with Progress(*columns, console=console) as bar:
            task = bar.add_task(f"arena {arena.id}", total=len(arena.games),
                                running=0, errors=0)

            def show(p: ArenaProgress) -> None:
                bar.update(task, completed=p.done, running=p.running, errors=p.errors)

            result = await play_arena(store, bus, settings, arena, entries,
                                      parallel=parallel, on_update=show)
        console.print(f"arena {arena.id}: {result.done}/{result.total} games finished "
                      f"({result.done - result.done_at_start} this run, {result.resumed} "
                      f"resumed), {result.errors} errors"
                      + (f", {result.aborted} aborted" if result.aborted else ""))
        if result.finished:
            console.print(f"report: tossim arena report {arena.id} --out arena-{arena.id}")
        return result.finished
    finally:
        await bus.close()
        await store.close()


@arena_app.command("report")
def report(
    arena_id: str = typer.Argument(..., help="The arena's id."),
    out: Path | None = typer.Option(None, help="Write report.html, report.json and CSV "
                                               "tables into this folder."),
    db: str | None = typer.Option(None, help="Database URL (default: $TOSSIM_DATABASE_URL "
                                             "or ./tossim.db)."),
    catalogue: str | None = typer.Option(None, help="The model catalogue (prices)."),
) -> None:
    """Print an arena's figures (win rates with 95% intervals, OpenSkill
    ratings, survival, votes on Mafia, faults, tokens, cost, latency) and
    write them as HTML with plots and CSV."""
    from tossim.analysis import arena_report as rep

    async def build() -> dict[str, Any] | None:
        from tossim.store import Store

        store = await Store.open(_db_url(db))
        try:
            return await rep.arena_report(store, arena_id, catalogue=catalogue)
        finally:
            await store.close()

    data = asyncio.run(build())
    if data is None:
        typer.echo(f"tossim arena report: no arena {arena_id!r}", err=True)
        raise typer.Exit(2)
    rep.print_report(data)
    if out is not None:
        for path in rep.write_report(data, out):
            typer.echo(f"wrote {path}")
