"""seat_turns: each model seat's finished turns (thinking, tool calls, action)

Revision ID: 0003_seat_turns
Revises: 0001
Create Date: 2026-11-24 00:00:00

Written by hand (see 0001): the columns are spelled out here.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_seat_turns"
down_revision: str | Sequence[str] | None = "0002_arena"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "seat_turns",
        sa.Column("game_id", sa.String(32), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("day", sa.Integer(), nullable=False),
        sa.Column("phase", sa.String(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("game_id", "slot", "seq", name="pk_seat_turns"),
        sa.ForeignKeyConstraint(["game_id"], ["games.id"], ondelete="CASCADE",
                                name="fk_seat_turns_game_id_games"),
    )


def downgrade() -> None:
    op.drop_table("seat_turns")
