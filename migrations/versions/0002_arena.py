"""arenas: tournaments among model-catalogue entries and their planned games

Revision ID: 0002_arena
Revises: 0001
Create Date: 2026-11-24 00:00:00

`arenas` holds one tournament (its spec: entries, games, players, mode,
seed); `arena_games` its plan, one row per planned game with the game id
chosen when the arena was made, so a restarted arena finds the games it
already started instead of starting them again. `game_id` has no foreign
key: the game row is only created when the planned game starts.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002_arena"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "arenas",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_arenas"),
    )
    op.create_index("ix_arenas_created_at", "arenas", ["created_at"])
    op.create_table(
        "arena_games",
        sa.Column("arena_id", sa.String(32), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("game_id", sa.String(32), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("seats", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("arena_id", "idx", name="pk_arena_games"),
        sa.ForeignKeyConstraint(["arena_id"], ["arenas.id"], ondelete="CASCADE",
                                name="fk_arena_games_arena_id_arenas"),
        sa.UniqueConstraint("game_id", name="uq_arena_games_game_id"),
    )


def downgrade() -> None:
    op.drop_table("arena_games")
    op.drop_index("ix_arenas_created_at", table_name="arenas")
    op.drop_table("arenas")
