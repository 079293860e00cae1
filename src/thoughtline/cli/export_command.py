"""``thoughtline export RUN``: a run as a readable Markdown record, or its snapshot JSON.

The record is built from the run snapshot only, so it holds exactly what every other
surface may show: the request, each task's answer, the reasoning its mode displays
(none for ``hidden`` and ``telemetry_only``), the reasoning notice, tool calls, errors
token usage and cost. Text that could break the record's structure (a request or reasoning
with backtick fences of its own) goes in a fence longer than any run of backticks in it;
an answer stays Markdown, as the model wrote it.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Literal

import click

from thoughtline.cli._context import open_store
from thoughtline.cli._render import cost_line, task_steps, tool_name
from thoughtline.cli._terminal_text import is_terminal, json_for, visible
from thoughtline.cli.completion import complete_run_ids
from thoughtline.cli.run_ids import resolve_run
from thoughtline.cli.runs_command import RUN_ID_HELP
from thoughtline.config import load_config
from thoughtline.records import RunSnapshot, TaskSnapshot, ToolCallSnapshot, UsageSnapshot

__all__ = ["export_command", "markdown_record"]

_TOKEN_NAMES = {
    "input_tokens": "input",
    "cached_input_tokens": "cached input",
    "cache_write_tokens": "cache write",
    "output_tokens": "output",
    "reasoning_tokens": "reasoning (part of output)",
}


@click.command("export", epilog=RUN_ID_HELP)
@click.argument("run_id", required=False, shell_complete=complete_run_ids)
@click.option(
    "--format",
    "form",
    type=click.Choice(["md", "json"]),
    default="md",
    show_default=True,
    help="md: a readable Markdown record; json: the run snapshot.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write to this file (replaced whole) instead of standard output.",
)
def export_command(run_id: str | None, form: Literal["md", "json"], output: Path | None) -> None:
    """A run as a Markdown record or as JSON (the latest when RUN_ID is omitted).

    \b
    Examples:
      thoughtline export latest > run.md
      thoughtline export 3f9c2ab --format json -o run.json
    """
    store = open_store(load_config())
    try:
        run = resolve_run(store, run_id)
    finally:
        store.close()
    snapshot = run.snapshot()
    if output is None:
        # On a terminal, what it would act on is shown, not obeyed; a pipe or a file
        # gets the model's characters exactly.
        if form == "json":
            click.echo(json_for(sys.stdout, snapshot))
        else:
            record = markdown_record(snapshot)
            # color=True: click would strip what looks like a colour code from a pipe,
            # and the record is to hold a tool's or model's text exactly.
            click.echo(visible(record) if is_terminal(sys.stdout) else record, nl=False, color=True)
        return
    text = (
        markdown_record(snapshot)
        if form == "md"
        else json.dumps(snapshot, ensure_ascii=False, indent=2) + "\n"
    )
    _write_whole(output, text)
    click.echo(f"wrote {output} ({len(text.encode()):,} bytes)", err=True)


def _write_whole(path: Path, text: str) -> None:
    """Replace ``path`` at once: a reader never sees half a record, and an existing file
    is left as it was when writing fails."""
    directory = path.parent if str(path.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def markdown_record(snapshot: RunSnapshot) -> str:
    """The run as Markdown: what the snapshot holds, nothing the mode withholds."""
    lines = [
        f"# Run {snapshot['id']}",
        "",
        f"- status: {snapshot['status']}",
        f"- chain of thought: {snapshot['chain_of_thought']} "
        f"(from {snapshot['chain_of_thought_source']})",
        f"- created: {snapshot['created_at']}",
        f"- finished: {snapshot['finished_at'] or '—'}",
        f"- {_one_line(cost_line(snapshot['cost']))}",
    ]
    if snapshot["continues"]:
        lines.append(f"- continues: {snapshot['continues']}")
    lines += ["", "## Request", "", *_fenced(snapshot["request"])]
    for task in snapshot["tasks"]:
        lines += ["", *_task_section(task)]
    return "\n".join(lines) + "\n"


def _task_section(task: TaskSnapshot) -> list[str]:
    where = f"{task['provider']}:{task['model']}" if task["provider"] else task["executor"]
    lines = [
        f"## {_one_line(task['name'])} ({task['status']})",
        "",
        f"- role: {_one_line(task['role'])}; model: {_one_line(where) or '—'}; "
        f"effort: {task['effort']}; chain of thought: {task['chain_of_thought']}",
    ]
    steps = task_steps(task)
    if task["reasoning"]:
        lines += ["", "### Reasoning"]
        for step in steps:
            if not step.reasoning:
                continue
            if step.number is not None:
                lines += ["", f"#### Step {step.number}"]
            lines += ["", *_fenced(step.reasoning)]
    if task["reasoning_notice"]:
        lines += ["", f"> {_one_line(task['reasoning_notice'])}"]
    if task.get("budget_notice"):
        lines += ["", f"> {_one_line(task.get('budget_notice') or '')}"]
    if task.get("tool_calls"):
        lines += ["", "### Tool calls"]
        for step in steps:
            for call in step.calls:
                lines += ["", *_tool_call_section(call)]
    lines += ["", "### Answer", ""]
    lines.append(task["output"] if task["output"] else "_(no answer)_")
    if task["error"] is not None:
        lines += ["", f"**Error** `{task['error']['code']}`: {_one_line(task['error']['message'])}"]
    usage = _usage_line(task["usage"])
    if usage:
        lines += ["", f"Tokens: {usage}."]
    if task["status"] != "prepared":
        cost = _one_line(cost_line(task["cost"]))
        lines += ["", f"C{cost[1:]}."]
    return lines


def _tool_call_section(call: ToolCallSnapshot) -> list[str]:
    """A tool call: its step, tool, status, error code and time on one line, then its
    arguments and result whole, each in its own fence."""
    head = f"step {call['step']}: {_inline(tool_name(call))} → {call['status']}"
    if call["error"]:
        head += f" ({_inline(call['error'])})"
    if call["duration_ms"] is not None:
        head += f", {call['duration_ms']:.0f} ms"
    lines = [f"#### {head}", "", "Arguments:", "", *_fenced(call["arguments"])]
    if call["result"] is not None:
        # Cut: what is stored is the start of what the model was sent, or the model
        # itself got it cut (the snapshot's result_truncated).
        label = "Result (cut)" if call["result_truncated"] else "Result"
        lines += ["", f"{label}:", "", *_fenced(call["result"])]
    return lines


def _usage_line(usage: UsageSnapshot) -> str:
    parts = [
        f"{label} {value:,}"
        for key, label in _TOKEN_NAMES.items()
        if (value := usage[key]) is not None  # type: ignore[literal-required]
    ]
    return ", ".join(parts)


def _fenced(text: str) -> list[str]:
    """``text`` in a code fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, text, fence]


# Inline structure only: the text never starts a line (a fixed lead comes first), so the
# characters that matter only there (-, +, 1.) need no escape; # is escaped, as a
# heading drops a closing run of it.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&#])")


def _inline(text: str) -> str:
    """Text a tool or its server named, for a heading: one line, every character that
    gives Markdown structure inside a line escaped, so it reads as written and opens no
    link, HTML tag, code span or emphasis."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", _one_line(text))


def _one_line(text: str) -> str:
    """Text for a list item or heading: one line, no control characters."""
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
