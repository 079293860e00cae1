"""``thoughtline prices``: the prices a run's calls will be charged, and where each came
from (a ``[prices]`` entry of the config file, or the pinned ``genai-prices`` data).

Without an argument: every entry of ``[prices]`` and every model id of the capability
data, by endpoint. With ``PROVIDER/MODEL`` (or a model of the default provider): that one.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from thoughtline.cli._tables import wrapped
from thoughtline.cli._terminal_text import line_width, visible
from thoughtline.config import Config, load_config, thoughtline_home
from thoughtline.config.pricing import CURRENCY, Pricer, Prices, Rate, data_version
from thoughtline.providers.discovery import load_capabilities
from thoughtline.providers.endpoints import EndpointRegistry

_LABELS = {
    "input": "input",
    "output": "output",
    "cached_input": "cached input",
    "cache_write": "cache write",
    "reasoning": "reasoning",
}


def prices_report(model: str | None = None) -> dict[str, Any]:
    """The prices of ``model`` (``provider/model``, or a model of the default provider),
    or of every model thoughtline knows of; each with its source or why it has none."""
    config = load_config()
    registry = EndpointRegistry(config.providers, config_source=str(config.path))
    pricer = Pricer.from_config(config)
    if model is not None:
        pairs = [_split(model, registry.names, config)]
    else:
        table = load_capabilities(thoughtline_home())
        pairs = [
            (name, model_id)
            for name in registry.names
            for model_id in table.model_ids(registry.resolve(name).capability_key)
        ]
        for key in config.prices:
            provider, _, model_id = key.partition("/")
            if (provider, model_id) not in pairs:
                pairs.append((provider, model_id))
    return {
        "schema": "thoughtline.prices/v1",
        "currency": CURRENCY,
        "per_tokens": 1_000_000,
        "data": f"genai-prices {data_version()}",
        "models": [_entry(pricer, provider, model_id) for provider, model_id in pairs],
    }


def _split(model: str, endpoints: list[str], config: Config) -> tuple[str, str]:
    provider, slash, rest = model.partition("/")
    if slash and rest and provider in endpoints:
        return provider, rest
    return config.default_provider, model


def _entry(pricer: Pricer, provider: str, model: str) -> dict[str, Any]:
    found = pricer.prices(provider, model)
    entry: dict[str, Any] = {"provider": provider, "model": model}
    if not isinstance(found, Prices):
        return {**entry, "source": None, "rates": None, "unknown_reason": found.reason}
    rates = {
        "input": found.input,
        "output": found.output,
        "cached_input": found.cached_input or found.input,
        "cache_write": found.cache_write or found.input,
        "reasoning": found.reasoning or found.output,
    }
    return {
        **entry,
        "source": found.source,
        "matched": found.model_ref or None,
        "rates": {name: _rate(rate) for name, rate in rates.items()},
        "unknown_reason": None,
    }


def _rate(rate: Rate) -> dict[str, Any]:
    return {
        "usd_per_million": float(rate.base),
        "tiers": [
            {"above_input_tokens": start, "usd_per_million": float(price)}
            for start, price in rate.tiers
        ],
    }


@click.command("prices")
@click.argument("model", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the prices as JSON.")
def prices_command(model: str | None, as_json: bool) -> None:
    """Prices per million tokens a call is charged, and where each came from.

    MODEL is PROVIDER/MODEL (e.g. anthropic/claude-sonnet-4-6, ollama/qwen3:8b) or a
    model of the default provider. [prices."PROVIDER/MODEL"] in the config file wins
    over the price data; a model neither knows costs "unknown"."""
    report = prices_report(model)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo("\n".join(prices_lines(report, line_width(sys.stdout))))
    if model is not None and report["models"][0]["rates"] is None:
        sys.exit(1)


def prices_lines(report: dict[str, Any], width: int) -> list[str]:
    """The human view: per model, where its prices came from and each price, in lines
    of ``width`` columns, broken between words."""
    lines: list[str] = []
    for entry in report["models"]:
        name = visible(f"{entry['provider']}/{entry['model']}")
        if entry["rates"] is None:
            lines += wrapped(f"{name}  unknown: {visible(entry['unknown_reason'])}", width)
            continue
        lines += wrapped(f"{name}  ({visible(entry['source'])})", width)
        rates = entry["rates"]
        described = " · ".join(f"{_LABELS[key]} {_describe(rates[key])}" for key in _LABELS)
        lines += wrapped(described, width, indent="  ")
    lines.append("")
    lines += wrapped(
        f"US dollars per million tokens. Price data: {report['data']} (offline, pinned); "
        '[prices."PROVIDER/MODEL"] in the config file wins over it.',
        width,
        then="",
    )
    return lines


def _describe(rate: dict[str, Any]) -> str:
    text = f"${rate['usd_per_million']:g}"
    for tier in rate["tiers"]:
        text += f" (${tier['usd_per_million']:g} above {tier['above_input_tokens']:,})"
    return text
