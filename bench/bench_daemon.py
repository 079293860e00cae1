"""Daemon fan-out: 100 concurrent runs, 5 SSE subscribers each, on loopback.

Three processes share the machine's monotonic clock (CLOCK_MONOTONIC):

1. the provider simulator, streaming each answer at a fixed pace and recording when it
   handed every answer frame to the socket;
2. ``thoughtline serve`` (the daemon under test, its own THOUGHTLINE_HOME);
3. this script: it starts the runs over the API and holds 5 SSE subscribers per run,
   recording when each ``answer.delta`` arrives.

Latency is subscriber arrival minus simulator emission for the same delta (the k-th
answer frame of a run ↔ its k-th ``answer.delta``). Also reported: events/second
delivered to all subscribers, and the daemon's memory per active run (RSS while the runs
stream, minus RSS when idle, divided by the number of runs).

    .venv/bin/python bench/bench_daemon.py [--runs 100] [--subscribers 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

from thoughtline.wire.frames import SSEDecoder

SIMULATOR = """
import json, sys, time
from thoughtline.testing import Simulator, SimulatorServer, Transcript
sim = Simulator(pace_s=float(sys.argv[1]), default_transcript=Transcript(answer="word " * 120, chunk_chars=10))  # CHUNK_CHARS
sent = []
def on_frame(request, role):
    if role == "text":
        sent.append((json.dumps(request.body), time.monotonic()))
sim.on_frame_sent = on_frame
server = SimulatorServer(sim).start()
print(server.url, flush=True)
sys.stdin.read()
json.dump(sent, open(sys.argv[2], "w"))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


CHUNK_CHARS = 10  # the simulator's answer arrives in deltas of this many characters


async def subscribe(
    client: httpx2.AsyncClient, base: str, run_id: str, arrivals: dict[int, float]
) -> int:
    """Read one SSE stream to its end; record when each answer delta arrived, keyed by
    the delta's position in the answer (a subscriber that joins mid-run starts from the
    partial answer folded into its snapshot)."""
    decoder = SSEDecoder()
    count = 0
    position = 0
    async with client.stream("GET", f"{base}/v1/runs/{run_id}/events") as response:
        async for chunk in response.aiter_bytes():
            now = time.monotonic()
            for frame in decoder.feed(chunk):
                count += 1
                if frame.event == "snapshot":
                    output = json.loads(frame.data)["tasks"][0]["output"] or ""
                    position = len(output) // CHUNK_CHARS
                elif frame.event == "answer.delta":
                    arrivals[position] = now
                    position += 1
                elif frame.event.startswith("run.") and frame.event != "run.started":
                    return count
    return count


async def drive(
    base: str, runs: int, subscribers: int, daemon_pid: int
) -> tuple[dict[str, list[dict[int, float]]], float, int, int]:
    """Start the runs one after another, each followed at once by its subscribers."""
    limits = httpx2.Limits(max_connections=runs * subscribers + 20)
    async with httpx2.AsyncClient(timeout=120, limits=limits) as client:
        idle = rss_kib(daemon_pid)
        arrivals: dict[str, list[dict[int, float]]] = {}
        tasks = []
        started = time.monotonic()
        for index in range(runs):
            request = f"bench run {index}"
            response = await client.post(
                f"{base}/v1/runs", json={"request": request, "chain_of_thought": "hidden"}
            )
            response.raise_for_status()
            run_id = response.json()["id"]
            arrivals[request] = [{} for _ in range(subscribers)]
            tasks += [
                asyncio.ensure_future(subscribe(client, base, run_id, arrivals[request][n]))
                for n in range(subscribers)
            ]
        await asyncio.sleep(0.5)
        busy = rss_kib(daemon_pid)
        delivered = sum(await asyncio.gather(*tasks))
        elapsed = time.monotonic() - started
        return arrivals, elapsed, delivered, max(busy - idle, 0)


async def direct_baseline(sim_url: str, runs: int) -> dict[str, list[dict[int, float]]]:
    """The same number of concurrent streams read straight from the simulator by
    ``ProviderClient`` (no daemon): the floor the daemon's latency is compared to."""
    from thoughtline import EndpointRegistry, ModelRequest, ProviderClient, TextDelta

    environ = {
        "ANTHROPIC_BASE_URL": f"{sim_url}/anthropic",
        "ANTHROPIC_API_KEY": "bench-key-0000000000",
    }
    endpoint = EndpointRegistry(environ=environ).resolve("anthropic")
    arrivals: dict[str, list[dict[int, float]]] = {}
    http = httpx2.AsyncClient(limits=httpx2.Limits(max_connections=runs + 10), timeout=120)
    async with ProviderClient(endpoint, http_client=http) as client:

        async def one(request: str) -> None:
            received: dict[int, float] = {}
            arrivals[request] = [received]
            async with client.call(ModelRequest.simple("claude-sonnet-4-6", request)) as call:
                async for event in call:
                    if isinstance(event, TextDelta):
                        received[len(received)] = time.monotonic()

        await asyncio.gather(*(one(f"direct run {index}") for index in range(runs)))
    await http.aclose()
    return arrivals


def latencies_of(
    arrivals: dict[str, list[dict[int, float]]], sent: dict[str, list[float]]
) -> list[float]:
    values = []
    for request, per_subscriber in arrivals.items():
        emitted = sent.get(request, [])
        for received in per_subscriber:
            values += [
                (at - emitted[index]) * 1000
                for index, at in received.items()
                if index < len(emitted)
            ]
    return sorted(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--subscribers", type=int, default=5)
    parser.add_argument("--pace", type=float, default=0.02, help="seconds between simulator frames")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        sent_path = Path(folder) / "sent.json"
        simulator = subprocess.Popen(
            [sys.executable, "-c", SIMULATOR, str(args.pace), str(sent_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert simulator.stdout is not None
        assert simulator.stdin is not None
        sim_url = simulator.stdout.readline().strip()
        port = free_port()
        home = Path(folder) / "home"
        (Path(folder) / "thoughtline.toml").write_text("[orchestration]\nmax_concurrency = 256\n")
        env = {
            **os.environ,
            "THOUGHTLINE_HOME": str(home),
            "ANTHROPIC_BASE_URL": f"{sim_url}/anthropic",
            "ANTHROPIC_API_KEY": "bench-key-0000000000",
        }
        daemon = subprocess.Popen(
            [sys.executable, "-m", "thoughtline.cli", "serve", "--port", str(port)],
            env=env,
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                try:
                    if httpx2.get(f"{base}/v1/runs?limit=1", timeout=1).status_code == 200:
                        break
                except httpx2.TransportError:
                    time.sleep(0.1)
            baseline = asyncio.run(direct_baseline(sim_url, args.runs))
            arrivals, elapsed, delivered, extra_kib = asyncio.run(
                drive(base, args.runs, args.subscribers, daemon.pid)
            )
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
            simulator.stdin.close()
            simulator.wait(timeout=30)
        sent: dict[str, list[float]] = {}
        for body, at in json.loads(sent_path.read_text()):
            request = next(
                m["content"] for m in json.loads(body)["messages"] if m["role"] == "user"
            )
            sent.setdefault(request, []).append(at)
    latencies = latencies_of(arrivals, sent)
    floor = latencies_of(baseline, sent)

    def p99(values: list[float]) -> float:
        return values[int(0.99 * (len(values) - 1))]

    print(
        f"{args.runs} concurrent runs x {args.subscribers} SSE subscribers, simulator pacing {args.pace * 1000:.0f} ms/frame, all on loopback\n"
    )
    print(
        "| path | delta latency p50 | p99 | max | events delivered | events/s delivered | daemon RSS per active run |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(
        f"| direct ProviderClient, {args.runs} streams (baseline) | {statistics.median(floor):.1f} ms | {p99(floor):.1f} ms | {floor[-1]:.1f} ms | - | - | - |"
    )
    print(
        f"| daemon: runtime + SSE to {args.runs * args.subscribers} subscribers | {statistics.median(latencies):.1f} ms | {p99(latencies):.1f} ms | {latencies[-1]:.1f} ms "
        f"| {delivered:,} | {delivered / elapsed:,.0f} | {extra_kib / args.runs:,.0f} KiB |"
    )
    print(
        f"\nlatency added by the daemon: p50 {statistics.median(latencies) - statistics.median(floor):+.1f} ms, p99 {p99(latencies) - p99(floor):+.1f} ms"
    )
    print(
        f"({len(latencies):,} subscriber deltas and {len(floor):,} baseline deltas matched to their emission; daemon phase wall time {elapsed:.1f} s)"
    )


if __name__ == "__main__":
    main()
