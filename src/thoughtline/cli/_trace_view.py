"""The human view of ``thoughtline trace``: one line per event (its time, kind, task
and a short summary), recorded reasoning as text once, under the line of its event.

The summaries are read from the events' metadata as stored; an event kind this view
does not know is summarized from its plain fields. Every character comes through
:func:`~thoughtline.cli._terminal_text.visible`, so stored text is shown, never obeyed by
the terminal; ``--json`` keeps the events exact.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Final

from rich.console import Console
from rich.text import Text

from thoughtline.cli._preview import request_line
from thoughtline.cli._terminal_text import visible
from thoughtline.records import TraceEvent

SUMMARY_CHARS: Final = 60
"""The most of a request, prompt, tool argument or result one summary quotes."""
REASONING_INDENT: Final = "    │ "


def print_trace(
    console: Console,
    events: list[TraceEvent],
    *,
    labels: Mapping[str, str] | None = None,
    notes: list[str] | None = None,
) -> None:
    """A line per event; a recorded reasoning text below its line; ``notes`` (why a
    layer is empty) last. ``labels`` names tasks by role instead of by id."""
    labels = labels or {}
    dates = sorted({event.at[:10] for event in events})
    if dates:
        console.print(
            Text(
                visible(
                    f"{len(events)} event{'s' if len(events) != 1 else ''} · "
                    f"{' to '.join([dates[0], dates[-1]] if len(dates) > 1 else dates)} (UTC)"
                ),
                style="dim",
            )
        )
    kind_width = max((len(event.type) for event in events), default=0)
    task_width = max((len(_task(event, labels)) for event in events), default=0)
    for event in events:
        line = Text(no_wrap=False)
        line.append(visible(_clock(event.at)), style="dim")
        line.append("  ")
        line.append(visible(event.type.ljust(kind_width)), style="bold")
        if task_width:
            line.append("  ")
            line.append(visible(_task(event, labels).ljust(task_width)), style="cyan")
        summary = event_summary(event)
        if summary:
            line.append("  ")
            line.append(visible(summary))
        console.print(line, soft_wrap=True)
        reasoning = event.metadata.get("reasoning")
        if event.type == "worker.reasoning" and isinstance(reasoning, str) and reasoning:
            block = "\n".join(REASONING_INDENT + row for row in visible(reasoning).split("\n"))
            console.print(Text(block, style="italic"), soft_wrap=True)
    for note in notes or []:
        console.print(Text(visible(note), style="dim"), soft_wrap=True)


def _clock(at: str) -> str:
    """``12:53:01.528`` from ``2026-12-02T12:53:01.528Z`` (the date is in the header)."""
    return at[11:23] if len(at) >= 23 and at[10] == "T" else at


def _task(event: TraceEvent, labels: Mapping[str, str]) -> str:
    if event.task_id is None:
        return ""
    return labels.get(event.task_id, event.task_id)


def event_summary(event: TraceEvent) -> str:
    """A short human summary of one event, from its metadata."""
    metadata = event.metadata
    summarize = _SUMMARIES.get(event.type)
    if summarize is None:
        if event.type.startswith("run."):
            summarize = _run_finished
        elif event.type.startswith("task.") and event.type != "task.started":
            summarize = _task_finished
        else:
            summarize = _plain
    try:
        return summarize(metadata)
    except (KeyError, TypeError, ValueError, AttributeError):
        # Metadata of another shape (an older or newer store): its plain fields.
        return _plain(metadata)


def _quoted(value: object, width: int = SUMMARY_CHARS) -> str:
    return f'"{request_line(str(value), width)}"'


def _chars(value: object) -> str:
    count = value if isinstance(value, int) else len(str(value or ""))
    return f"{count:,} char{'s' if count != 1 else ''}"


def _run_started(metadata: Mapping[str, object]) -> str:
    tasks = metadata.get("tasks")
    names = (
        [str(task.get("name")) for task in tasks if isinstance(task, dict)]
        if isinstance(tasks, list)
        else []
    )
    request = str(metadata.get("request", ""))
    parts = [_quoted(request)]
    if len(request) > SUMMARY_CHARS:
        parts.append(f"(cut: {len(request):,} characters; --json has all)")
    parts.append(
        f"chain_of_thought={metadata.get('chain_of_thought')} ({metadata.get('chain_of_thought_source')})"
    )
    parts.append(f"{metadata.get('worker_backend')} backend")
    parts.append(f"{len(names)} task{'s' if len(names) != 1 else ''}: {', '.join(names)}")
    return " · ".join(parts)


def _run_finished(metadata: Mapping[str, object]) -> str:
    if "reason" in metadata:  # run.interrupted
        tasks = metadata.get("interrupted_tasks")
        count = len(tasks) if isinstance(tasks, list) else 0
        detail = f": {metadata['detail']}" if metadata.get("detail") else ""
        return f"{metadata['reason']}{detail} · {count} task{'s' if count != 1 else ''} interrupted"
    return str(metadata.get("status", ""))


def _task_started(metadata: Mapping[str, object]) -> str:
    return (
        f"{metadata['executor']} · chain_of_thought={metadata['chain_of_thought']}"
        f" ({metadata['chain_of_thought_source']})"
    )


def _worker_requested(metadata: Mapping[str, object]) -> str:
    parts = [
        f"{metadata['model']} at {metadata['endpoint']} ({metadata['wire_api']})",
        "reasoning requested" if metadata.get("reasoning_requested") else "reasoning not requested",
        f"effort {metadata.get('effort')}",
    ]
    if metadata.get("max_output_tokens") is not None:
        parts.append(f"max {metadata['max_output_tokens']} output tokens")
    if metadata.get("temperature") is not None:
        parts.append(f"temperature {metadata['temperature']}")
    return " · ".join(parts)


def _worker_prepared(metadata: Mapping[str, object]) -> str:
    system = metadata.get("system")
    return (
        f"prepared for {metadata.get('model')}, not sent · prompt {_quoted(metadata.get('prompt', ''))}"
        f" ({_chars(metadata.get('prompt'))})"
        + (f" · system prompt {_chars(system)}" if system else " · no system prompt")
    )


def _worker_reasoning(metadata: Mapping[str, object]) -> str:
    parts = metadata.get("parts")
    kinds = (
        sorted({str(part.get("kind")) for part in parts if isinstance(part, dict)})
        if isinstance(parts, list)
        else []
    )
    count = len(parts) if isinstance(parts, list) else 0
    return (
        f"recorded reasoning, {_chars(metadata.get('reasoning'))} in {count} part"
        f"{'s' if count != 1 else ''}" + (f" ({', '.join(kinds)})" if kinds else "") + ":"
    )


def _provider_exchange(metadata: Mapping[str, object]) -> str:
    parts = [f"{metadata.get('method')} {metadata.get('url')} → {metadata.get('status')}"]
    if metadata.get("streamed"):
        parts.append("streamed")
    sent, received = metadata.get("request_body"), metadata.get("response_body")
    sizes = []
    if isinstance(sent, str):
        sizes.append(f"{len(sent):,} chars sent")
    if isinstance(received, str):
        cut = " (cut)" if metadata.get("response_body_truncated") else ""
        sizes.append(f"{len(received):,} received{cut}")
    if sizes:
        parts.append(", ".join(sizes))
    return " · ".join(parts)


def _task_finished(metadata: Mapping[str, object]) -> str:
    parts = [str(metadata.get("status"))]
    error = metadata.get("error")
    if isinstance(error, dict):
        parts.append(f"{error.get('code')}: {error.get('message')}")
    if "output_chars" in metadata:
        parts.append(f"answer {_chars(metadata['output_chars'])}")
    usage = metadata.get("usage")
    if isinstance(usage, dict) and usage.get("output_tokens") is not None:
        given = usage.get("input_tokens")
        tokens = f"tokens {'?' if given is None else given} in / {usage['output_tokens']} out"
        if usage.get("reasoning_tokens"):
            tokens += f" ({usage['reasoning_tokens']} reasoning)"
        parts.append(tokens)
    timings = metadata.get("timings")
    if isinstance(timings, dict) and isinstance(timings.get("total_ms"), int | float):
        parts.append(f"{timings['total_ms']:,.0f} ms")
    finish = metadata.get("finish")
    if isinstance(finish, dict) and finish.get("reason"):
        parts.append(f"finish {finish['reason']}")
    if metadata.get("reasoning_status"):
        parts.append(f"reasoning {metadata['reasoning_status']}")
    warnings = metadata.get("warnings")
    if isinstance(warnings, list) and warnings:
        codes = ", ".join(str(w.get("code")) for w in warnings if isinstance(w, dict))
        parts.append(f"warnings: {codes}")
    return " · ".join(parts)


def _tool(metadata: Mapping[str, object]) -> str:
    server = metadata.get("server")
    return f"{server}.{metadata.get('tool')}" if server else str(metadata.get("tool"))


def _tool_called(metadata: Mapping[str, object]) -> str:
    return (
        f"step {metadata.get('step')} · {_tool(metadata)} {_quoted(metadata.get('arguments', ''))}"
    )


def _tool_approval(metadata: Mapping[str, object]) -> str:
    return f"{_tool(metadata)} {'approved' if metadata.get('approved') else 'denied'}"


def _tool_completed(metadata: Mapping[str, object]) -> str:
    parts = [f"{_tool(metadata)} {metadata.get('status')}"]
    if metadata.get("error"):
        parts.append(str(metadata["error"]))
    if isinstance(metadata.get("duration_ms"), int | float):
        parts.append(f"{metadata['duration_ms']:,.0f} ms")
    if metadata.get("result"):
        cut = " (cut)" if metadata.get("result_truncated") else ""
        parts.append(f"result {_quoted(metadata['result'])}{cut}")
    return " · ".join(parts)


def _tools_changed(metadata: Mapping[str, object]) -> str:
    """``step 1 redone: the live tool list added a, b; removed c``."""
    parts = [
        f"{what} {', '.join(str(name) for name in names)}"
        for what in ("added", "removed", "changed")
        if isinstance(names := metadata.get(what), list) and names
    ]
    return f"step {metadata.get('step')} redone: the live tool list {'; '.join(parts)}"


def _plain(metadata: Mapping[str, object]) -> str:
    """``key=value`` for the plain fields (strings cut to a line), nested ones left out."""
    fields = []
    for key, value in metadata.items():
        if isinstance(value, str):
            fields.append(f"{key}={_quoted(value)}")
        elif value is None or isinstance(value, bool | int | float):
            fields.append(f"{key}={json.dumps(value)}")  # as the page writes them
    return " ".join(fields)


_SUMMARIES: dict[str, Callable[[Mapping[str, object]], str]] = {
    "run.started": _run_started,
    "task.started": _task_started,
    "worker.requested": _worker_requested,
    "worker.prepared": _worker_prepared,
    "worker.reasoning": _worker_reasoning,
    "provider.exchange": _provider_exchange,
    "worker.completed": _task_finished,
    "worker.failed": _task_finished,
    "tool.called": _tool_called,
    "tool.approval": _tool_approval,
    "tool.completed": _tool_completed,
    "tools.changed": _tools_changed,
}
