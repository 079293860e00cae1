"""Runtime overhead: 1000 tasks through the simulator at max_concurrency 64.

The simulator runs in its own process on 127.0.0.1 (so it does not share this process's
GIL). In one run we measure:

- *direct*: 1000 ``ProviderClient`` calls, 64 at a time — the floor;
- *runtime*: one run of 1000 tasks (``max_concurrency = 64``, surface mode), with the
  store, disclosure gate and trace — tasks/second and per-task duration;
- the runtime's overhead per task: task duration minus the provider call's own duration
  (both measured inside the same task), p50 and p99;
- trace events/second written to SQLite: during the run, and appended one at a time.

    .venv/bin/python bench/bench_runtime.py [--tasks 1000] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from thoughtline.config import Config
from thoughtline.providers.client import ProviderClient
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.records import Run, TraceEvent, new_id, now_iso
from thoughtline.requests import ModelRequest, ReasoningRequest
from thoughtline.runtime.plan import RunSpec, TaskSpec
from thoughtline.runtime.runner import Runtime
from thoughtline.store.sqlite import SQLiteStore

SIMULATOR = """
import sys, time
from thoughtline.testing import Simulator, SimulatorServer, SimReasoning, Transcript
sim = Simulator(default_transcript=Transcript(
    reasoning=(SimReasoning(kind="summary", text="A short reasoning summary for the benchmark.", signature="sig"),),
    answer="A short answer for the benchmark, a few deltas long.", chunk_chars=16))
server = SimulatorServer(sim).start()
print(server.url, flush=True)
sys.stdin.read()
"""
KEY = "bench-key-0000000000"
MODEL = "claude-sonnet-4-6"


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def parse(at: str) -> float:
    return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


async def direct(
    environ: dict[str, str], tasks: int, concurrency: int
) -> tuple[float, list[float]]:
    endpoint = EndpointRegistry(environ=environ).resolve("anthropic")
    semaphore = asyncio.Semaphore(concurrency)
    durations: list[float] = []
    async with ProviderClient(endpoint) as client:

        async def one() -> None:
            async with semaphore:
                started = time.perf_counter()
                call = await client.complete(
                    ModelRequest.simple(MODEL, "bench", reasoning=ReasoningRequest(enabled=True))
                )
                assert call.response.error is None, call.response.error
                durations.append((time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(tasks)))
        return time.perf_counter() - started, durations


async def through_runtime(
    environ: dict[str, str], home: Path, tasks: int, concurrency: int, provider_raw: bool
) -> tuple[float, list[float], list[float], int]:
    store = SQLiteStore(home / f"bench-{provider_raw}.db")
    runtime = Runtime(
        config=Config(
            path=None,
            max_concurrency=concurrency,
            max_tasks_per_run=1000,
            trace_provider_raw=provider_raw,
        ),
        store=store,
        environ=environ,
    )
    spec = RunSpec(
        request="bench",
        tasks=tuple(
            TaskSpec(name=f"t{i}", role="engineer", provider="anthropic", model=MODEL)
            for i in range(tasks)
        ),
    )
    started = time.perf_counter()
    run = await runtime.run(spec, explicit_mode="surface_and_telemetry")
    elapsed = time.perf_counter() - started
    assert run.status == "completed", run.status
    task_ms = [
        (parse(t.timings.finished_at or "") - parse(t.timings.started_at or "")) * 1000
        for t in run.tasks
    ]
    overhead = [
        total - (t.timings.total_ms or 0.0) for total, t in zip(task_ms, run.tasks, strict=True)
    ]
    events = len(store.trace(run.id))
    store.close()
    return elapsed, task_ms, overhead, events


def append_rate(home: Path, count: int) -> float:
    store = SQLiteStore(home / "append.db")
    run_id = new_id("run")
    store.create_run(
        Run(
            id=run_id,
            request="bench",
            chain_of_thought="hidden",
            chain_of_thought_source="default",
            worker_backend="provider",
        )
    )
    started = time.perf_counter()
    for index in range(count):
        store.append_trace(
            [
                TraceEvent(
                    id=new_id("evt"),
                    run_id=run_id,
                    task_id=None,
                    type="bench",
                    layer="answer",
                    at=now_iso(),
                    metadata={"i": index},
                )
            ]
        )
    elapsed = time.perf_counter() - started
    store.close()
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    simulator = subprocess.Popen(
        [sys.executable, "-c", SIMULATOR], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert simulator.stdout is not None
        url = simulator.stdout.readline().strip()
        environ = {"ANTHROPIC_BASE_URL": f"{url}/anthropic", "ANTHROPIC_API_KEY": KEY}
        with tempfile.TemporaryDirectory() as folder:
            home = Path(folder)
            asyncio.run(direct(environ, 50, args.concurrency))  # warm up the simulator
            direct_s, direct_ms = asyncio.run(direct(environ, args.tasks, args.concurrency))
            rows = []
            for provider_raw in (False, True):
                elapsed, task_ms, overhead, events = asyncio.run(
                    through_runtime(environ, home, args.tasks, args.concurrency, provider_raw)
                )
                rows.append((provider_raw, elapsed, task_ms, overhead, events))
            appended = append_rate(home, 2000)
    finally:
        assert simulator.stdin is not None
        simulator.stdin.close()
        simulator.wait(timeout=10)
    print(
        f"{args.tasks} tasks, max_concurrency {args.concurrency}, simulator in its own process on loopback\n"
    )
    print(
        "| path | tasks/s | task p50 | task p99 | runtime overhead p50 | overhead p99 | trace events | trace events/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| direct ProviderClient | {args.tasks / direct_s:,.0f} | {statistics.median(direct_ms):.1f} ms | {percentile(direct_ms, 0.99):.1f} ms | - | - | - | - |"
    )
    for provider_raw, elapsed, task_ms, overhead, events in rows:
        label = "runtime (store + trace" + (" + provider_raw)" if provider_raw else ")")
        print(
            f"| {label} | {args.tasks / elapsed:,.0f} | {statistics.median(task_ms):.1f} ms | {percentile(task_ms, 0.99):.1f} ms | {statistics.median(overhead):.2f} ms | {percentile(overhead, 0.99):.2f} ms | {events:,} | {events / elapsed:,.0f} |"
        )
    print(f"\nSQLite trace appends, one event per transaction: {appended:,.0f} events/s")
    best = max(args.tasks / elapsed for _, elapsed, *_ in rows)
    print(f"runtime throughput vs direct calls: {best / (args.tasks / direct_s):.2f}x")


if __name__ == "__main__":
    main()
