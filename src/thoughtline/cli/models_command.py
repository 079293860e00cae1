"""``thoughtline models``: the model ids ``--model`` takes, from the capability data.

``thoughtline providers`` shows model families; this lists each id a user can type, by
endpoint, with the reasoning it can return, whether an effort applies, and what a
``hidden`` call asks the server for (``providers/hidden_requests.py``). The data is not
the provider's list: an id it does not know is still sent as given.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from thoughtline.cli._tables import wrapped
from thoughtline.cli._terminal_text import echo_error, line_width, visible
from thoughtline.config import load_config, thoughtline_home
from thoughtline.providers.capabilities import CapabilityTable, ModelCapability
from thoughtline.providers.discovery import load_capabilities
from thoughtline.providers.endpoints import Endpoint, EndpointRegistry
from thoughtline.providers.hidden_requests import HiddenAsk, hidden_ask


def models_report(provider: str | None = None) -> dict[str, Any]:
    """Each configured endpoint (or only ``provider``) with the ids the data knows.

    Raises ``LookupError`` (its text: one sentence naming the known endpoints) for an
    unknown ``provider``."""
    config = load_config()
    registry = EndpointRegistry(config.providers, config_source=str(config.path))
    names = list(registry.names)
    if provider is not None:
        if provider not in names:
            raise LookupError(f"No provider {provider!r}; known providers: {', '.join(names)}.")
        names = [provider]
    table = load_capabilities(thoughtline_home())
    return {
        "schema": "thoughtline.models/v1",
        "providers": [_provider(registry.resolve(name), table) for name in names],
    }


def _provider(endpoint: Endpoint, table: CapabilityTable) -> dict[str, Any]:
    key = endpoint.capability_key
    models = [
        _model(model_id, table.lookup(key, model_id), endpoint) for model_id in table.model_ids(key)
    ]
    fallback = next((family for family in table.for_endpoint(key) if family.fallback), None)
    return {
        "name": endpoint.name,
        "models": models,
        # What an id the data does not list is taken for (it is sent all the same).
        "other_models": None if fallback is None else _model(None, fallback, endpoint),
    }


def _model(model_id: str | None, family: ModelCapability, endpoint: Endpoint) -> dict[str, Any]:
    plain = hidden_ask(endpoint, family, tools=False, effort_sent=False)
    tools = hidden_ask(endpoint, family, tools=True, effort_sent=False)
    return {
        "id": model_id,
        "family": family.family,
        "returns": list(family.returns),
        "thinking_control": family.thinking_control,
        "effort": family.takes_effort,
        "efforts": list(family.efforts),
        "reasoning_by_default": family.reasoning_by_default,
        "always_reasons": family.always_reasons,
        "hidden": _ask(plain),
        "hidden_with_tools": _ask(tools),
    }


def _ask(ask: HiddenAsk) -> dict[str, Any]:
    return {"sends": dict(ask.fields), "note": ask.note}


@click.command("models")
@click.argument("provider", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def models_command(provider: str | None, as_json: bool) -> None:
    """Model ids --model takes, by provider, with the reasoning each returns.

    The list is thoughtline's capability data, not the provider's: an id that is not
    listed is still sent as given (it is taken for the provider's "other" family)."""
    try:
        report = models_report(provider)
    except LookupError as exc:
        echo_error(f"thoughtline: {exc}")
        sys.exit(2)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo("\n".join(models_lines(report)))


def models_lines(report: dict[str, Any]) -> list[str]:
    """The human view: a heading per provider, a line per id (within 80 columns for
    the built-in data), then what any other id is taken for."""
    lines: list[str] = []
    for provider in report["providers"]:
        if lines:
            lines.append("")
        lines.append(visible(provider["name"]))
        rows = [(model["id"], model) for model in provider["models"]]
        if provider["other_models"] is not None:
            rows.append(("(any other id)", provider["other_models"]))
        width = max((len(label) for label, _ in rows), default=0)
        kinds = max((len(_returns(model)) for _, model in rows), default=0)
        for label, model in rows:
            effort = "effort: yes" if model["effort"] else "effort: no"
            lines.append(f"  {visible(label):<{width}}  {_returns(model):<{kinds}}  {effort}")
        lines += _hidden_lines(rows)
    lines.append("")
    lines.append("Each line: the reasoning kinds the model can return when asked (none: it")
    lines.append("returns no reasoning text), and whether --effort changes what it is sent.")
    lines.append("'hidden' says what --chain-of-thought hidden asks the server for; reasoning")
    lines.append("that comes all the same is dropped. With --effort, no off switch is sent.")
    lines.append("An id not listed is still sent as given; --json has each family's details.")
    return lines


def _hidden_lines(rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """One ``hidden:`` line per distinct ask, naming the ids when they differ."""
    asks: dict[str, list[str]] = {}
    for label, model in rows:
        note = model["hidden"]["note"]
        with_tools = model["hidden_with_tools"]["note"]
        if with_tools != note:
            note = f"{note}; {with_tools}"
        asks.setdefault(note, []).append(label.strip("()"))
    lines: list[str] = []
    for note, labels in asks.items():
        text = f"hidden: {note}" + (f", for {', '.join(labels)}" if len(asks) > 1 else "")
        lines += wrapped(visible(text), line_width(sys.stdout), indent="  ", then="    ")
    return lines


def _returns(model: dict[str, Any]) -> str:
    return ", ".join(model["returns"]) or "none"
