"""Text bound for a terminal: random control sequences fed through every human view reach
the output only in their visible form; piped answers and ``--json`` keep them exactly."""

from __future__ import annotations

import io
import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from tests.store.builders import make_event, make_run
from thoughtline.cli._render import print_outputs, summary_table, text_console
from thoughtline.cli._terminal_text import TerminalConsole, json_for, json_text, visible
from thoughtline.cli.live_view import LiveRunView
from thoughtline.cli.piped_view import PipedRunView
from thoughtline.cli.runs_command import print_status, print_trace, runs_table
from thoughtline.records import Run, TaskError
from thoughtline.records.run_events import (
    RunEvent,
    RunFailed,
    RunStarted,
    TaskAnswerDelta,
    TaskCompleted,
    TaskReasoningDelta,
    TaskStarted,
)

AT = "2026-01-01T00:00:00.000Z"
BIDI_CONTROLS = frozenset(chr(code) for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A)))
# What a hostile answer sends: clipboard write, window title, a hyperlink, clear screen,
# colour, an 8-bit CSI, a carriage return that would overwrite the line, a bidi override.
SEQUENCES = (
    "\x1b]52;c;SGVsbG8=\x07",
    "\x1b]0;pwned\x07",
    "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "\x1b[2J",
    "\x1b[31m",
    "\x9b2J",
    "\rover",
    "\u202e",
    "\r\n",
)
hostile_text = st.lists(
    st.one_of(
        st.sampled_from(SEQUENCES),
        st.characters(max_codepoint=0xA0),  # every C0 and C1 control, DEL, and ASCII
        st.sampled_from(sorted(BIDI_CONTROLS)),
        st.text(max_size=5),
    ),
    max_size=30,
).map("".join)


def acted_on(output: str) -> set[str]:
    """The characters in ``output`` a terminal would act on (written independently of
    the code under test: Unicode's Cc category and the bidi controls, less TAB and LF)."""
    return {
        char
        for char in output
        if (unicodedata.category(char) == "Cc" and char not in "\n\t") or char in BIDI_CONTROLS
    }


def screen() -> tuple[Console, io.StringIO]:
    """A plain rich console (not thoughtline's) on a terminal without colours: whatever
    control character it writes came from the text it was given."""
    file = io.StringIO()
    return Console(file=file, force_terminal=True, color_system=None, width=100), file


class TerminalStream(io.StringIO):
    def isatty(self) -> bool:
        return True


def hostile_run(text: str) -> Run:
    run = make_run(request=f"request {text}", status="failed")
    task = run.tasks[0]
    task.name = f"name {text}"
    task.model = f"model {text}"
    task.executor = f"provider:anthropic:{text}"
    task.status = "failed"
    task.output = f"answer {text}"
    task.reasoning = f"reasoning {text}"
    task.reasoning_status = "shown"
    task.reasoning_notice = f"notice {text}"
    task.error = TaskError(code="PROVIDER_ERROR", message=f"error {text}", retryable=False)
    return run


def run_events(run: Run, text: str) -> list[RunEvent]:
    snapshot = run.snapshot()
    task = snapshot["tasks"][0]
    task_id = task["id"]
    return [
        RunStarted(run_id=run.id, seq=1, at=AT, snapshot=snapshot),
        TaskStarted(run_id=run.id, seq=2, at=AT, task_id=task_id, task=task),
        TaskReasoningDelta(run_id=run.id, seq=3, at=AT, task_id=task_id, text=text),
        TaskAnswerDelta(run_id=run.id, seq=4, at=AT, task_id=task_id, text=text),
        TaskCompleted(run_id=run.id, seq=5, at=AT, task_id=task_id, task=task),
        RunFailed(run_id=run.id, seq=6, at=AT, snapshot=snapshot),
    ]


@given(hostile_text)
def test_visible_leaves_nothing_a_terminal_acts_on_and_keeps_the_rest(text: str) -> None:
    shown = visible(text)
    assert not acted_on(shown)
    assert visible(shown) == shown
    if not acted_on(text):
        assert shown == text
    # Lines stay lines: a shown control never starts one.
    assert shown.count("\n") == text.count("\n")


def test_the_visible_forms() -> None:
    assert visible("\x1b]52;c;SGVsbG8=\x07") == "␛]52;c;SGVsbG8=␇"
    assert visible("a\rb\r\nc\x7f\x00") == "a␍b\nc␡␀"
    assert visible("\x9b2J \u202eevil\u2069") == "\\x9b2J \\u202eevil\\u2069"
    assert visible("tab\tand\nline, ünïcödé, עברית, 🙂") == "tab\tand\nline, ünïcödé, עברית, 🙂"


@pytest.mark.slow  # 60 examples, each through every view
@settings(max_examples=60, deadline=None)
@given(hostile_text)
def test_every_human_view_shows_control_characters_instead_of_sending_them(text: str) -> None:
    run = hostile_run(text)
    snapshot = run.snapshot()
    renders: dict[str, str] = {}

    console, file = screen()
    print_outputs(console, snapshot)
    renders["final answer"] = file.getvalue()
    console, file = screen()
    print_outputs(console, snapshot)
    console.print(summary_table(snapshot))
    renders["closing print"] = file.getvalue()

    console, file = screen()
    live = LiveRunView(console)
    for event in run_events(run, text):
        live.handle(event)
    console.print(live.render())
    renders["live panel"] = file.getvalue()

    console, file = screen()
    print_status(console, run)
    renders["status"] = file.getvalue()
    console, file = screen()
    console.print(runs_table([run]))
    renders["runs"] = file.getvalue()
    console, file = screen()
    print_trace(
        console,
        [
            make_event(run.id, type_=f"type {text}", metadata={"text": text}),
            make_event(run.id, layer="reasoning", task_id=text, metadata={"t": [text]}),
        ],
    )
    renders["trace"] = file.getvalue()

    out, err = io.StringIO(), TerminalStream()
    piped = PipedRunView(out, err)
    for event in run_events(run, text):
        piped.handle(event)
    renders["piped view's stderr on a terminal"] = err.getvalue()

    for view, output in renders.items():
        assert not acted_on(output), view
    # Piped, the answer is for programs: the model's characters exactly.
    assert out.getvalue() == text + ("\n" if text and not text.endswith("\n") else "")


@given(hostile_text)
def test_json_on_a_terminal_is_the_same_value_with_nothing_a_terminal_acts_on(text: str) -> None:
    data = {"output": text, "parts": [text]}
    on_terminal = json_for(TerminalStream(), data)
    assert json.loads(on_terminal) == data
    assert not acted_on(on_terminal)
    assert on_terminal == json_text(data)
    # Piped: plain JSON, non-ASCII and all, as before.
    assert json_for(io.StringIO(), data) == json.dumps(data, indent=2, ensure_ascii=False)


def test_the_console_shows_what_a_view_forgot_while_rich_styles_still_work() -> None:
    file = io.StringIO()
    console = TerminalConsole(file=file, force_terminal=True, color_system="truecolor")
    console.print(Text("".join(SEQUENCES) + "end", style="red"))
    output = file.getvalue()
    # rich's own colour codes are there; none of the model's sequences is.
    assert output.startswith("\x1b[31m")
    for sequence in ("\x1b]52", "\x1b]0;", "\x1b]8;", "\x1b[2J", "\x1b[31m\x1b", "\x9b", "\u202e"):
        assert sequence not in output
    assert "␛]52;c;SGVsbG8=" in output and "␛[2J" in output and "\\x9b2J" in output


def test_the_commands_console_is_the_terminal_console() -> None:
    assert isinstance(text_console(), TerminalConsole)
