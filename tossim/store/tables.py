"""The tables, as SQLAlchemy Core objects used to build queries.

This module does not create anything: the schema is made only by the Alembic
migrations in `migrations/` (architecture: "Alembic is the only source of the
schema"). `tests/test_store.py` checks that the migrated database and this
metadata agree, so a change here needs a new revision there (see
`migrations/README.md`).
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData(naming_convention={
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
})

# Game status values.
STATUSES = ("lobby", "live", "finished", "aborted")

games = sa.Table(
    "games", metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("status", sa.String, nullable=False),
    sa.Column("format", sa.Integer, nullable=False),
    sa.Column("ruleset", sa.String, nullable=False),
    sa.Column("config", sa.JSON, nullable=False),
    sa.Column("lobby", sa.JSON, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("day", sa.Integer, nullable=False),
    sa.Column("phase", sa.String, nullable=False),
    sa.Column("result", sa.String, nullable=True),
    sa.Column("winners", sa.JSON, nullable=False),
    sa.Index(None, "status", "created_at"),
    sa.Index(None, "created_at"),
)

seats = sa.Table(
    "seats", metadata,
    sa.Column("game_id", sa.String(32), sa.ForeignKey("games.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("slot", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("name", sa.String, nullable=False),
    sa.Column("kind", sa.String, nullable=False),
    sa.Column("backend", sa.String, nullable=True),
    sa.Column("model", sa.String, nullable=True),
    sa.Column("persona", sa.String, nullable=True),
    sa.Column("protocol", sa.String, nullable=True),
    sa.Column("token_hash", sa.String(64), nullable=True),
    sa.Column("claimed", sa.Boolean, nullable=False),
)

commands = sa.Table(
    "commands", metadata,
    sa.Column("game_id", sa.String(32), sa.ForeignKey("games.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("origin", sa.String, nullable=False),
    sa.Column("data", sa.JSON, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

events = sa.Table(
    "events", metadata,
    sa.Column("game_id", sa.String(32), sa.ForeignKey("games.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("v", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("day", sa.Integer, nullable=False),
    sa.Column("phase", sa.String, nullable=False),
    sa.Column("key", sa.String, nullable=False),
    sa.Column("audience", sa.JSON, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("data", sa.JSON, nullable=False),
    # SQL NULL when the event has no secret (most events).
    sa.Column("secret", sa.JSON(none_as_null=True), nullable=True),
    # The primary key (game_id, v) is the index that `events(since)` reads.
)

summaries = sa.Table(
    "summaries", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("game_id", sa.String(32), sa.ForeignKey("games.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("day", sa.Integer, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Index(None, "game_id", "day"),
)

seat_metrics = sa.Table(
    "seat_metrics", metadata,
    sa.Column("game_id", sa.String(32), sa.ForeignKey("games.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("slot", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("data", sa.JSON, nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

# Arenas (tournaments, tossim/arena/): the spec and, per planned game, the
# game id fixed when the arena was made (the game row appears when it starts).
arenas = sa.Table(
    "arenas", metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("status", sa.String, nullable=False),
    sa.Column("spec", sa.JSON, nullable=False),
    sa.Index(None, "created_at"),
)

arena_games = sa.Table(
    "arena_games", metadata,
    sa.Column("arena_id", sa.String(32), sa.ForeignKey("arenas.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("idx", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("game_id", sa.String(32), nullable=False, unique=True),
    sa.Column("seed", sa.BigInteger, nullable=False),
    sa.Column("seats", sa.JSON, nullable=False),  # the entry label of each slot, in order
)

# One row per finished turn of a model seat: `data` holds the prompt, the
# output, the steps (thinking, tool calls with observations, faults, the
# action), the action and the token counts (`LLMSeat.turn_log` entries).
seat_turns = sa.Table(
    "seat_turns", metadata,
    sa.Column("game_id", sa.String(32), sa.ForeignKey("games.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("slot", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("day", sa.Integer, nullable=False),
    sa.Column("phase", sa.String, nullable=False),
    sa.Column("data", sa.JSON, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

# Which server process runs each live game (tossim/store/leases.py): the
# process's name (generated at its start) and when its claim runs out unless
# renewed. A process starts a game's actor only while it holds the lease.
game_leases = sa.Table(
    "game_leases", metadata,
    sa.Column("game_id", sa.String(32), sa.ForeignKey("games.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("owner", sa.String(128), nullable=False),
    sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=False),
    sa.Index(None, "owner"),
)
