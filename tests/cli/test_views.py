"""The terminal and piped views fed events directly: bounded state, order, closed pipes."""

from __future__ import annotations

import io
from typing import Any

from thoughtline.cli.live_view import TAIL_CHARS, TextStream, fit_rows
from thoughtline.cli.piped_view import PipedRunView
from thoughtline.records.run_events import (
    RunCompleted,
    RunEvent,
    RunStarted,
    TaskAnswerDelta,
    TaskCompleted,
    TaskReasoningDelta,
    TaskStarted,
)

AT = "2026-01-01T00:00:00.000Z"


def test_a_stream_keeps_every_chunk_once_and_a_bounded_tail() -> None:
    stream = TextStream()
    for index in range(50_000):
        stream.add(f"{index:05d} ")
    assert stream.length == 300_000
    assert len(stream.chunks) == 50_000
    # The tail holds what the screen can show, not the whole text.
    assert TAIL_CHARS <= stream.tail_length < TAIL_CHARS + 6
    assert stream.last() == "".join(stream.chunks)[-TAIL_CHARS:]


def test_fit_rows_keeps_the_end_within_the_rows() -> None:
    text = "\n".join(f"line {index}" for index in range(100))
    assert fit_rows(text, 3, 80) == "line 97\nline 98\nline 99"
    # One long line is cut to what fits in the rows, from its end.
    assert fit_rows("x" * 1000 + "END", 2, 10) == ("x" * 1000 + "END")[-20:]


def _task(task_id: str, name: str, status: str = "running") -> Any:
    return {
        "id": task_id,
        "name": name,
        "status": status,
        "executor": f"provider:anthropic:{name}",
        "chain_of_thought": "surface",
        "error": None,
        "reasoning_status": "shown" if status == "done" else None,
        "reasoning_notice": "Shown." if status == "done" else None,
    }


def _events() -> list[RunEvent]:
    one, two = _task("t1", "engineer"), _task("t2", "reviewer")
    snapshot: Any = {
        "tasks": [one, two],
        "chain_of_thought": "surface",
        "chain_of_thought_source": "explicit",
        "status": "running",
    }

    def answer(task_id: str, text: str) -> TaskAnswerDelta:
        return TaskAnswerDelta(run_id="r", seq=0, at=AT, task_id=task_id, text=text)

    def thought(task_id: str, text: str) -> TaskReasoningDelta:
        return TaskReasoningDelta(run_id="r", seq=0, at=AT, task_id=task_id, text=text)

    return [
        RunStarted(run_id="r", seq=0, at=AT, snapshot=snapshot),
        TaskStarted(run_id="r", seq=0, at=AT, task_id="t1", task=one),
        TaskStarted(run_id="r", seq=0, at=AT, task_id="t2", task=two),
        thought("t2", "second thinks"),
        answer("t2", "second "),
        thought("t1", "first thinks"),
        answer("t1", "first "),
        answer("t2", "answer"),
        TaskCompleted(run_id="r", seq=0, at=AT, task_id="t2", task=_task("t2", "reviewer", "done")),
        answer("t1", "answer"),
        TaskCompleted(run_id="r", seq=0, at=AT, task_id="t1", task=_task("t1", "engineer", "done")),
        RunCompleted(run_id="r", seq=0, at=AT, snapshot={**snapshot, "status": "completed"}),
    ]


def test_piped_answers_of_concurrent_tasks_come_out_whole_and_in_plan_order() -> None:
    out, err = io.StringIO(), io.StringIO()
    view = PipedRunView(out, err)
    for event in _events():
        view.handle(event)
    assert out.getvalue() == ("==> engineer <==\nfirst answer\n\n==> reviewer <==\nsecond answer\n")
    assert err.getvalue().splitlines() == [
        "run r started: 2 task(s), chain_of_thought=surface (explicit)",
        "task engineer started (provider:anthropic:engineer, chain_of_thought=surface)",
        "task reviewer started (provider:anthropic:reviewer, chain_of_thought=surface)",
        "reasoning (engineer):",
        "first thinks",
        "task engineer done — reasoning shown: Shown.",
        "reasoning (reviewer):",
        "second thinks",
        "task reviewer done — reasoning shown: Shown.",
        "run r completed",
    ]


def test_shown_reasoning_ends_its_line_before_the_answer_begins() -> None:
    # stdout and stderr on one terminal (`thoughtline run ... | head -1` shows stderr):
    # the reasoning's last line must not run into the answer's first.
    screen = io.StringIO()
    view = PipedRunView(screen, screen)
    one: Any = _task("t1", "engineer")
    snapshot: Any = {
        "tasks": [one],
        "chain_of_thought": "surface",
        "chain_of_thought_source": "explicit",
        "status": "running",
    }
    for event in (
        RunStarted(run_id="r", seq=0, at=AT, snapshot=snapshot),
        TaskStarted(run_id="r", seq=0, at=AT, task_id="t1", task=one),
        TaskReasoningDelta(run_id="r", seq=0, at=AT, task_id="t1", text="thinks about windows."),
        TaskAnswerDelta(run_id="r", seq=0, at=AT, task_id="t1", text="# Rate limiter\nbody"),
        TaskCompleted(run_id="r", seq=0, at=AT, task_id="t1", task=_task("t1", "engineer", "done")),
    ):
        view.handle(event)
    assert "thinks about windows.\n# Rate limiter\nbody\n" in screen.getvalue()


class ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError


def test_a_closed_stdout_stops_writing_and_asks_once_to_stop_the_run() -> None:
    stops: list[str] = []
    err = io.StringIO()
    view = PipedRunView(ClosedPipe(), err, on_closed=lambda: stops.append("stop"))
    for event in _events():
        view.handle(event)
    assert stops == ["stop"]
    assert view.out_closed
    assert err.getvalue().endswith("run r completed\n")


def test_the_closing_table_fits_80_columns_with_every_cell_whole() -> None:
    from rich.console import Console

    from thoughtline.cli._render import summary_table

    def task(name: str, status: str, reasoning: str, total: float, amount: float | None) -> Any:
        return {
            "name": name,
            "status": status,
            "reasoning_status": reasoning,
            "usage": {"input_tokens": 12_345, "output_tokens": 2_201, "reasoning_tokens": 640},
            "cost": {"amount": amount},
            "timings": {"first_reasoning_ms": 1200.0, "first_answer_ms": 2201.0, "total_ms": total},
        }

    unknown = "ollama is a local server with no configured price"
    snapshot: Any = {
        "id": "run_kq3x7h4b20261201232642000001",
        "short_id": "kq3x7h4b",
        "status": "completed_with_failures",
        "cost": {"amount": None, "unknown_reason": unknown},
        "tasks": [
            task("architect", "done", "not_requested", 12_201.0, 0.0123456),
            task("reviewer", "interrupted", "interrupted", 3.0, None),
        ],
    }
    for width, shown_first_times in ((80, False), (120, True)):
        screen = io.StringIO()
        console = Console(file=screen, width=width)
        console.print(summary_table(snapshot, console.width))
        lines = screen.getvalue().splitlines()
        assert "…" not in screen.getvalue()
        assert max(len(line) for line in lines) <= width
        rows = [line for line in lines if line.lstrip("│ ").startswith(("architect", "reviewer"))]
        assert len(rows) == 2  # each task on one line: nothing folded
        assert all("not_requested" in rows[0] and "12,201 ms" in rows[0] for _ in rows)
        assert "$0.012" in rows[0] and "unknown" in rows[1]
        assert f"cost unknown: {unknown}" in " ".join(line.strip() for line in lines)
        assert ("1,200 ms" in rows[0]) is shown_first_times
