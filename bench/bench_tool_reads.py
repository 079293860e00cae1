"""Reading runs whose tasks called tools, and writing their calls.

- *get_run*: one run of a 100-step task with 300 tool calls (what ``status`` reads);
- *list_runs*: 20 runs of 4 tasks with 30 calls each (``runs``, the daemon's list);
- *write*: 300 calls written as the runtime writes them (a row as each starts and as it
  ends, the task row after each step of 3 calls), one transaction per write here where
  the runtime batches them. On code from before the tool call table (no
  ``write(tool_calls=...)``), the task row with all its calls is written instead, after
  each call.

SQLite, and PostgreSQL on a throwaway local cluster (or ``--dsn``). The reads use only
``create_run``, ``get_run`` and ``list_runs``, so the same command measures older code
too: ``PYTHONPATH=/path/to/older/src .venv/bin/python bench/bench_tool_reads.py``, run
alternately with this code, is the baseline.

    .venv/bin/python bench/bench_tool_reads.py [--repeat 30] [--dsn postgresql://...]
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.store.postgres_cluster import database_for_bench

from thoughtline.records import Run, Task, ToolCallRecord, new_id, now_iso
from thoughtline.store.base import Store
from thoughtline.store.sqlite import SQLiteStore


def tool_task(run_id: str, position: int, calls: int, steps: int) -> Task:
    task = Task(
        id=new_id("task"), run_id=run_id, position=position, role="r", provider="p",
        model="m", chain_of_thought="hidden", chain_of_thought_source="default",
        status="completed", output="done", tools=("git",), max_steps=steps,
    )  # fmt: skip
    task.steps = steps
    task.tool_calls = [
        ToolCallRecord(
            id=f"call_{i}",
            step=1 + i * steps // calls,
            server="git",
            name="git_log",
            arguments='{"repo_path": "/tmp/r", "max_count": 5}',
            started_at=now_iso(),
            status="done",
            result="commit abc\n" * 40,
            duration_ms=1.5,
        )
        for i in range(calls)
    ]
    return task


def tool_run(tasks: int, calls: int, steps: int) -> Run:
    run_id = new_id("run")
    return Run(
        id=run_id, status="completed", request="q", chain_of_thought="hidden",
        chain_of_thought_source="default", worker_backend="provider", created_at=now_iso(),
        finished_at=now_iso(), tasks=[tool_task(run_id, i, calls, steps) for i in range(tasks)],
    )  # fmt: skip


def write_run(store: Store, run: Run, calls_per_step: int) -> None:
    """As the runtime writes it (see the module's docstring)."""
    recorded = [task.tool_calls or [] for task in run.tasks]
    for task in run.tasks:
        task.tool_calls = []
    store.create_run(run)
    by_row = "tool_calls" in inspect.signature(store.write).parameters
    for task, calls in zip(run.tasks, recorded, strict=True):
        assert task.tool_calls is not None
        for call in calls:
            task.tool_calls.append(call)
            if by_row:
                position = len(task.tool_calls) - 1
                store.write(tool_calls=[(task, position)])  # started
                store.write(tool_calls=[(task, position)])  # completed
            else:
                store.update_task(task)
            if len(task.tool_calls) % calls_per_step == 0:
                store.update_task(task)


def timed(action: Callable[[], object], repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.9)]


def measure(name: str, store: Store, repeat: int) -> None:
    big = tool_run(1, 300, 100)
    write_start = time.perf_counter()
    write_run(store, big, 3)
    write_ms = (time.perf_counter() - write_start) * 1000
    for _ in range(20):
        store.create_run(tool_run(4, 30, 10))
    got = store.get_run(big.id)
    assert got is not None
    assert len(got.tasks[0].tool_calls or ()) == 300
    one = timed(lambda: store.get_run(big.id), repeat)
    listing = timed(lambda: store.list_runs(20), repeat)
    print(
        f"{name:<10} write 300 calls {write_ms:8.1f} ms | get_run(100 steps, 300 calls) "
        f"p50 {one[0]:6.2f} p90 {one[1]:6.2f} ms | list_runs(20 x 4 tasks x 30 calls) "
        f"p50 {listing[0]:6.2f} p90 {listing[1]:6.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--dsn", default=None)
    args = parser.parse_args()
    with ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        with SQLiteStore(scratch / "bench.db") as sqlite:
            measure("SQLite", sqlite, args.repeat)
        dsn = stack.enter_context(database_for_bench(args.dsn))
        if dsn is None:
            print("PostgreSQL   skipped: no server binaries (pass --dsn)")
            return
        from thoughtline.store.postgres import PostgresStore

        with PostgresStore(dsn) as pg:
            measure("PostgreSQL", pg, args.repeat)


if __name__ == "__main__":
    main()
