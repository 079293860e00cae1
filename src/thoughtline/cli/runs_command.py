"""``thoughtline status``, ``runs`` and ``trace``: reading what the store holds.

The human views show stored text (requests, answers, reasoning, trace metadata) made
visible, never obeyed by the terminal; ``--json`` keeps it exact (see
:mod:`thoughtline.cli._terminal_text`).
"""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime, timedelta
from typing import Literal, get_args

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from thoughtline.cli._context import open_store
from thoughtline.cli._preview import request_line, request_preview
from thoughtline.cli._render import (
    finish_reasons,
    persona_label,
    print_outputs,
    summary_table,
    text_console,
)
from thoughtline.cli._terminal_text import echo_error, json_for, visible, visible_text
from thoughtline.cli._trace_view import print_trace
from thoughtline.cli.completion import complete_run_ids
from thoughtline.cli.run_ids import NO_RUNS_YET, resolve_run
from thoughtline.config import load_config
from thoughtline.errors import ThoughtlineError
from thoughtline.records import TRACE_LAYERS, Run, RunStatus, TraceLayer, short_run_id
from thoughtline.records.raw_requests import with_request_bodies
from thoughtline.runtime import empty_layer_reason
from thoughtline.store.base import RunFilter, Store
from thoughtline.store.run_ids import LATEST, find_conversation

RUN_ID_HELP = (
    "RUN_ID is the short id runs and status show, a unique start of it, a whole run id "
    "(or its start; run_ may be left out) or 'latest'."
)


@click.command("status", epilog=RUN_ID_HELP)
@click.argument("run_id", required=False, shell_complete=complete_run_ids)
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
            (visible(short_run_id(run.id)), "bold"),
            visible(
                f" {run.status} · chain_of_thought={run.chain_of_thought}"
                f" ({run.chain_of_thought_source}) · {run.worker_backend}"
            ),
        )
    )
    console.print(request_preview(run.request, short_run_id(run.id)))
    for task in snapshot["tasks"]:
        console.print(
            Text.assemble(
                (visible(task["name"]), "bold"),
                (visible(f" persona: {persona_label(task['persona'])}"), "dim"),
            )
        )
    print_outputs(console, snapshot, finishes=finish_reasons(snapshot))
    console.print(summary_table(snapshot, console.width))


@click.command("runs")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10_000))
@click.option(
    "--conversation",
    metavar="ID",
    help="Only the runs of one conversation, oldest first, all of them: its id, or a RUN_ID meaning that run's conversation.",
)
@click.option(
    "--status",
    type=click.Choice(get_args(RunStatus)),
    help="Only runs with this status.",
)
@click.option(
    "--model", metavar="MODEL", help="Only runs with a task on this model (its whole id)."
)
@click.option("--role", metavar="ROLE", help="Only runs with a task of this role.")
@click.option(
    "--since",
    metavar="WHEN",
    help="Only runs created since WHEN: an age (30m, 12h, 7d) or an ISO date or time (UTC unless it says).",
)
@click.option("--search", metavar="TEXT", help="Only runs whose request contains TEXT (any case).")
@click.option(
    "--client",
    metavar="NAME",
    help="Only runs that answered this gateway client's calls ([gateway.clients.NAME]).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of run snapshots.")
def runs_command(
    limit: int,
    conversation: str | None,
    status: str | None,
    model: str | None,
    role: str | None,
    since: str | None,
    search: str | None,
    client: str | None,
    as_json: bool,
) -> None:
    """Recent runs, newest first, by short id (pass one, a prefix or a full id to
    status, trace and export; --json has both).

    The filters combine (every one given must hold). A run marked ↳ continues an
    earlier one: --conversation lists its conversation."""
    where = RunFilter(
        status=status,
        model=model,
        role=role,
        since=None if since is None else since_timestamp(since),
        search=search,
        client=client,
    )
    if conversation is not None and where != RunFilter():
        echo_error("thoughtline: --conversation lists a whole conversation; give it alone.")
        sys.exit(2)
    store = open_store(load_config())
    try:
        runs = (
            store.find_runs(where, limit)
            if conversation is None
            else conversation_runs(store, conversation)
        )
    finally:
        store.close()
    if as_json:
        click.echo(json_for(sys.stdout, [run.snapshot() for run in runs]))
        return
    console = text_console()
    console.print(runs_table(runs, width=console.width))


_AGE = re.compile(r"(\d+)([smhdw])")
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def since_timestamp(text: str, *, now: datetime | None = None) -> str:
    """``--since`` as a ``created_at`` timestamp (UTC, the store's format): an age such
    as ``30m``, ``12h``, ``7d``, ``2w``, or an ISO date or date and time (UTC when it
    names no offset). Anything else: one sentence and exit 2."""
    now = now or datetime.now(UTC)
    text = text.strip()
    age = _AGE.fullmatch(text)
    if age is not None:
        moment = now - timedelta(seconds=int(age.group(1)) * _AGE_UNITS[age.group(2)])
    else:
        try:
            moment = datetime.fromisoformat(text.replace("z", "Z"))
        except ValueError:
            echo_error(
                f"thoughtline: --since {visible(text)!r} is neither an age (30m, 12h, 7d, 2w) "
                "nor an ISO date or time (2026-12-01, 2026-12-01T09:30)."
            )
            sys.exit(2)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def conversation_runs(store: Store, text: str) -> list[Run]:
    """The runs of the conversation ``text`` names, oldest first (see
    :func:`~thoughtline.store.run_ids.find_conversation`)."""
    runs = find_conversation(store, text)
    if runs is not None:
        return runs
    if text == LATEST:
        raise ThoughtlineError("RUN_NOT_FOUND", NO_RUNS_YET)
    raise ThoughtlineError(
        "RUN_NOT_FOUND",
        f"No conversation or run {text!r} in this store. List runs with: thoughtline runs",
    )


CONTINUES_MARK = "↳ "


def runs_table(runs: list[Run], width: int = 80) -> Table:
    """The human view of ``runs``: one row per run, whole ids, requests on one line; a
    run that continues another has its request marked ``↳``.

    It fits ``width`` columns where it can: the request is cut first; then the tokens,
    cost, time and model columns are left out, in that order. The created,
    chain_of_thought and tasks columns are shown only where the request keeps
    :data:`_REQUEST_ROOM` columns beside them. Run ids and model ids are never cut:
    people copy them into status, trace and ``-m``."""
    caption = None
    if any(run.continues for run in runs):
        caption = (
            f"{CONTINUES_MARK}continues an earlier run: thoughtline runs --conversation RUN_ID"
        )
    rows = [_row(run) for run in runs]
    natural = {
        header: max([len(header), *(len(row[index]) for row in rows)])
        for index, header in enumerate(_HEADERS)
    }
    shown = ["run", "status", "model", "time", "cost", "tokens"]
    for extra in ("created", "chain_of_thought", "tasks"):
        if _room([*shown, extra], natural, width) < _REQUEST_ROOM:
            break
        shown.append(extra)
    widths = {header: natural[header] for header in shown}
    for header in ("tokens", "cost", "time", "model"):
        if _room(shown, widths, width) < _REQUEST_MIN:
            shown.remove(header)
    request_width = max(_REQUEST_MIN, _room(shown, widths, width))
    table = Table(box=None, pad_edge=False, caption=caption, caption_justify="left")
    for header in shown:
        justify: Literal["left", "right"] = (
            "right" if header in ("time", "cost", "tokens") else "left"
        )
        table.add_column(
            header,
            no_wrap=True,
            width=widths[header],
            justify=justify,
            min_width=widths[header],
        )
    table.add_column("request", no_wrap=True, width=request_width, overflow="ellipsis")
    indexes = [_HEADERS.index(header) for header in shown]
    for run, row in zip(runs, rows, strict=True):
        request = request_line(run.request, request_width)
        if run.continues:
            request = CONTINUES_MARK + request
        table.add_row(*(visible_text(cell) for cell in (*(row[i] for i in indexes), request)))
    return table


_HEADERS = (
    "run",
    "status",
    "model",
    "time",
    "cost",
    "tokens",
    "created",
    "chain_of_thought",
    "tasks",
)
_REQUEST_ROOM = 30
"""Columns the request keeps before the optional columns are shown."""
_REQUEST_MIN = 10


def _room(shown: list[str], widths: dict[str, int], width: int) -> int:
    """Columns left for the request beside ``shown`` (two spaces between columns)."""
    return width - sum(widths[header] for header in shown) - 2 * len(shown)


def _row(run: Run) -> tuple[str, ...]:
    """A run's cells before its request, in the order of the table's columns."""
    models = list(dict.fromkeys(task.model for task in run.tasks))
    model = models[0] + (f" +{len(models) - 1}" if len(models) > 1 else "") if models else "-"
    return (
        short_run_id(run.id),
        run.status,
        model,
        run_duration(run),
        run_cost(run),
        _tokens(run),
        run.created_at[:16].replace("T", " "),
        run.chain_of_thought,
        ", ".join(f"{task.name}:{task.status}" for task in run.tasks),
    )


def run_duration(run: Run) -> str:
    """How long the run's tasks ran, from the first task's start to the last one's end
    (not the process's or the tool servers' start-up before them), as ``4.2s``,
    ``3m05s`` or ``2h04m``; created to finished for a run whose tasks never started;
    ``-`` while unfinished."""
    if run.finished_at is None:
        return "-"
    starts = [task.timings.started_at for task in run.tasks if task.timings.started_at]
    ends = [task.timings.finished_at for task in run.tasks if task.timings.finished_at]
    began, ended = (
        (min(starts), max(ends)) if starts and ends else (run.created_at, run.finished_at)
    )
    try:
        seconds = (_parsed(ended) - _parsed(began)).total_seconds()
    except ValueError:
        return "?"
    if seconds < 0.1:
        return f"{seconds * 1000:.0f}ms"
    seconds = max(seconds, 0.0)
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def run_cost(run: Run) -> str:
    """What the run's calls cost: ``$0.0123``; ``≥$0.0123`` when some task's cost is
    unknown; ``?`` when none is known (``thoughtline status`` says why)."""
    cost = run.cost
    if cost.amount is None:
        priced = [task.cost.amount for task in run.tasks if task.cost.amount is not None]
        return f"≥${sum(priced):.4f}" if any(priced) else "?"
    return f"${cost.amount:.4f}"


def _parsed(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _tokens(run: Run) -> str:
    """Input and output tokens of every task together, ``-`` when none were counted."""
    counts = [
        count
        for task in run.tasks
        for count in (task.usage.input_tokens, task.usage.output_tokens)
        if count is not None
    ]
    if not counts:
        return "-"
    total = sum(counts)
    if total < 10_000:
        return str(total)
    if total < 1_000_000:
        return f"{total / 1000:.1f}k"
    return f"{total / 1_000_000:.1f}M"


@click.command("trace", epilog=RUN_ID_HELP)
@click.argument("run_id", required=False, shell_complete=complete_run_ids)
@click.option("--layer", type=click.Choice(TRACE_LAYERS), help="Only this layer.")
@click.option("--json", "as_json", is_flag=True, help="Print the raw events as a JSON array.")
def trace_command(run_id: str | None, layer: TraceLayer | None, as_json: bool) -> None:
    """Operator view of a run's trace (the latest when RUN_ID is omitted): one line per
    event (time, kind, task, summary), recorded reasoning as text (answer, reasoning,
    provider_raw layers). A layer asked for with --layer that holds nothing says why."""
    config = load_config()
    store = open_store(config)
    try:
        run = resolve_run(store, run_id)
        # Each request of the provider_raw layer whole (stored as what changed since the last).
        events = with_request_bodies(store.trace(run.id, layer))
    finally:
        store.close()
    if as_json:
        if not events and layer is not None:
            # An empty layer is an answer too: say why, on stderr (stdout stays parseable).
            echo_error(f"thoughtline: {empty_layer_reason(run, layer)}")
        click.echo(json_for(sys.stdout, [event.to_dict() for event in events]))
        return
    # The layer asked for says why it holds nothing (a surface run shows its reasoning
    # but records none; a hidden one never asks for it); the whole trace adds no line
    # nobody asked for.
    notes = [empty_layer_reason(run, layer)] if layer is not None and not events else []
    labels = {
        task.id: task.role if task.name == task.role else f"{task.role} · {task.name}"
        for task in run.tasks
    }
    print_trace(text_console(), events, labels=labels, notes=notes)
