"""Bodies of child processes (spawned, so they share nothing with the test process).
``path`` is a store's location: a SQLite file or a PostgreSQL URL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Barrier
from pathlib import Path

from tests.store.backends import open_at
from tests.store.builders import ago, make_event, make_run
from tests.support import start_process
from thoughtline.records import RunEventRecord, TaskUsage


def write_many(path: str, worker: int, count: int, barrier: Barrier) -> None:
    """Open the (possibly new) store together with the other workers, then create,
    trace, update and finish runs in a bounded loop."""
    barrier.wait()
    store = open_at(path)
    for n in range(count):
        run = make_run(f"run_w{worker}_{n:04d}")
        store.create_run(run)
        store.append_trace([make_event(run.id, event_id=f"evt_w{worker}_{n:04d}")])
        task = run.tasks[0]
        task.status = "done"
        task.output = f"output {worker}/{n}"
        store.update_task(task)
        run.status = "completed"
        run.finished_at = make_event(run.id).at
        store.update_run(run)
    store.close()


def crash_mid_run(path: str, run_id: str) -> None:
    """Create a running run (one task done, one running, one queued) and die hard."""
    store = open_at(path)
    run = make_run(run_id, tasks=3)
    done, running, _queued = run.tasks
    done.status = "done"
    done.output = "finished answer ✓"
    done.usage = TaskUsage(input_tokens=10, output_tokens=0, reasoning_tokens=None)
    done.timings.started_at = "2026-01-01T00:00:00.000Z"
    done.timings.finished_at = "2026-01-01T00:00:01.000Z"
    running.status = "running"
    running.timings.started_at = "2026-01-01T00:00:00.500Z"
    store.create_run(run)
    store.append_trace([make_event(run_id, event_id="evt_started", task_id=running.id)])
    os.kill(os.getpid(), signal.SIGKILL)


def hold_run(path: str, run_id: str, pipe: Connection) -> None:
    """Create a running run, report it, and stay alive until told to exit (normally,
    leaving the run unfinished)."""
    store = open_at(path)
    store.create_run(make_run(run_id, tasks=2))
    pipe.send("created")
    pipe.recv()
    store.close()


def open_and_close(path: str, barrier: Barrier) -> None:
    barrier.wait()
    open_at(path).close()


def crash_mid_stream(path: str, run_id: str, deltas_at: str | None = None) -> None:
    """Create a running run whose tasks (one per mode, plus a queued one) had streamed
    part of their answers (and, where the mode displays it, reasoning) to the run event
    log, then die hard. ``deltas_at`` dates the deltas (default: now)."""
    store = open_at(path)
    run = make_run(run_id, tasks=5)
    modes = ("surface", "hidden", "telemetry_only", "surface_and_telemetry", "surface")
    for task, mode in zip(run.tasks, modes, strict=True):
        task.chain_of_thought = mode  # type: ignore[assignment]
    for task in run.tasks[:4]:
        task.status = "running"
        task.timings.started_at = "2026-01-01T00:00:00.000Z"
    store.create_run(run)
    store.append_run_events(stream_events(run.id, [task.id for task in run.tasks], deltas_at))
    os.kill(os.getpid(), signal.SIGKILL)


def stream_events(run_id: str, task_ids: list[str], at: str | None) -> list[RunEventRecord]:
    """What the runtime logs for the tasks of :func:`crash_mid_stream`: reasoning deltas
    only for the modes that display it, answer deltas for every started task."""
    surface, hidden, telemetry, both, _queued = task_ids
    script: list[tuple[str, str, str]] = [
        ("task.started", surface, ""),
        ("reasoning.delta", surface, "Weigh "),
        ("reasoning.delta", both, "Both modes "),
        ("reasoning.delta", surface, "the options."),
        ("answer.delta", surface, "Use a "),
        ("answer.delta", hidden, "Hidden answer "),
        ("answer.delta", telemetry, "Telemetry answer"),
        ("answer.delta", surface, "token bucket"),
        ("answer.delta", hidden, "so far ✓"),
    ]
    stamp = at or ago(0)
    return [
        RunEventRecord(
            run_id=run_id,
            seq=seq,
            type=type_,
            task_id=task_id,
            at=stamp,
            data={"text": text} if type_.endswith(".delta") else {"id": task_id},
        )
        for seq, (type_, task_id, text) in enumerate(script, start=1)
    ]


def stream_many(location: str, run_id: str, count: int) -> None:
    """Append a run's numbered answer deltas one write at a time, as its owner does."""
    store = open_at(location)
    for seq in range(1, count + 1):
        store.append_run_events(
            [
                RunEventRecord(
                    run_id=run_id,
                    seq=seq,
                    type="answer.delta",
                    task_id=f"{run_id}_task{seq % 5}",
                    at=ago(0),
                    data={"text": f"{seq} "},
                )
            ]
        )
    store.close()


# Another program with the SQLite file open: it begins a transaction, says how many trace
# events it sees, and holds the transaction until a line arrives on stdin.
_HOLD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute(sys.argv[2])
print(conn.execute("SELECT COUNT(*) FROM trace_events").fetchone()[0], flush=True)
sys.stdin.readline()
conn.execute("COMMIT")
conn.close()
"""


@contextmanager
def holding(path: Path, begin: str) -> Iterator[int]:
    """A process of its own holds a transaction on the SQLite file at ``path`` (``BEGIN``:
    a read snapshot; ``BEGIN IMMEDIATE``: the write lock) while the block runs; the
    number of trace events it saw. It lets go (and ends cleanly) when the block ends."""
    holder = start_process(
        [sys.executable, "-c", _HOLD, str(path), begin],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    try:
        yield int(holder.stdout.readline())  # the transaction is open
    finally:
        holder.communicate("done\n", timeout=30)
    assert holder.returncode == 0
