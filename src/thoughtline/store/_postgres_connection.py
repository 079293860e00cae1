"""Connecting to PostgreSQL, and turning psycopg's failures into thoughtline's errors.

Every failure reaches callers as one :class:`~thoughtline.store.base.StoreError` naming
the server as ``host:port/dbname`` (never the password) and what to do; a constraint
violation is a caller's bug and stays what it is, as in the SQLite store.
"""

from __future__ import annotations

import select
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import psycopg
import psycopg_pool
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import DictRow, dict_row

from thoughtline.config import StoreSettings
from thoughtline.errors import ConfigError
from thoughtline.store._postgres_dsn import server_location
from thoughtline.store._postgres_schema import apply_migrations
from thoughtline.store.base import StoreError, StoreProblem

CONNECT_TIMEOUT_S = 10
"""How long connecting to the server may take (unless the connection string says)."""
"""Connections one process keeps at most; each store call holds one for a transaction."""
POOL_WAIT_S = 10.0
"""How long a call waits for a free (or new) connection before giving up: also how
long a server that went down takes to be reported."""
IDLE_CHECK_S: Final = 1.0
"""A pooled connection idle longer than this is checked with a round trip before it is
lent (a quiet network path may have dropped it); one used more recently is checked only
when the server has sent it something, which is how a restart announces itself."""
LOCK_TIMEOUT_S = 10
"""How long a statement waits for a row lock another transaction holds, as SQLite's
busy timeout does, before it is reported ``locked``."""

Connection = psycopg.Connection[DictRow]


def conninfo(dsn: str, settings: StoreSettings | None = None) -> str:
    """The connection string with the timeouts it leaves unset, and, for the pool's
    connections (``settings``), the ``[store]`` application name and statement timeout
    it leaves unset. A string psycopg cannot read is a config mistake."""
    try:
        given = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(
            f"The PostgreSQL connection string for the thoughtline store cannot be read "
            f"({_one_line(exc)}); write it as postgresql://user@host:5432/dbname."
        ) from exc
    options: dict[str, str | int] = {}
    if "connect_timeout" not in given:
        options["connect_timeout"] = CONNECT_TIMEOUT_S
    server_options = str(given.get("options") or "")
    if "lock_timeout" not in server_options:
        server_options = f"{server_options} -c lock_timeout={LOCK_TIMEOUT_S * 1000}"
    if settings is not None:
        if "application_name" not in given:
            options["application_name"] = settings.application_name
        if "statement_timeout" not in server_options and settings.statement_timeout_ms:
            server_options += f" -c statement_timeout={settings.statement_timeout_ms}"
    options["options"] = server_options.strip()
    return make_conninfo(dsn, **options)


def migrate(dsn: str) -> None:
    """Connect once (so a server that is down or refuses us says why, which a pool would
    not) and bring the schema up to date."""
    location = server_location(dsn)
    with usage_errors(location), psycopg.connect(conninfo(dsn), autocommit=True) as conn:
        apply_migrations(conn, location=location)


def open_pool(dsn: str, settings: StoreSettings) -> psycopg_pool.ConnectionPool[Connection]:
    location = server_location(dsn)
    pool: psycopg_pool.ConnectionPool[Connection] = psycopg_pool.ConnectionPool(
        conninfo(dsn, settings),
        connection_class=psycopg.Connection[DictRow],
        kwargs={"row_factory": dict_row},
        min_size=settings.pool_min,
        max_size=settings.pool_max,
        timeout=POOL_WAIT_S,
        # A connection broken by a server restart is replaced before it is handed out.
        check=check_on_borrow,
        name=f"thoughtline {location}",
        open=False,
    )
    with usage_errors(location):
        pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
    return pool


_last_used: weakref.WeakKeyDictionary[Connection, float] = weakref.WeakKeyDictionary()


def mark_used(conn: Connection) -> None:
    """``conn`` just finished a transaction (see :func:`check_on_borrow`)."""
    _last_used[conn] = time.monotonic()


def check_on_borrow(conn: Connection) -> None:
    """Raise when a pooled connection is not fit to lend (the pool then replaces it).

    Checking every connection with a round trip doubled the round trips of a write, so
    only a connection idle longer than :data:`IDLE_CHECK_S`, or one the server sent
    something while it sat in the pool, is checked that way: a server that shuts down
    or restarts tells each connection (an error message, then the end of the stream),
    which makes its socket readable. A connection broken in the instant between this
    check and its use fails its write before COMMIT is sent, and the write is tried
    once more on another (:meth:`PostgresStore.write_merged`)."""
    if conn.broken or conn.closed:
        raise psycopg.OperationalError("the connection is closed")
    if time.monotonic() - _last_used.get(conn, 0.0) > IDLE_CHECK_S or _has_input(conn):
        psycopg_pool.ConnectionPool.check_connection(conn)


def _has_input(conn: Connection) -> bool:
    """Whether the server sent something to an idle connection (nothing waits)."""
    descriptor = conn.fileno()
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(descriptor, select.POLLIN | select.POLLERR | select.POLLHUP)
        return bool(poller.poll(0))
    readable, _, failed = select.select([descriptor], [], [descriptor], 0)
    return bool(readable or failed)


@contextmanager
def usage_errors(location: str) -> Iterator[None]:
    """psycopg's failures as one StoreError naming the server."""
    try:
        yield
    except pg_errors.IntegrityError:
        raise
    except psycopg_pool.PoolTimeout as exc:
        raise StoreError(
            "unavailable",
            f"No connection to the thoughtline PostgreSQL store at {location} in time "
            f"({_one_line(exc)}): check that the server is running and "
            "reachable, and that it accepts more connections (max_connections).",
        ) from exc
    except psycopg.Error as exc:
        raise store_error(location, exc) from exc


def problem_of(exc: psycopg.Error) -> StoreProblem:
    """Which :data:`StoreProblem` a psycopg failure is."""
    if isinstance(exc, pg_errors.DiskFull | pg_errors.OutOfMemory):
        return "full"
    if isinstance(
        exc,
        pg_errors.LockNotAvailable
        | pg_errors.DeadlockDetected
        | pg_errors.SerializationFailure
        | pg_errors.QueryCanceled,
    ):
        return "locked"
    if isinstance(exc, pg_errors.DataCorrupted | pg_errors.IndexCorrupted):
        return "damaged"
    return "unavailable"


def store_error(location: str, exc: psycopg.Error) -> StoreError:
    """One sentence naming the server, what is wrong and what to do."""
    text = _one_line(exc)
    where = f"the thoughtline PostgreSQL store at {location}"
    problem = problem_of(exc)
    if problem == "full":
        return StoreError(
            "full",
            f"The server of {where} is out of disk or memory ({text}); free some space on "
            "it, then try again (what was written before stays readable).",
        )
    if problem == "locked":
        return StoreError(
            "locked",
            f"A write to {where} waited longer than {LOCK_TIMEOUT_S} s for another "
            f"transaction ({text}); try again.",
        )
    if problem == "damaged":
        return StoreError(
            "damaged",
            f"The server of {where} reports damaged data ({text}); restore the database "
            "from a backup, or ask its administrator.",
        )
    # A refused connection carries no SQLSTATE; its text says why.
    if isinstance(exc, pg_errors.InvalidPassword | pg_errors.InvalidAuthorizationSpecification) or (
        "authentication failed" in text or "no password supplied" in text
    ):
        advice = "check the user and password in the connection string"
    elif isinstance(exc, pg_errors.InvalidCatalogName) or (
        "database" in text and "does not exist" in text
    ):
        advice = "create the database (createdb) or name an existing one"
    elif isinstance(exc, pg_errors.UndefinedTable):
        advice = (
            "its tables were removed while this process used them; open the store again "
            "to create them (what they held is gone unless restored from a backup)"
        )
    elif isinstance(exc, pg_errors.InsufficientPrivilege):
        advice = "grant the user the rights to create and use tables in that database"
    else:
        advice = (
            "check that the server is running and reachable, and that "
            "THOUGHTLINE_STORE_URL (or [store] dsn) names it"
        )
    return StoreError("unavailable", f"Cannot use {where} ({text}); {advice}.")


def closed_error(location: str) -> StoreError:
    return StoreError(
        "closed",
        f"The thoughtline PostgreSQL store at {location} was closed by this process; "
        "open it again.",
    )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
