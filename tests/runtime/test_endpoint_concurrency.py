"""``[providers.NAME] max_concurrency``: against a real loopback server that, like
llama.cpp's Python server, serves one request at a time and drops the stream it is
serving when the next request arrives."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from thoughtline.config import Config
from thoughtline.providers.client import RetryPolicy
from thoughtline.providers.endpoints import EndpointSettings
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.store.sqlite import SQLiteStore

WORDS = [f"word{n} " for n in range(12)]


def _chunk(payload: dict[str, object]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


@asynccontextmanager
async def one_at_a_time_server() -> AsyncIterator[tuple[str, list[int]]]:
    """A Chat Completions server that aborts the stream it serves when a request comes;
    yields its base URL and how many streams it dropped."""
    serving: list[asyncio.StreamWriter] = []
    dropped = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)
        for other in serving:
            other.transport.abort()  # the next request interrupts the one being served
            dropped[0] += 1
        serving[:] = [writer]
        try:
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
            )
            for word in WORDS:
                chunk = {"choices": [{"index": 0, "delta": {"content": word}}]}
                writer.write(_chunk(chunk))
                await writer.drain()
                await asyncio.sleep(0.02)
            done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            writer.write(_chunk(done) + b"data: [DONE]\n\n")
            await writer.drain()
        except (ConnectionError, RuntimeError):
            return
        finally:
            if writer in serving:
                serving.remove(writer)
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1", dropped
    finally:
        server.close()
        await server.wait_closed()


def runtime_for(tmp_path: Path, base_url: str, limit: int | None) -> Runtime:
    endpoint = EndpointSettings(wire_api="openai-chat", base_url=base_url, max_concurrency=limit)
    return Runtime(
        config=Config(path=None, providers={"local": endpoint}),
        store=SQLiteStore(tmp_path / "thoughtline.db"),
        environ={},
        retry=RetryPolicy(max_retries=0),
    )


SPEC = RunSpec(
    request="Say twelve words.",
    tasks=(
        TaskSpec(name="first", role="engineer", provider="local", model="small"),
        TaskSpec(name="second", role="reviewer", provider="local", model="small"),
    ),
)


async def test_without_a_limit_the_dropped_task_names_the_likely_cause(tmp_path: Path) -> None:
    async with one_at_a_time_server() as (base_url, dropped):
        runtime = runtime_for(tmp_path, base_url, None)
        run = await runtime.run(SPEC, explicit_mode="hidden")
        runtime.store.close()
    assert dropped[0] >= 1
    failed = [task for task in run.tasks if task.status == "failed"]
    assert failed, [(task.name, task.status) for task in run.tasks]
    for task in failed:
        assert task.error is not None
        assert "Another task called local at the same time" in task.error.message
        assert "[providers.local] max_concurrency = 1" in task.error.message


async def test_max_concurrency_one_serves_every_task_in_turn(tmp_path: Path) -> None:
    async with one_at_a_time_server() as (base_url, dropped):
        runtime = runtime_for(tmp_path, base_url, 1)
        run = await runtime.run(SPEC, explicit_mode="hidden")
        runtime.store.close()
    assert [task.status for task in run.tasks] == ["done", "done"], [t.error for t in run.tasks]
    assert [task.output for task in run.tasks] == ["".join(WORDS)] * 2
    assert dropped == [0]
