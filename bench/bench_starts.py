"""Run starts alone: N runs started at once on ``thoughtline serve``, nobody following.

``bench_daemon.py`` starts 100 provider runs while 500 SSE subscribers join and the
first runs already stream; this isolates the start itself. The runs are prepare-only
(``worker_backend: inline``: planned, stored and finished without a provider), so a
round measures what a start costs: the HTTP request through FastAPI and uvicorn,
planning, the run's creation (one transaction shared by the runs started together), and
the run's own short execution. The daemon runs in its own process on loopback (its own
THOUGHTLINE_HOME, warmed up with one run); each round POSTs N runs at once
(``asyncio.gather``) and reports the wall time until the last answer, each start's
latency, and the CPU time the daemon and this script spent meanwhile (both on this
machine).

    .venv/bin/python bench/bench_starts.py [--runs 100] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_daemon import cpu_seconds, free_port, p99, wait_until_serving


async def one_round(
    base: str, runs: int, daemon_pid: int
) -> tuple[float, list[float], float, float]:
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=runs)
    async with httpx2.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
        latencies: list[float] = []

        async def start(number: int) -> None:
            started = time.perf_counter()
            response = await client.post(
                "/v1/runs", json={"request": f"start {number}", "worker_backend": "inline"}
            )
            assert response.status_code == 202, response.text
            latencies.append(time.perf_counter() - started)

        await start(-1)  # the connection pool's first connection, not measured
        daemon_cpu, own_cpu = cpu_seconds(daemon_pid), time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(start(number) for number in range(runs)))
        wall = time.perf_counter() - started
        return (
            wall,
            latencies[1:],
            cpu_seconds(daemon_pid) - daemon_cpu,
            time.process_time() - own_cpu,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        port = free_port()
        env = {**os.environ, "THOUGHTLINE_HOME": home}
        daemon = subprocess.Popen(
            [sys.executable, "-m", "thoughtline.cli", "serve", "--port", str(port), "--no-token"],
            env=env,
            cwd=home,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        rows = []
        try:
            wait_until_serving(base)
            asyncio.run(one_round(base, 1, daemon.pid))  # warm-up: lazy imports, schemas
            for _ in range(args.repeat):
                rows.append(asyncio.run(one_round(base, args.runs, daemon.pid)))
                time.sleep(1)  # the runs of the round finish
        finally:
            daemon.terminate()
            daemon.wait(30)
    print(
        f"{args.runs} prepare-only runs started at once on thoughtline serve (loopback); "
        f"python {platform.python_version()}; load average {os.getloadavg()[0]:.1f} at the end\n"
    )
    print("| round | all started (wall) | start p50 | start p99 | daemon CPU | this script's CPU |")
    print("|---:|---:|---:|---:|---:|---:|")
    for number, (wall, latencies, daemon_cpu, own_cpu) in enumerate(rows, 1):
        latencies.sort()
        print(
            f"| {number} | {wall * 1000:.0f} ms | {latencies[len(latencies) // 2] * 1000:.0f} ms "
            f"| {p99(latencies) * 1000:.0f} ms | {daemon_cpu:.2f} s | {own_cpu:.2f} s |"
        )


if __name__ == "__main__":
    main()
