"""Every provider call ends: keep-alive pings forever, silence, a stall before the
headers, a consumer that is slow itself. Over real HTTP against the simulator.

The timeouts here are short on purpose; each test also bounds the whole call with a
generous ``asyncio.timeout`` so that a call that would hang fails instead.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from thoughtline import (
    EndpointRegistry,
    ModelRequest,
    ProviderCall,
    ProviderClient,
    ReasoningDelta,
    ReasoningRequest,
    RetryPolicy,
    StreamError,
    TextDelta,
    Timeouts,
)
from thoughtline.config import load_config
from thoughtline.providers.endpoints import EndpointSettings
from thoughtline.providers.timeouts import TimeoutSettings
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import Fault, Simulator

from .conftest import ENDPOINT_MODELS

ANSWER = "Here is a short, direct answer from the simulated model."
UPPER_BOUND_S = 20.0  # a call that would otherwise hang fails here instead


def client_for(
    environ: dict[str, str],
    endpoint: str,
    timeouts: Timeouts,
    settings: dict[str, EndpointSettings] | None = None,
) -> ProviderClient:
    return ProviderClient(
        EndpointRegistry(settings, environ=environ).resolve(endpoint),
        retry=RetryPolicy(max_retries=2, initial_delay_s=0.01, max_delay_s=0.05),
        timeouts=timeouts,
    )


async def run(client: ProviderClient, request: ModelRequest) -> tuple[ProviderCall, list[object]]:
    events: list[object] = []
    async with asyncio.timeout(UPPER_BOUND_S), client, client.call(request) as call:
        async for event in call:
            events.append(event)
    return call, events


@pytest.mark.parametrize("endpoint", list(ENDPOINT_MODELS))
async def test_pings_forever_end_at_the_total_timeout_keeping_the_partial_answer(
    sim: Simulator, environ: dict[str, str], endpoint: str
) -> None:
    sim.inject(Fault.keep_alive_forever(at="mid_answer", interval_s=0.02, max_s=30))
    client = client_for(environ, endpoint, Timeouts(read=10, total=0.5))
    call, events = await run(client, ModelRequest.simple(ENDPOINT_MODELS[endpoint], "Why?"))
    error = call.response.error
    assert error is not None
    assert events[-1] == error
    assert error.code == "PROVIDER_TIMEOUT"
    assert "exceeded the total timeout of 0.5 s" in error.message
    assert "What arrived before that is kept" in error.message
    assert "[timeouts] total" in error.message
    # The partial answer stays: delivered as it came, and in the response.
    assert any(isinstance(event, TextDelta) for event in events)
    assert 0 < len(call.response.text) < len(ANSWER)
    assert ANSWER.startswith(call.response.text)
    assert len(sim.requests) == 1  # content had arrived: never retried
    assert call.exchange is not None
    assert [attempt.error_code for attempt in call.exchange.attempts] == ["PROVIDER_TIMEOUT"]


async def test_pings_forever_during_reasoning_keep_the_partial_reasoning(
    sim: Simulator, environ: dict[str, str]
) -> None:
    sim.inject(Fault.keep_alive_forever(at="mid_reasoning", interval_s=0.02, max_s=30))
    client = client_for(environ, "anthropic", Timeouts(read=10, total=0.5))
    request = ModelRequest.simple(
        "claude-sonnet-4-6", "Why?", reasoning=ReasoningRequest(enabled=True)
    )
    call, events = await run(client, request)
    assert call.response.error is not None
    assert call.response.error.code == "PROVIDER_TIMEOUT"
    assert any(isinstance(event, ReasoningDelta) for event in events)
    part = call.response.reasoning_parts[0]
    assert part.text and part.complete is False
    assert call.response.text == ""


async def test_pings_before_any_content_end_once_without_retrying(
    sim: Simulator, environ: dict[str, str]
) -> None:
    # The whole budget went on waiting; a retry would only double the wait.
    sim.inject(Fault.keep_alive_forever(at="start", interval_s=0.02, max_s=30), times=3)
    client = client_for(environ, "anthropic", Timeouts(read=10, total=0.4))
    call, events = await run(client, ModelRequest.simple("claude-sonnet-4-6", "Why?"))
    assert [type(event) for event in events] == [StreamError]
    error = call.response.error
    assert error is not None and error.code == "PROVIDER_TIMEOUT"
    assert "What arrived" not in error.message
    assert len(sim.requests) == 1


async def test_per_endpoint_total_is_named_in_the_error(
    sim: Simulator, environ: dict[str, str]
) -> None:
    settings = {"anthropic": EndpointSettings(timeouts=TimeoutSettings(total=0.4))}
    sim.inject(Fault.keep_alive_forever(at="mid_answer", interval_s=0.02, max_s=30))
    # The endpoint's own total wins over the client's (which would let it run 60 s).
    client = client_for(environ, "anthropic", Timeouts(read=10, total=60), settings)
    assert client.timeouts.total == 0.4
    call, _ = await run(client, ModelRequest.simple("claude-sonnet-4-6", "Why?"))
    error = call.response.error
    assert error is not None and error.code == "PROVIDER_TIMEOUT"
    assert "total timeout of 0.4 s" in error.message
    assert "[providers.anthropic.timeouts] total" in error.message


async def test_total_timeout_fires_during_silence_not_only_when_bytes_arrive(
    sim: Simulator, environ: dict[str, str]
) -> None:
    # Silence after part of the answer, with a read timeout far beyond the total (and the
    # upper bound): only a real deadline ends this.
    sim.inject(Fault.stall(at="mid_answer", max_s=60))
    client = client_for(environ, "anthropic", Timeouts(read=60, total=0.3))
    call, _ = await run(client, ModelRequest.simple("claude-sonnet-4-6", "Why?"))
    error = call.response.error
    assert error is not None and error.code == "PROVIDER_TIMEOUT"
    assert "exceeded the total timeout of 0.3 s" in error.message
    assert 0 < len(call.response.text) < len(ANSWER)


async def test_a_trickling_body_ends_at_the_total_timeout(
    sim: Simulator, environ: dict[str, str]
) -> None:
    # Not streamed: the server sends a byte of whitespace now and then, never the body.
    sim.inject(Fault.keep_alive_forever(at="start", interval_s=0.02, max_s=30))
    client = client_for(environ, "openai", Timeouts(read=10, total=0.4))
    call, _ = await run(client, ModelRequest.simple("gpt-5.5", "Why?", stream=False))
    assert call.response.error is not None
    assert call.response.error.code == "PROVIDER_TIMEOUT"
    assert len(sim.requests) == 1


async def test_total_timeout_covers_the_wait_for_response_headers(
    sim: Simulator, environ: dict[str, str]
) -> None:
    sim.inject(Fault.slow_first_byte(60.0))  # ends early when the client leaves
    client = client_for(environ, "gemini", Timeouts(read=60, total=0.3))
    call, _ = await run(client, ModelRequest.simple("gemini-3-pro", "Why?"))
    error = call.response.error
    assert error is not None and error.code == "PROVIDER_TIMEOUT"
    assert "exceeded the total timeout of 0.3 s" in error.message
    assert len(sim.requests) == 1


@pytest.mark.slow  # waits out the read timeout of each attempt, on every wire
@pytest.mark.parametrize("endpoint", ["anthropic", "openai", "ollama"])
async def test_silent_server_ends_after_the_read_timeout_on_each_attempt(
    sim: Simulator, environ: dict[str, str], endpoint: str
) -> None:
    # Headers, then nothing. Each attempt waits `read`, not 120 s; three attempts here.
    sim.inject(Fault.stall(at="start", max_s=30), times=3)
    client = client_for(environ, endpoint, Timeouts(read=0.3, total=60))
    call, events = await run(client, ModelRequest.simple(ENDPOINT_MODELS[endpoint], "Why?"))
    error = call.response.error
    assert error is not None
    assert [type(event) for event in events] == [StreamError]
    assert error.code == "PROVIDER_TIMEOUT"
    assert "sent nothing for 0.3 s (the read timeout)" in error.message
    assert "[timeouts] read" in error.message
    assert len(sim.requests) == 3
    assert call.exchange is not None
    assert [a.error_code for a in call.exchange.attempts] == ["PROVIDER_TIMEOUT"] * 3


async def test_silence_after_content_keeps_what_arrived_and_names_the_read_timeout(
    sim: Simulator, environ: dict[str, str]
) -> None:
    sim.inject(Fault.stall(at="mid_answer", max_s=30))
    client = client_for(environ, "openrouter", Timeouts(read=0.3, total=60))
    call, _ = await run(client, ModelRequest.simple(ENDPOINT_MODELS["openrouter"], "Why?"))
    error = call.response.error
    assert error is not None
    assert error.code == "PROVIDER_STREAM_INTERRUPTED"
    assert "nothing arrived for 0.3 s, the read timeout" in error.message
    assert "What arrived is kept" in error.message
    assert 0 < len(call.response.text) < len(ANSWER)
    assert len(sim.requests) == 1


async def test_a_slow_consumer_is_never_cancelled_by_the_deadline(
    sim: Simulator, environ: dict[str, str]
) -> None:
    # The deadline passes while the consumer is busy between events: the consumer's own
    # await must finish untouched, and the call ends at its next read.
    sim.inject(Fault.keep_alive_forever(at="mid_answer", interval_s=0.02, max_s=30))
    client = client_for(environ, "anthropic", Timeouts(read=10, total=0.3))
    slept = 0
    events: list[object] = []
    async with (
        asyncio.timeout(UPPER_BOUND_S),
        client,
        client.call(ModelRequest.simple("claude-sonnet-4-6", "Why?")) as call,
    ):
        async for event in call:
            events.append(event)
            if isinstance(event, TextDelta) and slept == 0:
                await asyncio.sleep(0.6)  # past the deadline
                slept += 1
    assert slept == 1
    assert isinstance(events[-1], StreamError)
    assert events[-1].code == "PROVIDER_TIMEOUT"
    assert call.response.text


async def test_cancelling_the_consumer_still_cancels_while_a_deadline_is_armed(
    sim: Simulator, environ: dict[str, str]
) -> None:
    sim.inject(Fault.stall(at="start", max_s=30))
    client = client_for(environ, "anthropic", Timeouts(read=30, total=30))

    async def consume() -> None:
        async with client.call(ModelRequest.simple("claude-sonnet-4-6", "Why?")) as call:
            async for _ in call:
                pass

    task = asyncio.create_task(consume())
    for _ in range(500):  # until the request has reached the server
        if sim.requests:
            break
        await asyncio.sleep(0.01)
    assert sim.requests
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        async with asyncio.timeout(UPPER_BOUND_S):
            await task
    await client.aclose()


def test_default_timeouts_end_every_call() -> None:
    timeouts = Timeouts()
    assert (timeouts.connect, timeouts.read, timeouts.total) == (10.0, 120.0, 900.0)


async def test_config_timeouts_reach_the_runtime_and_the_endpoint_value_wins(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    config_path = tmp_path / "thoughtline.toml"
    config_path.write_text(
        "[timeouts]\nconnect = 5\nread = 12\ntotal = 45\n"
        "[providers.anthropic.timeouts]\ntotal = 0.4\n"
    )
    config = load_config(config_path)
    assert config.sources["timeouts.read"] == str(config_path)
    assert config.sources["providers.anthropic.timeouts.total"] == str(config_path)
    runtime = Runtime(
        config=config,
        store=SQLiteStore(tmp_path / "home" / "thoughtline.db"),
        environ=environ,
        retry=RetryPolicy(max_retries=2, initial_delay_s=0.01, max_delay_s=0.05),
    )
    assert (runtime.timeouts.connect, runtime.timeouts.read, runtime.timeouts.total) == (5, 12, 45)
    sim.inject(Fault.keep_alive_forever(at="mid_answer", interval_s=0.02, max_s=30))
    spec = RunSpec(
        request="Why?",
        tasks=(
            TaskSpec(name="a", role="engineer", provider="anthropic", model="claude-sonnet-4-6"),
        ),
    )
    async with asyncio.timeout(UPPER_BOUND_S):
        run = await runtime.run(spec)
    task = run.tasks[0]
    assert task.status == "failed"
    assert task.error is not None
    assert task.error.code == "PROVIDER_TIMEOUT"
    assert "total timeout of 0.4 s" in task.error.message
    assert "[providers.anthropic.timeouts] total" in task.error.message
    assert task.output and ANSWER.startswith(task.output)  # the partial answer is kept


@pytest.mark.parametrize(
    ("timeouts", "lead"),
    [
        (Timeouts(read=10, total=0.4), "The call reached its total timeout during the answer"),
        (Timeouts(read=0.3, total=60), "The stream broke during the answer"),
    ],
    ids=["total-timeout", "stall"],
)
async def test_a_cut_mid_answer_is_marked_partial_whatever_cut_it(
    tmp_path: Path, sim: Simulator, environ: dict[str, str], timeouts: Timeouts, lead: str
) -> None:
    # Pings forever after part of the answer: the total timeout cuts it; silence after
    # the same part: the read timeout does. Either way the task says it is partial.
    if timeouts.total == 60:
        sim.inject(Fault.stall(at="mid_answer", max_s=30))
    else:
        sim.inject(Fault.keep_alive_forever(at="mid_answer", interval_s=0.02, max_s=30))
    runtime = Runtime(
        config=load_config(None),
        store=SQLiteStore(tmp_path / "home" / "thoughtline.db"),
        environ=environ,
        retry=RetryPolicy(max_retries=0, initial_delay_s=0.01, max_delay_s=0.05),
        timeouts=timeouts,
    )
    spec = RunSpec(
        request="Why?",
        tasks=(
            TaskSpec(name="a", role="engineer", provider="anthropic", model="claude-sonnet-4-6"),
        ),
    )
    async with asyncio.timeout(UPPER_BOUND_S):
        run = await runtime.run(spec, explicit_mode="surface")
    task = run.tasks[0]
    assert task.status == "failed"
    assert task.output and ANSWER.startswith(task.output) and task.output != ANSWER
    assert task.reasoning_status == "interrupted", task.reasoning_notice
    assert task.reasoning_notice is not None
    assert task.reasoning_notice.startswith(lead), task.reasoning_notice
    assert "the answer is partial" in task.reasoning_notice
