"""PostgreSQL connection strings, read without psycopg: which server one names (for
messages) and the string with its password masked (for ``thoughtline config``).

Both URL (``postgresql://user:secret@host:5432/db?sslmode=require``) and key/value
(``host=db.internal dbname=runs password=secret``) forms are understood. Neither result
ever contains the password.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlsplit

from thoughtline.providers.redaction import URL_MASK, shown_url

URL_SCHEMES = ("postgresql://", "postgres://")
MASK = URL_MASK
DEFAULT_PORT = "5432"

_KEY_VALUE = re.compile(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)")


def is_postgres_url(value: str) -> bool:
    """True for a ``postgresql://`` (or ``postgres://``) URL."""
    return value.startswith(URL_SCHEMES)


def server_location(dsn: str) -> str:
    """``host:port/dbname`` of the server a connection string names, for messages."""
    fields = _fields(dsn)
    host = fields.get("host") or "localhost"
    port = fields.get("port") or DEFAULT_PORT
    dbname = fields.get("dbname") or fields.get("user") or "postgres"
    return f"{host}:{port}/{dbname}"


def mask_password(dsn: str) -> str:
    """The connection string with its password (if any) replaced by ``***``: a URL as
    every URL is shown (:func:`~thoughtline.providers.redaction.shown_url`; a user name
    without a password is masked too), a key/value string's ``password``."""
    if is_postgres_url(dsn):
        return shown_url(dsn)
    return _KEY_VALUE.sub(
        lambda match: f"{match[1]}={MASK}" if match[1] == "password" else match[0], dsn
    )


def _fields(dsn: str) -> dict[str, str]:
    if not is_postgres_url(dsn):
        return {key: value.strip("'") for key, value in _KEY_VALUE.findall(dsn)}
    parts = urlsplit(dsn)
    fields = dict(parse_qsl(parts.query))
    hosts = parts.netloc.rpartition("@")[2]
    first = hosts.split(",")[0]  # a multi-host URL: name the first
    if first.startswith("["):  # [IPv6]:port
        host, _, rest = first[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, _, port = first.partition(":")
    if host:
        fields.setdefault("host", unquote(host))
    if port:
        fields.setdefault("port", port)
    user = parts.netloc.rpartition("@")[0].partition(":")[0]
    if user:
        fields.setdefault("user", unquote(user))
    dbname = parts.path.lstrip("/")
    if dbname:
        fields.setdefault("dbname", unquote(dbname))
    return fields
