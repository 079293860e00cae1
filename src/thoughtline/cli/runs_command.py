"""``thoughtline status``, ``runs`` and ``trace``: reading what the store holds.

The human views show stored text (requests, answers, reasoning, trace metadata) made
visible, never obeyed by the terminal; ``--json`` keeps it exact (see
:mod:`thoughtline.cli._terminal_text`).
"""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.highlighter import JSONHighlighter
from rich.table import Table
from rich.text import Text

from thoughtline.cli._context import open_store
from thoughtline.cli._preview import PREVIEW_CHARS, request_line, request_preview
from thoughtline.cli._render import finish_reasons, print_outputs, summary_table, text_console
from thoughtline.cli._terminal_text import echo_error, json_for, json_text, visible, visible_text
from thoughtline.cli.run_ids import resolve_run
from thoughtline.config import load_config
from thoughtline.errors import ThoughtlineError
from thoughtline.records import TRACE_LAYERS, Run, TraceEvent, TraceLayer
from thoughtline.runtime.trace import empty_layer_reason
from thoughtline.store.base import Store

RUN_ID_HELP = "RUN_ID is a run id, a unique prefix of one (run_ may be left out) or 'latest'."


@click.command("status", epilog=RUN_ID_HELP)
@click.argument("run_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the run snapshot as JSON.")
def status_command(run_id: str | None, as_json: bool) -> None:
    """Snapshot of a run (the latest when RUN_ID is omitted)."""
    store = open_store(load_config())
    try:
        run = resolve_run(store, run_id)
    finally:
        store.close()
    if as_json:
        click.echo(json_for(sys.stdout, run.snapshot()))
        return
    print_status(text_console(), run)


def print_status(console: Console, run: Run) -> None:
    """The human view of ``status``: the run, its request, each task's output, a table."""
    snapshot = run.snapshot()
    console.print(
        Text.assemble(
            (visible(run.id), "bold"),
            visible(
                f" {run.status} · chain_of_thought={run.chain_of_thought}"
                f" ({run.chain_of_thought_source}) · {run.worker_backend}"
            ),
        )
    )
    console.print(request_preview(run.request, run.id))
    print_outputs(console, snapshot, finishes=finish_reasons(snapshot))
    console.print(summary_table(snapshot))


@click.command("runs")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10_000))
@click.option(
    "--conversation",
    metavar="ID",
    help="Only the runs of one conversation, oldest first, all of them: its id, or a RUN_ID meaning that run's conversation.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of run snapshots.")
def runs_command(limit: int, conversation: str | None, as_json: bool) -> None:
    """Recent runs, newest first (full ids: pass one, or a prefix, to status and trace).

    A run marked ↳ continues an earlier one: --conversation lists its conversation."""
    store = open_store(load_config())
    try:
        runs = (
            store.list_runs(limit)
            if conversation is None
            else conversation_runs(store, conversation)
        )
    finally:
        store.close()
    if as_json:
        click.echo(json_for(sys.stdout, [run.snapshot() for run in runs]))
        return
    text_console().print(runs_table(runs))


def conversation_runs(store: Store, text: str) -> list[Run]:
    """The runs of the conversation ``text`` names, oldest first: a conversation id (a
    first run's, or an ACP session's), else any RUN_ID form naming one of its runs."""
    runs = store.conversation_runs(text)
    if runs:
        return runs
    try:
        run = resolve_run(store, text)
    except ThoughtlineError as exc:
        if exc.code != "RUN_NOT_FOUND" or text == "latest":
            raise
        raise ThoughtlineError(
            "RUN_NOT_FOUND",
            f"No conversation or run {text!r} in this store. List runs with: thoughtline runs",
        ) from None
    # A run stored before conversations were recorded is a conversation of its own.
    return store.conversation_runs(run.conversation_id or run.id) or [run]


CONTINUES_MARK = "↳ "


def runs_table(runs: list[Run]) -> Table:
    """The human view of ``runs``: one row per run, whole ids, requests on one line; a
    run that continues another has its request marked ``↳``."""
    caption = None
    if any(run.continues for run in runs):
        caption = (
            f"{CONTINUES_MARK}continues an earlier run: thoughtline runs --conversation RUN_ID"
        )
    table = Table(title_justify="left", caption=caption, caption_justify="left")
    # Ids are never cut: people copy them into status and trace.
    id_width = max((len(run.id) for run in runs), default=3)
    table.add_column("run", no_wrap=True, min_width=id_width)
    for column in ("status", "created", "chain_of_thought", "tasks", "request"):
        table.add_column(column)
    for run in runs:
        statuses = ", ".join(f"{task.name}:{task.status}" for task in run.tasks)
        request = request_line(run.request)  # one line, even for a request from stdin
        if run.continues:
            request = CONTINUES_MARK + request
        table.add_row(
            *(
                visible_text(cell)
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
    return table


@click.command("trace", epilog=RUN_ID_HELP)
@click.argument("run_id")
@click.option("--layer", type=click.Choice(TRACE_LAYERS), help="Only this layer.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of trace events.")
def trace_command(run_id: str, layer: TraceLayer | None, as_json: bool) -> None:
    """Operator view of a run's trace (answer, reasoning, provider_raw layers)."""
    config = load_config()
    store = open_store(config)
    try:
        run = resolve_run(store, run_id)
        events = store.trace(run.id, layer)
    finally:
        store.close()
    if not events and layer is not None:
        # An empty layer is an answer too: say why, on stderr (stdout stays parseable).
        echo_error(f"thoughtline: {empty_layer_reason(run, layer)}")
    if as_json:
        click.echo(json_for(sys.stdout, [event.to_dict() for event in events]))
        return
    print_trace(text_console(), events)


def print_trace(console: Console, events: list[TraceEvent]) -> None:
    """The human view of ``trace``: a line per event, then its metadata as JSON."""
    highlight_json = JSONHighlighter()
    for event in events:
        console.print(
            Text.assemble(
                (event.at, "dim"),
                " ",
                (f"{event.layer:<12}", "bold"),
                visible(f" {event.type:<20} {event.task_id or ''}"),
            )
        )
        if event.metadata:
            # Not console.print_json: it dumps again and would let C1 and bidi controls
            # through raw; json_text escapes them and is the same JSON value.
            console.print(
                highlight_json(Text(json_text(_previewed(event.metadata)))), soft_wrap=True
            )


# Trace fields that carry the request whole (run.started; an inline task's prompt).
_REQUEST_FIELDS = ("request", "prompt")


def _previewed(metadata: dict[str, object]) -> dict[str, object]:
    """``metadata`` with the fields that carry the request cut to a preview when long:
    ``--json`` has the whole text."""
    cut = {}
    for name in _REQUEST_FIELDS:
        value = metadata.get(name)
        if isinstance(value, str) and len(value) > PREVIEW_CHARS:
            cut[name] = f"{value[:PREVIEW_CHARS]}… (cut: {len(value):,} characters; --json has all)"
    return {**metadata, **cut} if cut else metadata
