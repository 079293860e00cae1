"""Copying a SQLite store's WAL into its file from a thread, off the writers' path.

By default SQLite checkpoints inside the commit that grows the WAL past 1000 pages: that
commit then copies the log into the file and fsyncs it, which took 35 to 90 ms on the event
loop of a busy run. The store turns that off (``wal_autocheckpoint = 0`` on its
connection) and this thread runs a ``PASSIVE`` checkpoint on a connection of its own
about once a second while writes keep coming. ``PASSIVE`` never waits for anyone: it
copies what no reader still needs, and readers and writers carry on meanwhile. The whole
checkpoint is one call into SQLite, which releases the GIL for its duration.

Other processes keep SQLite's default, and the last connection to close checkpoints
what is left, so a process that dies between checkpoints loses nothing: the WAL is part
of the database.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import Final

logger = logging.getLogger(__name__)

CHECKPOINT_INTERVAL_S: Final = 1.0
"""How long writes accumulate in the WAL before the thread copies them."""
_CLOSE_WAIT_S: Final = 10.0


class WalCheckpointer:
    """Checkpoints one database file's WAL after writes, from a daemon thread started by
    the first :meth:`wrote`."""

    def __init__(self, path: Path, interval_s: float = CHECKPOINT_INTERVAL_S) -> None:
        self.path = path
        self.interval_s = interval_s
        self._dirty = threading.Event()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.running = threading.Lock()
        """Held while a checkpoint runs. SQLite refuses a second checkpoint at once
        (``busy``, never waiting) while one runs, so a ``TRUNCATE`` checkpoint of this
        process takes it first."""

    def wrote(self) -> None:
        """Something was committed: checkpoint within about ``interval_s``."""
        if self._thread is None and not self._closed.is_set():
            with self._start_lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run,
                        name=f"thoughtline checkpoint {self.path.name}",
                        daemon=True,
                    )
                    self._thread.start()
        self._dirty.set()

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running); the store's own
        connection, closed next, checkpoints the rest."""
        self._closed.set()
        self._dirty.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(_CLOSE_WAIT_S)

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            # mode=rw: a file removed meanwhile is not created again, empty.
            uri = self.path.resolve().as_uri() + "?mode=rw"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            while True:
                self._dirty.wait()
                if self._closed.wait(self.interval_s):
                    return
                self._dirty.clear()
                try:
                    with self.running:
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:
                    # The WAL only grows until the next one succeeds; writes are unaffected.
                    logger.debug("checkpoint of %s failed: %s", self.path, exc)
        except sqlite3.Error as exc:
            logger.debug("checkpoints of %s stopped: %s", self.path, exc)
        finally:
            if conn is not None:
                conn.close()
