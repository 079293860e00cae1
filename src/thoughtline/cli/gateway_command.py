"""``thoughtline gateway``: the gateway's clients in the user's config.

``add-client NAME`` writes ``[gateway.clients.NAME]`` (the token's SHA-256 and the
client's mode) and prints the token once, alone on stdout: it is stored nowhere else.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from thoughtline.config import find_config_path, load_config, thoughtline_home
from thoughtline.config.gateway import new_token, token_digest
from thoughtline.config.gateway_file import add_client, check_client_name, remove_client
from thoughtline.records import CHAIN_OF_THOUGHT_MODES


def _config_path() -> Path:
    """The config in effect, else ``$THOUGHTLINE_HOME/config.toml`` (made on first use)."""
    found = find_config_path()
    return found if found is not None else thoughtline_home() / "config.toml"


@click.group("gateway")
def gateway_group() -> None:
    """The gateway's clients ([gateway.clients.NAME] in the config)."""


@gateway_group.command("add-client")
@click.argument("name")
@click.option(
    "--chain-of-thought",
    "mode",
    type=click.Choice(CHAIN_OF_THOUGHT_MODES),
    default="hidden",
    show_default=True,
    help="What the client's calls do with the model's reasoning (the request cannot ask for more).",
)
def add_client_command(name: str, mode: str) -> None:
    """Add a client and print its token once, alone on stdout."""
    check_client_name(name)
    path = _config_path()
    token = new_token()
    config = add_client(path, name, token_digest(token), mode)  # type: ignore[arg-type]
    click.echo(token)
    note = f"thoughtline: added [gateway.clients.{name}] to {path}; the token above is shown once."
    if not config.gateway.enabled:
        note += " The gateway is off: set [gateway] enabled = true and restart serve."
    click.echo(note, err=True)


@gateway_group.command("remove-client")
@click.argument("name")
def remove_client_command(name: str) -> None:
    """Remove a client's table from the config (its token stops working on restart)."""
    path = _config_path()
    remove_client(path, name)
    click.echo(f"thoughtline: removed [gateway.clients.{name}] from {path}.", err=True)


@gateway_group.command("list-clients")
def list_clients_command() -> None:
    """The configured clients: name, mode, what each may call and spend."""
    config = load_config()
    clients = config.gateway.clients
    if not clients:
        click.echo("No gateway clients (thoughtline gateway add-client NAME).", err=True)
        return
    for client in clients.values():
        models = "any model" if client.models is None else ", ".join(client.models)
        endpoints = "any endpoint" if client.endpoints is None else ", ".join(client.endpoints)
        budget = "no daily budget" if client.max_cost is None else f"${client.max_cost:g}/day"
        sys.stdout.write(
            f"{client.name}\t{client.chain_of_thought}\t{endpoints}\t{models}\t{budget}\n"
        )
