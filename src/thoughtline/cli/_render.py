"""What every command prints about a run: answers, notices, the closing table.

Everything a model or a user wrote (answers, reasoning, requests, names, models, error
messages) is printed as text, never parsed as rich markup: a model that writes
``[/INST]`` or ``[bold]`` must not break or restyle the output. Nor may it drive the
terminal: such text is made :func:`~thoughtline.cli._terminal_text.visible` (ESC shown as
``␛``, never sent). Styling comes only from :class:`~rich.text.Text` spans built here, on
consoles from :func:`text_console`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.cells import cell_len, set_cell_size
from rich.console import Console
from rich.table import Table
from rich.text import Text

from thoughtline.cli._terminal_text import TerminalConsole, visible, visible_text
from thoughtline.config.pricing import format_amount
from thoughtline.records import (
    CostSnapshot,
    PersonaSnapshot,
    RunSnapshot,
    TaskSnapshot,
    ToolCallSnapshot,
)

STATUS_STYLE = {
    "done": "green",
    "prepared": "blue",
    "failed": "red",
    "cancelled": "yellow",
    "interrupted": "yellow",
    "running": "yellow",
}


def text_console(**options: Any) -> TerminalConsole:
    """A console that prints strings as they are: no markup, emoji codes or highlighting,
    and no control characters obeyed (most of what thoughtline prints was written by a
    model or a user)."""
    return TerminalConsole(markup=False, emoji=False, highlight=False, **options)


def finish_reasons(snapshot: RunSnapshot) -> dict[str, str]:
    """Each ended task's normalized finish reason (``length``: cut off), by task id."""
    return {
        task["id"]: task["finish_reason"]
        for task in snapshot["tasks"]
        if task["finish_reason"] is not None
    }


def cut_off_line(finish: str | None) -> Text | None:
    """The line saying an answer was cut off by the output limit, when it was."""
    if finish != "length":
        return None
    return Text(
        "✂ The answer was cut off: the model reached its output token limit (finish = length).",
        style="bold yellow",
    )


def print_outputs(
    console: Console,
    snapshot: RunSnapshot,
    *,
    finishes: Mapping[str, str] | None = None,
) -> None:
    """Each task's full answer and, before it, step by step: the reasoning, only when
    present in the snapshot (the mode shows it), whole, set apart from the answer; and
    the tool calls, one short line each for their arguments and result (``--json`` and
    ``export`` hold them whole). Over several steps, each is labelled with its step."""
    width = min(console.width, _CALL_LINE_WIDTH)
    for task in snapshot["tasks"]:
        console.rule(
            Text.assemble((visible(task["name"]), "bold"), " ", (visible(task["executor"]), "dim"))
        )
        output = task["output"]
        printed = False
        for step in task_steps(task):
            prefix = "" if step.number is None else f"step {step.number} · "
            if step.reasoning:
                if printed:
                    console.print()
                console.print(
                    Text(
                        f"{prefix}reasoning ({len(step.reasoning):,} characters)",
                        style="dim bold",
                    )
                )
                console.print(visible_text(step.reasoning, "dim italic"), soft_wrap=True)
                printed = True
            if step.calls:
                if printed:
                    console.print()
                console.print(Text(f"{prefix}tool calls", style="dim bold"))
                for call in step.calls:
                    for call_line in tool_call_lines(call, width):
                        console.print(call_line, no_wrap=True, overflow="crop")
                printed = True
        if printed and output:
            console.print()
            console.print(Text("answer", style="bold"))
        if output:
            # soft_wrap: the terminal wraps; no padding, no trailing spaces, linear in size.
            console.print(visible_text(output), soft_wrap=True)
        line = cut_off_line((finishes or {}).get(task["id"]))
        if line is not None:
            console.print(line)
        error = task["error"]
        if error is not None:
            console.print(visible_text(f"✗ {error['code']}: {error['message']}", "red"))
        if task.get("reasoning_notice"):
            console.print(visible_text(f"ⓘ {task['reasoning_notice']}", "cyan"))
        if task.get("budget_notice"):
            console.print(visible_text(f"ⓘ {task['budget_notice']}", "cyan"))


@dataclass(frozen=True, slots=True)
class TaskStep:
    """What a task's views show of one model call: the reasoning displayed for it and
    the tool calls it asked for. ``number`` is ``None`` for a task of one step (nothing
    to tell apart, so nothing is labelled)."""

    number: int | None
    reasoning: str
    calls: tuple[ToolCallSnapshot, ...]


def task_steps(task: TaskSnapshot) -> list[TaskStep]:
    """The task's reasoning and tool calls by step, in order. A task of one step is one
    unlabelled step. When reasoning parts do not say their step (stored before they did,
    or still streaming), the reasoning comes first as one unlabelled text, then the
    calls by step."""
    reasoning = task.get("reasoning") or ""
    calls = tuple(task.get("tool_calls") or ())
    parts = task.get("reasoning_parts") or []
    if task.get("steps", 1) <= 1:
        return [TaskStep(number=None, reasoning=reasoning, calls=calls)]
    numbers = sorted({call["step"] for call in calls} | {p["step"] for p in parts if "step" in p})
    if reasoning and not (parts and all("step" in part for part in parts)):
        return [
            TaskStep(number=None, reasoning=reasoning, calls=()),
            *(
                TaskStep(
                    number=number,
                    reasoning="",
                    calls=tuple(call for call in calls if call["step"] == number),
                )
                for number in sorted({call["step"] for call in calls})
            ),
        ]
    return [
        TaskStep(
            number=number,
            reasoning="\n\n".join(
                part["text"] for part in parts if part.get("step") == number and part["text"]
            ),
            calls=tuple(call for call in calls if call["step"] == number),
        )
        for number in numbers
    ]


def summary_table(snapshot: RunSnapshot, width: int | None = None) -> Table:
    """Tokens (input/output/reasoning) and timings (first reasoning, first answer, total).
    Narrower than :data:`FULL_TABLE_WIDTH` columns (an 80-column terminal), the table
    leaves out its borders and the two first-arrival times, so no cell is cut or
    wrapped: names and statuses whole, each figure on one line; where long task names
    still leave no room, the input, output, reasoning token and total columns go, in
    that order. A task's name (its role) is never cut."""
    compact = width is not None and width < FULL_TABLE_WIDTH
    table = Table(
        title=visible_text(f"run {snapshot['short_id']} · {snapshot['status']}"),
        title_justify="left",
        box=box.SIMPLE_HEAD if compact else box.HEAVY_HEAD,
        pad_edge=not compact,
        show_edge=not compact,
        padding=(0, 0 if compact else 1),
    )
    columns = ["task", "status", "reasoning", "input", "output", "reasoning\ntokens", "cost"]
    if not compact:
        columns += ["first\nreasoning", "first\nanswer"]
    columns.append("total")
    rows: list[list[Text | str]] = []
    for task in snapshot["tasks"]:
        usage, timings = task["usage"], task["timings"]
        cells: list[Text | str] = [
            visible_text(task["name"]),
            visible_text(task["status"]),
            visible_text(task["reasoning_status"] or "-"),
            count(usage["input_tokens"]),
            count(usage["output_tokens"]),
            count(usage["reasoning_tokens"]),
            cost_cell(task["cost"]),
        ]
        if not compact:
            cells += [_ms(timings["first_reasoning_ms"]), _ms(timings["first_answer_ms"])]
        cells.append(_ms(timings["total_ms"]))
        rows.append(cells)
    shown = list(range(len(columns)))
    if compact and width is not None:
        needs = [
            max(
                cell_len(line)
                for text in (column, *(row[index] for row in rows))
                for line in str(text).splitlines() or [""]
            )
            for index, column in enumerate(columns)
        ]
        for column in ("input", "output", "reasoning\ntokens", "total"):
            if sum(needs[index] for index in shown) + len(shown) - 1 <= width:
                break
            shown.remove(columns.index(column))
    for index in shown:
        column = columns[index]
        text = column in ("task", "status", "reasoning")
        # Text folds rather than losing its end to an ellipsis ("not_reque…"); a task's
        # name is never folded.
        table.add_column(
            column,
            justify="left" if text else "right",
            no_wrap=not text or column == "task",
            overflow="fold",
        )
    for row in rows:
        table.add_row(*(row[index] for index in shown))
    table.caption = visible_text(cost_line(snapshot["cost"]))
    table.caption_justify = "left"
    return table


def cost_cell(cost: CostSnapshot) -> str:
    """A task's cost for the table: ``$0.0064``, ``unknown``, or what its known calls
    cost and which are not, on two lines (``$0.0031 +`` / ``step 2 unknown``) so the
    column stays narrow; the line under the table says why."""
    amount = cost["amount"]
    return (
        format_amount(amount) if amount is not None else unknown_cost(cost).replace(" + ", " +\n")
    )


def unknown_cost(cost: CostSnapshot) -> str:
    """An unknown cost as far as it is known: ``$0.0031 + step 2 unknown`` (the calls
    whose cost is known, then the rest), or ``unknown`` when none is known."""
    known = cost.get("known_amount")
    if known is None:
        return "unknown"
    return f"{format_amount(known)} + {cost.get('unknown_part') or 'the rest'} unknown"


def cost_line(cost: CostSnapshot) -> str:
    """The run's cost under the table: the amount and where the prices came from, or
    why it is unknown (after what is known of it)."""
    amount = cost["amount"]
    if amount is None:
        if cost.get("known_amount") is None:
            return f"cost unknown: {cost['unknown_reason']}"
        return f"cost {unknown_cost(cost)} ({cost['unknown_reason']})"
    parts = cost["parts"]
    reasoning = ""
    if parts is not None and parts["reasoning"]:
        reasoning = f", reasoning {format_amount(parts['reasoning'])} of it"
    if amount == 0 and not cost["source"]:  # no call priced: none made, or none billed
        return "cost $0 (nothing billed)"
    source = f" ({cost['source']})" if cost["source"] else ""
    return f"cost {format_amount(amount)}{reasoning}{source}"


FULL_TABLE_WIDTH = 120
"""The narrowest console the whole summary table fits in."""


def count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} ms"


_ARGUMENTS_SHOWN = 120
_CALL_LINE_WIDTH = 120
"""The widest a tool call's lines are printed at the end of a run, on a wider console."""


def tool_call_line(call: ToolCallSnapshot) -> str:
    """One line for a tool call, as it starts (``→``) or ends (``✓`` / ``✗``): the
    server and tool, the arguments (cut), then the status, code and duration."""
    tool = tool_name(call)
    if call["status"] == "running":
        arguments = " ".join(call["arguments"].split())
        if len(arguments) > _ARGUMENTS_SHOWN:
            arguments = arguments[: _ARGUMENTS_SHOWN - 1] + "…"
        return f"→ {tool} {arguments}".rstrip()
    mark = "✗" if call["is_error"] else "✓"
    line = f"{mark} {tool} {call['status']}"
    if call["error"]:
        line += f" ({call['error']})"
    if call["duration_ms"] is not None:
        line += f", {call['duration_ms']:.0f} ms"
    if call["result_truncated"]:
        line += ", result cut"
    return line


def tool_name(call: ToolCallSnapshot) -> str:
    """``server.tool``, or the bare name the model asked for when no server has it."""
    return f"{call['server']}.{call['name']}" if call["server"] else call["name"]


def tool_call_lines(call: ToolCallSnapshot, width: int) -> list[Text]:
    """A tool call after the fact, in at most ``width`` columns: a line with its tool,
    status, error code and time (as the live panel showed it as it ended), then its
    arguments and its result (what the model was sent), one line each, cut with ``…``."""
    head = f"→ {tool_name(call)} running" if call["status"] == "running" else tool_call_line(call)
    style = "red" if call["is_error"] else "magenta"
    lines = [Text(one_line(head, width), style=style)]
    rows = [("arguments", call["arguments"])]
    if call["result"] is not None:
        rows.append(("result", call["result"]))
    for label, text in rows:
        lead = f"  {label:<9} "
        lines.append(Text.assemble((lead, "dim"), one_line(text, width - len(lead)) or "(empty)"))
    return lines


def one_line(text: str, width: int) -> str:
    """``text`` on one line of at most ``width`` columns, made :func:`visible`: runs of
    whitespace (line ends included) are one space, and what does not fit ends in ``…``."""
    head = text[: max(width, 1) * 4]  # splitting a long text costs its whole length
    line = visible(" ".join(head.split()))
    if cell_len(line) <= width and len(head) == len(text):
        return line
    return set_cell_size(line, max(width - 1, 0)).rstrip() + "…"


_PERSONA_SOURCES = {
    "explicit": "asked for",
    "plan": "from the plan",
    "config": "[defaults] role",
    "unrecorded": "source not recorded",
}


def persona_label(persona: PersonaSnapshot) -> str:
    """A task's persona for people: the role and where it came from, or that it was
    given inline, or that there was none (the same words as the page's)."""
    if persona["source"] == "system":
        return "inline system prompt"
    if persona["source"] == "default":
        return "none, no system prompt"
    source = _PERSONA_SOURCES.get(persona["source"], persona["source"])
    return f"{persona['role']} ({source})"
