"""One MCP server's settings, from ``[mcp_servers.NAME]`` in ``thoughtline.toml`` or from
an ``mcp.json`` file (the ``{"mcpServers": {...}}`` JSON that Claude Desktop, Claude Code,
Cursor and VS Code keep), and the ``${VAR}`` values they take from the environment.

A server is either started over stdio (``command``, ``args``, ``env``, ``cwd``) or reached
over Streamable HTTP (``url``, ``headers``). ``allow`` limits it to some of its tools;
tools its annotations call destructive run only with ``allow_destructive = true``.

``${VAR}`` (and ``${VAR:-default}``) in ``env`` and ``headers`` values is filled in from
thoughtline's environment when the server is started, not when the file is read, so the
settings never hold the secret itself; a variable that is not set is an error naming the
server and the key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

from thoughtline._user_files import read_text_file
from thoughtline.errors import ConfigError
from thoughtline.providers.redaction import shown_url

SERVER_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
SERVER_NAME_RULE: Final = (
    "letters, digits, '-' and '_', starting with a letter or digit, at most 64 characters"
)
SERVER_KEYS: Final = (
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "allow",
    "allow_destructive",
    "idle_s",
)
DEFAULT_IDLE_S: Final = 300.0
"""How long the session of a server kept open across runs (:mod:`thoughtline.tools.pool`:
the daemon's, an ACP session's) stays open with no run using it, unless ``idle_s`` says."""
MAX_IDLE_S: Final = 86_400.0
_VARIABLE: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

ServerOrigin: TypeAlias = Literal["config", "mcp.json", "editor", "python"]
"""Where a server was defined: ``[mcp_servers.NAME]``, an ``mcp.json`` file, an ACP
editor's ``session/new``, or the library API's Python callables."""

Fail = Callable[[str, str], ConfigError]
"""Builds the error for a key (``mcp_servers.NAME.KEY``) and what is wrong with it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class McpServerSettings:
    """How to reach one MCP server. ``source`` says where it was defined (a file path)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    allow: tuple[str, ...] | None = None
    """Only these tools of the server; ``None``: every tool it lists."""
    allow_destructive: bool = False
    idle_s: float = DEFAULT_IDLE_S
    """Seconds a session kept open across runs stays open with no run using it
    (:mod:`thoughtline.tools.pool`); a server started for one run stops with it."""
    source: str = "default"
    origin: ServerOrigin = "config"
    literal: bool = False
    """``env`` and ``headers`` values are used as given, with no ``${VAR}`` filled in
    (an ACP editor's servers: it sends the values themselves)."""

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    def describe(self) -> str:
        """How it is reached, for people: the command line or the URL, its credentials
        masked (:func:`~thoughtline.providers.redaction.shown_url`)."""
        if self.command is not None:
            return " ".join((self.command, *self.args))
        return shown_url(self.url or "")

    def expanded_env(self, environ: Mapping[str, str]) -> dict[str, str]:
        """``env`` with ``${VAR}`` filled in from ``environ`` (unless :attr:`literal`)."""
        if self.literal:
            return dict(self.env)
        return {
            key: expand(value, environ, f"mcp_servers.{self.name}.env.{key}", self.source)
            for key, value in self.env.items()
        }

    def expanded_headers(self, environ: Mapping[str, str]) -> dict[str, str]:
        """``headers`` with ``${VAR}`` filled in from ``environ`` (unless :attr:`literal`)."""
        if self.literal:
            return dict(self.headers)
        return {
            key: expand(value, environ, f"mcp_servers.{self.name}.headers.{key}", self.source)
            for key, value in self.headers.items()
        }


def expand(value: str, environ: Mapping[str, str], key: str, source: str) -> str:
    """``value`` with every ``${VAR}`` (or ``${VAR:-default}``) filled in from ``environ``."""

    def fill(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = environ.get(name)
        if found is not None and (found or default is None):
            return found
        if default is not None:
            return default
        raise ConfigError(
            f"{source}: {key}: uses ${{{name}}}, which is not set in the environment; "
            f"set {name} or change the value."
        )

    return _VARIABLE.sub(fill, value)


def parse_server(name: str, table: Mapping[str, Any], source: str, fail: Fail) -> McpServerSettings:
    """The settings of ``[mcp_servers.NAME]`` (already checked for unknown keys by the
    caller, who knows whether they are errors) or of one ``mcp.json`` entry."""
    prefix = f"mcp_servers.{name}"
    if not SERVER_NAME.match(name):
        raise fail(prefix, f"{name!r} is not a valid server name: {SERVER_NAME_RULE}")
    command = _string(table, "command", prefix, fail)
    url = _string(table, "url", prefix, fail)
    if (command is None) == (url is None):
        raise fail(
            prefix,
            "give either command (a server started over stdio) or url (a Streamable HTTP "
            "server), not both and not neither",
        )
    stdio_only = ("args", "env", "cwd")
    http_only = ("headers",)
    for key in stdio_only if url is not None else http_only:
        if key in table:
            kind = "an HTTP server (url)" if url is not None else "a stdio server (command)"
            raise fail(f"{prefix}.{key}", f"does not apply to {kind}")
    if url is not None and not url.startswith(("http://", "https://")):
        raise fail(f"{prefix}.url", f"must be an http:// or https:// URL, got {shown_url(url)!r}")
    allow = _strings(table, "allow", prefix, fail)
    destructive = table.get("allow_destructive", False)
    if not isinstance(destructive, bool):
        raise fail(f"{prefix}.allow_destructive", "wrong type: must be true or false")
    idle_s = table.get("idle_s", DEFAULT_IDLE_S)
    if (
        isinstance(idle_s, bool)
        or not isinstance(idle_s, int | float)
        or not 0 < idle_s <= MAX_IDLE_S
    ):
        raise fail(
            f"{prefix}.idle_s",
            f"must be a number of seconds over 0 and at most {MAX_IDLE_S:g} (one day), "
            f"got {idle_s!r}",
        )
    return McpServerSettings(
        name=name,
        command=command,
        args=_strings(table, "args", prefix, fail) or (),
        env=_string_table(table, "env", prefix, fail),
        cwd=_string(table, "cwd", prefix, fail),
        url=url,
        headers=_string_table(table, "headers", prefix, fail),
        allow=allow,
        allow_destructive=destructive,
        idle_s=float(idle_s),
        source=source,
    )


def load_mcp_json(path: Path) -> dict[str, McpServerSettings]:
    """The servers of an ``mcp.json`` file: ``{"mcpServers": {NAME: {...}}}`` (or VS Code's
    ``{"servers": {...}}``). Keys other tools keep there (``disabled``, ``autoApprove``,
    ...) are ignored, except ``"disabled": true``, which leaves the server out, and
    ``type``, which must name stdio or Streamable HTTP."""
    text = read_text_file(path, "MCP config file")

    def fail(key: str, problem: str) -> ConfigError:
        return ConfigError(f"{path}: {key}: {problem}")

    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            'expected {"mcpServers": {"NAME": {"command": "...", "args": [...]}}}.'
        ) from None
    servers = (
        document.get("mcpServers", document.get("servers")) if isinstance(document, dict) else None
    )
    if not isinstance(servers, dict):
        raise ConfigError(
            f'{path}: no "mcpServers" object; expected '
            '{"mcpServers": {"NAME": {"command": "...", "args": [...]}}}.'
        )
    found: dict[str, McpServerSettings] = {}
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            raise fail(f"mcpServers.{name}", "must be an object with command or url")
        if entry.get("disabled") is True:
            continue
        kind = entry.get("type")
        if kind in ("sse",):
            raise fail(
                f"mcpServers.{name}.type",
                "the legacy SSE transport is not supported; use the server's Streamable "
                "HTTP endpoint (type http)",
            )
        if kind not in (None, "stdio", "http", "streamable-http", "streamableHttp"):
            raise fail(f"mcpServers.{name}.type", f"unknown transport {kind!r}: use stdio or http")
        known = {key: entry[key] for key in SERVER_KEYS if key in entry}
        found[name] = replace(parse_server(name, known, str(path), fail), origin="mcp.json")
    return found


def _string(table: Mapping[str, Any], key: str, prefix: str, fail: Fail) -> str | None:
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, str) or not value:
        raise fail(f"{prefix}.{key}", "wrong type: must be a non-empty string")
    return value


def _strings(table: Mapping[str, Any], key: str, prefix: str, fail: Fail) -> tuple[str, ...] | None:
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise fail(f"{prefix}.{key}", "wrong type: must be a list of strings")
    return tuple(value)


def _string_table(table: Mapping[str, Any], key: str, prefix: str, fail: Fail) -> dict[str, str]:
    value = table.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
        raise fail(f"{prefix}.{key}", "wrong type: must be a table of strings")
    return dict(value)
