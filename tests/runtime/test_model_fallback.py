"""A task records the model that answered when the provider hands the response to
another model (Anthropic's ``fallback`` block), served by a real loopback server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.providers.anthropic.test_stream import (
    START,
    STOP,
    block_delta,
    block_start,
    block_stop,
    sse,
)
from thoughtline.config import Config
from thoughtline.providers.client import RetryPolicy
from thoughtline.providers.endpoints import EndpointSettings
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.store.sqlite import SQLiteStore

FALLBACK_STREAM = sse(
    START,
    block_start(
        0,
        {
            "type": "fallback",
            "from": {"model": "claude-opus-4-8"},
            "to": {"model": "claude-sonnet-5-20260901"},
            "trigger": {"type": "refusal", "category": "cyber"},
        },
    ),
    block_stop(0),
    block_start(1, {"type": "text", "text": ""}),
    block_delta(1, {"type": "text_delta", "text": "Hier die Antwort."}),
    block_stop(1),
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
    STOP,
)


@asynccontextmanager
async def serving(body: bytes) -> AsyncIterator[str]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
            + body
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()


async def test_the_task_records_the_model_that_answered(tmp_path: Path) -> None:
    async with serving(FALLBACK_STREAM) as base_url:
        runtime = Runtime(
            config=Config(path=None, providers={"anthropic": EndpointSettings(base_url=base_url)}),
            store=SQLiteStore(tmp_path / "thoughtline.db"),
            environ={"ANTHROPIC_API_KEY": "test-key-fallback"},
            retry=RetryPolicy(max_retries=0),
        )
        spec = RunSpec(
            request="x",
            tasks=(
                TaskSpec(name="t", role="engineer", provider="anthropic", model="claude-opus-4-8"),
            ),
        )
        run = await runtime.run(spec, explicit_mode="hidden")
        stored = runtime.store.get_run(run.id)
        trace = runtime.store.trace(run.id)
        runtime.store.close()
    (task,) = run.tasks
    assert task.status == "done" and task.output == "Hier die Antwort."
    assert task.model == "claude-sonnet-5-20260901"
    assert stored is not None and stored.tasks[0].model == "claude-sonnet-5-20260901"
    (completed,) = [event for event in trace if event.type == "worker.completed"]
    assert any(
        warning["code"] == "PROVIDER_MODEL_FALLBACK"  # type: ignore[index]
        for warning in completed.metadata["warnings"]  # type: ignore[attr-defined]
    )
