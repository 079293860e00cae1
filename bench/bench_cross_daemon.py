"""Live events across daemons: how much later a subscriber on daemon B sees each event of
a run executing on daemon A than a subscriber on A itself, both daemons sharing one
PostgreSQL store.

A subscriber on A receives events from A's in-process hub as they are emitted; one on B
receives them through the store. The figure is B's arrival minus A's arrival per event
id (p50, p99), over one run streaming several hundred deltas. It shows the cost of the
path between daemons: A writes the run's deltas to the store's event log every
``live_flush_s`` (20 ms on PostgreSQL), the append's NOTIFY wakes B's stream (about a
millisecond, see tests/store/test_announcements.py), and B reads the new events. Before
announcements B polled every 100 ms and A flushed every 100 ms: p50 about 150 ms, p99
about 200 ms.

    .venv/bin/python bench/bench_cross_daemon.py [--deltas 400] [--dsn postgresql://...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2
from tests.store.postgres_cluster import find_binaries, running_cluster
from tests.support import daemon_url

from thoughtline.testing import Simulator, SimulatorServer, Transcript
from thoughtline.wire.frames import SSEDecoder

KEY = "bench-key-0000000000"


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


@contextmanager
def postgres(dsn: str | None) -> Iterator[str]:
    if dsn is not None:
        yield dsn
        return
    binaries = find_binaries()
    if binaries is None:
        raise SystemExit("no PostgreSQL server binaries: install postgresql or pass --dsn")
    with running_cluster(binaries) as cluster:
        yield cluster.new_database()


@contextmanager
def serve(home: Path, environ: dict[str, str]) -> Iterator[str]:
    home.mkdir(parents=True)
    process = subprocess.Popen(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0", "--no-token"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **environ, "THOUGHTLINE_HOME": str(home)},
        cwd=home,
    )
    try:
        yield daemon_url(process)
    finally:
        process.terminate()
        process.wait(timeout=30)


def follow(url: str, run_id: str, arrivals: dict[int, float], ready: threading.Event) -> None:
    """Record when each event id arrives on ``url``'s SSE stream, until the run ends."""
    with (
        httpx2.Client(base_url=url, timeout=60) as client,
        client.stream(
            "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "0"}
        ) as response,
    ):
        ready.set()
        decoder = SSEDecoder()
        for chunk in response.iter_bytes():
            now = time.perf_counter()
            for frame in decoder.feed(chunk):
                if frame.id is not None:
                    arrivals.setdefault(int(frame.id), now)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=400)
    parser.add_argument("--pace", type=float, default=0.01, help="seconds between deltas")
    parser.add_argument("--dsn", default=None)
    args = parser.parse_args()
    simulator = Simulator(default_transcript=Transcript(answer="tok " * args.deltas, chunk_chars=4))
    simulator.pace_s = args.pace
    with ExitStack() as stack:
        dsn = stack.enter_context(postgres(args.dsn))
        sim = stack.enter_context(SimulatorServer(simulator))
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        environ = {**sim.environ(), "DEEPSEEK_API_KEY": KEY, "THOUGHTLINE_STORE_URL": dsn}
        url_a = stack.enter_context(serve(scratch / "a", environ))
        url_b = stack.enter_context(serve(scratch / "b", environ))
        with httpx2.Client(base_url=url_a, timeout=30) as client:
            response = client.post("/v1/runs", json={"request": "Stream.", "provider": "deepseek"})
            response.raise_for_status()
            run_id = response.json()["id"]
        on_a: dict[int, float] = {}
        on_b: dict[int, float] = {}
        threads = []
        for url, arrivals in ((url_a, on_a), (url_b, on_b)):
            ready = threading.Event()
            thread = threading.Thread(target=follow, args=(url, run_id, arrivals, ready))
            thread.start()
            ready.wait(30)
            threads.append(thread)
        for thread in threads:
            thread.join(timeout=300)
    shared = sorted(set(on_a) & set(on_b))
    lags = [(on_b[seq] - on_a[seq]) * 1000 for seq in shared if on_a[seq] <= on_b[seq]]
    print(f"events seen on both daemons: {len(shared)}")
    print(
        f"B later than A (ms): p50 {percentile(lags, 0.5):.1f}, "
        f"p99 {percentile(lags, 0.99):.1f}, max {max(lags):.1f}"
    )


if __name__ == "__main__":
    main()
