"""The usage report's aggregate (``Store.usage``) over 100k stored runs, SQLite and
PostgreSQL.

Runs are generated (1 to 3 tasks each, five models of three providers, four roles, the
four modes, usage reported on nine tasks in ten, created over the last 60 days) and
written through the store's own write path in batches. Each measure is the best of
``--repeat`` rounds of ``Store.usage(by)`` for every key, over every run and over the
last 7 days; the baseline, in the same round, is one ``SELECT COUNT(*)`` of the same
tasks (the least any aggregate over them costs).

    .venv/bin/python bench/bench_usage.py [--runs 100000] [--repeat 5] [--dsn postgresql://...]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.store.builders import make_run, make_task
from tests.store.postgres_cluster import required_database_for_bench

from thoughtline.records import TaskUsage
from thoughtline.store.base import Store, UsageKey

KEYS: tuple[UsageKey, ...] = ("day", "model", "role", "mode", "provider")
MODELS = [
    ("anthropic", "claude-sonnet-4-6"),
    ("anthropic", "claude-haiku-4-5"),
    ("openai", "gpt-5.5"),
    ("openai", "o4-mini"),
    ("gemini", "gemini-2.5-pro"),
]
ROLES = ["engineer", "architect", "reviewer", "writer"]
MODES = ["hidden", "surface", "telemetry_only", "surface_and_telemetry"]
BATCH = 1000


def stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def fill(store: Store, runs: int, seed: int = 7) -> None:
    chosen = random.Random(seed)
    now = datetime.now(UTC)
    for start in range(0, runs, BATCH):
        writes = []
        for number in range(start, min(runs, start + BATCH)):
            created = now - timedelta(seconds=chosen.uniform(0, 60 * 86_400))
            run = make_run(f"run_bench{number:07d}", status="completed", created_at=stamp(created))
            run.tasks = []
            for position in range(chosen.randint(1, 3)):
                provider, model = chosen.choice(MODELS)
                task = make_task(
                    run.id,
                    position,
                    role=chosen.choice(ROLES),
                    provider=provider,
                    model=model,
                    chain_of_thought=chosen.choice(MODES),
                    status="done",
                )
                task.timings.started_at = run.created_at
                if chosen.random() < 0.9:
                    output = chosen.randint(10, 4000)
                    task.usage = TaskUsage(
                        input_tokens=chosen.randint(100, 20_000),
                        output_tokens=output,
                        reasoning_tokens=chosen.randint(0, output),
                        cached_input_tokens=chosen.randint(0, 100),
                        cache_write_tokens=0,
                    )
                run.tasks.append(task)
            writes.append(store.prepare(create=run))
        store.write_prepared(writes)


def best_of(repeat: int, action: object) -> float:
    assert callable(action)
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best


def measure(name: str, store: Store, repeat: int) -> None:
    week_ago = stamp(datetime.now(UTC) - timedelta(days=7))
    sql = store.dialect.sql  # type: ignore[attr-defined]

    def count(since: str | None) -> None:
        with store._reading() as conn:  # type: ignore[attr-defined]
            query = "SELECT COUNT(*) FROM tasks"
            if since is None:
                conn.execute(sql(query + " WHERE started_at IS NOT NULL")).fetchall()
            else:
                conn.execute(sql(query + " WHERE started_at >= ?"), (since,)).fetchall()

    for since, label in ((None, "all runs"), (week_ago, "last 7 days")):
        baseline = best_of(repeat, lambda since=since: count(since))
        cells = []
        for key in KEYS:
            took = best_of(repeat, lambda key=key, since=since: store.usage(key, since))
            cells.append(f"{key} {took * 1000:.0f} ms ({took / baseline:.1f}x)")
        print(f"{name:<11}{label:<13}count {baseline * 1000:.0f} ms; " + "; ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dsn", default=None)
    args = parser.parse_args()
    from thoughtline.store.postgres import PostgresStore
    from thoughtline.store.sqlite import SQLiteStore

    with ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        dsn = stack.enter_context(required_database_for_bench(args.dsn))
        stores = {
            "SQLite": stack.enter_context(SQLiteStore(scratch / "usage.db")),
            "PostgreSQL": stack.enter_context(PostgresStore(dsn)),
        }
        print(f"load average before: {os.getloadavg()[0]:.2f}; {args.runs:,} runs", flush=True)
        for name, store in stores.items():
            started = time.perf_counter()
            fill(store, args.runs)
            print(f"{name}: filled in {time.perf_counter() - started:.1f} s", flush=True)
        for name, store in stores.items():
            measure(name, store, args.repeat)
        print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
