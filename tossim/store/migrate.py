"""Running the Alembic migrations in `migrations/` from Python.

The migrations folder sits at the top of the repository (next to
`pyproject.toml`), not inside the package. It is found, in order, at:
`$TOSSIM_MIGRATIONS_DIR`; `<repository>/migrations` for a source checkout or an
editable install; `./migrations` (the Docker image runs from `/app`, where the
folder is copied).
"""

from __future__ import annotations

import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection

import tossim

# Held (per transaction) while PostgreSQL migrates, so that several servers
# starting together do not race each other through the same revisions.
PG_MIGRATION_LOCK = 0x7055_1D0B


def migrations_dir() -> Path:
    candidates: list[Path] = []
    if env := os.environ.get("TOSSIM_MIGRATIONS_DIR"):
        candidates.append(Path(env))
    candidates.append(Path(tossim.__file__).resolve().parent.parent / "migrations")
    candidates.append(Path.cwd() / "migrations")
    for path in candidates:
        if (path / "env.py").is_file():
            return path
    raise FileNotFoundError(
        "cannot find the Alembic migrations folder (looked in "
        + ", ".join(str(p) for p in candidates)
        + "); set TOSSIM_MIGRATIONS_DIR to the repository's migrations/ folder")


def alembic_config(url: str | None = None) -> Config:
    """The same configuration as `alembic -c migrations/alembic.ini`, with
    `url` (if given) as the database."""
    folder = migrations_dir()
    ini = folder / "alembic.ini"
    cfg = Config(str(ini)) if ini.is_file() else Config()
    cfg.set_main_option("script_location", str(folder))
    if url is not None:
        # ConfigParser treats % as interpolation; a password may contain one.
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(connection: Connection, revision: str = "head") -> None:
    """`alembic upgrade head` on an open (sync-facing) connection: call it as
    `await async_connection.run_sync(upgrade)`. env.py uses the connection it
    is given instead of making its own engine, and leaves logging alone."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({PG_MIGRATION_LOCK})")
    cfg = alembic_config()
    cfg.attributes["connection"] = connection
    command.upgrade(cfg, revision)


def current(connection: Connection) -> str | None:
    """The database's current revision (None for an empty database)."""
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()
