"""The MCP servers an editor passes in ``session/new`` (or ``session/load``), as
thoughtline server settings.

The editor that starts ``thoughtline acp`` is the user's own, so its servers are started
as it describes them, unlike a daemon or MCP request, which may only name configured
servers. They still follow the rules every tool server does: a stdio server's
environment holds its own variables plus ``PATH``, ``HOME`` and the locale, and a server
whose variables or headers would hand it a loaded provider key is refused here, before
the session exists. Values are taken as sent (no ``${VAR}``). stdio and Streamable HTTP servers are
supported (``mcpCapabilities.http``); SSE and ACP-transport servers are refused.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence

from acp import RequestError
from acp.schema import HttpMcpServer, McpServerStdio

from thoughtline.errors import ConfigError
from thoughtline.integrations.acp.settings import invalid_params
from thoughtline.tools.environment import server_environment, server_headers
from thoughtline.tools.settings import SERVER_NAME, SERVER_NAME_RULE, McpServerSettings

SOURCE = "session/new"
CODE = "SESSION_MCP_SERVER_INVALID"


def _invalid(message: str) -> RequestError:
    return invalid_params(message, code=CODE)


def session_servers(
    servers: Sequence[object],
    *,
    cwd: str,
    configured: Mapping[str, McpServerSettings],
    environ: Mapping[str, str],
    secrets: Collection[str],
    source: str = SOURCE,
) -> dict[str, McpServerSettings]:
    """The editor's ``mcpServers`` by name, or a ``-32602`` error naming the entry and
    what is wrong with it. A stdio server starts in the session's ``cwd`` when that is a
    directory here."""
    found: dict[str, McpServerSettings] = {}
    for position, server in enumerate(servers):
        where = f"{source} mcpServers[{position}]"
        name = getattr(server, "name", None)
        if not isinstance(name, str) or not SERVER_NAME.match(name):
            raise _invalid(f"{where}: {name!r} is not a usable server name: {SERVER_NAME_RULE}.")
        if name in found:
            raise _invalid(f"{where}: the name {name!r} is used twice; rename one.")
        if name in configured:
            raise _invalid(
                f"{where}: {name!r} is also the name of a server in {configured[name].source}; "
                "rename one."
            )
        if isinstance(server, McpServerStdio):
            settings = McpServerSettings(
                name=name,
                command=server.command,
                args=tuple(server.args),
                env={variable.name: variable.value for variable in server.env},
                cwd=cwd if os.path.isdir(cwd) else None,
                source=source,
                origin="editor",
                literal=True,
            )
            try:
                server_environment(settings, environ, secrets)
            except ConfigError as exc:
                raise _invalid(exc.message) from None
        elif isinstance(server, HttpMcpServer):
            if not server.url.startswith(("http://", "https://")):
                raise _invalid(f"{where}: url must be an http:// or https:// URL.")
            settings = McpServerSettings(
                name=name,
                url=server.url,
                headers={header.name: header.value for header in server.headers},
                source=source,
                origin="editor",
                literal=True,
            )
            try:
                server_headers(settings, environ, secrets)
            except ConfigError as exc:
                raise _invalid(exc.message) from None
        else:
            kind = getattr(server, "type", "unknown")
            raise _invalid(
                f"{where}: {name!r} uses the {kind} transport; this agent starts stdio "
                "servers and reaches Streamable HTTP ones (type http)."
            )
        found[name] = settings
    return found
