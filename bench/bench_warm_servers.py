"""Warm tool servers: what an MCP server adds to a daemon run, and to an ACP prompt, once
its session is open.

**Daemon.** ``thoughtline serve`` in its own process with ``[mcp_servers.demo]`` (the
demo server, ``python -m thoughtline.testing.demo_tools``). Pairs of runs, interleaved: a
plain run and a run offering ``demo``'s tools, each pair in the other order than the
last, each run started once the one before it finished. Each is timed from the ``POST``
to the simulator's first frame for its request (the model call began: the servers were
taken, their tools offered). The first tool run starts the server (cold, shown apart); every
later one takes the open session. *Added* is the tool run's time minus the plain run's
of the same pair, p50 and p90 over the pairs.

**ACP.** ``thoughtline acp`` in its own process, two sessions: one with the demo server
in ``mcpServers``, one without. Their prompts alternate, each timed from
``session/prompt`` to the simulator's first frame for it. Prompt 1 of the tool session
starts the server; *added* compares prompts 2..n of the two sessions, pair by pair.

The model (the simulator, in this process) answers every request with a short text and
calls no tool, so both contenders do the same work but for the servers. Targets (issue
45): under 20 ms added, for both.

    .venv/bin/python bench/bench_warm_servers.py [--runs 20] [--prompts 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_daemon import free_port, wait_until_serving
from thoughtline.testing import Simulator, SimulatorServer, Transcript

DEMO = [sys.executable, "-m", "thoughtline.testing.demo_tools"]


class FirstFrames:
    """When the simulator sent its first frame for each request text (this process's
    monotonic clock)."""

    def __init__(self, simulator: Simulator) -> None:
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        simulator.on_frame_sent = self._frame

    def _frame(self, request: Any, role: str) -> None:
        now = time.monotonic()
        text = json.dumps(request.body)
        with self._arrived:
            for marker in _markers(text):
                self._seen.setdefault(marker, now)
            self._arrived.notify_all()

    def wait(self, marker: str, timeout_s: float = 60.0) -> float:
        deadline = time.monotonic() + timeout_s
        with self._arrived:
            while marker not in self._seen:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no model request for {marker!r}")
                self._arrived.wait(left)
            return self._seen[marker]


def _markers(body: str) -> list[str]:
    """The ``bench-N`` markers a request's body holds."""
    found = []
    start = body.find("bench-")
    while start >= 0:
        end = start + 6
        while end < len(body) and body[end].isalnum():
            end += 1
        found.append(body[start:end])
        start = body.find("bench-", end)
    return found


def environment(home: Path, sim: SimulatorServer) -> dict[str, str]:
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TMPDIR") if key in os.environ}
    env.update(sim.environ())
    env.update({"THOUGHTLINE_HOME": str(home), "ANTHROPIC_API_KEY": "bench-key"})
    return env


def added(tooled: list[float], plain: list[float]) -> str:
    """The medians' difference, and the p50 and p90 of the pairs' differences."""
    pairs = sorted(tool - base for tool, base in zip(tooled, plain, strict=True))
    p90 = pairs[min(len(pairs) - 1, round(0.9 * (len(pairs) - 1)))]
    medians = statistics.median(tooled) - statistics.median(plain)
    return (
        f"added {medians * 1000:+.1f} ms (medians), pairs p50 "
        f"{statistics.median(pairs) * 1000:+.1f} ms, p90 {p90 * 1000:+.1f} ms"
    )


# -- the daemon ----------------------------------------------------------------------------
def finished(client: httpx2.Client, run_id: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while client.get(f"/v1/runs/{run_id}").json()["status"] in ("planned", "running"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {run_id} did not finish")
        time.sleep(0.005)


def bench_daemon(frames: FirstFrames, sim: SimulatorServer, runs: int, round_: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        where = Path(directory)
        (where / "thoughtline.toml").write_text(
            f"[mcp_servers.demo]\ncommand = {json.dumps(DEMO[0])}\nargs = {json.dumps(DEMO[1:])}\n"
        )
        port = free_port()
        daemon = subprocess.Popen(
            [sys.executable, "-m", "thoughtline.cli", "serve", "--port", str(port), "--no-token"],
            env=environment(where / "home", sim),
            cwd=where,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_until_serving(base)
            with httpx2.Client(base_url=base, timeout=60) as client:

                def timed(marker: str, tools: list[str] | None) -> float:
                    body: dict[str, Any] = {"request": f"Say hi. {marker}"}
                    if tools:
                        body["tools"] = tools
                    started = time.monotonic()
                    response = client.post("/v1/runs", json=body)
                    assert response.status_code == 202, response.text
                    took = frames.wait(marker) - started
                    finished(client, response.json()["id"])  # the next starts on a calm daemon
                    return took

                timed(f"bench-d{round_}warm", None)  # the first run's one-time costs
                cold = timed(f"bench-d{round_}cold", ["demo"])
                plain, tooled = [], []
                for number in range(runs):  # in turn first, so neither always follows
                    order = [(plain, None), (tooled, ["demo"])]
                    for kept, tools in order if number % 2 else reversed(order):
                        kept.append(
                            timed(f"bench-d{round_}n{number}{len(kept)}{bool(tools)}", tools)
                        )
        finally:
            daemon.terminate()
            daemon.wait(timeout=60)
    print(
        f"daemon round {round_}: plain p50 {statistics.median(plain) * 1000:.1f} ms; "
        f"first tool run {cold * 1000:.1f} ms (server start); "
        f"later tool runs p50 {statistics.median(tooled) * 1000:.1f} ms; "
        f"{added(tooled, plain)}"
    )


# -- ACP -------------------------------------------------------------------------------------
class _Editor:
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


async def bench_acp(frames: FirstFrames, sim: SimulatorServer, prompts: int, round_: int) -> None:
    from acp.helpers import text_block
    from acp.meta import PROTOCOL_VERSION
    from acp.schema import McpServerStdio
    from acp.stdio import spawn_agent_process

    with tempfile.TemporaryDirectory() as directory:
        where = Path(directory)
        async with spawn_agent_process(
            _Editor(),  # type: ignore[arg-type]
            sys.executable,
            "-m",
            "thoughtline.cli",
            "acp",
            env=environment(where / "home", sim),
            cwd=str(where),
            transport_kwargs={"stderr": subprocess.DEVNULL},
        ) as (conn, _process):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            demo = McpServerStdio(name="demo", command=DEMO[0], args=DEMO[1:], env=[])
            tooled_session = (await conn.new_session(cwd=str(where), mcp_servers=[demo])).session_id
            plain_session = (await conn.new_session(cwd=str(where), mcp_servers=[])).session_id

            async def timed(session_id: str, marker: str) -> float:
                started = time.monotonic()
                prompting = asyncio.ensure_future(
                    conn.prompt(session_id=session_id, prompt=[text_block(f"Say hi. {marker}")])
                )
                arrived = await asyncio.to_thread(frames.wait, marker)
                await prompting
                return arrived - started

            plain, tooled = [], []
            for number in range(prompts):
                plain.append(await timed(plain_session, f"bench-a{round_}p{number}"))
                tooled.append(await timed(tooled_session, f"bench-a{round_}t{number}"))
    print(
        f"acp round {round_}: prompt 1 with the server {tooled[0] * 1000:.1f} ms "
        f"(server start), without {plain[0] * 1000:.1f} ms; prompts 2..{prompts} "
        f"plain p50 {statistics.median(plain[1:]) * 1000:.1f} ms, with the server "
        f"p50 {statistics.median(tooled[1:]) * 1000:.1f} ms; {added(tooled[1:], plain[1:])}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="tool/plain run pairs per round")
    parser.add_argument("--prompts", type=int, default=10, help="prompts per ACP session")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sim = Simulator(default_transcript=Transcript(answer="Hi."))
    frames = FirstFrames(sim)
    print(f"load average {os.getloadavg()[0]:.2f}, {platform.python_version()}")
    with SimulatorServer(sim) as server:
        for round_ in range(args.repeat):
            bench_daemon(frames, server, args.runs, round_)
            asyncio.run(bench_acp(frames, server, args.prompts, round_))
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
