"""Durable runs, tasks and trace events: persistence only, below the runtime.

- :mod:`~thoughtline.store.base` — the :class:`~thoughtline.store.base.Store` protocol
  and the store's errors.
- :mod:`~thoughtline.store.sqlite` — :class:`~thoughtline.store.sqlite.SQLiteStore`, the
  embedded default (``_sqlite_connection``: opening and error mapping; ``_sqlite_rows``:
  rows ↔ records; ``migrations``: the named schema migrations).
- :mod:`~thoughtline.store.owner` — the process identity recorded with each run.
- :mod:`~thoughtline.store.files` — private files and directories under the home.
"""
