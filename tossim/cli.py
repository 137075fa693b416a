"""The `tossim` command line: play, replay, scenario, bench."""

from __future__ import annotations

import gc
import json
import os
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer

from tossim.arena.cli import arena_app
from tossim.engine import Game, GameConfig
from tossim.engine import replay as replay_mod
from tossim.engine.rules import ConfigError, make_config
from tossim.engine.view import parse_viewer, project_event, visible_events
from tossim.export import export_command
from tossim.tools import game_log
from tossim.tools.transcript import render_lines

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="ToSSim: Town of Salem with human and AI seats.")
scenario_app = typer.Typer(no_args_is_help=True, help="Run scenario files.")
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks that print their figures.")
app.add_typer(scenario_app, name="scenario")
app.add_typer(bench_app, name="bench")
app.add_typer(arena_app, name="arena")
app.command("export")(export_command)
eval_app = typer.Typer(no_args_is_help=True, help="Evaluations of AI seats that print tables.")
app.add_typer(eval_app, name="eval")


def summary(game: Game, faults: dict[int, int] | None = None) -> dict[str, Any]:
    """The machine-readable outcome of a finished game (`play --json`)."""
    deaths = [
        {"player": p.slot, "name": p.name, "role": p.death.role_shown, "day": p.death.day,
         "at_night": p.death.at_night, "causes": p.death.causes}
        for p in sorted((p for p in game.players if p.death is not None),
                        key=lambda p: (p.death.day if p.death else 0, p.slot))
        if p.death is not None
    ]
    return {
        "seed": game.config.seed,
        "mode": game.config.mode,
        "players": len(game.players),
        "result": game.result,
        "winners": list(game.winners),
        "winner_roles": [game.player(s).spec.name for s in game.winners],
        "days": game.day,
        "deaths": deaths,
        "events": len(game.events),
        "commands": len(game.commands),
        "faults": {str(k): v for k, v in sorted((faults or {}).items()) if v},
    }


def _config(mode: str, players: int | None, seed: int, roles: str | None) -> GameConfig:
    """The game config for --mode/--players/--roles; a list that cannot be dealt
    exits with the engine's reason, naming the slot."""
    try:
        return make_config(mode, players, seed, roles)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc), param_hint="--roles" if roles else "--mode") from None


@app.command()
def play(
    mode: str = typer.Option("classic", help="Game mode: classic, ranked, all_any, custom."),
    players: int | None = typer.Option(None, help="Number of players (default: 15, or the "
                                                  "role list's length; Classic: 7-15)."),
    seed: int = typer.Option(1, help="Seed: the same seed plays the same game."),
    roles: str | None = typer.Option(None, help="A custom role list, comma-separated slots: "
                                                "roles, categories ('Town Investigative'), "
                                                "'Random Mafia', 'Any'. Implies --mode custom."),
    view: str = typer.Option("omniscient",
                             help="Whose transcript to print: public, omniscient, or a "
                                  "player (seat number or name)."),
    as_json: bool = typer.Option(False, "--json", help="End with one JSON line of results."),
    save: Path | None = typer.Option(None, help="Write the game log (config, seed, "
                                                "commands, events) to this file."),
    quiet: bool = typer.Option(False, help="Print no transcript."),
    ai: str = typer.Option("scripted", help="Who plays: scripted bots, or model seats on a "
                                            "backend: local (bundled SmolLM2 on llama.cpp), "
                                            "torch (the same model in torch), vllm, openai."),
    model: str | None = typer.Option(None, help="Model folder (default: the bundled model; "
                                                "openai: its tokenizer folder)."),
    url: str | None = typer.Option(None, help="openai: the server's base URL."),
    protocol: str = typer.Option("xml", help="Model seats' action format: xml or json."),
    speech: str | None = typer.Option(None, help="Model seats' speech: free (text) or moves "
                                                 "(structured moves the server renders; "
                                                 "default: moves for a bundled model, else "
                                                 "free; with --model-entry, the entry's)."),
    model_seats: int | None = typer.Option(None, help="How many seats (1..N) the model "
                                                      "plays; the rest are scripted."),
    metrics: Path | None = typer.Option(None, help="Write the model seats' metrics and the "
                                                   "day summaries (JSON) to this file."),
    model_entry: str | None = typer.Option(None, help="Model seats play this entry of the "
                                                      "model catalogue (overrides --ai)."),
    models: Path | None = typer.Option(None, help="The model catalogue (default: "
                                                  "$TOSSIM_MODELS, else ./models.toml)."),
) -> None:
    """Play one all-AI match and print it as a transcript."""
    config = _config(mode, players, seed, roles)
    if speech is not None and speech not in ("free", "moves"):
        raise typer.BadParameter("free or moves", param_hint="--speech")
    model_slots: list[int] = []
    if model_entry is not None or ai != "scripted":
        from tossim.tools.play_entry import play_entry, write_metrics

        match = (play_entry(config, model_entry, models, model_seats, url, model, speech)
                 if model_entry is not None
                 else _model_match(config, ai, model, url, protocol, model_seats, speech))
        if metrics is not None:
            write_metrics(metrics, match)
        result = match.result
        model_slots = list(range(1, (model_seats or config.players) + 1))
    else:
        from tossim.agents.match import play_match

        result = play_match(config)
        if metrics is not None:
            metrics.write_text(json.dumps({"result": result.result, "days": result.days},
                                          indent=1, sort_keys=True) + "\n")
    game = result.game
    if metrics is not None:
        _add_quality(metrics, game, model_slots)
    if not quiet:
        try:
            viewer = parse_viewer(game, view)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--view") from None
        names = {p.slot: p.name for p in game.players}
        events = [project_event(e, viewer) for e in visible_events(game, viewer)]
        for line in render_lines(events, names):
            typer.echo(line)
    if save is not None:
        game_log.save(game, save)
    if as_json:
        typer.echo(json.dumps(summary(game, result.faults), sort_keys=True))


def _add_quality(path: Path, game: Game, model_slots: list[int]) -> None:
    """Add the play-quality metrics to a `--metrics` file and print them."""
    from tossim.analysis.quality import format_quality, game_quality, quality_report

    others = [p.slot for p in game.players if p.slot not in model_slots]
    groups = {k: v for k, v in (("model seats", model_slots), ("scripted seats", others)) if v}
    data = json.loads(path.read_text())
    data["quality"] = quality_report(game, groups)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    for line in format_quality(game_quality(game), groups):
        typer.echo(line, err=True)


def _model_match(config: GameConfig, ai: str, model: str | None, url: str | None,
                 protocol: str, model_seats: int | None, speech: str | None = None) -> Any:
    """`--ai BACKEND`: the backend's built-in entry, on a backend made here
    (closed at the end), printing one progress line per phase."""
    from tossim.agents.loop import LoopConfig
    from tossim.inference.base import BackendUnavailable
    from tossim.inference.catalogue import backend_entry
    from tossim.inference.registry import make_backend
    from tossim.tools.play_entry import run_entry

    try:
        backend = make_backend(ai, model=model, url=url)
    except BackendUnavailable as exc:
        raise typer.BadParameter(str(exc), param_hint="--ai") from None
    # unset: the backend's built-in entry decides (a bundled model: moves)
    said = speech or backend_entry(ai, model=model).speech or "free"
    return run_entry(config, backend_entry(ai, model=model, protocol=protocol), model_seats,
                     backend=backend, loop_config=LoopConfig(protocol=protocol, speech=said))


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, help="Port to listen on."),
    db: str | None = typer.Option(None, help="Database URL (default: SQLite file "
                                             "./tossim.db; postgresql+asyncpg://... works)."),
    redis: str | None = typer.Option(None, help="Redis URL: share live games between "
                                                "several server processes."),
    demo: bool = typer.Option(False, help="Keep a 15-seat all-AI match running to watch."),
    resume: bool = typer.Option(True, help="Take over live games nobody runs (at start-up, "
                                           "and whenever a process's lease on one expires)."),
    inference: str | None = typer.Option(
        None, help="Where model seats run: local (this process) or workers (`tossim "
                   "worker` processes; default $TOSSIM_INFERENCE or local)."),
    models: Path | None = typer.Option(None, help="The model catalogue lobby seats name "
                                                  "entries of (default: $TOSSIM_MODELS, "
                                                  "else ./models.toml)."),
    preload: bool | None = typer.Option(
        None, "--preload/--no-preload",
        help="Load the bundled model at start-up, in a thread, so the first lobby's model "
             "seats need not wait for it (default: on, unless $TOSSIM_PRELOAD_MODELS "
             "says otherwise)."),
) -> None:
    """Run the game server (HTTP API, websockets and the web client)."""
    import logging

    import uvicorn

    from tossim.server.app import create_app, tune_gc
    from tossim.server.settings import Settings

    overrides: dict[str, Any] = {"host": host, "port": port, "demo": demo, "resume": resume}
    if preload is not None:
        overrides["preload_models"] = preload
    elif "TOSSIM_PRELOAD_MODELS" not in os.environ:
        overrides["preload_models"] = True  # (the setting's own default is for tests' apps)
    if db:
        overrides["database_url"] = db
    if redis:
        overrides["redis_url"] = redis
    if inference:
        overrides["inference"] = inference
    if models:
        overrides["models"] = str(models)
    settings = Settings(**overrides)
    from tossim.inference.catalogue import CatalogueError, load_catalogue
    try:
        load_catalogue(settings.models)  # a broken catalogue stops the start, clearly
    except CatalogueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--models") from None
    from tossim.server.settings import StartRefused
    try:
        settings.check_start()  # a deal secret or worker token others could have
    except StartRefused as exc:
        typer.echo(f"tossim serve: {exc}", err=True)
        raise typer.Exit(2) from None
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                                                   "%(message)s")
    if demo:
        typer.echo(f"ToSSim: watch the demo match at http://{host}:{port}/ "
                   f"(API docs: http://{host}:{port}/docs)")
    from tossim.server.limits import bounded_http_protocol

    server_app = create_app(settings)
    tune_gc()
    uvicorn.run(server_app, host=host, port=port, log_level="info",
                http=bounded_http_protocol(settings),
                ws_per_message_deflate=settings.ws_compression)


@app.command("new-secret")
def new_secret(
    file: Path | None = typer.Option(None, help="Where to write it (default: "
                                                "$TOSSIM_SECRET_FILE, else "
                                                "$XDG_DATA_HOME/tossim/server-secret)."),
) -> None:
    """Make a new deal secret (mode 0600, outside any git work tree), replacing
    the old one: fair deals of games not yet started come from it."""
    from tossim.server.settings import Settings, StartRefused, write_new_secret

    path = file.expanduser() if file is not None else Settings().secret_path()
    try:
        write_new_secret(path)
    except StartRefused as exc:
        raise typer.BadParameter(str(exc), param_hint="--file") from None
    typer.echo(f"wrote a new deal secret to {path}")


@app.command()
def worker(
    server: str = typer.Option("http://127.0.0.1:8000", envvar="TOSSIM_SERVER_URL",
                               help="The server's base URL."),
    backend: str = typer.Option("local", help="The model backend: local (bundled SmolLM2 "
                                              "on llama.cpp), vllm, openai."),
    model: str | None = typer.Option(None, envvar="TOSSIM_MODEL",
                                     help="Model folder (default: the bundled model; "
                                          "openai: its tokenizer folder)."),
    url: str | None = typer.Option(None, envvar="TOSSIM_OPENAI_URL",
                                   help="openai: the OpenAI-compatible server's base URL."),
    token: str | None = typer.Option(None, envvar="TOSSIM_WORKER_TOKEN",
                                     help="The server's worker token (not needed for a "
                                          "server on this machine without one)."),
    name: str | None = typer.Option(None, help="This worker's name in the server's log."),
) -> None:
    """Play a server's model seats here (the server runs with --inference workers)."""
    import asyncio
    import logging

    from tossim.inference.base import BackendUnavailable
    from tossim.inference.registry import make_backend
    from tossim.worker.client import Worker, WorkerRefused

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                                                   "%(message)s")

    async def main() -> None:
        engine = make_backend(backend, model=model, url=url)
        await engine.start()
        try:
            await Worker(server, backend, engine, token=token, name=name).run()
        finally:
            await engine.close()

    try:
        asyncio.run(main())
    except (BackendUnavailable, WorkerRefused, ValueError) as exc:
        typer.echo(f"tossim worker: {exc}", err=True)
        raise typer.Exit(2) from exc
    except KeyboardInterrupt:
        pass


@app.command()
def replay(log: Path = typer.Argument(..., help="A log written by `tossim play --save`.")) -> None:
    """Re-run a saved game from its config, seed and commands; report whether the
    event log is identical."""
    try:
        report = replay_mod.check_record(game_log.load(log))
    except (OSError, ValueError, KeyError) as exc:
        typer.echo(f"replay: cannot read {log}: {exc}", err=True)
        raise typer.Exit(2) from None
    if report.identical:
        typer.echo(f"identical: {report.events_replayed} events re-created byte for byte")
        return
    typer.echo(f"DIFFERENT at event {report.first_difference} "
               f"(stored {report.events_stored}, replayed {report.events_replayed})")
    typer.echo(report.detail)
    raise typer.Exit(1)


@scenario_app.command("run")
def scenario_run(
    paths: list[Path] = typer.Argument(..., help="Scenario files or folders."),
) -> None:
    """Run scenario files: one line per scenario, then `N passed, M failed`."""
    from tossim.scenarios.scenario import run_paths

    try:
        results = run_paths(paths)
    except (OSError, ValueError) as exc:
        typer.echo(f"scenario: {exc}", err=True)
        raise typer.Exit(2) from None
    failed = 0
    for r in results:
        typer.echo(f"{'PASS' if r.passed else 'FAIL'}  {r.name}")
        for f in r.failures:
            typer.echo(f"      {f}")
        failed += not r.passed
    typer.echo(f"{len(results) - failed} passed, {failed} failed")
    if failed:
        raise typer.Exit(1)


def _pin_one_core() -> None:
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[0]})


@bench_app.command("engine")
def bench_engine(
    games: int = typer.Option(200, help="Number of complete games."),
    players: int | None = typer.Option(None, help="Players per game (default 15, or the "
                                                  "role list's length)."),
    seed: int = typer.Option(0, help="First seed."),
    mode: str = typer.Option("classic", help="Game mode: classic, ranked, all_any, custom."),
    roles: str | None = typer.Option(None, help="A custom role list (implies --mode custom)."),
) -> None:
    """Complete games of one mode with scripted bots on one core: games/s and
    events/s in CPU time (this process only, so other work on the machine
    does not count) and in wall time, with an engine-only replay of the same
    command logs as the baseline, the winner distribution with 95% Wilson
    intervals, and a sha256 of every event (to check that two builds played
    the same games)."""
    from tossim.agents.match import play_match
    from tossim.engine.modes import get_mode
    from tossim.tools.bench_engine import Outcomes, events_digest, report_lines

    _pin_one_core()
    first = _config(mode, players, seed, roles)
    configs = [replace(first, seed=seed + i) for i in range(games)]
    logs: list[tuple[GameConfig, list[dict[str, Any]]]] = []
    events = 0
    results: Counter[str] = Counter()
    outcomes = Outcomes()
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    for c in configs:
        game = play_match(c).game
        events += len(game.events)
        logs.append((c, game.commands))  # keep the logs, not the games
        results[game.result or "unfinished"] += 1  # an exception stops the bench
        outcomes.add(game)
        for w in game.winners:
            if game.player(w).spec.win in ("jester", "executioner"):
                results[f"co-win {game.player(w).original_role}->{game.player(w).role}"] += 1
    full_cpu, full = time.process_time() - c0, time.perf_counter() - t0
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    for c, commands in logs:
        replay_mod.rerun(c, commands)
    base_cpu, base = time.process_time() - c0, time.perf_counter() - t0
    full_cpu, base_cpu = max(full_cpu, 1e-9), max(base_cpu, 1e-9)
    typer.echo(f"bench engine: {games} games x {first.players} players, "
               f"{get_mode(first.mode).name}, scripted bots, one core")
    typer.echo(f"  full games (engine + bots): {games / full_cpu:8.1f} games/s CPU "
               f"{games / full:8.1f} games/s wall {events / full_cpu:10.0f} events/s CPU")
    typer.echo(f"  baseline (engine replay):   {games / base_cpu:8.1f} games/s CPU "
               f"{games / base:8.1f} games/s wall {events / base_cpu:10.0f} events/s CPU")
    typer.echo(f"  ratio full/baseline (CPU): {base_cpu / full_cpu:.2f}  "
               f"(mean {events / games:.0f} events, "
               f"{sum(len(c) for _, c in logs) / games:.0f} commands per game)")
    typer.echo("  results: " + ", ".join(f"{k} {v}" for k, v in sorted(results.items())))
    for line in report_lines(outcomes):
        typer.echo(line)
    typer.echo(f"  events sha256 (untimed replay): {events_digest(logs)}")


@bench_app.command("pacing")
def bench_pacing(
    games: int = typer.Option(50, help="Seeded games of each size (7, 11 and 15 players)."),
    seed: int = typer.Option(0, help="First seed."),
) -> None:
    """Scripted games: days with a trial, lynches by faction, distinct chat lines,
    accusations that cite a reason, and the winner table."""
    from tossim.agents import pacing_bench

    typer.echo(f"bench pacing: {games} scripted Classic games per size, seeds {seed}.."
               f"{seed + games - 1}")
    for line in pacing_bench.report_lines(pacing_bench.run(games, seed)):
        typer.echo(line)


@bench_app.command("agents")
def bench_agents(
    ai: str = typer.Option("local", help="Backend: local (bundled SmolLM2 on llama.cpp), torch "
                                         "(the same model in torch), vllm, openai; several "
                                         "separated by commas (local,torch) play the same "
                                         "days on each and print their ratios."),
    model: str | None = typer.Option(None, help="Model folder (default: the bundled model)."),
    url: str | None = typer.Option(None, help="openai: the server's base URL."),
    players: int = typer.Option(15, help="Players (all model seats)."),
    days: int = typer.Option(1, help="Play this many days (and their nights)."),
    seed: int = typer.Option(1, help="Game seed."),
    protocol: str = typer.Option("xml", help="xml or json."),
    think_scale: float = typer.Option(1.0, help="Multiply every phase's thinking budget."),
    max_tools: int = typer.Option(4, help="Tool calls per turn."),
    baseline: bool = typer.Option(True, help="Also play the same days one request at a "
                                             "time (no batching) and print the ratio."),
    time_scale: float = typer.Option(1.0, min=0.01, help="Phase lengths as a share of the "
                                                         "standard ones."),
    deadlines: bool = typer.Option(True, help="Give model turns their phase's time (off: "
                                              "turns run free and are only measured)."),
    batches: str = typer.Option("16", help="With several backends: the most requests each "
                                          "decodes at once, one run per value (1,4: one seat "
                                          "thinking at a time, then four)."),
) -> None:
    """Model seats playing a match: actions/s, wall-clock tokens/s, malformed
    rate, faults by kind, tool calls, summaries by model vs fallback, backend
    prefill/decode time, the batched/sequential ratio, and the share of turns
    that acted in time, seconds per turn and the share of each phase used."""
    from tossim.inference.base import BackendUnavailable
    from tossim.tools.bench_agents import PhaseClock, run_bench_agents

    try:
        sizes = [int(b) for b in batches.split(",") if b.strip()]
    except ValueError:
        raise typer.BadParameter("numbers separated by commas", param_hint="--batches") from None
    if not sizes or min(sizes) < 1:
        raise typer.BadParameter("at least one size, each 1 or more", param_hint="--batches")
    try:
        run_bench_agents(ai=ai, model=model, url=url, players=players, days=days, seed=seed,
                         protocol=protocol, think_scale=think_scale, max_tools=max_tools,
                         baseline=baseline, echo=typer.echo,
                         clock=PhaseClock(time_scale=time_scale, deadlines=deadlines),
                         batches=sizes)
    except BackendUnavailable as exc:
        raise typer.BadParameter(str(exc), param_hint="--ai") from None


@bench_app.command("server")
def bench_server(
    games: int = typer.Option(100, help="All-AI games (15 scripted seats each)."),
    spectators: int = typer.Option(1000, help="Websocket spectators, spread over the games "
                                              "(public, omniscient and player views)."),
    db: str | None = typer.Option(None, help="Database URL (default: a temporary SQLite file)."),
    redis: str | None = typer.Option(None, help="Redis URL for the server's bus (default: "
                                                "in-process)."),
    speed: str = typer.Option("paced", help="fast (games run flat out) or paced (a pause "
                                            "after each AI decision: a sustained live load)."),
    pace: float = typer.Option(0.2, help="Seconds after each AI decision in paced games."),
    duration: float | None = typer.Option(None, help="Cap on the measuring window in seconds "
                                                     "(default: 30 paced, 300 fast)."),
    port: int = typer.Option(0, help="Server port (0: any free port)."),
    compression: bool = typer.Option(True, help="Negotiate permessage-deflate, as browsers "
                                                "do."),
    baseline: bool = typer.Option(True, help="First run 1 game with 10 spectators, the "
                                             "baseline the ratio is taken against."),
    clients: int | None = typer.Option(None, help="Load-generator processes the spectators "
                                                  "are spread over (default: one per CPU, "
                                                  "at most 4)."),
) -> None:
    """A real server (`tossim serve` in a subprocess) under websocket spectator load:
    events and messages delivered per second, delivery latency, lost or duplicated
    events (checked against replays), server CPU."""
    from tossim.tools import bench_server as bench

    if speed not in ("fast", "paced"):
        raise typer.BadParameter("fast or paced", param_hint="--speed")
    if games < 1 or spectators < 0:
        raise typer.BadParameter("at least one game", param_hint="--games")
    if clients is not None and clients < 1:
        raise typer.BadParameter("at least one", param_hint="--clients")
    common: dict[str, Any] = {"speed": speed, "pace": pace, "duration": duration, "db": db,
                              "redis": redis, "port": port, "compression": compression,
                              "clients": clients}
    runs = []
    if baseline:
        runs.append(bench.BenchConfig(games=1, spectators=10, label="baseline", **common))
    runs.append(bench.BenchConfig(games=games, spectators=spectators, label="load", **common))
    results = []
    for cfg in runs:
        try:
            results.append(bench.run(cfg))
        except Exception as exc:  # report what ran, then fail
            for line in bench.report_lines(results):
                typer.echo(line)
            typer.echo(f"bench server: the {cfg.label} run failed: {exc}", err=True)
            raise typer.Exit(1) from None
    for line in bench.report_lines(results):
        typer.echo(line)
    if not all(r.ok for r in results):
        raise typer.Exit(1)


@eval_app.command("drift")
def eval_drift(
    ai: str = typer.Option("scripted", help="scripted bots, or model seats on a backend: "
                                            "local, vllm, openai."),
    model: str | None = typer.Option(None, help="Model folder (default: the bundled model)."),
    url: str | None = typer.Option(None, help="openai: the server's base URL."),
    protocol: str = typer.Option("xml", help="Model seats' action format: xml or json."),
    situations: int = typer.Option(8, min=1, help="Decision situations (kinds in turn)."),
    seed: int = typer.Option(1, help="Seed of the situations' games and the seats."),
    out: Path | None = typer.Option(None, help="Write every run to OUT.json and OUT.csv."),
) -> None:
    """Decisions under faulty context (premise, expression, parameter,
    intention): success clean and faulted, drop, and clarification share."""
    from tossim.analysis.drift import evaluate
    from tossim.inference.base import BackendUnavailable

    try:
        lines = evaluate(ai, model=model, url=url, protocol=protocol, situations=situations,
                         seed=seed, out=out)
    except BackendUnavailable as exc:
        raise typer.BadParameter(str(exc), param_hint="--ai") from None
    for line in lines:
        typer.echo(line)


@app.command()
def docs(
    out: Path = typer.Option(Path("docs/roles.md"), help="Where to write the role table."),
    api: Path = typer.Option(Path("docs/api.md"),
                             help="The API doc whose websocket message tables to rewrite."),
    schema: Path = typer.Option(Path("web/wire-schema.json"),
                                help="Where to write the websocket messages' JSON Schema."),
) -> None:
    """Regenerate docs/roles.md from the role registry, and the websocket
    message tables of docs/api.md and web/wire-schema.json from the wire
    models (tossim/server/wire.py)."""
    from tossim.tools.docs_gen import roles_markdown
    from tossim.tools.wire_docs import api_markdown, schema_json

    out.write_text(roles_markdown(), encoding="utf-8")
    typer.echo(f"wrote {out}")
    try:
        api.write_text(api_markdown(api.read_text(encoding="utf-8")), encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--api") from None
    typer.echo(f"wrote {api}")
    schema.write_text(schema_json(), encoding="utf-8")
    typer.echo(f"wrote {schema}")


if __name__ == "__main__":  # pragma: no cover
    app()
