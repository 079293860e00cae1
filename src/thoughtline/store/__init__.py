"""Durable runs, tasks and trace events: persistence only, below the runtime.

- :mod:`~thoughtline.store.base` — the :class:`~thoughtline.store.base.Store` protocol
  and the store's errors.
- :mod:`~thoughtline.store.opening` — :func:`~thoughtline.store.opening.open_store`, the
  store a config names (the one place front ends open one).
- ``_sql_store`` — every query of both stores, written once (``SqlStore``), in the
  spelling of a ``_sql_dialect`` (placeholders, ``IN`` lists, prefix match, the
  heartbeat's clock, the words of the schema).
- :mod:`~thoughtline.store.migrations` — the named schema migrations of both stores,
  written once, and how SQLite applies them.
- :mod:`~thoughtline.store.sqlite` — :class:`~thoughtline.store.sqlite.SQLiteStore`, the
  embedded default (``_sqlite_connection``: opening and error mapping).
- :mod:`~thoughtline.store.postgres` — :class:`~thoughtline.store.postgres.PostgresStore`,
  the store shared by several machines (extra ``postgres``; ``_postgres_connection``:
  pool and error mapping; ``_postgres_schema``: applying the named migrations;
  ``_postgres_dsn``: connection strings, masked; ``_postgres_lease``: the owner's
  heartbeat; ``_postgres_listen``: LISTEN/NOTIFY announcements of run events;
  ``_postgres_import``: the copy behind ``thoughtline store migrate``).
- ``_rows`` — rows ↔ records, for both stores.
- :mod:`~thoughtline.store.owner` — the process identity recorded with each run.
"""
