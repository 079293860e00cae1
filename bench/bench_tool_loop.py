"""The tool loop's own overhead per step, excluding model and tool time: thoughtline's
loop, the same calls made directly, and pydantic-ai's agent loop, in one invocation.

Every path runs loops of 10, 100 and 300 steps on one in-process tool (a sync Python
function, the library API's callable tool in thoughtline); each step but the last calls
the tool once, the last answers. Each step's model turn carries a short reasoning block
with its signature (the carrier an Anthropic loop must send back).

- *thoughtline*: ``Orchestrator.start(..., tools=[lookup])`` through the whole runtime:
  Anthropic Messages request bodies built and sent, SSE streams parsed, the disclosure
  gate (``surface``), tool calls recorded, traced and told live, each step written to a
  SQLite store. The model is an in-process ``httpx2.MockTransport`` that answers each
  request with SSE bytes rendered beforehand by the simulator's Anthropic renderer.
- *direct*: the floor: the same model calls and tool calls with no loop machinery. One
  ``ProviderClient`` on the same transport, the history kept in a list by hand
  (``response.to_message()`` and a turn of ``ToolResultPart``), the tool called as a
  plain function: no gate, run, store, trace, events, validation or thread.
- *pydantic-ai*: ``Agent(FunctionModel(model), tools=[lookup])``, the same tool and the
  same model turns (``ThinkingPart`` with a signature, ``ToolCallPart``), run to the end
  with ``agent.run``.

A step starts when the model is asked (the transport receives the request; pydantic-ai
calls its ``FunctionModel`` function) and ends when it is asked again. Overhead of a step =
the step's wall time - the time inside the model (the transport handler, or the
``FunctionModel`` function) - the time inside the tool function - the bench's own
counting of the bytes thoughtline's writes carry (``CountingStore``). The last step (answer,
task completion) has no next request and is left out, so a loop of N steps gives N - 1
samples. Everything else thoughtline does is overhead here, including building the
request body and parsing the stream (work a real provider call needs as well, which the
*direct* row shows on its own); pydantic-ai's ``FunctionModel`` serialises nothing.

Rounds repeat (``--repeat``), the paths interleaved; percentiles are over all samples of
all rounds. Besides wall time, each step's CPU time of the whole process (every thread:
the store writes, the tool's worker thread) less the model's and the tool's own time:
what the loop costs the machine, steadier than wall time on a shared machine.

    .venv/bin/python -m pip install 'pydantic-ai-slim>=1.0'   # or: pip install -e '.[bench]'
    .venv/bin/python bench/bench_tool_loop.py [--steps 10 100 300] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from thoughtline.api.orchestrator import Orchestrator
from thoughtline.config import Config
from thoughtline.model.parts import ToolResultPart
from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest, ToolSpec
from thoughtline.providers.client import ProviderClient
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.store.base import PreparedWrite
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import SimReasoning, SimRequest, SimToolCall, Transcript
from thoughtline.testing.renderers.anthropic import AnthropicRenderer

KEY = "bench-key-0000000000"
MODEL = "claude-sonnet-4-6"
REASONING_TEXT = "Look the key up, then answer."
ANSWER = "The lookups are done."


@dataclass
class Clock:
    """Where a loop's time went: when each model call began, and the time spent inside
    the model and inside the tool, per step."""

    asked: list[float] = field(default_factory=list)
    asked_cpu: list[float] = field(default_factory=list)
    model_s: list[float] = field(default_factory=list)
    tool_s: list[float] = field(default_factory=list)
    written_bytes: int = 0
    """thoughtline only: the bytes of every text value of every row the loop's writes
    handed the store (rows as the store writes them; SQLite's pages and WAL frames
    around them come on top)."""
    counting_s: float = 0.0
    """thoughtline only: the time spent counting those bytes so far (the bench's own
    work, left out of the steps it falls in)."""
    counted_at: list[float] = field(default_factory=list)
    """:attr:`counting_s` when each model call began."""

    def _counting(self, i: int) -> float:
        if not self.counted_at:
            return 0.0
        return self.counted_at[i + 1] - self.counted_at[i]

    def overheads_ms(self) -> list[float]:
        """Per step (all but the last): wall time between two model calls, less the
        model's and the tool's own time and the bench's byte counting."""
        return [
            (
                self.asked[i + 1]
                - self.asked[i]
                - self.model_s[i]
                - self.tool_s[i]
                - self._counting(i)
            )
            * 1000
            for i in range(len(self.asked) - 1)
        ]

    def cpu_ms(self) -> list[float]:
        """Per step: CPU time of the whole process (every thread) between two model
        calls, less the model's and the tool's own time: what the loop costs the
        machine, whatever else runs on it."""
        return [
            (
                self.asked_cpu[i + 1]
                - self.asked_cpu[i]
                - self.model_s[i]
                - self.tool_s[i]
                - self._counting(i)
            )
            * 1000
            for i in range(len(self.asked_cpu) - 1)
        ]


CLOCK = Clock()


def lookup(key: str, n: int) -> str:
    """Look a key up.

    Args:
        key: What to look up.
        n: Which entry.
    """
    started = time.perf_counter()
    value = f"{key}={n * 7}"
    CLOCK.tool_s.append(time.perf_counter() - started)
    return value


# -- the model: SSE bytes rendered beforehand, served in process -------------------------


def rendered_turns(steps: int) -> list[bytes]:
    """The Anthropic SSE stream of each step: a tool call, then the answer."""
    renderer = AnthropicRenderer()
    request = SimRequest(
        method="POST",
        path="/v1/messages",
        query={},
        headers={},
        body={
            "model": MODEL,
            "stream": True,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
        },
        profile="anthropic",
        model=MODEL,
        stream=True,
    )
    turns = []
    for step in range(1, steps + 1):
        reasoning = (SimReasoning(kind="summary", text=REASONING_TEXT, signature=f"sig-{step}"),)
        if step < steps:
            call = SimToolCall(
                call_id=f"toolu_{step:04d}",
                name="python__lookup",
                arguments=f'{{"key": "k{step}", "n": {step}}}',
            )
            transcript = Transcript(
                reasoning=reasoning, tool_calls=(call,), response_id=f"msg_{step}"
            )
        else:
            transcript = Transcript(reasoning=reasoning, answer=ANSWER, response_id=f"msg_{step}")
        frames = renderer.stream_frames(transcript, request)
        turns.append(b"".join(frame.data for frame in frames))
    return turns


def stub_transport(turns: list[bytes]) -> httpx2.MockTransport:
    position = 0

    def answer(request: httpx2.Request) -> httpx2.Response:
        nonlocal position
        started = time.perf_counter()
        CLOCK.asked.append(started)
        CLOCK.asked_cpu.append(time.process_time())
        CLOCK.counted_at.append(CLOCK.counting_s)
        body = turns[position]
        position += 1
        response = httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)
        CLOCK.model_s.append(time.perf_counter() - started)
        return response

    return httpx2.MockTransport(answer)


# -- the paths -------------------------------------------------------------------------


def _text_bytes(rows: Any) -> int:
    total = 0
    for row in rows:
        for value in row.values() if isinstance(row, dict) else row:
            if isinstance(value, str):
                total += len(value.encode())
    return total


class CountingStore(SQLiteStore):
    """The SQLite store, counting the bytes of the rows each write carries."""

    def write_merged(self, write: PreparedWrite, *, wait: bool) -> bool:
        started = time.perf_counter()
        CLOCK.written_bytes += sum(
            _text_bytes(rows)
            for rows in (
                [run for run, _tasks in write.created],
                [task for _run, tasks in write.created for task in tasks],
                write.events, write.runs, write.tasks, write.trace, write.tool_calls,
                write.threads, getattr(write, "step_costs", ()),  # (not before m015)
            )
        )  # fmt: skip
        CLOCK.counting_s += time.perf_counter() - started
        return super().write_merged(write, wait=wait)


PROVIDER_RAW = False
"""``--provider-raw``: the loop writes the provider_raw layer too."""


async def through_thoughtline(steps: int, folder: Path) -> Clock:
    global CLOCK
    CLOCK = Clock()
    store = CountingStore(folder / f"loop-{steps}-{time.monotonic_ns()}.db")
    runtime = Runtime(
        config=Config(path=None, trace_provider_raw=PROVIDER_RAW),
        store=store,
        environ={"ANTHROPIC_API_KEY": KEY},
        transport=stub_transport(rendered_turns(steps)),
    )
    async with Orchestrator(runtime) as orchestrator:
        run = await orchestrator.start(
            "Look up every key.",
            provider="anthropic",
            model=MODEL,
            tools=[lookup],
            max_steps=steps,
            chain_of_thought="surface",
        )
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.steps == steps
    assert task.tool_calls is not None
    assert len(task.tool_calls) == steps - 1
    assert all(call.status == "done" for call in task.tool_calls)
    return CLOCK


async def direct(steps: int) -> Clock:
    global CLOCK
    CLOCK = Clock()
    endpoint = EndpointRegistry(environ={"ANTHROPIC_API_KEY": KEY}).resolve("anthropic")
    http = httpx2.AsyncClient(transport=stub_transport(rendered_turns(steps)))
    tool = ToolSpec(
        name="python__lookup",
        description="Look a key up.",
        parameters={
            "type": "object",
            "properties": {"key": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["key", "n"],
        },
    )
    history = [Message(role="user", content="Look up every key.")]
    async with ProviderClient(endpoint, http_client=http, capture_body=False) as client:
        for _ in range(steps):
            request = ModelRequest(
                model=MODEL,
                system="You are a careful engineer.",
                messages=tuple(history),
                reasoning=ReasoningRequest(enabled=True),
                tools=(tool,),
            )
            call = await client.complete(request)
            response = call.response
            assert response.error is None, response.error
            if not response.tool_calls:
                break
            results = []
            for made in response.tool_calls:
                import orjson

                arguments = orjson.loads(made.arguments)
                results.append(
                    ToolResultPart(
                        tool_call_id=made.tool_call_id,
                        name=made.name,
                        content=lookup(arguments["key"], arguments["n"]),
                    )
                )
            history.append(response.to_message())
            history.append(Message(role="user", parts=tuple(results)))
    assert len(CLOCK.asked) == steps
    return CLOCK


async def through_pydantic_ai(steps: int) -> Clock:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ThinkingPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    global CLOCK
    CLOCK = Clock()
    step = 0

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        nonlocal step
        started = time.perf_counter()
        CLOCK.asked.append(started)
        CLOCK.asked_cpu.append(time.process_time())
        step += 1
        thinking = ThinkingPart(content=REASONING_TEXT, signature=f"sig-{step}")
        if step < steps:
            parts: list[Any] = [
                thinking,
                ToolCallPart(
                    tool_name="lookup",
                    args={"key": f"k{step}", "n": step},
                    tool_call_id=f"toolu_{step:04d}",
                ),
            ]
        else:
            parts = [thinking, TextPart(ANSWER)]
        response = ModelResponse(parts=parts)
        CLOCK.model_s.append(time.perf_counter() - started)
        return response

    agent = Agent(FunctionModel(model), tools=[lookup], system_prompt="You are a careful engineer.")
    result = await agent.run("Look up every key.", usage_limits=UsageLimits(request_limit=None))
    assert result.output == ANSWER
    assert len(CLOCK.asked) == steps
    assert len(CLOCK.tool_s) == steps - 1
    return CLOCK


# -- report ----------------------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


PATHS: dict[str, Callable[[int, Path], Any]] = {
    "thoughtline loop": through_thoughtline,
    "direct (no loop machinery)": lambda steps, _folder: direct(steps),
    "pydantic-ai Agent + FunctionModel": lambda steps, _folder: through_pydantic_ai(steps),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[10, 100, 300])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--provider-raw", action="store_true", help="write the provider_raw layer too"
    )
    args = parser.parse_args()
    global PROVIDER_RAW
    PROVIDER_RAW = args.provider_raw
    wall: dict[tuple[str, int], list[float]] = {}
    cpu: dict[tuple[str, int], list[float]] = {}
    written: dict[int, list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for run in PATHS.values():  # warm-up: imports, caches, the first threads
            asyncio.run(run(5, Path(folder)))
        for _ in range(args.repeat):
            for steps in args.steps:
                for label, run in PATHS.items():
                    clock = asyncio.run(run(steps, Path(folder)))
                    wall.setdefault((label, steps), []).extend(clock.overheads_ms())
                    cpu.setdefault((label, steps), []).extend(clock.cpu_ms())
                    if clock.written_bytes:
                        written.setdefault(steps, []).append(clock.written_bytes / steps)
    print(
        f"loop overhead per step, model and tool time excluded; {args.repeat} rounds, paths "
        f"interleaved; python {platform.python_version()}, {os.cpu_count()} CPUs, load "
        f"average {os.getloadavg()[0]:.1f} at the end\n"
    )
    print("| path | steps | wall p50 | wall p99 | CPU p50 | CPU mean |")
    print("|---|---:|---:|---:|---:|---:|")
    for steps in args.steps:
        for label in PATHS:
            values, spent = wall[(label, steps)], cpu[(label, steps)]
            print(
                f"| {label} | {steps} | {statistics.median(values):.3f} ms "
                f"| {percentile(values, 0.99):.3f} ms | {statistics.median(spent):.3f} ms "
                f"| {statistics.fmean(spent):.3f} ms |"
            )
    print()
    ours_label, peer_label = "thoughtline loop", "pydantic-ai Agent + FunctionModel"
    floor_label = "direct (no loop machinery)"
    for steps in args.steps:
        ours = statistics.median(wall[(ours_label, steps)])
        theirs = statistics.median(wall[(peer_label, steps)])
        floor = statistics.median(wall[(floor_label, steps)])
        ours_cpu = statistics.median(cpu[(ours_label, steps)])
        theirs_cpu = statistics.median(cpu[(peer_label, steps)])
        print(
            f"{steps} steps: thoughtline wall p50 = {ours / theirs:.2f}x pydantic-ai's, CPU p50 = "
            f"{ours_cpu / theirs_cpu:.2f}x; {ours - floor:.3f} ms above direct"
        )
    first, last = args.steps[0], args.steps[-1]
    raw = " (with provider_raw)" if PROVIDER_RAW else ""
    for steps in args.steps:
        print(
            f"{steps} steps: thoughtline wrote {statistics.median(written[steps]):,.0f} bytes "
            f"of rows per step{raw}"
        )
    for label in PATHS:
        growth = statistics.median(wall[(label, last)]) / statistics.median(wall[(label, first)])
        growth_cpu = statistics.median(cpu[(label, last)]) / statistics.median(cpu[(label, first)])
        print(
            f"{label}: p50 at {last} steps = {growth:.2f}x (wall), {growth_cpu:.2f}x (CPU) "
            f"the p50 at {first} steps"
        )


if __name__ == "__main__":
    main()
