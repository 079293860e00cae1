"""``thoughtline usage``: tokens spent, summed in the store, by day, model, role, mode or
provider (``Store.usage``: one aggregate query over an index, fast however many runs).

A task whose provider reported no usage is counted apart ("unreported"), never as zero
tokens. Reasoning tokens are part of the output tokens (the column says so), not added
to them. Cost is the sum of the tasks' stored costs (each call priced once, as it ended:
thoughtline/config/pricing.py); tasks whose cost is unknown are counted apart ("unpriced"),
never as free.
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass, field
from typing import Any, get_args

import click
from rich.text import Text

from thoughtline.cli._context import open_store
from thoughtline.cli._render import text_console
from thoughtline.cli._tables import Cell, Column, fitted_table
from thoughtline.cli._terminal_text import json_for, visible
from thoughtline.cli.runs_command import since_timestamp
from thoughtline.config import load_config
from thoughtline.store.base import UsageGroup, UsageKey

__all__ = ["usage_command", "usage_report"]

TOKENS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
)


@dataclass
class _Row:
    key: str
    tasks: int = 0
    unreported: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKENS, 0))
    cost: float = 0.0
    unpriced: int = 0
    models: list[dict[str, Any]] = field(default_factory=list)

    def add(self, group: UsageGroup) -> None:
        self.tasks += group.tasks
        self.unreported += group.unreported
        self.cost += group.cost
        self.unpriced += group.unpriced
        counts = {name: getattr(group, name) for name in TOKENS}
        for name, value in counts.items():
            self.tokens[name] += value
        self.models.append(
            {
                "provider": group.provider,
                "model": group.model,
                "tasks": group.tasks,
                "unreported": group.unreported,
                "tokens": counts,
                "cost": _cost(group.cost, group.unpriced),
            }
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "tasks": self.tasks,
            "unreported": self.unreported,
            "tokens": self.tokens,
            "cost": _cost(self.cost, self.unpriced),
            "models": self.models,
        }


def _cost(amount: float, unpriced: int) -> dict[str, Any]:
    """The known sum (USD, rounded to a millionth of a dollar) and how many tasks'
    costs are unknown (not in it)."""
    return {"amount": round(amount, 6), "currency": "USD", "unpriced_tasks": unpriced}


@click.command("usage")
@click.option(
    "--since",
    metavar="WHEN",
    help="Only tasks started since WHEN: an age (30m, 12h, 7d) or an ISO date or time "
    "(UTC unless it says). Default: every task.",
)
@click.option(
    "--by",
    type=click.Choice(get_args(UsageKey)),
    default="day",
    show_default=True,
    help="What to sum by (day: the UTC day a task started; mode: its chain_of_thought; "
    "client: the gateway client of its run, - for none).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print one CSV row per group and model.")
def usage_command(since: str | None, by: UsageKey, as_json: bool, as_csv: bool) -> None:
    """Tokens spent (input, cached, output, reasoning), summed by day, model, role,
    mode or provider.

    \b
    Examples:
      thoughtline usage --since 7d
      thoughtline usage --by model --json
      thoughtline usage --by role --since 2026-12-01 --csv > usage.csv
    """
    if as_json and as_csv:
        raise click.UsageError("--json and --csv are two ways to print it: choose one.")
    moment = since_timestamp(since) if since is not None else None
    store = open_store(load_config())
    try:
        groups = store.usage(by, moment)
    finally:
        store.close()
    if as_csv:
        _write_csv(groups)
        return
    report = usage_report(groups, by=by, since=moment)
    if as_json:
        click.echo(json_for(sys.stdout, report))
        return
    _print_table(report)


def usage_report(groups: list[UsageGroup], *, by: str, since: str | None) -> dict[str, Any]:
    """The ``thoughtline.usage/v1`` JSON: each key's totals and its models', and the
    grand total."""
    rows: dict[str, _Row] = {}
    total = _Row("total")
    for group in groups:
        rows.setdefault(group.key, _Row(group.key)).add(group)
        total.add(group)
    whole = total.to_dict()
    del whole["models"], whole["key"]
    return {
        "schema": "thoughtline.usage/v1",
        "by": by,
        "since": since,
        "groups": [row.to_dict() for row in rows.values()],
        "total": whole,
    }


def _write_csv(groups: list[UsageGroup]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(
        ["key", "provider", "model", "tasks", "unreported", *TOKENS, "cost_usd", "unpriced"]
    )
    for group in groups:
        writer.writerow(
            [
                group.key,
                group.provider,
                group.model,
                group.tasks,
                group.unreported,
                *(getattr(group, name) for name in TOKENS),
                f"{group.cost:.6f}",
                group.unpriced,
            ]
        )


def _print_table(report: dict[str, Any]) -> None:
    """The report as a table that fits 80 columns: ``*`` marks tasks whose usage was not
    reported; a cost that leaves out tasks priced unknown says how many (``$0.0042 + 3
    unpriced``; both said below)."""
    console = text_console()
    if not report["groups"]:
        since = f" since {report['since']}" if report["since"] else ""
        console.print(f"No tasks started{since}: nothing spent yet.")
        return
    rows: list[tuple[Cell, ...]] = []
    groups = [(group, False) for group in report["groups"]]
    for group, total in [*groups, ({"key": "total", **report["total"]}, True)]:
        tokens = group["tokens"]
        rows.append(
            (
                Text("total", style="bold") if total else visible(group["key"]),
                f"{group['tasks']:,}{'*' if group['unreported'] else ''}",
                f"{tokens['input_tokens']:,}",
                f"{tokens['cached_input_tokens']:,}",
                f"{tokens['output_tokens']:,}",
                f"{tokens['reasoning_tokens']:,}",
                _cost_cell(group["cost"]),
            )
        )
    columns = (
        Column(report["by"], key=True),
        Column("tasks", justify="right", optional=True),
        Column("input", justify="right"),
        Column("cached", justify="right", optional=True),
        Column("output", justify="right"),
        Column("reasoning", justify="right"),
        Column("cost", justify="right"),
    )
    console.print(fitted_table(console, columns, rows, title=f"usage by {report['by']}"))
    total = report["total"]
    console.print("reasoning tokens are part of the output tokens.")
    if total["unreported"]:
        console.print(
            f"* {total['unreported']:,} task(s) reported no usage: counted apart, not as 0."
        )
    if total["cost"]["unpriced_tasks"]:
        console.print(
            f"unpriced: {total['cost']['unpriced_tasks']:,} task(s) cost unknown (no price for "
            "the model, usage not reported, or stored before thoughtline priced calls), so not "
            "in the amount. thoughtline prices MODEL says which prices are used."
        )


def _cost_cell(cost: dict[str, Any]) -> str:
    """``$0.0042``, ``$0.0042 + 3 unpriced``, or ``3 unpriced`` when no task was priced."""
    amount = f"${cost['amount']:,.4f}"
    unpriced = cost["unpriced_tasks"]
    if not unpriced:
        return amount
    if not cost["amount"]:
        return f"{unpriced:,} unpriced"
    return f"{amount} + {unpriced:,} unpriced"
