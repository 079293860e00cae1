"""Bodies of child processes (spawned, so they share nothing with the test process)."""

from __future__ import annotations

import os
import signal
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Barrier
from pathlib import Path

from tests.store.builders import make_event, make_run
from thoughtline.runtime.models import TaskUsage
from thoughtline.store.sqlite import SQLiteStore


def write_many(path: str, worker: int, count: int, barrier: Barrier) -> None:
    """Open the (possibly new) store together with the other workers, then create,
    trace, update and finish runs in a bounded loop."""
    barrier.wait()
    store = SQLiteStore(Path(path))
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
    store = SQLiteStore(Path(path))
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
    store = SQLiteStore(Path(path))
    store.create_run(make_run(run_id, tasks=2))
    pipe.send("created")
    pipe.recv()
    store.close()


def open_and_close(path: str, barrier: Barrier) -> None:
    barrier.wait()
    SQLiteStore(Path(path)).close()
