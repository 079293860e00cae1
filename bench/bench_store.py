"""Store write throughput, SQLite vs PostgreSQL, at 1, 4, 16 and 64 writer processes.

Each writer is a process of its own (as daemons and CLI runs are), with a store of its
own, writing for a fixed time; all contenders are measured in one invocation, so their
ratios compare like with like on a busy machine. Two workloads:

- **runtime** (the path users get): each process writes through the runtime's
  :class:`~thoughtline.runtime.engine.store_writer.StoreWriter` on an asyncio loop, with
  :data:`RUNS_IN_FLIGHT` runs in flight like a daemon. A run's creation is awaited, as
  the daemon awaits it before it answers ``POST /v1/runs`` (``Runtime.store_async``);
  then the run queues, as the runtime does, and goes on at once: started → task started
  (trace event) → :data:`DELTA_GROUPS` groups of :data:`GROUP_SIZE` answer deltas (what a
  live flush collects) → task done (trace event) → run completed; then it waits until
  its writes are committed, as a run does before it reports its end, and the next run
  starts. A run's rows are counted once that wait ends (a queued write carries no future
  of its own: the writer commits a write somebody awaits at once, the rest within its
  group delay, and a future on each would make every write awaited). No model: the runs
  go as fast as the store lets them. 52 rows a run.
- **store API**: one call, one transaction (``create_run``, ``update_run``,
  ``update_task``, ``append_trace``, ``append_run_events``), as scripts using the store
  directly make them; one run at a time per process. 16 rows a run.

Figures are rows committed per second (runs, tasks, run events, trace events, inserted
or updated) by all processes together. SQLite is one file shared by every process (as
CLI runs on one machine share it). PostgreSQL is measured as it ships (every commit
waits for its WAL to reach the disk) and with ``synchronous_commit=off`` ("PG async",
set in the connection string: ``?options=-csynchronous_commit%3Doff``): a commit then
returns before its WAL is on disk, so a server crash (not a client's) may lose the last
fraction of a second of commits, never corrupting anything.

PostgreSQL is a throwaway local cluster (``initdb``/``pg_ctl``, fsync on, as a server
would run) unless ``--dsn`` names one. Both stores are on this machine, so the numbers
compare the stores' own costs; a PostgreSQL across a network adds its round trip to
every transaction (one per transaction on the runtime's path).

    .venv/bin/python bench/bench_store.py [--seconds 3] [--writers 1,4,16,64]
        [--api-writers 1,16] [--dsn postgresql://...]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.store.builders import make_event, make_run
from tests.store.postgres_cluster import required_database_for_bench

from thoughtline.records import RunEventRecord, new_id, now_iso
from thoughtline.store.base import PreparedWrite, Store

RUNS_IN_FLIGHT = 8
DELTA_GROUPS = 5
GROUP_SIZE = 8
READY_S = 0.3
"""How long after every process is ready the measurement starts (a common clock:
``time.monotonic`` is the machine's)."""


@dataclass(frozen=True)
class Contender:
    label: str
    target: str  # a SQLite file's path or a PostgreSQL connection string


def open_store(target: str) -> Store:
    if target.startswith("postgresql://"):
        from thoughtline.store.postgres import PostgresStore

        return PostgresStore(target)
    from thoughtline.store.sqlite import SQLiteStore

    return SQLiteStore(Path(target))


def rows_of(write: PreparedWrite) -> int:
    created = sum(1 + len(tasks) for _row, tasks in write.created)
    return created + len(write.events) + len(write.runs) + len(write.tasks) + len(write.trace)


class Window:
    """Counts rows whose commit ended inside [start, stop)."""

    def __init__(self, start: float, stop: float) -> None:
        self.start, self.stop = start, stop
        self.rows = 0

    def committed(self, rows: int) -> None:
        if self.start <= time.monotonic() < self.stop:
            self.rows += rows

    def over(self) -> bool:
        return time.monotonic() >= self.stop


async def runtime_runs(store: Store, window: Window) -> None:
    """:data:`RUNS_IN_FLIGHT` runs at a time through one StoreWriter until the window ends."""
    from thoughtline.runtime.engine.store_writer import StoreWriter

    writer = StoreWriter(store)
    prefix = f"bench_{os.getpid()}"

    async def runs() -> None:
        while not window.over():
            rows = 0

            async def step(write: PreparedWrite) -> None:
                nonlocal rows
                rows += rows_of(write)
                if write.created:  # as Runtime.store_async: awaited, never held
                    await writer.write(write, hold=False)
                    return
                # As the runtime does: queued, and the run goes on at once.
                writer.submit(write)
                await asyncio.sleep(0)  # the other runs go on meanwhile (a model streaming)

            await one_run(store, step, prefix)
            await writer.flush()  # a run reports its end once its writes are in
            window.committed(rows)

    try:
        await asyncio.gather(*(runs() for _ in range(RUNS_IN_FLIGHT)))
    finally:
        await writer.aclose()


async def one_run(
    store: Store, step: Callable[[PreparedWrite], Awaitable[None]], prefix: str
) -> None:
    """One run's writes: created, started, its task started, the answer in groups of
    deltas, the task done, the run completed."""
    run = make_run(new_id(prefix), status="planned")
    task = run.tasks[0]
    seq = 0

    def events(kind: str, count: int = 1) -> list[RunEventRecord]:
        nonlocal seq
        made = []
        for _ in range(count):
            seq += 1
            made.append(
                RunEventRecord(
                    run_id=run.id,
                    seq=seq,
                    type=kind,
                    task_id=task.id,
                    at=now_iso(),
                    data={"text": "tok "},
                )
            )
        return made

    await step(store.prepare(create=run))
    run.status = "running"
    await step(store.prepare(run=run, events=events("run.started")))
    task.status = "running"
    await step(
        store.prepare(
            tasks=[task], events=events("task.started"), trace=[make_event(run.id, task_id=task.id)]
        )
    )
    for _ in range(DELTA_GROUPS):
        await step(store.prepare(events=events("answer.delta", GROUP_SIZE)))
    task.status, task.output = "done", "tok " * DELTA_GROUPS * GROUP_SIZE
    await step(
        store.prepare(
            tasks=[task],
            events=events("task.done"),
            trace=[make_event(run.id, task_id=task.id, type_="task.done")],
        )
    )
    run.status, run.finished_at = "completed", now_iso()
    await step(store.prepare(run=run, events=events("run.completed")))


def api_runs(store: Store, window: Window) -> None:
    """One run at a time, one transaction per call, until the window ends."""
    prefix = f"bench_{os.getpid()}"
    while not window.over():
        run = make_run(new_id(prefix), status="planned")
        store.create_run(run)
        run.status = "running"
        store.update_run(run)
        task = run.tasks[0]
        task.status = "running"
        store.update_task(task)
        store.append_trace([make_event(run.id, task_id=task.id) for _ in range(3)])
        store.append_run_events(
            [
                RunEventRecord(
                    run_id=run.id,
                    seq=seq,
                    type="answer.delta",
                    task_id=task.id,
                    at=now_iso(),
                    data={"text": "tok "},
                )
                for seq in range(1, 6)
            ]
        )
        task.status, task.output = "done", "tok " * 5
        store.update_task(task)
        run.status, run.finished_at = "completed", now_iso()
        store.update_run(run)
        window.committed(16)


def writer_process(
    workload: str,
    contenders: Sequence[Contender],
    seconds: float,
    barrier: Barrier,
    times: Any,
    results: Any,
) -> None:
    """Measure each contender in turn, in step with the other writer processes."""
    for contender in contenders:
        store = open_store(contender.target)
        try:
            barrier.wait()  # every store is open
            barrier.wait()  # the parent has set the window
            window = Window(times[0], times[1])
            if workload == "runtime":
                asyncio.run(runtime_runs(store, window))
            else:
                api_runs(store, window)
        finally:
            store.close()
        results.put((contender.label, window.rows))
        barrier.wait()  # every process is done with this contender


def measure(
    workload: str, contenders: Sequence[Contender], writers: int, seconds: float
) -> dict[str, float]:
    """Rows per second of ``writers`` processes for each contender."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(writers + 1)
    times = context.Array("d", 2)
    results = context.Queue()
    processes = [
        context.Process(
            target=writer_process,
            args=(workload, contenders, seconds, barrier, times, results),
            daemon=True,
        )
        for _ in range(writers)
    ]
    for process in processes:
        process.start()
    rates: dict[str, float] = {}
    for contender in contenders:
        barrier.wait(timeout=120)
        start = time.monotonic() + READY_S
        times[0], times[1] = start, start + seconds
        barrier.wait(timeout=120)
        barrier.wait(timeout=120 + seconds)
        total = 0
        for _ in range(writers):
            label, rows = results.get(timeout=30)
            assert label == contender.label
            total += rows
        rates[contender.label] = total / seconds
    for process in processes:
        process.join(timeout=30)
    return rates


def fresh_schema(dsn: str, name: str, synchronous_commit: str) -> str:
    """The database at ``dsn`` with a schema of its own (empty tables per measurement)."""
    import psycopg

    schema = "bench_" + "".join(ch if ch.isalnum() else "_" for ch in name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    separator = "&" if "?" in dsn else "?"
    options = f"-csearch_path%3D{schema}%20-csynchronous_commit%3D{synchronous_commit}"
    return f"{dsn}{separator}options={options}"


def contenders_for(dsn: str, scratch: Path, name: str) -> list[Contender]:
    made = [
        Contender("SQLite", str(scratch / f"{name}.db")),
        Contender("PG", fresh_schema(dsn, name + "_on", "on")),
        Contender("PG async", fresh_schema(dsn, name + "_off", "off")),
    ]
    for contender in made:  # migrate once, not racing at the start
        open_store(contender.target).close()
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--writers", default="1,4,16,64")
    parser.add_argument("--api-writers", default="1,16", help="'' to skip the store API")
    parser.add_argument("--dsn", default=None)
    args = parser.parse_args()
    plan = [("runtime", int(n)) for n in args.writers.split(",") if n]
    plan += [("store API", int(n)) for n in args.api_writers.split(",") if n]
    with ExitStack() as stack:
        dsn = stack.enter_context(required_database_for_bench(args.dsn))
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
        print(
            f"{'workload':<11}{'processes':>10}{'SQLite rows/s':>15}{'PG rows/s':>11}"
            f"{'ratio':>7}{'PG async rows/s':>17}{'ratio':>7}",
            flush=True,
        )
        for workload, writers in plan:
            name = f"{workload.replace(' ', '')}_{writers}"
            contenders = contenders_for(dsn, scratch, name)
            workload_key = "runtime" if workload == "runtime" else "api"
            rates = measure(workload_key, contenders, writers, args.seconds)
            sqlite, durable, relaxed = rates["SQLite"], rates["PG"], rates["PG async"]
            print(
                f"{workload:<11}{writers:>10}{sqlite:>15.0f}{durable:>11.0f}"
                f"{durable / sqlite:>7.2f}{relaxed:>17.0f}{relaxed / sqlite:>7.2f}",
                flush=True,
            )
        print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
