"""Opening a SQLite store file, and turning SQLite's failures into thoughtline's errors.

- **Private files.** The home directory thoughtline creates is ``0700``; the database
  and its ``-wal``/``-shm`` files are ``0600`` (:mod:`thoughtline._private_files`).
- **Damage.** Opening runs ``quick_check`` (within :data:`INTEGRITY_CHECK_BUDGET_S`)
  before anything is written, so a damaged file is reported — and left byte for byte as
  it is — instead of being written to. Every SQLite failure reaches callers as one
  :class:`~thoughtline.store.base.StoreError` naming the file and what to do.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from thoughtline._private_files import create_private_file, make_private, make_private_dir
from thoughtline.errors import ConfigError
from thoughtline.store.base import StoreError, StoreProblem
from thoughtline.store.migrations import apply_migrations, check_not_newer

BUSY_TIMEOUT_S = 10.0
"""How long a write waits for another process's transaction before giving up."""
INTEGRITY_CHECK_BUDGET_S = 0.5
"""Opening checks the file's structure for at most this long (a few hundred MB); a
larger file is opened unchecked and damage is reported when a damaged page is read."""


def open_connection(path: Path) -> sqlite3.Connection:
    """Open (creating, private) and migrate the database at ``path``: WAL, pragmas,
    integrity checked. Raises :class:`ConfigError` for a path that cannot hold a
    database, :class:`StoreError` for a damaged file or a full disk."""
    location = str(path)
    try:
        make_private_dir(path.parent)
        if not path.exists():
            create_private_file(path)  # so SQLite's -wal and -shm start 0600 too
    except OSError as exc:
        raise ConfigError(
            f"Cannot create the directory for the thoughtline database {location} "
            f"({exc.strerror or exc}). Make {path.parent} a writable directory, "
            "or set THOUGHTLINE_HOME to one."
        ) from exc
    if path.is_dir():
        raise ConfigError(
            f"The thoughtline database path {location} is a directory. Remove it, or "
            "set THOUGHTLINE_HOME to another directory."
        )
    conn: sqlite3.Connection | None = None
    try:
        # isolation_level=None: the module starts no transactions of its own; every
        # transaction is explicit.
        conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        # Refuse a newer database, or a damaged one, before anything here could
        # write to it.
        check_not_newer(conn, location=location)
        check_integrity(conn, path)
        enable_wal(conn)
        for private in (path, side_file(path, "-wal"), side_file(path, "-shm")):
            make_private(private)
        # NORMAL is enough under WAL: a commit is appended to the log with write(), so
        # it survives the crash or kill of any process; the file is never corrupted.
        # Only an OS crash or power loss can roll back the last few commits (FULL
        # would fsync every one) — and a run that then looks unfinished is exactly
        # what crash recovery marks later.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        # Deleted and overwritten content is zeroed, not left in free pages: retention
        # must really remove reasoning text from the file.
        conn.execute("PRAGMA secure_delete = ON")
        apply_migrations(conn, location=location)
    except (ConfigError, StoreError):
        if conn is not None:
            conn.close()
        raise
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        if problem_of(exc) in ("damaged", "full"):
            raise store_error(path, exc) from exc
        raise ConfigError(_open_error_message(location, exc)) from exc
    return conn


@contextmanager
def usage_errors(path: Path) -> Iterator[None]:
    """A damaged file, a full disk, I/O errors and a lock held past the timeout reach
    callers as one StoreError naming the file, never as a bare sqlite3 traceback. A
    constraint violation is a caller's bug and stays what it is."""
    try:
        yield
    except sqlite3.IntegrityError:
        raise
    except sqlite3.DatabaseError as exc:
        raise store_error(path, exc) from exc


def enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL (a no-op once the file is WAL; the mode is stored in the file).

    The switch needs an exclusive lock and SQLite reports a competing lock at once,
    without the busy handler — so when several processes open a new file together, all
    but one are refused. Retry until the busy timeout, as the busy handler would."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def side_file(path: Path, suffix: str) -> Path:
    """SQLite's file beside the database (``-wal``, ``-shm``)."""
    return path.with_name(path.name + suffix)


def check_integrity(conn: sqlite3.Connection, path: Path) -> None:
    """Raise :class:`StoreError` when SQLite's ``quick_check`` finds the file damaged.
    Stops unchecked after :data:`INTEGRITY_CHECK_BUDGET_S`: every command opens the
    store, and a huge file must not slow each of them down."""
    deadline = time.monotonic() + INTEGRITY_CHECK_BUDGET_S
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 1_000)
    try:
        found = conn.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc):
            return
        raise
    finally:
        conn.set_progress_handler(None, 0)
    if found is not None and found[0] != "ok":
        # One line: SQLite's report spans several ("*** in database main ***\nPage 7: ...").
        report = " ".join(str(found[0]).replace("*** in database main ***", "").split())
        raise StoreError("damaged", _damaged_message(path, f"quick_check: {report}"))


def problem_of(exc: sqlite3.Error) -> StoreProblem:
    """Which :data:`StoreProblem` a SQLite failure is."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text:
        return "damaged"
    if "not a database" in text:
        return "damaged"
    if name == "SQLITE_FULL" or "is full" in text:
        return "full"
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text or "busy" in text:
        return "locked"
    return "unavailable"


def closed_error(path: Path) -> StoreError:
    return StoreError(
        "closed",
        f"The thoughtline database {path} was closed by this process; open it again.",
    )


def _damaged_message(path: Path, text: str) -> str:
    return (
        f"The thoughtline database {path} is damaged ({text}) and was left as it is: move "
        "it aside (thoughtline then starts a new one) or restore it from a backup; to "
        f"salvage what it holds, try: sqlite3 {path} .recover | sqlite3 recovered.db"
    )


def store_error(path: Path, exc: sqlite3.Error) -> StoreError:
    """One sentence naming the file, what is wrong and what to do."""
    text = str(exc)
    problem = problem_of(exc)
    if problem == "damaged":
        if "not a database" in text:
            return StoreError(
                "damaged",
                f"{path} is not a thoughtline database, or its header is damaged ({text}); "
                "it was left as it is: move it aside (thoughtline then starts a new one) or "
                "restore it from a backup; to salvage a damaged database, try: "
                f"sqlite3 {path} .recover | sqlite3 recovered.db",
            )
        return StoreError("damaged", _damaged_message(path, text))
    if problem == "full":
        return StoreError(
            "full",
            f"The disk holding the thoughtline database {path} is full ({text}); free some "
            "space, then try again (what was written before stays readable).",
        )
    if problem == "locked":
        return StoreError(
            "locked",
            f"The thoughtline database {path} could not be used ({text}): another process "
            f"held it longer than {BUSY_TIMEOUT_S:.0f} s; try again.",
        )
    return StoreError(
        "unavailable",
        f"The thoughtline database {path} could not be used ({text}); check the "
        "permissions of the file and its directory, and free disk space.",
    )


def _open_error_message(location: str, exc: sqlite3.Error) -> str:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return (
            f"The thoughtline database {location} stayed locked by another process for "
            f"{BUSY_TIMEOUT_S:.0f} s ({text}). Try again; if it persists, look for a stuck "
            "thoughtline process."
        )
    return (
        f"Cannot open the thoughtline database {location} ({text}). Check that the file and "
        "its directory are readable and writable by this user, or set THOUGHTLINE_HOME to a "
        "writable directory."
    )
