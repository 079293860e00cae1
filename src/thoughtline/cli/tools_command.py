"""``thoughtline tools``: the configured MCP servers and their tools, each server started
to ask it (side by side), each list kept in the tool list cache for the next run."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import click
from rich.console import Console, RenderableType

from thoughtline.cli._render import text_console
from thoughtline.cli._tables import Cell, Column, fitted_table
from thoughtline.cli._terminal_text import echo_error, json_for, visible_text
from thoughtline.config import load_config, thoughtline_home
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.tools.list_cache import ToolListCache
from thoughtline.tools.listing import ServerListing, list_servers, merged_servers
from thoughtline.tools.settings import load_mcp_json


@click.command("tools")
@click.option("--json", "as_json", is_flag=True, help="Print the servers and tools as JSON.")
@click.option(
    "--mcp-config",
    "mcp_config",
    type=click.Path(path_type=Path, dir_okay=False),
    help='Also the servers of this mcp.json ({"mcpServers": {...}}, as Claude Desktop, '
    "Claude Code, Cursor and VS Code keep it).",
)
def tools_command(as_json: bool, mcp_config: Path | None) -> None:
    """Start each configured MCP server, list its tools, and stop it; each list is kept
    for the next run to start with. Exits 1 when a server could not be asked."""
    from thoughtline._undumpable import make_undumpable

    make_undumpable()  # it holds the keys while the servers run
    config = load_config()
    servers = dict(config.mcp_servers)
    if mcp_config is not None:
        servers = merged_servers(servers, load_mcp_json(mcp_config))
    environ = dict(os.environ)
    secrets = EndpointRegistry(config.providers, environ=environ).loaded_secrets()
    listings = asyncio.run(list_servers(servers, environ=environ, secrets=secrets))
    # What each server listed is what the next run offers while it starts.
    lists = ToolListCache.under(thoughtline_home(), environ)
    for listing in listings:
        if listing.error is None:
            lists.store(listing.settings, listing.tools)
    if as_json:
        click.echo(json_for(sys.stdout, {"servers": [_as_dict(item) for item in listings]}))
    elif not listings:
        echo_error(
            "thoughtline: no MCP servers configured; add [mcp_servers.NAME] to "
            "thoughtline.toml or pass --mcp-config mcp.json."
        )
    else:
        console = text_console()
        console.print(_table(console, listings))
        for listing in listings:
            if listing.error is not None:
                echo_error(f"thoughtline: {listing.error.message}")
    if any(listing.error is not None for listing in listings):
        sys.exit(1)


def _as_dict(listing: ServerListing) -> dict[str, object]:
    settings = listing.settings
    error = listing.error
    return {
        "name": settings.name,
        "transport": settings.transport,
        "target": settings.describe(),
        "source": settings.source,
        "header_names": sorted(settings.headers),  # values may be secrets: never shown
        "error": None if error is None else {"code": error.code, "message": error.message},
        "tools": [
            {
                "name": tool.name,
                "description": tool.description,
                "read_only": tool.read_only,
                "destructive": tool.destructive,
                "allowed": listing.allows(tool),
                "input_schema": dict(tool.input_schema),
            }
            for tool in listing.tools
        ],
    }


def _table(console: Console, listings: list[ServerListing]) -> RenderableType:
    rows: list[tuple[Cell, ...]] = []
    for listing in listings:
        if listing.error is not None:
            rows.append(
                (
                    visible_text(listing.settings.name),
                    visible_text(listing.error.code, style="red"),
                    "-",
                    visible_text(listing.settings.describe()),
                )
            )
            continue
        for tool in listing.tools:
            kind = "read-only" if tool.read_only else "destructive" if tool.destructive else "-"
            description = " ".join(tool.description.split())
            rows.append(
                (
                    visible_text(tool.spec),
                    kind,
                    "yes" if listing.allows(tool) else "no",
                    visible_text(
                        description if len(description) <= 70 else description[:67] + "..."
                    ),
                )
            )
    columns = (
        Column("tool", key=True),
        Column("kind"),
        Column("allowed"),
        Column("description", wrap=True),
    )
    return fitted_table(console, columns, rows, title="MCP servers and tools")
