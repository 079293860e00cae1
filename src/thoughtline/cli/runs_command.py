"""``thoughtline status``, ``runs`` and ``trace``: reading what the store holds."""

from __future__ import annotations

import json

import click
from rich.table import Table
from rich.text import Text

from thoughtline.cli._context import open_store
from thoughtline.cli.live_view import print_outputs, summary_table, text_console
from thoughtline.config import load_config
from thoughtline.errors import ThoughtlineError
from thoughtline.records import TRACE_LAYERS, TraceLayer


def _not_found(run_id: str | None) -> ThoughtlineError:
    if run_id is None:
        return ThoughtlineError(
            "RUN_NOT_FOUND", 'No runs yet. Start one with: thoughtline run "..."'
        )
    return ThoughtlineError(
        "RUN_NOT_FOUND", f"No run {run_id!r} in this store. List runs with: thoughtline runs"
    )


@click.command("status")
@click.argument("run_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the run snapshot as JSON.")
def status_command(run_id: str | None, as_json: bool) -> None:
    """Snapshot of a run (the latest when RUN_ID is omitted)."""
    store = open_store(load_config())
    try:
        run = store.get_run(run_id) if run_id else store.latest_run()
    finally:
        store.close()
    if run is None:
        raise _not_found(run_id)
    snapshot = run.snapshot()
    if as_json:
        click.echo(json.dumps(snapshot, indent=2, ensure_ascii=False))
        return
    console = text_console()
    console.print(
        Text.assemble(
            (run.id, "bold"),
            f" {run.status} · chain_of_thought={run.chain_of_thought}"
            f" ({run.chain_of_thought_source}) · {run.worker_backend}",
        )
    )
    console.print(Text(f"request: {run.request}"))
    print_outputs(console, snapshot)
    console.print(summary_table(snapshot))


@click.command("runs")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of run snapshots.")
def runs_command(limit: int, as_json: bool) -> None:
    """Recent runs, newest first."""
    store = open_store(load_config())
    try:
        runs = store.list_runs(limit)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps([run.snapshot() for run in runs], indent=2, ensure_ascii=False))
        return
    table = Table(title_justify="left")
    for column in ("run", "status", "created", "chain_of_thought", "tasks", "request"):
        table.add_column(column)
    for run in runs:
        statuses = ", ".join(f"{task.name}:{task.status}" for task in run.tasks)
        request = run.request if len(run.request) <= 60 else run.request[:57] + "..."
        table.add_row(
            *(
                Text(cell)
                for cell in (
                    run.id,
                    run.status,
                    run.created_at,
                    run.chain_of_thought,
                    statuses,
                    request,
                )
            )
        )
    text_console().print(table)


@click.command("trace")
@click.argument("run_id")
@click.option("--layer", type=click.Choice(TRACE_LAYERS), help="Only this layer.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of trace events.")
def trace_command(run_id: str, layer: TraceLayer | None, as_json: bool) -> None:
    """Operator view of a run's trace (answer, reasoning, provider_raw layers)."""
    store = open_store(load_config())
    try:
        if store.get_run(run_id) is None:
            raise _not_found(run_id)
        events = store.trace(run_id, layer)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps([event.to_dict() for event in events], indent=2, ensure_ascii=False))
        return
    console = text_console()
    for event in events:
        console.print(
            Text.assemble(
                (event.at, "dim"),
                " ",
                (f"{event.layer:<12}", "bold"),
                f" {event.type:<20} {event.task_id or ''}",
            )
        )
        if event.metadata:
            console.print_json(data=event.metadata)
