"""CLI tool run start-up: from the ``thoughtline run`` process starting to its first model
request reaching the simulator, for a plain run and for a tool run with the demo MCP
server (``examples/mcp.json``), its tool list cached (warm) and not (cold).

The simulator runs in this process and notes when each request arrives, so a round is
``perf_counter`` at the request minus ``perf_counter`` before the process was started.
The rounds are interleaved (plain, cold, warm, ...); *cold* removes the home's
``tool-lists`` folder first, *warm* runs after a cold round wrote it. Each keeps its best
round (the medians are printed too: on a shared machine they move with the load). For scale, the
demo server's own start: spawn it and list its tools with the ``mcp`` SDK's stdio client
(``initialize`` and ``tools/list`` answered), nothing of thoughtline's around it.

Targets (issue 45): warm within 50 ms of plain; cold within the server's own start plus
50 ms of plain.

    .venv/bin/python bench/bench_tool_start.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from thoughtline.testing import Simulator, SimulatorServer, Transcript

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("plain", "tool, cold cache", "tool, warm cache")


class ArrivalSimulator(Simulator):
    """The simulator, noting when each model request arrives."""

    def __init__(self) -> None:
        super().__init__(default_transcript=Transcript(answer="Done."))
        self.arrived: list[float] = []
        self.lock = threading.Lock()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            with self.lock:
                self.arrived.append(time.perf_counter())
        await super().__call__(scope, receive, send)


def first_request_s(simulator: ArrivalSimulator, args: list[str], environ: dict[str, str]) -> float:
    with simulator.lock:
        simulator.arrived.clear()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *args],
        cwd=ROOT,
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"thoughtline {' '.join(args)} failed: {done.stderr.strip()}")
    with simulator.lock:
        return simulator.arrived[0] - started


async def server_own_start() -> float:
    """The demo server spawned and its tools listed with the mcp SDK alone."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(
        command=str(ROOT / ".venv/bin/python"),
        args=["-m", "thoughtline.testing.demo_tools", "--root", str(ROOT / "examples")],
        cwd=str(ROOT),
    )
    started = time.perf_counter()
    async with (
        stdio_client(parameters) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await session.list_tools()
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    simulator = ArrivalSimulator()
    with SimulatorServer(simulator) as server, tempfile.TemporaryDirectory() as home:
        environ = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("THOUGHTLINE_") and not key.endswith("_API_KEY")
        }
        environ |= server.environ() | {
            "THOUGHTLINE_HOME": home,
            "ANTHROPIC_API_KEY": "sk-bench-not-a-key",
        }
        plain = ["run", "--json", "What time is it?"]
        tool = [*plain, "--mcp-config", "examples/mcp.json", "--tool", "demo"]
        cache = Path(home) / "tool-lists"
        first_request_s(simulator, plain, environ)  # unmeasured: bytecode, the store
        found: dict[str, list[float]] = {kind: [] for kind in KINDS}
        own: list[float] = []
        for _ in range(options.repeat):
            found["plain"].append(first_request_s(simulator, plain, environ))
            shutil.rmtree(cache, ignore_errors=True)
            found["tool, cold cache"].append(first_request_s(simulator, tool, environ))
            found["tool, warm cache"].append(first_request_s(simulator, tool, environ))
            own.append(asyncio.run(server_own_start()))
    load = os.getloadavg()[0]
    print(f"{options.repeat} rounds each, interleaved; load average {load:.1f}\n")
    print("| run | best | above plain (best) | median |")
    print("|---|---:|---:|---:|")
    base = min(found["plain"])
    for kind in KINDS:
        best = min(found[kind])
        above = "" if kind == "plain" else f"{(best - base) * 1000:+,.0f} ms"
        median = statistics.median(found[kind])
        print(f"| {kind} | {best * 1000:,.0f} ms | {above} | {median * 1000:,.0f} ms |")
    own_best = min(own)
    print(
        f"| the demo server's own start (mcp SDK) | {own_best * 1000:,.0f} ms | | "
        f"{statistics.median(own) * 1000:,.0f} ms |\n"
    )
    warm = (min(found["tool, warm cache"]) - base) * 1000
    cold = (min(found["tool, cold cache"]) - base - own_best) * 1000
    print(f"warm above plain: {warm:+.0f} ms (target within 50 ms)")
    print(f"cold above plain and the server's own start: {cold:+.0f} ms (target at most 50 ms)")


if __name__ == "__main__":
    main()
