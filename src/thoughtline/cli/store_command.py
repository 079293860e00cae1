"""``thoughtline store migrate --to postgresql://…``: copy the current store (the SQLite
file under THOUGHTLINE_HOME, or whatever the config names) into an empty PostgreSQL
store, and say how much moved."""

from __future__ import annotations

import json
from contextlib import closing

import click

from thoughtline.cli._context import open_store
from thoughtline.config import POSTGRES_URL_SCHEMES, load_config
from thoughtline.errors import ConfigError
from thoughtline.records import TRACE_LAYERS
from thoughtline.store.opening import open_postgres, shown_dsn, sqlite_path, store_dsn


@click.group("store")
def store_group() -> None:
    """Move runs between stores."""


@store_group.command("migrate")
@click.option(
    "--to",
    "target",
    required=True,
    metavar="URL",
    help="The PostgreSQL store to copy into (postgresql://user@host:5432/dbname); it must "
    "hold no run yet.",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was copied as JSON.")
def migrate_command(target: str, as_json: bool) -> None:
    """Copy every run, task, run event and trace event (all layers) into PostgreSQL."""
    if not target.startswith(POSTGRES_URL_SCHEMES):
        raise ConfigError("--to: must be a postgresql:// URL (postgresql://user@host:5432/dbname).")
    config = load_config()
    source_dsn = store_dsn(config)
    if source_dsn == target:
        raise ConfigError(f"--to: {shown_dsn(target)} is the store being copied.")
    source_name = str(sqlite_path()) if source_dsn is None else shown_dsn(source_dsn)
    # Opening the source recovers runs whose process died, so none is left half-written.
    with (
        closing(open_store(config)) as source,
        closing(open_postgres(target, named_by="--to")) as destination,
    ):
        counts = destination.copy_from(source)
    report = {
        "from": source_name,
        "to": shown_dsn(target),
        "runs": counts.runs,
        "tasks": counts.tasks,
        "tool_calls": counts.tool_calls,
        "run_events": counts.run_events,
        "trace_events": counts.trace_total,
        "trace_events_by_layer": {layer: counts.trace_events[layer] for layer in TRACE_LAYERS},
        "meta": counts.meta,
    }
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    layers = ", ".join(f"{layer} {counts.trace_events[layer]}" for layer in TRACE_LAYERS)
    click.echo(
        f"Copied {counts.runs} run(s), {counts.tasks} task(s), {counts.tool_calls} tool "
        f"call(s), {counts.run_events} run event(s) and {counts.trace_total} trace "
        f"event(s) ({layers}) from {source_name} "
        f"to {report['to']}."
    )
    click.echo(
        'To use it: set THOUGHTLINE_STORE_URL, or [orchestration] store = "postgres" with '
        "[store] dsn, to that URL. The old store was left as it was."
    )
