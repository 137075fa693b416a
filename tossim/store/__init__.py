"""Persistence: games, seats, command and event logs, summaries, seat metrics.

    store = await Store.open("sqlite+aiosqlite:///./tossim.db")   # runs migrations
    await store.create_game(game_id, config, lobby, seats)
    await store.append(game_id, [(seq, origin, command)], [event.to_dict()], day=1, phase="day1")

The schema is made only by the Alembic migrations in `migrations/`.
"""

from tossim.store.arenas import ArenaGameRow, ArenaRow
from tossim.store.leases import LeaseRow
from tossim.store.store import (
    DEFAULT_URL,
    FORMAT,
    ConflictError,
    GameNotFound,
    GameRow,
    SeatRow,
    Store,
    StoreError,
    hash_token,
)

__all__ = [
    "ArenaGameRow",
    "ArenaRow",
    "DEFAULT_URL",
    "FORMAT",
    "ConflictError",
    "GameNotFound",
    "GameRow",
    "LeaseRow",
    "SeatRow",
    "Store",
    "StoreError",
    "hash_token",
]
