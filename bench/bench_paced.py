"""CPU per delta of paced streams through the Python API, layer by layer.

A model streams a delta every few tens of milliseconds, so nearly every read brings one
frame and everything per read (waking the loop, the HTTP client, the decoder, the
runtime, the consumer) is paid per delta. The simulator (its own process) streams
``--runs`` surface-mode responses at once, one frame per ``--pace`` seconds (400
reasoning deltas, then 120 answer deltas, 5 characters each). Each contender is a fresh
process reading them all:

- *ProviderClient*: ``ProviderClient(endpoint)`` (the library's default, capture on),
  iterating the stream events: the floor, what reading the provider costs;
- *Orchestrator, awaiting the handle*: ``Orchestrator.start(...)`` and ``await handle``:
  the runtime (disclosure gate, live events, the event log and trace in SQLite);
- *Orchestrator, iterating the handle*: the same, reading every live event with
  ``async for event in handle`` as the README shows.

Each process first reads one stream, unmeasured (imports, the store's creation). Rounds
rotate the contenders; each keeps its best round by the reading process's CPU time (user +
system, its store-writing thread included).

    .venv/bin/python bench/bench_paced.py [--runs 50] [--pace 0.02] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fresh_rounds import best_rounds, print_table, report, simulator_process

SIMULATOR = """
import sys
from thoughtline.testing import Simulator, SimulatorServer, SimReasoning, Transcript
sim = Simulator(pace_s=float(sys.argv[1]), default_transcript=Transcript(
    reasoning=(SimReasoning(kind="summary", text=("think " * 400)[:2000], signature="sig"),),
    answer="word " * 120, chunk_chars=5))
server = SimulatorServer(sim).start()
print(server.url, flush=True)
sys.stdin.read()
"""
DELTAS_PER_RUN = 400 + 120  # 2,000 characters of reasoning, then 600 of answer, 5 a delta
KEY = "bench-key-0000000000"


async def provider_client(runs: int) -> int:
    from thoughtline import EndpointRegistry, ModelRequest, ProviderClient, ReasoningRequest

    endpoint = EndpointRegistry(environ=dict(os.environ)).resolve("anthropic")
    async with ProviderClient(endpoint) as client:

        async def one(number: int) -> int:
            request = ModelRequest.simple(
                "claude-sonnet-4-6", f"run {number}", reasoning=ReasoningRequest(enabled=True)
            )
            events = 0
            async with client.call(request) as call:
                async for _ in call:
                    events += 1
            return events

        return sum(await asyncio.gather(*(one(number) for number in range(runs))))


async def orchestrator(runs: int, iterate: bool) -> int:
    import thoughtline

    async with thoughtline.Orchestrator.open() as opened:

        async def one(number: int) -> int:
            handle = opened.start(f"run {number}", roles=["architect"], chain_of_thought="surface")
            events = 0
            if iterate:
                async for _ in handle:
                    events += 1
            run = await handle
            assert run.status == "completed", run.status
            return events

        return sum(await asyncio.gather(*(one(number) for number in range(runs))))


CONTENDERS = {
    "ProviderClient, iterating the stream": lambda runs: provider_client(runs),
    "Orchestrator, awaiting the handle": lambda runs: orchestrator(runs, iterate=False),
    "Orchestrator, iterating the handle": lambda runs: orchestrator(runs, iterate=True),
}


def child(name: str, runs: int) -> None:
    """One round of one contender in this fresh process. A first run, not measured, pays
    for imports and the store's creation."""
    asyncio.run(CONTENDERS[name](1))
    cpu, wall = time.process_time(), time.monotonic()
    events = asyncio.run(CONTENDERS[name](runs))
    report((time.process_time() - cpu, time.monotonic() - wall, events))


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--pace", type=float, default=0.02)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with (
        simulator_process(SIMULATOR, str(args.pace)) as url,
        tempfile.TemporaryDirectory() as folder,
    ):
        (Path(folder) / "thoughtline.toml").write_text("[orchestration]\nmax_concurrency = 256\n")

        def environment(number: int, name: str) -> tuple[dict[str, str], str]:
            home = Path(folder) / f"home-{number}-{list(CONTENDERS).index(name)}"
            return {
                **os.environ,
                "THOUGHTLINE_HOME": str(home),
                "ANTHROPIC_BASE_URL": f"{url}/anthropic",
                "ANTHROPIC_API_KEY": KEY,
            }, folder

        best = best_rounds(__file__, list(CONTENDERS), args.repeat, [str(args.runs)], environment)
    print(
        f"{args.runs} surface-mode streams at once, {DELTAS_PER_RUN} deltas each, one frame "
        f"per {args.pace * 1000:g} ms; best CPU of {args.repeat} rotating rounds, each a "
        f"process of its own; python {platform.python_version()}; load average "
        f"{os.getloadavg()[0]:.1f} at the end\n"
    )
    print_table(
        best,
        list(CONTENDERS),
        columns=("contender", "events read", "delta", "ProviderClient"),
        units=lambda _: args.runs * DELTAS_PER_RUN,
    )


if __name__ == "__main__":
    main()
