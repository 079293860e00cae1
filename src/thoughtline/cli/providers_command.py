"""``thoughtline providers``: endpoints, wire APIs and what each model family discloses."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.text import Text

from thoughtline.cli._render import text_console
from thoughtline.cli._tables import Cell, Column, fitted_table
from thoughtline.config import load_config
from thoughtline.providers.capabilities import builtin_capabilities
from thoughtline.providers.endpoints import Endpoint, EndpointRegistry
from thoughtline.providers.redaction import shown_url


def endpoint_summary(endpoint: Endpoint) -> dict[str, Any]:
    """Where an endpoint points and where that came from (never its key, nor the
    credentials its base URL may hold)."""
    return {
        "name": endpoint.name,
        "wire_api": endpoint.wire_api,
        "dialect": endpoint.dialect,
        "base_url": shown_url(endpoint.base_url),
        "base_url_source": endpoint.base_url_source,
        "api_key_env": endpoint.api_key_env,
    }


def providers_report() -> dict[str, Any]:
    """The resolved endpoints (credentials shown only as set/unset) and the capability table."""
    config = load_config()
    registry = EndpointRegistry(config.providers, config_source=str(config.path))
    table = builtin_capabilities()
    endpoints = []
    for name in registry.names:
        endpoint = registry.resolve(name)
        endpoints.append(
            {
                **endpoint_summary(endpoint),
                "api_key": "set"
                if endpoint.api_key
                else ("unset" if endpoint.key_required else "not needed"),
                "families": [family.family for family in table.for_endpoint(name)],
            }
        )
    from thoughtline.config import thoughtline_home
    from thoughtline.providers.discovery import CachedCapabilityTable, load_capabilities

    loaded = load_capabilities(thoughtline_home())
    cached = loaded.cached if isinstance(loaded, CachedCapabilityTable) else {}
    return {
        "schema": "thoughtline.providers/v1",
        "cached_models": cached,
        "config": str(config.path) if config.path else None,
        "endpoints": endpoints,
        "families": [
            {**family.describe(), "endpoints": list(family.endpoints), "match": list(family.match)}
            for family in table.families
        ],
    }


@click.command("providers")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--refresh",
    is_flag=True,
    help="Ask Anthropic's model API what each model accepts and cache it in THOUGHTLINE_HOME.",
)
def providers_command(as_json: bool, refresh: bool) -> None:
    """Endpoints, wire APIs and what each model family discloses."""
    if refresh:
        _refresh()
    report = providers_report()
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    console = text_console()
    endpoints: list[tuple[Cell, ...]] = []
    for endpoint in report["endpoints"]:
        wire = endpoint["wire_api"] + (f" ({endpoint['dialect']})" if endpoint["dialect"] else "")
        key = endpoint["api_key"]
        if endpoint["api_key_env"]:
            key = f"{endpoint['api_key_env']}: {key}"
        endpoints.append(
            (
                endpoint["name"],
                wire,
                Text.assemble(
                    endpoint["base_url"], " ", (f"({endpoint['base_url_source']})", "dim")
                ),
                key,
            )
        )
    console.print(
        fitted_table(
            console,
            (Column("name", key=True), Column("wire API"), Column("base URL"), Column("key")),
            endpoints,
            title="Endpoints",
        )
    )
    families = [
        (
            family["family"],
            Text(family["label"], style="dim"),
            ", ".join(family["endpoints"]),
            family["thinking_control"]
            + (
                f" (default display: {family['default_display']})"
                if family["default_display"]
                else ""
            ),
            ", ".join(family["efforts"]) or "-",
            ", ".join(family["returns"]) or "nothing (token count at most)",
            "yes" if family["reasoning_by_default"] else "no",
        )
        for family in report["families"]
    ]
    columns = (
        Column("family", key=True),
        Column("models", wrap=True),
        Column("endpoints"),
        Column("reasoning control", wrap=True),
        Column("efforts", wrap=True),
        Column("returns", wrap=True),
        Column("reasons by default", wrap=True),
    )
    console.print(
        fitted_table(console, columns, families, title="Model families (what each can disclose)")
    )
    if report["config"]:
        console.print(Text(f"config: {report['config']}", style="dim"))


def _refresh() -> None:
    import asyncio

    import httpx2

    from thoughtline.config import thoughtline_home
    from thoughtline.providers.discovery import refresh_models, write_cache
    from thoughtline.providers.transport import default_http_client

    config = load_config()
    endpoint = EndpointRegistry(config.providers, config_source=str(config.path)).resolve(
        "anthropic"
    )

    async def fetch() -> dict[str, dict[str, Any]]:
        # The client provider calls use: the same proxies, trust store and their errors.
        async with default_http_client(httpx2.Timeout(30)) as http:
            return await refresh_models(endpoint, http)

    entries = asyncio.run(fetch())
    path = write_cache(thoughtline_home(), "anthropic", entries)
    click.echo(
        f"Refreshed {len(entries)} Anthropic model(s) from {shown_url(endpoint.base_url)} "
        f"into {path}.",
        err=True,
    )
