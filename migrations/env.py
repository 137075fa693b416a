"""Alembic environment for ToSSim: async URLs for SQLite (aiosqlite) and
PostgreSQL (asyncpg).

Two ways in:
- from the server (`tossim.store.migrate.upgrade`): a live connection is passed
  in `config.attributes["connection"]`; it is used as is and logging is left
  alone;
- from the command line (`alembic -c migrations/alembic.ini ...`): the URL is
  `-x url=...`, else `sqlalchemy.url` in the ini, else $TOSSIM_DATABASE_URL,
  else the default SQLite file.
"""

from __future__ import annotations

import asyncio
import os
from logging.config import fileConfig

from alembic import context
from sqlalchemy import pool
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from tossim.store.tables import metadata

DEFAULT_URL = "sqlite+aiosqlite:///./tossim.db"

config = context.config
target_metadata = metadata


def database_url() -> str:
    return (context.get_x_argument(as_dictionary=True).get("url")
            or config.get_main_option("sqlalchemy.url")
            or os.environ.get("TOSSIM_DATABASE_URL")
            or DEFAULT_URL)


def configure(**kwargs: object) -> None:
    context.configure(
        target_metadata=target_metadata,
        compare_type=True,
        # SQLite cannot ALTER most things; batch mode copies the table instead.
        render_as_batch=True,
        **kwargs,  # type: ignore[arg-type]
    )


def do_run_migrations(connection: Connection) -> None:
    configure(connection=connection)
    with context.begin_transaction():
        context.run_migrations()


async def run_async_migrations(url: str) -> None:
    engine = create_async_engine(url, poolclass=pool.NullPool)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(do_run_migrations)
            await connection.commit()
    finally:
        await engine.dispose()


def run_migrations_offline() -> None:
    configure(url=database_url(), literal_binds=True, dialect_opts={"paramstyle": "named"})
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        do_run_migrations(connection)
        return
    if config.config_file_name is not None:
        fileConfig(config.config_file_name)
    asyncio.run(run_async_migrations(database_url()))


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
