"""Store throughput, SQLite vs PostgreSQL, at 1, 16 and 64 concurrent writers.

Each writer is a thread with a store of its own (as separate processes or daemons
would have), writing for a fixed time:

- *runs/s*: the writes of one small run as the runtime makes them — create, run started,
  task row, three trace events, five run events (deltas), task done, run completed;
- *trace events/s*: one trace event per call, as a streaming worker appends them.

PostgreSQL is measured as it ships (every commit waits for its WAL to reach the disk)
and with ``synchronous_commit=off`` ("PG async", set in the connection string:
``?options=-csynchronous_commit%3Doff``), which is closer to SQLite's ``synchronous =
NORMAL``: neither waits for the disk at each commit.

PostgreSQL is a throwaway local cluster (``initdb``/``pg_ctl``, fsync on, as a server
would run) unless ``--dsn`` names one. Both stores are on this machine, so the numbers
compare the stores' own costs; a PostgreSQL across a network adds a round trip per call.

    .venv/bin/python bench/bench_store.py [--seconds 3] [--dsn postgresql://...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.store.builders import make_event, make_run
from tests.store.postgres_cluster import find_binaries, running_cluster

from thoughtline.records import RunEventRecord, now_iso
from thoughtline.store.base import Store
from thoughtline.store.postgres import PostgresStore
from thoughtline.store.sqlite import SQLiteStore

CONCURRENCY = (1, 16, 64)


def one_run(store: Store, name: str) -> int:
    """The writes of one small run; returns 1 (one run)."""
    run = make_run(name, status="planned")
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
    return 1


def trace_events(store: Store, name: str) -> int:
    store.append_trace([make_event(name.rsplit("_", 1)[0])])
    return 1


def measure(
    open_store: Callable[[], Store],
    workload: Callable[[Store, str], int],
    writers: int,
    seconds: float,
) -> float:
    """Operations per second of ``writers`` threads running ``workload`` for ``seconds``."""
    stores = [open_store() for _ in range(writers)]
    if workload is trace_events:
        for number, store in enumerate(stores):
            store.create_run(make_run(f"bench_{number}", status="completed"))
    done = [0] * writers
    start = threading.Barrier(writers + 1)
    stop = threading.Event()

    def writer(number: int) -> None:
        store = stores[number]
        start.wait()
        count = 0
        while not stop.is_set():
            count += workload(store, f"bench_{number}_{time.monotonic_ns()}")
        done[number] = count

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    for store in stores:
        store.close()
    return sum(done) / elapsed


@contextmanager
def postgres(dsn: str | None) -> Iterator[str]:
    if dsn is not None:
        yield dsn
        return
    binaries = find_binaries()
    if binaries is None:
        raise SystemExit("no PostgreSQL server binaries: install postgresql or pass --dsn")
    with running_cluster(binaries, durable=True) as cluster:
        yield cluster.new_database()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--dsn", default=None)
    args = parser.parse_args()
    with ExitStack() as stack:
        dsn = stack.enter_context(postgres(args.dsn))
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        print(
            f"{'workload':<14}{'writers':>8}{'SQLite/s':>10}{'PG/s':>8}{'ratio':>7}"
            f"{'PG async/s':>12}{'ratio':>7}"
        )
        for label, workload in (("runs", one_run), ("trace events", trace_events)):
            for writers in CONCURRENCY:
                database = scratch / f"{label}-{writers}.db"
                sqlite = measure(lambda: SQLiteStore(database), workload, writers, args.seconds)  # noqa: B023
                rates = []
                for commit in ("on", "off"):
                    fresh = _fresh_schema(dsn, f"{label}-{writers}-{commit}", commit)
                    rates.append(
                        measure(lambda: PostgresStore(fresh), workload, writers, args.seconds)  # noqa: B023
                    )
                durable, relaxed = rates
                print(
                    f"{label:<14}{writers:>8}{sqlite:>10.0f}{durable:>8.0f}"
                    f"{durable / sqlite:>7.2f}{relaxed:>12.0f}{relaxed / sqlite:>7.2f}"
                )


def _fresh_schema(dsn: str, name: str, synchronous_commit: str) -> str:
    """The database at ``dsn`` with a schema of its own (empty tables per measurement).
    ``synchronous_commit=off`` ("PG async") waits for no WAL flush at commit: a server
    crash may lose the last moments of commits, never corrupt anything."""
    import psycopg

    schema = "bench_" + "".join(ch if ch.isalnum() else "_" for ch in name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    separator = "&" if "?" in dsn else "?"
    options = f"-csearch_path%3D{schema}%20-csynchronous_commit%3D{synchronous_commit}"
    return f"{dsn}{separator}options={options}"


if __name__ == "__main__":
    main()
