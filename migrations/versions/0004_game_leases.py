"""game_leases: which server process runs each live game, until when

Revision ID: 0004_game_leases
Revises: 0003_seat_turns
Create Date: 2026-11-24 00:00:00

Written by hand (see 0001): the columns are spelled out here. One row per
game some process runs: the process's name and when its claim expires unless
renewed. Another process takes a game over only once the lease has expired
(tossim/store/leases.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_game_leases"
down_revision: str | Sequence[str] | None = "0003_seat_turns"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "game_leases",
        sa.Column("game_id", sa.String(32), nullable=False),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("game_id", name="pk_game_leases"),
        sa.ForeignKeyConstraint(["game_id"], ["games.id"], ondelete="CASCADE",
                                name="fk_game_leases_game_id_games"),
    )
    op.create_index("ix_game_leases_owner", "game_leases", ["owner"])


def downgrade() -> None:
    op.drop_index("ix_game_leases_owner", table_name="game_leases")
    op.drop_table("game_leases")
