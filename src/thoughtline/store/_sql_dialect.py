"""What SQLite and PostgreSQL spell differently, so each query and table is written once.

Queries are written in SQLite's spelling: ``?`` and ``:name`` placeholders (so no
``::`` casts: write ``CAST``), and ``%`` only inside string literals. :meth:`SqlDialect.sql` turns that into the dialect's own
(psycopg's ``%s``, ``%(name)s`` and ``%%``). The rest are the few phrases that differ:

- an ``IN`` list of any length: one placeholder per value in SQLite (as fast as
  ``=``), or one JSON array read by ``json_each`` past :data:`LISTED_AT_MOST` values
  (SQLite caps a statement's parameters); one array parameter in PostgreSQL
  (``= ANY``);
- a prefix match on an id, and the byte order ids sort in;
- the current time of a heartbeat: stamped by this process in SQLite (one machine),
  by the server's clock in PostgreSQL (one clock for every host);
- the row lock a conditional write takes (PostgreSQL's ``FOR UPDATE``; a SQLite write
  transaction already holds the whole file);
- the words of the schema (:data:`SqlDialect.ddl_words`): integer and float types, the
  column that orders rows inserted in the same millisecond, an append-only key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Literal

from thoughtline.records import now_iso
from thoughtline.store import _rows as rows

DialectName = Literal["sqlite", "postgres"]

LISTED_AT_MOST = 500
"""The longest ``IN`` list SQLite gets one placeholder per value for (the touch of a
write's runs, a page of runs); a longer one is bound as one JSON array."""


class SqlDialect:
    """SQLite's spelling; :class:`PostgresDialect` overrides what PostgreSQL spells
    otherwise."""

    name: DialectName = "sqlite"
    row_order = "rowid"
    """The column that orders rows inserted in the same millisecond (SQLite's implicit
    rowid; PostgreSQL's identity column ``row_order``)."""
    lock_row = ""
    """What a ``SELECT`` appends to lock the rows it reads until the transaction ends."""
    now_sql = "?"
    """The current time as SQL, with :meth:`now_params` bound to its placeholders."""
    ddl_words: Mapping[str, str] = {
        "bigint": "INTEGER",
        "double": "REAL",
        "append_key": "INTEGER PRIMARY KEY AUTOINCREMENT",  # never reuses a number
        # Every SQLite index ends in the rowid: runs of one millisecond stay ordered.
        "row_order_column": "",
        "row_order_key": "",
        "without_rowid": " WITHOUT ROWID",
    }

    def sql(self, text: str) -> str:
        """``text`` (SQLite's spelling) in this dialect's."""
        return text

    def in_list(self, column: str, count: int) -> str:
        """``column`` is one of ``count`` values, bound as :meth:`list_params`."""
        return _sqlite_in_list(column, count)

    def list_params(self, values: Sequence[object]) -> tuple[object, ...]:
        """The parameters of :meth:`in_list` for ``values``."""
        if len(values) > LISTED_AT_MOST:
            return (rows.dump(list(values)),)
        return tuple(values)

    def prefix_match(self, column: str) -> str:
        """``column`` starts with a prefix (:meth:`prefix_params`)."""
        # A range on the key: ids are ASCII, below U+FFFF in SQLite's byte order.
        return f"{column} >= ? AND {column} < ?"

    def prefix_params(self, prefix: str) -> tuple[object, ...]:
        return (prefix, prefix + "\uffff")

    def binary_order(self, column: str) -> str:
        """``column`` sorted by code point, whatever the database's collation."""
        return column

    def contains_folded(self, column: str) -> str:
        """``column`` holds the parameter, case ignored (no ``LIKE``: nothing in the
        parameter is a wildcard)."""
        return f"instr(lower({column}), lower(CAST(? AS TEXT))) > 0"

    def now_params(self) -> tuple[object, ...]:
        """The parameters of :data:`now_sql`, read now."""
        return (now_iso(),)


class PostgresDialect(SqlDialect):
    """PostgreSQL's spelling (psycopg's placeholders)."""

    name: DialectName = "postgres"
    row_order = "row_order"
    lock_row = " FOR UPDATE"
    now_sql = "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
    ddl_words: Mapping[str, str] = {
        "bigint": "BIGINT",
        "double": "DOUBLE PRECISION",
        "append_key": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
        "row_order_column": ",\n row_order BIGINT GENERATED ALWAYS AS IDENTITY",
        "row_order_key": ", row_order",
        "without_rowid": "",
    }

    def sql(self, text: str) -> str:
        return _pyformat(text)

    def in_list(self, column: str, count: int) -> str:
        return f"{column} = ANY(?)"

    def list_params(self, values: Sequence[object]) -> tuple[object, ...]:
        return (list(values),)

    def prefix_match(self, column: str) -> str:
        # A range in byte order, which the index runs_id_bytes (migration m008) serves
        # whatever the database's collation; a range, not starts_with(), so that a
        # prepared statement's generic plan still bounds the scan.
        return f'{column} COLLATE "C" >= ? AND {column} COLLATE "C" < ?'

    def prefix_params(self, prefix: str) -> tuple[object, ...]:
        return (prefix, prefix + "\U0010ffff")  # ids are ASCII: below any code point

    def binary_order(self, column: str) -> str:
        return f'{column} COLLATE "C"'

    def contains_folded(self, column: str) -> str:
        return f"strpos(lower({column}), lower(CAST(? AS TEXT))) > 0"

    def now_params(self) -> tuple[object, ...]:
        return ()


SQLITE = SqlDialect()
POSTGRES = PostgresDialect()


@lru_cache(maxsize=256)
def _sqlite_in_list(column: str, count: int) -> str:
    if count > LISTED_AT_MOST:
        return f"{column} IN (SELECT value FROM json_each(?))"
    return f"{column} IN ({', '.join('?' * count)})"


# A string literal (kept, its % doubled), a placeholder, or a bare %.
_TOKEN = re.compile(r"'(?:[^']|'')*'|\?|:([A-Za-z_]\w*)|%")


def _psycopg_token(match: re.Match[str]) -> str:
    token = match.group()
    if token.startswith("'"):
        return token.replace("%", "%%")
    if token == "?":
        return "%s"
    if token == "%":
        return "%%"
    return f"%({match.group(1)})s"


@lru_cache(maxsize=512)
def _pyformat(text: str) -> str:
    """SQLite's placeholders as psycopg's, once per statement text."""
    return _TOKEN.sub(_psycopg_token, text)
