"""What the configured MCP servers offer: each started (or reached), asked for its tools,
and stopped; which of those tools a run may call under the server's ``allow`` and
``allow_destructive`` settings."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from thoughtline.errors import ConfigError, ThoughtlineError
from thoughtline.tools.mcp_client import DEFAULT_START_TIMEOUT_S, McpConnection, ToolInfo
from thoughtline.tools.settings import McpServerSettings

_STARTED_AT_ONCE = 4  # servers are programs: a few at a time on a small machine


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerListing:
    """One server's tools, or why it could not be asked."""

    settings: McpServerSettings
    tools: tuple[ToolInfo, ...] = ()
    error: ThoughtlineError | None = None

    def allows(self, tool: ToolInfo) -> bool:
        """Whether a run may call ``tool``: listed in ``allow`` (when given), and not
        destructive unless the server's destructive tools are allowed."""
        settings = self.settings
        if settings.allow is not None and tool.name not in settings.allow:
            return False
        return settings.allow_destructive or not tool.destructive


def merged_servers(
    configured: Mapping[str, McpServerSettings], added: Mapping[str, McpServerSettings]
) -> dict[str, McpServerSettings]:
    """The config's servers plus those of an ``mcp.json`` file; one name in both is an
    error naming both places."""
    for name, server in added.items():
        if name in configured:
            raise ConfigError(
                f"The MCP server {name!r} is defined twice: in {configured[name].source} and "
                f"in {server.source}; rename one."
            )
    return {**configured, **added}


async def list_servers(
    servers: Mapping[str, McpServerSettings],
    *,
    environ: Mapping[str, str],
    secrets: Collection[str],
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
) -> list[ServerListing]:
    """Every server in ``servers`` started, asked and stopped (a few at a time), in order."""
    gate = asyncio.Semaphore(_STARTED_AT_ONCE)

    async def one(settings: McpServerSettings) -> ServerListing:
        async with gate:
            try:
                async with McpConnection(
                    settings, environ=environ, secrets=secrets, start_timeout_s=start_timeout_s
                ) as connection:
                    return ServerListing(settings=settings, tools=connection.tools)
            except ConfigError:
                raise  # a mistake in the settings (a ${VAR} not set): one sentence, exit 2
            except ThoughtlineError as exc:
                return ServerListing(settings=settings, error=exc)

    return list(await asyncio.gather(*(one(settings) for settings in servers.values())))
