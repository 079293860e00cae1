"""The tools each MCP server listed the last time it started, kept under the home, so a
run can offer them to its model while the server is still starting.

One file per server definition, ``HOME/tool-lists/KEY.json`` (``0600`` in a ``0700``
directory, written whole and renamed into place). ``KEY`` is a SHA-256 over what decides
the list a server gives:

- a stdio server: its command, arguments, working directory and the *names* of its
  ``env`` variables, with the identity (resolved path, size, modification time) of the
  executable it runs and of a script an argument names (``python server.py``,
  ``node index.js``);
- an HTTP server: its URL with credentials masked and the *names* of its headers.

No value of an ``env`` variable or a header is read into the key or written anywhere:
they may be secrets. A package upgraded behind an unchanged command line (``uvx NAME``,
``python -m NAME``) keeps its key; what catches that is the check every start makes: once
the server is up its live list is compared with the cached one, and a different list is
written back (:class:`~thoughtline.runtime.planning.toolbox.Toolbox`).

A file that cannot be read, is not what this module writes, or was written for another
definition is ignored (and replaced by the next start): the cache is never trusted over
a live server, only used until the live list arrives.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from thoughtline._private_files import make_private_dir, write_private_text
from thoughtline._user_files import MIB, read_text_file
from thoughtline.errors import ConfigError
from thoughtline.providers.redaction import shown_url
from thoughtline.tools.mcp_client import ToolInfo
from thoughtline.tools.settings import McpServerSettings

logger = logging.getLogger(__name__)

CACHE_DIR: Final = "tool-lists"
"""The cache's folder under the thoughtline home."""
FORMAT: Final = 1
"""The version of the files' layout: a file of another version is ignored."""
MAX_LIST_BYTES: Final = 4 * MIB
"""The largest cached list read; a larger file is ignored."""
_FILE_ARGS: Final = 8
"""How many of a stdio server's arguments are looked at for a script it runs."""
_SCRIPTS: Final = (".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".sh", ".jar")
"""An argument ending so names the program the server runs (``python server.py``);
other files it names are data (a log, a database), whose changes do not change tools."""


def definition_key(settings: McpServerSettings, environ: Mapping[str, str]) -> str:
    """The key of ``settings``' tool list: a SHA-256 of its definition and of the identity
    of what it runs, never of a secret value (see the module)."""
    described: dict[str, Any] = {"format": FORMAT, "name": settings.name}
    if settings.command is not None:
        cwd = Path(settings.cwd) if settings.cwd else Path.cwd()
        described |= {
            "command": settings.command,
            "args": list(settings.args),
            "cwd": str(cwd),
            "env": sorted(settings.env),
            "executable": _identity(_resolved(settings.command, cwd, environ.get("PATH"))),
            "scripts": [
                identity
                for argument in settings.args[:_FILE_ARGS]
                if argument.endswith(_SCRIPTS) and (identity := _identity(cwd / argument))
            ],
        }
    else:
        described |= {"url": shown_url(settings.url or ""), "headers": sorted(settings.headers)}
    encoded = json.dumps(described, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).hexdigest()


class ToolListCache:
    """``HOME/tool-lists``: :meth:`load` a server's cached list, :meth:`store` its live
    one. Neither raises: a cache that cannot be read or written is a cold start."""

    def __init__(self, folder: Path, environ: Mapping[str, str]) -> None:
        self.folder = folder
        self._environ = environ

    @classmethod
    def under(cls, home: Path, environ: Mapping[str, str]) -> ToolListCache:
        """The cache under the thoughtline ``home``."""
        return cls(home / CACHE_DIR, environ)

    def key(self, settings: McpServerSettings) -> str:
        return definition_key(settings, self._environ)

    def load(self, settings: McpServerSettings) -> tuple[ToolInfo, ...] | None:
        """The list ``settings``' server gave when it last started, or ``None`` (none
        kept, or a file that is damaged or of another definition)."""
        key = self.key(settings)
        path = self._path(key)
        if not path.exists():
            return None
        try:
            kept = json.loads(read_text_file(path, "tool list cache", limit=MAX_LIST_BYTES))
            if not isinstance(kept, dict) or kept.get("format") != FORMAT or kept.get("key") != key:
                raise ValueError("written for another definition or version")
            return tuple(_tool(settings.name, entry) for entry in kept["tools"])
        except (ConfigError, ValueError, KeyError, TypeError) as exc:
            logger.debug("ignoring the cached tool list %s: %s", path, exc)
            return None

    def store(self, settings: McpServerSettings, tools: tuple[ToolInfo, ...]) -> None:
        """Keep ``tools`` as ``settings``' list (a cache that cannot be written is logged
        and left: the next start is cold)."""
        key = self.key(settings)
        path = self._path(key)
        body = {
            "format": FORMAT,
            "key": key,
            "tools": [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": dict(tool.input_schema),
                    "read_only": tool.read_only,
                    "destructive": tool.destructive,
                }
                for tool in tools
            ],
        }
        try:
            make_private_dir(self.folder)
            temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            write_private_text(temporary, json.dumps(body, ensure_ascii=False))
            temporary.replace(path)  # atomic: a reader never sees half a file
        except (OSError, TypeError, ValueError) as exc:
            logger.warning("could not cache the tool list of %s: %s", settings.name, exc)

    def _path(self, key: str) -> Path:
        return self.folder / f"{key[:32]}.json"


def _tool(server: str, entry: Any) -> ToolInfo:
    if not isinstance(entry, dict):
        raise ValueError("a tool that is not an object")
    name, description, schema = entry["name"], entry["description"], entry["input_schema"]
    read_only, destructive = entry["read_only"], entry["destructive"]
    if not (
        isinstance(name, str)
        and isinstance(description, str)
        and isinstance(schema, dict)
        and isinstance(read_only, bool)
        and isinstance(destructive, bool)
    ):
        raise ValueError(f"a tool entry of the wrong shape ({name!r})")
    return ToolInfo(
        server=server,
        name=name,
        description=description,
        input_schema=schema,
        read_only=read_only,
        destructive=destructive,
    )


def _resolved(command: str, cwd: Path, path: str | None) -> Path | None:
    """Where ``command`` is, as the server's start finds it (a name on ``PATH``, or a
    path, relative to the server's working directory)."""
    if os.sep in command:
        return cwd / command
    found = shutil.which(command, path=path)
    return None if found is None else Path(found)


def _identity(path: Path | None) -> list[object] | None:
    """The resolved path, size and modification time of the regular file ``path``."""
    if path is None:
        return None
    try:
        real = path.resolve()
        found = real.stat()
    except (OSError, RuntimeError, ValueError):
        return None
    if not real.is_file():
        return None
    return [str(real), found.st_size, found.st_mtime_ns]
