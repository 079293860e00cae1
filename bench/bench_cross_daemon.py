"""Live events across daemons: how much later subscribers on daemon B see each event of
runs executing on daemon A than subscribers on A itself, both daemons sharing one
PostgreSQL store.

``--runs`` runs (50) start at once on A; each is followed by ``--subscribers`` SSE
streams (5) on B and as many on A (the baseline), all from the first event
(``Last-Event-ID: 0``). A subscriber on A receives events from A's in-process hub as
they are emitted; one on B through the store: A writes the runs' deltas to the event log
every ``live_flush_s`` (all runs in one transaction), the commit's NOTIFY wakes B's feed
of the run, which reads the new rows once for all five streams. The figure per event is
each B stream's arrival minus the first arrival of that event on A (p50, p99, max),
counting only events A delivered after every stream had its first bytes; beside it the
same for A's own other streams (the spread of the measuring side itself). Also: the
daemons' CPU time and the database's writing transactions per second during the phase.

Streams are read by bench_daemon.py's httptools client (a pure-Python client reading
500 streams would take a core away from the daemons on a 2-core machine).

    .venv/bin/python bench/bench_cross_daemon.py [--runs 50] [--subscribers 5]
        [--deltas 200] [--pace 0.02] [--live-flush-ms N] [--dsn postgresql://...]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson
import psycopg
from tests.store.postgres_cluster import required_database_for_bench
from tests.support import daemon_url

from bench_daemon import cpu_seconds, http_exchange

KEY = "bench-key-0000000000"
SIMULATOR = """
import json, sys
from thoughtline.testing import Simulator, SimulatorServer, Transcript
sim = Simulator(default_transcript=Transcript(answer="tok " * int(sys.argv[2]), chunk_chars=4))
sim.pace_s = float(sys.argv[1])
server = SimulatorServer(sim).start()
print(json.dumps(server.environ()), flush=True)
sys.stdin.read()
"""
EVENT_ID = re.compile(rb"^id: (\d+)$", re.MULTILINE)

# (run id, seq) -> arrival time, one dict per stream
Arrivals = dict[tuple[str, int], float]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


@contextmanager
def serve(home: Path, environ: dict[str, str], config: str) -> Iterator[tuple[str, int]]:
    home.mkdir(parents=True)
    (home / "thoughtline.toml").write_text(config)
    process = subprocess.Popen(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0", "--no-token"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **environ, "THOUGHTLINE_HOME": str(home)},
        cwd=home,
    )
    try:
        yield daemon_url(process), process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def simulator(pace: float, deltas: int) -> Iterator[dict[str, str]]:
    process = subprocess.Popen(
        [sys.executable, "-c", SIMULATOR, str(pace), str(deltas)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdin is not None
    try:
        yield orjson.loads(process.stdout.readline())
    finally:
        process.stdin.close()
        process.wait(timeout=30)


async def follow(url: str, run_id: str, arrivals: Arrivals, joined: list[float]) -> None:
    """Record when each event id of ``run_id`` arrives on ``url``'s stream, to its end."""
    pending = b""

    def on_body(data: bytes, now: float) -> bool:
        nonlocal pending
        if not joined:
            joined.append(now)
        pending += data
        end = pending.rfind(b"\n\n")
        if end < 0:
            return False
        complete, pending = pending[:end], pending[end + 2 :]
        for found in EVENT_ID.finditer(complete):
            arrivals[(run_id, int(found[1]))] = now
        return False  # the daemon ends the stream after the run's end

    await http_exchange(url, "GET", f"/v1/runs/{run_id}/events?last_event_id=0", on_body)


async def start(url: str, count: int) -> list[str]:
    async def one(index: int) -> str:
        body = bytearray()

        def on_body(data: bytes, _now: float) -> bool:
            body.extend(data)
            return False

        request = orjson.dumps({"request": f"Stream {index}.", "provider": "deepseek"})
        status = await http_exchange(url, "POST", "/v1/runs", on_body, request)
        if status >= 300:
            raise SystemExit(f"starting a run answered {status}: {body.decode()}")
        return str(orjson.loads(body)["id"])

    return list(await asyncio.gather(*(one(index) for index in range(count))))


async def phase(
    url_a: str, url_b: str, runs: int, subscribers: int
) -> tuple[list[Arrivals], list[Arrivals], float]:
    run_ids = await start(url_a, runs)
    on_a: list[Arrivals] = [{} for _ in range(runs * subscribers)]
    on_b: list[Arrivals] = [{} for _ in range(runs * subscribers)]
    joined: list[list[float]] = [[] for _ in range(2 * runs * subscribers)]
    streams = []
    for index, run_id in enumerate(run_ids):
        for offset in range(subscribers):
            slot = index * subscribers + offset
            streams.append(follow(url_b, run_id, on_b[slot], joined[2 * slot]))
            streams.append(follow(url_a, run_id, on_a[slot], joined[2 * slot + 1]))
    await asyncio.gather(*streams)
    return on_a, on_b, max(when[0] for when in joined if when)


def transaction_ids(dsn: str) -> int:
    """The cluster's next transaction id: only transactions that write take one (this
    query's own too), so the difference over a phase counts writing transactions."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        found = conn.execute("SELECT pg_current_xact_id()::text::bigint").fetchone()
    assert found is not None
    return int(found[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--subscribers", type=int, default=5, help="per run, on each daemon")
    parser.add_argument("--deltas", type=int, default=200, help="answer deltas per run")
    parser.add_argument("--pace", type=float, default=0.02, help="seconds between deltas")
    parser.add_argument("--live-flush-ms", type=int, default=None, help="[store] live_flush_ms")
    parser.add_argument("--dsn", default=None)
    args = parser.parse_args()
    config = "[orchestration]\nmax_concurrency = 256\n"
    if args.live_flush_ms is not None:
        config += f"[store]\nlive_flush_ms = {args.live_flush_ms}\n"
    with ExitStack() as stack:
        dsn = stack.enter_context(required_database_for_bench(args.dsn, durable=False))
        sim_environ = stack.enter_context(simulator(args.pace, args.deltas))
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        environ = {
            **sim_environ,
            "DEEPSEEK_API_KEY": KEY,
            "THOUGHTLINE_STORE_URL": dsn,
        }
        url_a, pid_a = stack.enter_context(serve(scratch / "a", environ, config))
        url_b, pid_b = stack.enter_context(serve(scratch / "b", environ, config))
        asyncio.run(phase(url_a, url_b, 1, 1))  # warm-up: lazy imports, first queries
        cpu_a, cpu_b, xid = cpu_seconds(pid_a), cpu_seconds(pid_b), transaction_ids(dsn)
        began = time.monotonic()
        on_a, on_b, all_joined = asyncio.run(phase(url_a, url_b, args.runs, args.subscribers))
        elapsed = time.monotonic() - began
        cpu_a, cpu_b = cpu_seconds(pid_a) - cpu_a, cpu_seconds(pid_b) - cpu_b
        committed = transaction_ids(dsn) - xid - 1
    first_on_a: Arrivals = {}
    for arrivals in on_a:
        for key, when in arrivals.items():
            if when < first_on_a.get(key, float("inf")):
                first_on_a[key] = when
    live = {key for key, when in first_on_a.items() if when > all_joined}
    lags = [
        (when - first_on_a[key]) * 1000
        for arrivals in on_b
        for key, when in arrivals.items()
        if key in live
    ]
    spread = [
        (when - first_on_a[key]) * 1000
        for arrivals in on_a
        for key, when in arrivals.items()
        if key in live
    ]
    missing = sum(
        1
        for arrivals in on_b
        for key in first_on_a
        if key[0] == next(iter(arrivals))[0] and key not in arrivals
    )
    print(
        f"{args.runs} runs x {args.subscribers} subscribers on B (and as many on A), "
        f"{args.deltas} deltas at {args.pace * 1000:.0f} ms; live flush "
        f"{args.live_flush_ms if args.live_flush_ms is not None else 'default'} ms; "
        f"load average {os.getloadavg()[0]:.2f} at the end"
    )
    print(f"events counted (delivered after every stream joined): {len(live):,}")
    print(f"events A delivered that a B stream missed: {missing}")
    for label, values in (("B (other daemon)", lags), ("A (same daemon) ", spread)):
        print(
            f"{label} later than A's first delivery (ms): p50 {percentile(values, 0.5):.1f}, "
            f"p99 {percentile(values, 0.99):.1f}, max {max(values):.1f}"
        )
    print(
        f"added by crossing daemons (B p - A p): p50 "
        f"{percentile(lags, 0.5) - percentile(spread, 0.5):+.1f} ms, p99 "
        f"{percentile(lags, 0.99) - percentile(spread, 0.99):+.1f} ms"
    )
    print(
        f"phase {elapsed:.1f} s: daemon A CPU {cpu_a:.1f} s, daemon B CPU {cpu_b:.1f} s, "
        f"writing transactions {committed} ({committed / elapsed:.0f}/s)"
    )


if __name__ == "__main__":
    main()
