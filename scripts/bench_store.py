"""Append throughput of the store: prints figures, asserts nothing.

    .venv/bin/python scripts/bench_store.py                      # SQLite (temp file)
    .venv/bin/python scripts/bench_store.py --postgres postgresql+asyncpg://postgres@127.0.0.1/test

Each append is what a game actor stores per flush: one command and a batch of
events (`--events`, default 10) taken from a real scripted game, so sizes and
shapes are realistic. Two runs per database: one game appending alone
(latency), and `--games` games (default 100) appending at once (throughput).
For PostgreSQL a temporary database is created next to the one in the URL and
dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from tossim.agents.match import play_match
from tossim.engine import GameConfig
from tossim.store import SeatRow, Store


def sample_events() -> list[dict[str, Any]]:
    game = play_match(GameConfig(players=15, seed=3)).game
    return [e.to_dict() for e in game.events]


async def run_game(store: Store, game_id: str, pool: list[dict[str, Any]], batches: int,
                   per_batch: int, latencies: list[float]) -> None:
    seats = [SeatRow(slot=i, name=f"Player {i}", kind="ai", backend="scripted")
             for i in range(1, 16)]
    await store.create_game(game_id, GameConfig(players=15).to_dict(), {"speed": "fast"}, seats,
                            status="live")
    v = 0
    for seq in range(1, batches + 1):
        events = []
        for _ in range(per_batch):
            v += 1
            events.append({**pool[v % len(pool)], "v": v})
        t = time.perf_counter()
        await store.append(game_id, [(seq, "seat:1", {"type": "vote", "actor": 1, "target": 2})],
                           events, day=1, phase="voting")
        latencies.append(time.perf_counter() - t)


async def bench(url: str, label: str, games: int, batches: int, per_batch: int,
                pool: list[dict[str, Any]], core: bool) -> None:
    store = await Store.open(url)
    if core:
        store._fast = None  # the portable SQLAlchemy Core append, for comparison
        label += "/core"
    try:
        for n_games, n_batches in ((1, batches * 4), (games, batches)):
            latencies: list[float] = []
            t0, c0 = time.perf_counter(), time.process_time()
            await asyncio.gather(*(run_game(store, uuid.uuid4().hex, pool, n_batches, per_batch,
                                            latencies) for _ in range(n_games)))
            wall = time.perf_counter() - t0
            cpu = time.process_time() - c0
            appends = n_games * n_batches
            lat = sorted(latencies)
            print(f"{label:15s} {n_games:4d} game(s) x {n_batches:4d} appends of 1 command + "
                  f"{per_batch} events: {appends / wall:8.0f} appends/s "
                  f"{appends * per_batch / wall:9.0f} events/s   latency median "
                  f"{statistics.median(lat) * 1e3:6.2f} ms, p99 "
                  f"{lat[int(len(lat) * 0.99) - 1] * 1e3:6.2f} ms, this process's CPU "
                  f"{cpu / appends * 1e3:.2f} ms/append ({cpu / wall:.0%} busy)")
    finally:
        await store.close()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sqlite", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--postgres", metavar="URL", help="an existing database to create a temp "
                    "one beside, e.g. postgresql+asyncpg://postgres@127.0.0.1/test")
    ap.add_argument("--games", type=int, default=100)
    ap.add_argument("--batches", type=int, default=50, help="appends per game")
    ap.add_argument("--events", type=int, default=10, help="events per append")
    ap.add_argument("--core", action="store_true",
                    help="use the portable SQLAlchemy Core append instead of the fast one")
    args = ap.parse_args()
    pool = sample_events()

    if args.sqlite:
        with tempfile.TemporaryDirectory() as tmp:
            await bench(f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}", "sqlite",
                        args.games, args.batches, args.events, pool, args.core)
    if args.postgres:
        admin = create_async_engine(args.postgres, isolation_level="AUTOCOMMIT",
                                    poolclass=NullPool)
        name = f"tossim_bench_{uuid.uuid4().hex[:12]}"
        async with admin.connect() as conn:
            await conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        try:
            url = make_url(args.postgres).set(database=name).render_as_string(hide_password=False)
            await bench(url, "postgresql", args.games, args.batches, args.events, pool, args.core)
        finally:
            async with admin.connect() as conn:
                await conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            await admin.dispose()


if __name__ == "__main__":
    asyncio.run(main())
