"""Which store a config names, opened: the one place every front end opens a store.

- ``[orchestration] store = "sqlite"`` (the default): ``$THOUGHTLINE_HOME/thoughtline.db``.
- ``store = "postgres"`` with ``[store] dsn``, a ``postgresql://`` URL as ``store``, or
  ``THOUGHTLINE_STORE_URL`` (which overrides the file): the PostgreSQL store, which
  needs the ``postgres`` extra.

Opening decides nothing about the runs found (crash recovery is the runtime's, run by
the callers right after).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from thoughtline.config import (
    STORE_URL_VARIABLE,
    Config,
    StoreSettings,
    thoughtline_home,
    with_store_url,
)
from thoughtline.errors import ConfigError, ThoughtlineError
from thoughtline.store._postgres_dsn import mask_password
from thoughtline.store.base import Store

if TYPE_CHECKING:
    from thoughtline.store.postgres import PostgresStore

DATABASE_NAME = "thoughtline.db"


def shown_dsn(dsn: str) -> str:
    """A PostgreSQL connection string as it may be shown: its password masked (for
    ``thoughtline config``, ``store migrate`` and messages)."""
    return mask_password(dsn)


def sqlite_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the embedded store lives: ``$THOUGHTLINE_HOME/thoughtline.db``."""
    return thoughtline_home(environ) / DATABASE_NAME


def store_dsn(config: Config, environ: Mapping[str, str] | None = None) -> str | None:
    """The PostgreSQL connection string ``config`` (or ``THOUGHTLINE_STORE_URL``) names,
    ``None`` for the embedded SQLite store."""
    config = with_store_url(config, environ)
    if config.store != "postgres":
        return None
    if config.store_dsn is None:  # the config file refuses this; a Config built in code may not
        raise ConfigError(
            f"{config.path}: store.dsn: "
            'orchestration.store = "postgres" needs [store] dsn = "postgresql://..."'
        )
    return config.store_dsn


def open_store(config: Config, environ: Mapping[str, str] | None = None) -> Store:
    """Open (creating and migrating) the store ``config`` names."""
    dsn = store_dsn(config, environ)
    settings = config.store_settings
    if dsn is None:
        from thoughtline.store.sqlite import SQLiteStore

        store = SQLiteStore(sqlite_path(environ))
        if settings.live_flush_ms is not None:
            store.live_flush_s = settings.live_flush_ms / 1000
        return store
    source = with_store_url(config, environ).sources.get("orchestration.store")
    where = source if source == STORE_URL_VARIABLE else f"{source}: orchestration.store"
    return open_postgres(dsn, named_by=where, settings=settings)


def open_postgres(
    dsn: str, *, named_by: str, settings: StoreSettings | None = None
) -> PostgresStore:
    """Open (creating and migrating) the PostgreSQL store at ``dsn``; without the
    ``postgres`` extra, an error that starts with ``named_by`` (where the store was
    asked for) says what to install."""
    try:
        from thoughtline.store.postgres import PostgresStore
    except ImportError as exc:
        raise ThoughtlineError(
            "EXTRA_MISSING",
            f"{named_by}: the PostgreSQL store needs the postgres extra: "
            f"pip install 'thoughtline[postgres]' (missing module {exc.name}).",
        ) from None
    from thoughtline.store._postgres_connection import conninfo

    try:
        conninfo(dsn)  # a string that cannot be read names where it was written
    except ConfigError as exc:
        raise ConfigError(f"{named_by}: {exc.message}") from None
    return PostgresStore(dsn, settings=settings)
