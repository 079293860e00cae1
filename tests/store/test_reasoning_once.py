"""A task's displayed reasoning is stored once in its row: its parts, from which its
``reasoning`` text is read back (their texts joined, as the runtime makes it). A text
that is not that join, and a row stored whole by an earlier version, read back as they
were stored; a real surface run stores its text once and shows it whole."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

import thoughtline
from tests.store.backends import StoreBackend
from tests.store.builders import make_run
from thoughtline import Orchestrator
from thoughtline.records import ReasoningPartView, Run
from thoughtline.testing import SimReasoning, Simulator, Transcript

PARTS = [
    ReasoningPartView(kind="summary", text="First, the cache."),
    ReasoningPartView(kind="summary", text=""),
    ReasoningPartView(kind="summary", text="Then the eviction."),
]
JOINED = "First, the cache.\n\nThen the eviction."


def stored(backend: StoreBackend, run: Run) -> Run:
    with closing(backend.open()) as store:
        store.create_run(run)
        read = store.get_run(run.id)
    assert read is not None
    return read


def test_the_reasoning_text_is_not_stored_beside_the_parts_it_joins(
    backend: StoreBackend,
) -> None:
    run = make_run("run_once")
    run.tasks[0].reasoning_parts = list(PARTS)
    run.tasks[0].reasoning = JOINED
    read = stored(backend, run)
    assert backend.query("SELECT reasoning FROM tasks") == [(None,)]
    assert read.tasks[0].reasoning == JOINED
    assert read.snapshot() == run.snapshot()


@pytest.mark.parametrize(
    ("parts", "reasoning"),
    [
        (PARTS, "a text the parts do not join to"),
        (None, "reasoning without parts"),
        ([], None),
        ([ReasoningPartView(kind="summary", text="")], ""),
        (None, None),
    ],
)
def test_a_task_reads_back_as_it_was_written(
    backend: StoreBackend, parts: list[ReasoningPartView] | None, reasoning: str | None
) -> None:
    run = make_run("run_as_written")
    run.tasks[0].reasoning_parts = None if parts is None else list(parts)
    run.tasks[0].reasoning = reasoning
    read = stored(backend, run)
    assert read.tasks[0].reasoning == reasoning
    assert read.tasks[0].reasoning_parts == run.tasks[0].reasoning_parts


def test_a_row_of_an_earlier_version_with_both_reads_the_same(backend: StoreBackend) -> None:
    run = make_run("run_earlier")
    run.tasks[0].reasoning_parts = list(PARTS)
    run.tasks[0].reasoning = JOINED
    read = stored(backend, run)
    backend.sql("UPDATE tasks SET reasoning = ?", (JOINED,))  # as an earlier version wrote it
    with closing(backend.open()) as store:
        again = store.get_run(run.id)
    assert again is not None
    assert again.snapshot() == read.snapshot()


async def test_a_surface_run_stores_its_reasoning_once_and_shows_it_whole(
    tmp_path: Path, environ: dict[str, str], sim: Simulator
) -> None:
    thinking = "Weigh the hit rate against the memory it costs. " * 40
    sim.default_transcript = Transcript(
        reasoning=(SimReasoning(kind="summary", text=thinking, signature="sig-once"),),
        answer="Use an LRU.",
    )
    home = tmp_path / "home"
    config = thoughtline.Config(path=None)
    async with Orchestrator.open(config, environ={**environ, "THOUGHTLINE_HOME": str(home)}) as o:
        run = await o.start(
            "Design a cache",
            provider="anthropic",
            model="claude-sonnet-4-6",
            chain_of_thought="surface",
        )
        read = o.status(run.id)
    (task,) = run.tasks
    assert task.reasoning_status == "shown", task.reasoning_notice
    assert task.reasoning is not None and "Weigh the hit rate" in task.reasoning
    assert read is not None and read.tasks[0].reasoning == task.reasoning
    with closing(sqlite3.connect(home / "thoughtline.db")) as conn:
        ((text, parts),) = conn.execute("SELECT reasoning, reasoning_parts_json FROM tasks")
    assert text is None  # stored once: in the parts
    assert "\n\n".join(part["text"] for part in json.loads(parts) if part["text"]) == (
        task.reasoning
    )
