"""``thoughtline config``: the resolved configuration, where each value came from,
credentials masked."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from thoughtline.cli._context import database_path
from thoughtline.cli._render import text_console
from thoughtline.cli._tables import Column, fitted_table
from thoughtline.cli.providers_command import endpoint_summary
from thoughtline.config import STORE_SETTING_KEYS, Config, load_config, thoughtline_home
from thoughtline.providers.endpoints import EndpointRegistry, timeout_entries
from thoughtline.providers.redaction import shown_url
from thoughtline.store.opening import shown_dsn


def config_report(config: Config) -> dict[str, Any]:
    def entry(key: str, value: Any) -> dict[str, Any]:
        return {"key": key, "value": value, "source": config.sources.get(key, "default")}

    settings = [
        entry("orchestration.chain_of_thought", config.chain_of_thought),
        entry("orchestration.worker_backend", config.worker_backend),
        entry("orchestration.store", config.store),
        # The connection string may carry a password: shown masked, never whole.
        entry("store.dsn", None if config.store_dsn is None else shown_dsn(config.store_dsn)),
        *(
            entry(f"store.{name}", getattr(config.store_settings, name))
            for name in STORE_SETTING_KEYS
        ),
        entry("orchestration.max_concurrency", config.max_concurrency),
        entry("orchestration.max_tasks_per_run", config.max_tasks_per_run),
        entry("orchestration.max_request_bytes", config.max_request_bytes),
        entry("orchestration.max_steps", config.max_steps),
        entry("orchestration.max_cost", config.max_cost),
        entry("server.max_active_runs", config.max_active_runs),
        entry("server.max_connections", config.max_connections),
        entry("server.header_timeout_s", config.header_timeout_s),
        entry("server.keep_alive_timeout_s", config.keep_alive_timeout_s),
        *(
            entry(f"orchestration.chain_of_thought_by_role.{role}", mode)
            for role, mode in config.chain_of_thought_by_role.items()
        ),
        entry("defaults.provider", config.default_provider),
        entry("defaults.model", config.default_model),
        entry("defaults.effort", config.default_effort),
        entry("defaults.role", config.default_role),
        entry("trace.provider_raw", config.trace_provider_raw),
        *(entry(f"trace.retention.{layer}", value) for layer, value in config.retention.items()),
        entry("telemetry.exporter", config.telemetry_exporter),
        entry(
            "telemetry.endpoint",
            None if config.telemetry_endpoint is None else shown_url(config.telemetry_endpoint),
        ),
        entry("telemetry.capture_content", config.telemetry_capture_content),
        *(entry(key, value) for key, value in timeout_entries(config.timeouts, config.providers)),
        entry("timeouts.tool", config.tool_timeout_s),
        *(entry(f"roles.{role}.tools", list(tools)) for role, tools in config.role_tools.items()),
        *(entry(f"roles.{role}.max_steps", steps) for role, steps in config.role_max_steps.items()),
        *(entry(f"roles.{role}.max_cost", cost) for role, cost in config.role_max_cost.items()),
        *gateway_entries(config, entry),
    ]
    registry = EndpointRegistry(config.providers, config_source=str(config.path))
    endpoints = []
    for name in registry.names:
        endpoint = registry.resolve(name)
        endpoints.append({**endpoint_summary(endpoint), "api_key": _mask(endpoint.api_key)})
    return {
        "config_file": str(config.path) if config.path else None,
        "thoughtline_home": str(thoughtline_home()),
        "database": str(database_path())
        if config.store_dsn is None or config.store != "postgres"
        else shown_dsn(config.store_dsn),
        "settings": settings,
        "endpoints": endpoints,
    }


def gateway_entries(
    config: Config, entry: Callable[[str, Any], dict[str, Any]]
) -> list[dict[str, Any]]:
    """``[gateway]`` and each client's settings; a client's token hash is not shown (it
    only says the client has one)."""
    gateway = config.gateway
    found = [
        entry("gateway.enabled", gateway.enabled),
        entry("gateway.carriers_max", gateway.carriers_max),
        entry("gateway.carriers_ttl_s", gateway.carriers_ttl_s),
        *(entry(f"gateway.models.{alias}", target) for alias, target in gateway.models.items()),
    ]
    for name, client in gateway.clients.items():
        key = f"gateway.clients.{name}"
        found += [
            entry(f"{key}.chain_of_thought", client.chain_of_thought),
            entry(f"{key}.endpoints", None if client.endpoints is None else list(client.endpoints)),
            entry(f"{key}.models", None if client.models is None else list(client.models)),
            entry(f"{key}.max_cost", client.max_cost),
            entry(f"{key}.max_active", client.max_active),
        ]
    return found


def _mask(secret: str | None) -> str:
    """Whether a key is set, never any part of it."""
    return f"set ({len(secret)} characters)" if secret else "unset"


@click.command("config")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def config_command(as_json: bool) -> None:
    """The resolved configuration and where each value came from (credentials masked)."""
    report = config_report(load_config())
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    console = text_console()
    console.print(f"config file: {report['config_file'] or '(none: built-in defaults)'}")
    console.print(f"THOUGHTLINE_HOME: {report['thoughtline_home']}  database: {report['database']}")
    settings = [
        (setting["key"], str(setting["value"]), setting["source"]) for setting in report["settings"]
    ]
    console.print(
        fitted_table(
            console,
            (Column("key", key=True), Column("value"), Column("source")),
            settings,
            title="Settings",
        )
    )
    endpoints = [
        (
            endpoint["name"],
            endpoint["wire_api"],
            endpoint["base_url"],
            endpoint["base_url_source"],
            endpoint["api_key"]
            if not endpoint["api_key_env"]
            else f"{endpoint['api_key_env']}: {endpoint['api_key']}",
        )
        for endpoint in report["endpoints"]
    ]
    columns = (
        Column("name", key=True),
        Column("wire API"),
        Column("base URL"),
        Column("source", optional=True),
        Column("key"),
    )
    console.print(fitted_table(console, columns, endpoints, title="Endpoints"))
