"""Provider transport: CPU per streamed chunk, httpx2's own transport against the default.

The simulator runs in its own process and streams ``--streams`` answers at once, one
frame per ``--pace`` seconds (so nearly every read brings one frame, as from a real
provider). A fresh process reads them all through ``httpx2.AsyncClient.stream`` the way
the provider client reads a body (``iter_body``), with one of:

- httpx2's own transport (httpcore2: h11 in pure Python, anyio);
- the transport thoughtline uses by default (``AiohttpTransport``: aiohttp, llhttp in C);
- the same with asyncio's own read size (``READ_BYTES`` set to asyncio's 256 KiB): a new
  256 KiB buffer per read, which glibc maps and unmaps for each read unless something
  earlier in the process raised its mmap threshold. That history is why every round is a
  process of its own.

Rounds rotate the contenders; each keeps its best round by the reading process's CPU
time (user + system), which is what the reading costs; wall time is the pace's.

    .venv/bin/python bench/bench_transport.py [--streams 100] [--frames 300]
        [--pace 0.01] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fresh_rounds import best_rounds, print_table, report, simulator_process
from thoughtline.providers import transport
from thoughtline.providers._capture import iter_body
from thoughtline.providers.transport import default_http_client

SIMULATOR = """
import sys
from thoughtline.testing import Simulator, SimulatorServer, Transcript
sim = Simulator(pace_s=float(sys.argv[1]), default_transcript=Transcript(
    answer="word " * int(sys.argv[2]), chunk_chars=5))
server = SimulatorServer(sim).start()
print(server.url, flush=True)
sys.stdin.read()
"""

BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 100,
    "stream": True,
    "messages": [{"role": "user", "content": "hi"}],
}
HEADERS = {"x-api-key": "bench-key", "anthropic-version": "2023-06-01"}


def httpx2_own() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(timeout=60, limits=httpx2.Limits(max_connections=None))


def thoughtline_default() -> httpx2.AsyncClient:
    return default_http_client(httpx2.Timeout(60))


def asyncio_read_size() -> httpx2.AsyncClient:
    transport.READ_BYTES = 256 * 1024  # asyncio's max_size: the reads are left as they are
    return default_http_client(httpx2.Timeout(60))


CONTENDERS: dict[str, Callable[[], httpx2.AsyncClient]] = {
    "httpx2's own transport (httpcore2, h11)": httpx2_own,
    "thoughtline default (AiohttpTransport)": thoughtline_default,
    "thoughtline default, asyncio's 256 KiB reads": asyncio_read_size,
}


async def read_all(url: str, streams: int, build: Callable[[], httpx2.AsyncClient]) -> int:
    async with build() as http:

        async def one() -> int:
            chunks = 0
            async with http.stream("POST", url, json=BODY, headers=HEADERS) as response:
                async for _ in iter_body(response):
                    chunks += 1
            return chunks

        return sum(await asyncio.gather(*(one() for _ in range(streams))))


def child(name: str, url: str, streams: int) -> None:
    """One round of one contender, in this fresh process."""
    cpu, wall = time.process_time(), time.monotonic()
    chunks = asyncio.run(read_all(url, streams, CONTENDERS[name]))
    report((time.process_time() - cpu, time.monotonic() - wall, chunks))


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--frames", type=int, default=300, help="answer deltas per stream")
    parser.add_argument("--pace", type=float, default=0.01)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with simulator_process(SIMULATOR, str(args.pace), str(args.frames)) as base:
        url = base + "/anthropic/v1/messages"
        best = best_rounds(__file__, list(CONTENDERS), args.repeat, [url, str(args.streams)])
    print(
        f"{args.streams} streams at once, {args.frames} deltas each, one frame per "
        f"{args.pace * 1000:g} ms; best CPU of {args.repeat} rotating rounds, each a process "
        f"of its own; python "
        f"{platform.python_version()}, httpx2 {httpx2.__version__}, aiohttp "
        f"{aiohttp.__version__}; load average {os.getloadavg()[0]:.1f} at the end\n"
    )
    print_table(
        best,
        list(CONTENDERS),
        columns=("transport", "chunks read", "chunk", "httpx2's own"),
        units=lambda chunks: chunks,
    )


if __name__ == "__main__":
    main()
