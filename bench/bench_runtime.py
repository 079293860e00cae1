"""Runtime overhead: 1000 tasks through the simulator at max_concurrency 64.

The simulator runs in its own process on 127.0.0.1 (so it does not share this process's
GIL). Each round runs, one after the other:

- *direct*: 1000 ``ProviderClient`` calls, 64 at a time — the floor;
- *runtime*: one run of 1000 tasks (``max_concurrency = 64``, surface_and_telemetry),
  with the SQLite store, disclosure gate, trace and event log;
- the same with the ``provider_raw`` trace layer on (body capture and reasoning scrub).

Rounds repeat (``--repeat``) and each path keeps its fastest round, so a noisy neighbour
slows the paths alike.

Every figure is a ``time.perf_counter`` span taken in this process around the real work,
by wrappers installed from this script (no stamps, no change to the runtime):

- *task*: ``TaskCall.go``, one task's whole work once it holds its concurrency slot
  (started write, request, call, gate, completed write);
- *provider*: the time spent inside the provider call — entering it, every ``__anext__``
  of its event iterator (network wait and decoding), and leaving it; the time between
  two events, when the runtime handles an event (gate, live event), is not in it;
- *overhead* = task - provider: what the runtime adds to one task;
- *store writes*: every transaction (``Store.write_prepared``: the run's creation, then
  the store writer's batches of transitions and live events), its rows (one per run or
  task row written, trace event or event log record) and its duration.

    .venv/bin/python bench/bench_runtime.py [--tasks 1000] [--concurrency 64] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thoughtline.config import Config
from thoughtline.model.events import StreamEvent
from thoughtline.model.requests import ModelRequest, ReasoningRequest
from thoughtline.providers.client import ProviderCall, ProviderClient
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.runtime.engine.task_call import TaskCall
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.store.base import PreparedWrite
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


# -- perf_counter spans, installed around the runtime's real work ----------------------


@dataclass
class Spans:
    task_s: dict[str, float] = field(default_factory=dict)
    provider_s: dict[str, float] = field(default_factory=dict)
    streamed: set[str] = field(default_factory=set)  # tasks whose stream reading was timed
    store_rows: int = 0
    store_s: float = 0.0
    store_calls: int = 0
    store_max_s: float = 0.0


SPANS = Spans()
CURRENT_TASK: contextvars.ContextVar[str | None] = contextvars.ContextVar("task", default=None)


def install_spans() -> None:
    original_go = TaskCall.go
    original_aiter = ProviderCall.__aiter__
    original_batches = ProviderCall.batches
    original_aenter = ProviderCall.__aenter__
    original_aexit = ProviderCall.__aexit__

    async def go(self: TaskCall) -> None:
        token = CURRENT_TASK.set(self.task.id)
        started = time.perf_counter()
        try:
            await original_go(self)
        finally:
            SPANS.task_s[self.task.id] = time.perf_counter() - started
            CURRENT_TASK.reset(token)

    def add_provider(seconds: float) -> None:
        task_id = CURRENT_TASK.get()
        if task_id is not None:
            SPANS.provider_s[task_id] = SPANS.provider_s.get(task_id, 0.0) + seconds

    async def timed_events(events: AsyncIterator[Any]) -> AsyncIterator[Any]:
        next_event = events.__anext__
        clock = time.perf_counter
        inside = 0.0
        try:
            while True:
                started = clock()
                try:
                    event = await next_event()
                except StopAsyncIteration:
                    inside += clock() - started
                    return
                inside += clock() - started
                yield event
        finally:
            add_provider(inside)
            task_id = CURRENT_TASK.get()
            if task_id is not None:
                SPANS.streamed.add(task_id)

    def aiter(self: ProviderCall) -> AsyncIterator[StreamEvent]:
        wrapped = getattr(self, "_bench_timed", None)
        if wrapped is None:
            wrapped = timed_events(original_aiter(self))
            self._bench_timed = wrapped  # type: ignore[attr-defined]
        return wrapped

    def batches(self: ProviderCall) -> AsyncIterator[list[StreamEvent]]:
        # What the runtime reads: one list of events per network chunk.
        wrapped = getattr(self, "_bench_timed", None)
        if wrapped is None:
            wrapped = timed_events(original_batches(self))
            self._bench_timed = wrapped  # type: ignore[attr-defined]
        return wrapped

    async def aenter(self: ProviderCall) -> ProviderCall:
        started = time.perf_counter()
        try:
            return await original_aenter(self)
        finally:
            add_provider(time.perf_counter() - started)

    async def aexit(self: ProviderCall, *exc_info: Any) -> None:
        started = time.perf_counter()
        try:
            timed = getattr(self, "_bench_timed", None)
            if timed is not None:
                await timed.aclose()
            await original_aexit(self, *exc_info)
        finally:
            add_provider(time.perf_counter() - started)

    TaskCall.go = go  # type: ignore[method-assign]
    ProviderCall.__aiter__ = aiter  # type: ignore[method-assign]
    ProviderCall.batches = batches  # type: ignore[method-assign]
    ProviderCall.__aenter__ = aenter  # type: ignore[method-assign]
    ProviderCall.__aexit__ = aexit  # type: ignore[method-assign]


def time_store_writes(store: SQLiteStore) -> None:
    """Time every transaction: ``write_prepared`` is the one path every write of the
    runtime takes (the run's creation, and the writer's batches of transitions)."""
    original = store.write_prepared

    def write_prepared(writes: Sequence[PreparedWrite], *, wait: bool = True) -> bool:
        started = time.perf_counter()
        written = original(writes, wait=wait)
        seconds = time.perf_counter() - started
        SPANS.store_s += seconds
        SPANS.store_max_s = max(SPANS.store_max_s, seconds)
        if written:
            SPANS.store_calls += 1
            SPANS.store_rows += sum(
                sum(1 + len(tasks) for _run, tasks in write.created)
                + len(write.events)
                + len(write.runs)
                + len(write.tasks)
                + len(write.trace)
                for write in writes
            )
        return written

    store.write_prepared = write_prepared  # type: ignore[method-assign]


# -- the paths --------------------------------------------------------------------------


@dataclass
class Round:
    label: str
    seconds: float
    task_ms: list[float]
    overhead_ms: list[float] = field(default_factory=list)
    rows: int = 0
    store_s: float = 0.0
    store_calls: int = 0
    store_max_s: float = 0.0


async def direct(environ: dict[str, str], tasks: int, concurrency: int) -> Round:
    endpoint = EndpointRegistry(environ=environ).resolve("anthropic")
    semaphore = asyncio.Semaphore(concurrency)
    durations: list[float] = []
    async with ProviderClient(endpoint, capture_body=False) as client:

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
        return Round("direct ProviderClient", time.perf_counter() - started, durations)


async def through_runtime(
    environ: dict[str, str], database: Path, tasks: int, concurrency: int, provider_raw: bool
) -> Round:
    store = SQLiteStore(database)
    runtime = Runtime(
        config=Config(
            path=None,
            max_concurrency=concurrency,
            max_tasks_per_run=tasks,
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
    time_store_writes(store)
    global SPANS
    SPANS = Spans()
    started = time.perf_counter()
    run = await runtime.run(spec, explicit_mode="surface_and_telemetry")
    elapsed = time.perf_counter() - started
    assert run.status == "completed", run.status
    await runtime.aclose()
    store.close()
    assert len(SPANS.task_s) == tasks, len(SPANS.task_s)
    assert len(SPANS.provider_s) == tasks, len(SPANS.provider_s)
    # How the runtime reads a call may change; a stream read untimed would count as
    # runtime overhead.
    assert len(SPANS.streamed) == tasks, f"{len(SPANS.streamed)} of {tasks} streams timed"
    task_ms = [SPANS.task_s[t.id] * 1000 for t in run.tasks]
    overhead_ms = [(SPANS.task_s[t.id] - SPANS.provider_s[t.id]) * 1000 for t in run.tasks]
    label = "runtime: store + trace" + (" + provider_raw" if provider_raw else "")
    return Round(
        label,
        elapsed,
        task_ms,
        overhead_ms,
        SPANS.store_rows,
        SPANS.store_s,
        SPANS.store_calls,
        SPANS.store_max_s,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    install_spans()
    simulator = subprocess.Popen(
        [sys.executable, "-c", SIMULATOR], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    best: dict[str, Round] = {}
    try:
        assert simulator.stdout is not None
        url = simulator.stdout.readline().strip()
        environ = {"ANTHROPIC_BASE_URL": f"{url}/anthropic", "ANTHROPIC_API_KEY": KEY}
        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(direct(environ, 50, args.concurrency))  # warm up the simulator
            for number in range(args.repeat):
                rounds = [asyncio.run(direct(environ, args.tasks, args.concurrency))]
                for provider_raw in (False, True):
                    database = Path(folder) / f"bench-{number}-{provider_raw}.db"
                    rounds.append(
                        asyncio.run(
                            through_runtime(
                                environ, database, args.tasks, args.concurrency, provider_raw
                            )
                        )
                    )
                for measured in rounds:
                    kept = best.get(measured.label)
                    if kept is None or measured.seconds < kept.seconds:
                        best[measured.label] = measured
    finally:
        assert simulator.stdin is not None
        simulator.stdin.close()
        simulator.wait(timeout=10)
    print(
        f"{args.tasks} tasks, max_concurrency {args.concurrency}, simulator in its own process "
        f"on loopback; fastest of {args.repeat} interleaved rounds; python "
        f"{platform.python_version()}; load average {os.getloadavg()[0]:.1f} at the end\n"
    )
    print(
        "| path | tasks/s | task p50 | task p99 | runtime overhead p50 | overhead p99 "
        "| overhead max | rows written | rows/s of run | rows/s of write time | share of run in writes |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    floor = best["direct ProviderClient"]
    for measured in best.values():
        row = (
            f"| {measured.label} | {args.tasks / measured.seconds:,.0f} "
            f"| {statistics.median(measured.task_ms):.1f} ms "
            f"| {percentile(measured.task_ms, 0.99):.1f} ms "
        )
        if measured.overhead_ms:
            row += (
                f"| {statistics.median(measured.overhead_ms):.2f} ms "
                f"| {percentile(measured.overhead_ms, 0.99):.2f} ms "
                f"| {max(measured.overhead_ms):.2f} ms "
                f"| {measured.rows:,} | {measured.rows / measured.seconds:,.0f} "
                f"| {measured.rows / measured.store_s:,.0f} "
                f"| {measured.store_s / measured.seconds:.0%} |"
            )
        else:
            row += "| - | - | - | - | - | - | - |"
        print(row)
    print()
    for measured in best.values():
        if measured is not floor:
            print(
                f"{measured.label}: throughput {floor.seconds / measured.seconds:.2f}x direct; "
                f"{measured.store_calls:,} transactions, "
                f"{measured.rows / max(measured.store_calls, 1):.1f} rows each, "
                f"{measured.store_s / max(measured.store_calls, 1) * 1000:.2f} ms mean, "
                f"slowest {measured.store_max_s * 1000:.1f} ms"
            )


if __name__ == "__main__":
    main()
