"""Stream decoding throughput against the official SDKs, on identical bytes.

Every contender reads the same recorded-shape stream through an ``httpx2.MockTransport``
(no sockets), in the same process and run, so the ratios compare like with like:

- thoughtline: ``ProviderClient`` as a library user gets it (its default: the response
  body captured for ``call.exchange``, redacted as it streams), ``ProviderClient`` with
  ``capture_body=False`` (what the runtime uses unless ``trace.provider_raw`` is on), and
  the sans-IO decoder alone;
- anthropic SDK: raw ``messages.create(stream=True)`` iteration, and the accumulating
  ``messages.stream()`` helper;
- openai SDK: raw ``responses.create(stream=True)`` iteration, and the accumulating
  ``responses.stream()`` helper.

Throughput is wire events (SSE frames) per second; each figure is the best of
``--repeat`` runs.

``--loopback`` serves the same bytes from a server in its own process on 127.0.0.1
instead (written as fast as the socket takes them), and every contender reads them with
its own default HTTP client: ``ProviderClient`` with the transport it builds itself, the
SDKs with theirs. That is the default path each gives its users, network included; the
server's CPU is not counted (another process). Then a scaling run: 10k, 100k and 1M reasoning deltas through the
decoder and accumulator, with time per delta and peak memory per byte of text.

    .venv/bin/python bench/bench_streams.py [--deltas 40000] [--repeat 5] [--sizes ...]
    .venv/bin/python bench/bench_streams.py --capture-cost 12   # capture on vs off only
    .venv/bin/python bench/bench_streams.py --loopback --repeat 7 --sizes ""
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2

import stream_server
from thoughtline.model.accumulator import ResponseAccumulator
from thoughtline.model.requests import ModelRequest, ReasoningRequest
from thoughtline.providers.base import CallContext
from thoughtline.providers.capabilities import builtin_capabilities
from thoughtline.providers.client import ProviderClient
from thoughtline.providers.endpoints import EndpointRegistry, EndpointSettings
from thoughtline.testing.renderers.anthropic import AnthropicRenderer
from thoughtline.testing.renderers.openai_responses import OpenAIResponsesRenderer
from thoughtline.testing.transcript import SimReasoning, SimRequest, Transcript

ANTHROPIC_MODEL = "claude-sonnet-4-6"
OPENAI_MODEL = "gpt-5.5"
KEY = "bench-key-0000000000"

LOOPBACK: str | None = None
"""With ``--loopback``: the stream server's base URL (None: MockTransport)."""


def transcript(deltas: int) -> Transcript:
    # Four characters a delta; reasoning takes ~90% of the deltas, as in a real
    # reasoning-heavy answer.
    reasoning_chars = deltas * 9 // 10 * 4
    answer_chars = deltas // 10 * 4
    return Transcript(
        reasoning=(
            SimReasoning(
                kind="summary", text=("thé " * reasoning_chars)[:reasoning_chars], signature="sig"
            ),
        ),
        answer=("ans " * answer_chars)[:answer_chars],
        chunk_chars=4,
    )


def anthropic_bytes(deltas: int) -> bytes:
    request = SimRequest(
        method="POST",
        path="/v1/messages",
        query={},
        headers={},
        body={
            "model": ANTHROPIC_MODEL,
            "stream": True,
            "thinking": {"type": "adaptive", "display": "summarized"},
        },
        profile="anthropic",
        model=ANTHROPIC_MODEL,
        stream=True,
    )
    return b"".join(f.data for f in AnthropicRenderer().stream_frames(transcript(deltas), request))


def openai_bytes(deltas: int) -> bytes:
    request = SimRequest(
        method="POST",
        path="/v1/responses",
        query={},
        headers={},
        body={
            "model": OPENAI_MODEL,
            "stream": True,
            "reasoning": {"summary": "auto"},
            "include": ["reasoning.encrypted_content"],
        },
        profile="openai",
        model=OPENAI_MODEL,
        stream=True,
    )
    return b"".join(
        f.data for f in OpenAIResponsesRenderer().stream_frames(transcript(deltas), request)
    )


def mock_http(data: bytes) -> httpx2.AsyncClient:
    def handler(request: httpx2.Request) -> httpx2.Response:
        # One chunk per frame, as a socket would deliver a paced stream.
        chunks = [frame + b"\n\n" for frame in data.split(b"\n\n") if frame]
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, stream=_Chunks(chunks)
        )

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handler))


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        for chunk in self.chunks:
            yield chunk


async def thoughtline_run(
    endpoint_name: str, model: str, data: bytes, capture_body: bool | None
) -> None:
    """``capture_body=None`` leaves ProviderClient's default alone (the path a library user
    gets without choosing)."""
    environ = {"ANTHROPIC_API_KEY": KEY, "OPENAI_API_KEY": KEY}
    if LOOPBACK is not None:
        base_url = LOOPBACK + ("/v1" if endpoint_name == "openai" else "")
        settings = {endpoint_name: EndpointSettings(base_url=base_url)}
        endpoint = EndpointRegistry(environ=environ, settings=settings).resolve(endpoint_name)
        options = {} if capture_body is None else {"capture_body": capture_body}
        async with ProviderClient(endpoint, **options) as client:  # its own default transport
            await _complete(client, model, data)
        return
    endpoint = EndpointRegistry(environ=environ).resolve(endpoint_name)
    if capture_body is None:
        client = ProviderClient(endpoint, http_client=mock_http(data))
    else:
        client = ProviderClient(endpoint, http_client=mock_http(data), capture_body=capture_body)
    await _complete(client, model, data)


async def _complete(client: ProviderClient, model: str, data: bytes) -> None:
    request = ModelRequest.simple(model, "bench", reasoning=ReasoningRequest(enabled=True))
    call = await client.complete(request)
    assert call.response.error is None, call.response.error
    assert call.response.text
    assert call.exchange is not None
    body = call.exchange.response_body
    assert (body is not None) is client.capture_body
    assert body is None or len(body) == len(data)  # the whole stream kept (nothing to redact)


def decoder_only(endpoint_name: str, model: str, data: bytes) -> Callable[[], Awaitable[None]]:
    endpoint = EndpointRegistry(environ={}).resolve(endpoint_name)
    capability = builtin_capabilities().lookup(endpoint_name, model)
    context = CallContext(endpoint=endpoint, capability=capability)
    request = ModelRequest.simple(model, "bench", reasoning=ReasoningRequest(enabled=True))
    chunks = [frame + b"\n\n" for frame in data.split(b"\n\n") if frame]
    from thoughtline.providers.registry import wire_for

    adapter = wire_for(endpoint.wire_api)

    async def run() -> None:
        decoder = adapter.new_decoder(request, context)
        accumulator = ResponseAccumulator()
        add = accumulator.add
        for chunk in chunks:
            for event in decoder.feed(chunk):
                add(event)
        for event in decoder.close():
            add(event)
        assert accumulator.result().text

    return run


def _sdk_http(data: bytes, prefix: str) -> dict[str, Any]:
    """An SDK client's base URL and HTTP client: its own default one over loopback."""
    if LOOPBACK is not None:
        return {"base_url": LOOPBACK + prefix}
    return {"base_url": "http://bench.test" + prefix, "http_client": mock_http(data)}


async def anthropic_raw(data: bytes) -> None:
    import anthropic

    client = anthropic.AsyncAnthropic(api_key=KEY, max_retries=0, **_sdk_http(data, ""))
    stream = await client.messages.create(
        model=ANTHROPIC_MODEL,
        max_tokens=64000,
        messages=[{"role": "user", "content": "bench"}],
        stream=True,
    )
    async for _ in stream:
        pass


async def anthropic_helper(data: bytes) -> None:
    import anthropic

    client = anthropic.AsyncAnthropic(api_key=KEY, max_retries=0, **_sdk_http(data, ""))
    async with client.messages.stream(
        model=ANTHROPIC_MODEL, max_tokens=64000, messages=[{"role": "user", "content": "bench"}]
    ) as stream:
        async for _ in stream:
            pass
        message = await stream.get_final_message()
    assert message.content


async def openai_raw(data: bytes) -> None:
    import openai

    client = openai.AsyncOpenAI(api_key=KEY, max_retries=0, **_sdk_http(data, "/v1"))
    stream = await client.responses.create(model=OPENAI_MODEL, input="bench", stream=True)
    async for _ in stream:
        pass


async def openai_helper(data: bytes) -> None:
    import openai

    client = openai.AsyncOpenAI(api_key=KEY, max_retries=0, **_sdk_http(data, "/v1"))
    async with client.responses.stream(model=OPENAI_MODEL, input="bench") as stream:
        async for _ in stream:
            pass
        response = await stream.get_final_response()
    assert response.output


DEFAULT = "thoughtline ProviderClient, default (capture on)"
CAPTURE_OFF = "thoughtline ProviderClient, capture_body=False"


def frames_in(data: bytes) -> int:
    return sum(1 for frame in data.split(b"\n\n") if frame.strip())


async def throughput(deltas: int, repeat: int) -> list[tuple[str, str, float, float, float]]:
    """Contenders run interleaved, round after round (in an order rotated each round), so
    a noisy neighbour slows all of them alike; each keeps its best round, by wall time and
    (separately) by this process's CPU time, which other processes on a shared machine
    disturb much less."""
    rows: list[tuple[str, str, float, float, float]] = []
    for stream_name, endpoint_name, model, data, sdk_raw, sdk_helper, sdk in (
        (
            "anthropic-messages",
            "anthropic",
            ANTHROPIC_MODEL,
            anthropic_bytes(deltas),
            anthropic_raw,
            anthropic_helper,
            "anthropic",
        ),
        (
            "openai-responses",
            "openai",
            OPENAI_MODEL,
            openai_bytes(deltas),
            openai_raw,
            openai_helper,
            "openai",
        ),
    ):
        contenders: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            (
                DEFAULT,
                lambda e=endpoint_name, m=model, d=data: thoughtline_run(e, m, d, None),
            ),
            (
                CAPTURE_OFF,
                lambda e=endpoint_name, m=model, d=data: thoughtline_run(e, m, d, False),
            ),
            ("thoughtline decoder only", decoder_only(endpoint_name, model, data)),
            (f"{sdk} SDK raw iteration", lambda r=sdk_raw, d=data: r(d)),
            (
                f"{sdk} SDK {'messages' if sdk == 'anthropic' else 'responses'}.stream()",
                lambda h=sdk_helper, d=data: h(d),
            ),
        ]
        best = {label: float("inf") for label, _ in contenders}
        best_cpu = {label: float("inf") for label, _ in contenders}
        for number in range(repeat):
            # Rotated each round: whoever runs right after the SDK helpers (which leave
            # the allocator busy) changes, so no contender always pays for it.
            shift = number % len(contenders)
            for label, run in contenders[shift:] + contenders[:shift]:
                gc.collect()
                started = time.perf_counter()
                started_cpu = time.process_time()
                await run()
                best_cpu[label] = min(best_cpu[label], time.process_time() - started_cpu)
                best[label] = min(best[label], time.perf_counter() - started)
        frames = frames_in(data)
        for label, _ in contenders:
            rows.append((stream_name, label, frames / best[label], best[label], best_cpu[label]))
    return rows


async def capture_cost(deltas: int, repeat: int) -> list[tuple[str, float, float]]:
    """Only the two ProviderClient paths, alternating ``repeat`` times: the cost of the
    default capture (redacted as it streams) over capture off, by best CPU time."""
    rows = []
    for stream_name, endpoint_name, model, data in (
        ("anthropic-messages", "anthropic", ANTHROPIC_MODEL, anthropic_bytes(deltas)),
        ("openai-responses", "openai", OPENAI_MODEL, openai_bytes(deltas)),
    ):
        best: dict[bool | None, float] = {None: float("inf"), False: float("inf")}
        for _ in range(repeat):
            for capture in (None, False):
                gc.collect()
                started = time.process_time()
                await thoughtline_run(endpoint_name, model, data, capture)
                best[capture] = min(best[capture], time.process_time() - started)
        rows.append((stream_name, best[None], best[False]))
    return rows


def scaling(sizes: list[int]) -> list[tuple[int, float, float, int, float]]:
    rows = []
    for size in sizes:
        data = anthropic_bytes(size)
        run = decoder_only("anthropic", ANTHROPIC_MODEL, data)
        gc.collect()
        started = time.perf_counter()
        asyncio.run(run())
        seconds = time.perf_counter() - started
        tracemalloc.start()
        asyncio.run(run())
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        text_bytes = size * 4
        rows.append((size, seconds, seconds / size * 1e6, peak, peak / text_bytes))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=40_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument(
        "--capture-cost",
        type=int,
        metavar="N",
        help="only compare the default capture with capture off, best CPU time of N each",
    )
    parser.add_argument(
        "--loopback",
        action="store_true",
        help="read from a server on 127.0.0.1, each contender with its default HTTP client",
    )
    args = parser.parse_args()
    if args.loopback:
        with tempfile.TemporaryDirectory() as folder:
            files = {
                "/v1/messages": Path(folder, "anthropic"),
                "/v1/responses": Path(folder, "openai"),
            }
            files["/v1/messages"].write_bytes(anthropic_bytes(args.deltas))
            files["/v1/responses"].write_bytes(openai_bytes(args.deltas))
            server, url = stream_server.start(files)
            try:
                global LOOPBACK
                LOOPBACK = url
                print("over loopback, each contender with its default HTTP client")
                _report(args)
            finally:
                server.kill()
                server.wait(timeout=30)
        return
    _report(args)


def _report(args: argparse.Namespace) -> None:
    if args.capture_cost:
        print(f"{args.deltas} deltas, best CPU time of {args.capture_cost}, alternating\n")
        print("| stream | default (capture on) CPU s | capture off CPU s | capture cost |")
        print("|---|---:|---:|---:|")
        for stream, on, off in asyncio.run(capture_cost(args.deltas, args.capture_cost)):
            print(f"| {stream} | {on:.3f} | {off:.3f} | {on / off - 1:+.1%} |")
        print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
        return
    import anthropic
    import openai

    print(
        f"python {platform.python_version()} on {platform.machine()}, httpx2 {httpx2.__version__}, anthropic {anthropic.__version__}, openai {openai.__version__}"
    )
    print(f"\n## Throughput: {args.deltas} deltas per stream, best of {args.repeat}\n")
    print(
        "| stream | reader | wire events/s (wall) | wall s | CPU s "
        "| default ProviderClient vs this: wall | CPU | capture off vs this: wall | CPU |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = asyncio.run(throughput(args.deltas, args.repeat))
    default = {stream: (wall, cpu) for stream, label, _, wall, cpu in rows if label == DEFAULT}
    off = {stream: (wall, cpu) for stream, label, _, wall, cpu in rows if label == CAPTURE_OFF}
    for stream, label, rate, wall, cpu in rows:
        print(
            f"| {stream} | {label} | {rate:,.0f} | {wall:.3f} | {cpu:.3f} "
            f"| {wall / default[stream][0]:.2f}x | {cpu / default[stream][1]:.2f}x "
            f"| {wall / off[stream][0]:.2f}x | {cpu / off[stream][1]:.2f}x |"
        )
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    if not args.sizes:
        return
    print("\n## Scaling: reasoning deltas through decoder + accumulator (anthropic stream)\n")
    print("| deltas | seconds | µs per delta | peak memory | peak bytes per text byte |")
    print("|---:|---:|---:|---:|---:|")
    for size, seconds, per_delta, peak, per_byte in scaling(
        [int(s) for s in args.sizes.split(",")]
    ):
        print(
            f"| {size:,} | {seconds:.2f} | {per_delta:.2f} | {peak / 1e6:.1f} MB | {per_byte:.1f} |"
        )


if __name__ == "__main__":
    main()
