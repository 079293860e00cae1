"""A task driven through its sink alone: no run execution, no store. The sink below
records, in order, everything the task told it; the provider is the simulator over HTTP.
A task is a loop around one step (one model call through the gate); today every answer
ends it after one step, and each call gets a fresh live stream from the task's gate."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Literal

import httpx2
import pytest

from tests.conftest import CANARY_KEY
from thoughtline.config.pricing import Pricer
from thoughtline.model.events import TextDelta
from thoughtline.model.requests import Message
from thoughtline.providers.client import ProviderClient
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.providers.redaction import REDACTED, Redactor
from thoughtline.records import (
    ChainOfThought,
    Task,
    TaskError,
    TaskStatus,
    TraceLayer,
    WorkerBackend,
)
from thoughtline.runtime.engine.clients import CallOverlap
from thoughtline.runtime.engine.steps import Step
from thoughtline.runtime.engine.task_call import TaskCall
from thoughtline.runtime.engine.telemetry_hooks import CallReport
from thoughtline.runtime.planning.roles import BUILTIN_ROLES, RoleCatalog
from thoughtline.runtime.policy.budget import RunBudget
from thoughtline.runtime.policy.disclosure import DisclosureGate, LiveStream
from thoughtline.testing import SimReasoning, Simulator, Transcript

MODEL = "claude-sonnet-4-6"
REASONING = "Weighing the two designs before answering."
ANSWER = "Use the simpler design."
TRANSCRIPT = Transcript(
    reasoning=(SimReasoning(kind="summary", text=REASONING, signature="sig-1"),),
    answer=ANSWER,
    input_tokens=40,
    reasoning_tokens=12,
)


@dataclass
class RecordingSink:
    """A :class:`~thoughtline.runtime.engine.task_sink.TaskSink` that keeps what it was told."""

    client: ProviderClient
    worker_backend: WorkerBackend = "provider"
    roles: RoleCatalog = field(default_factory=lambda: RoleCatalog([]))
    redactor: Redactor = field(default_factory=Redactor)
    records_provider_raw: bool = True
    stop_status: Literal["cancelled", "interrupted"] = "cancelled"
    pricer: Pricer = field(default_factory=Pricer)
    budget: RunBudget = field(default_factory=RunBudget)
    told: list[tuple[str, ...]] = field(default_factory=list)
    trace: list[tuple[str, TraceLayer, dict[str, object]]] = field(default_factory=list)
    reports: list[CallReport] = field(default_factory=list)

    def stopped_by(self) -> str | None:
        return None

    def handoff(self, task: Task) -> str:
        return "Which design?"

    def client_for(self, provider: str) -> ProviderClient:
        assert provider == "anthropic"
        return self.client

    @asynccontextmanager
    async def calling(self, provider: str) -> AsyncIterator[CallOverlap]:
        self.told.append(("calling", provider))
        yield CallOverlap()

    def emit_text(self, task_id: str, stream: LiveStream, text: str) -> None:
        self.told.append((stream, text))

    def emit_task_started(self, task: Task) -> None:
        self.told.append(("started", task.status))

    def emit_task_completed(self, task: Task) -> None:
        self.told.append(("completed", task.status))

    def emit_step_priced(self, task: Task, step: int) -> None:
        self.told.append(("priced", step))

    def add_trace(
        self,
        type_: str,
        *,
        layer: TraceLayer = "answer",
        task_id: str | None = None,
        metadata: dict[str, object] | None = None,
    ) -> str:
        self.told.append(("trace", type_))
        self.trace.append((type_, layer, metadata or {}))
        return f"evt_{len(self.trace)}"

    async def persist(self, *, task: Task) -> None:
        self.told.append(("persist", task.status))

    async def finish_task(
        self, task: Task, *, status: TaskStatus, error: TaskError | None = None
    ) -> None:
        task.status = status
        self.told.append(("finish_task", status))

    def report_call(self, task: Task, report: CallReport) -> None:
        self.told.append(("report", task.status))
        self.reports.append(report)


@pytest.fixture
async def client(environ: dict[str, str]) -> AsyncIterator[ProviderClient]:
    async with httpx2.AsyncClient() as http:
        yield ProviderClient(
            EndpointRegistry(None, environ=environ).resolve("anthropic"), http_client=http
        )


def make_task(mode: ChainOfThought) -> Task:
    return Task(
        id="task_1",
        run_id="run_1",
        position=0,
        role="engineer",
        provider="anthropic",
        model=MODEL,
        chain_of_thought=mode,
        chain_of_thought_source="explicit",
    )


def joined(sink: RecordingSink, stream: str) -> str:
    return "".join(told[1] for told in sink.told if told[0] == stream)


def without_deltas(sink: RecordingSink) -> list[tuple[str, ...]]:
    return [told for told in sink.told if told[0] not in ("answer", "reasoning")]


async def test_a_one_step_task_tells_its_sink_what_the_run_records(
    sim: Simulator, client: ProviderClient
) -> None:
    sim.script(TRANSCRIPT)
    sink = RecordingSink(client)
    task = make_task("surface")
    await TaskCall(sink, task).go()

    assert without_deltas(sink) == [
        ("trace", "task.started"),
        ("started", "running"),
        ("persist", "running"),
        ("trace", "worker.requested"),
        ("calling", "anthropic"),
        ("trace", "provider.exchange"),
        ("trace", "worker.completed"),
        ("report", "done"),
        ("completed", "done"),
        ("persist", "done"),
    ]
    # The live deltas come between the call and its exchange, reasoning first.
    calling = sink.told.index(("calling", "anthropic"))
    exchange = sink.told.index(("trace", "provider.exchange"))
    assert {told[0] for told in sink.told[calling + 1 : exchange]} == {"reasoning", "answer"}
    assert joined(sink, "reasoning") == REASONING
    assert joined(sink, "answer") == ANSWER
    # One model call, with the role's prompt and the handoff as the only message.
    [request] = sim.requests
    assert request.body is not None
    assert request.body["system"] == BUILTIN_ROLES["engineer"]
    assert request.body["messages"] == [{"role": "user", "content": "Which design?"}]
    assert "tools" not in request.body
    assert (task.status, task.output, task.reasoning) == ("done", ANSWER, REASONING)
    assert task.reasoning_status == "shown"
    assert task.usage.input_tokens == 40 and task.usage.reasoning_tokens == 12
    [report] = sink.reports
    assert report.recorded_reasoning is None  # surface shows, and records nothing


@pytest.mark.parametrize(
    ("mode", "shown", "recorded"),
    [
        ("hidden", False, False),
        ("surface", True, False),
        ("telemetry_only", False, True),
        ("surface_and_telemetry", True, True),
    ],
)
async def test_reasoning_reaches_the_sink_only_as_the_mode_says(
    sim: Simulator, client: ProviderClient, mode: ChainOfThought, shown: bool, recorded: bool
) -> None:
    sim.script(TRANSCRIPT)
    sink = RecordingSink(client)
    task = make_task(mode)
    await TaskCall(sink, task).go()

    assert joined(sink, "reasoning") == (REASONING if shown else "")
    assert (task.reasoning == REASONING) is shown
    traced = [metadata for type_, layer, metadata in sink.trace if layer == "reasoning"]
    assert traced == ([{"reasoning": REASONING, "parts": traced[0]["parts"]}] if recorded else [])
    [report] = sink.reports
    assert (report.recorded_reasoning is not None) is recorded
    assert sim.requests[0].body is not None
    assert ("thinking" in sim.requests[0].body) is (mode != "hidden")


async def test_the_inline_backend_prepares_and_calls_nothing(
    sim: Simulator, client: ProviderClient
) -> None:
    sink = RecordingSink(client, worker_backend="inline")
    task = make_task("surface")
    await TaskCall(sink, task).go()

    assert sink.told == [
        ("trace", "task.started"),
        ("started", "running"),
        ("persist", "running"),
        ("trace", "worker.prepared"),
        ("finish_task", "prepared"),
    ]
    assert sim.requests == []
    assert task.reasoning_status == "not_applicable"


class GoOn(TaskCall):
    """A task whose every answer asks for another step (as a tool call will)."""

    async def next_turn(self, step: Step, *, last: bool) -> list[Message] | None:
        if last:
            return None
        return [
            Message(role="assistant", content=step.response.text),
            Message(role="user", content=f"Go on after step {step.number}."),
        ]


async def test_the_loop_appends_to_its_history_and_stops_at_max_steps(
    sim: Simulator, client: ProviderClient
) -> None:
    sim.script(TRANSCRIPT)
    sink = RecordingSink(client)
    task = make_task("surface")
    await GoOn(sink, task, max_steps=3).go()

    assert len(sim.requests) == 3
    sent = [request.body["messages"] for request in sim.requests if request.body is not None]
    # Append-only: every request starts with exactly what the one before it sent.
    assert sent[1][: len(sent[0])] == sent[0]
    assert sent[2][: len(sent[1])] == sent[1]
    assert sent[2][-1] == {"role": "user", "content": "Go on after step 2."}
    # Each call is traced; the task starts and completes once, from all of its steps.
    kinds = [told for told in without_deltas(sink) if told[0] == "trace"]
    assert kinds.count(("trace", "worker.requested")) == 3
    assert kinds.count(("trace", "task.started")) == 1
    assert kinds.count(("trace", "worker.completed")) == 1
    assert [told for told in sink.told if told[0] == "completed"] == [("completed", "done")]
    assert task.usage.input_tokens == 3 * 40
    assert task.usage.reasoning_tokens == 3 * 12
    assert task.output == ANSWER
    assert task.reasoning == "\n\n".join([REASONING] * 3)
    assert joined(sink, "reasoning") == REASONING * 3


def test_each_call_gets_a_fresh_live_stream() -> None:
    """A tail held back as a possible credential belongs to its call: it is released
    when that call's stream finishes, never joined to the next call's text."""
    gate = DisclosureGate("surface", Redactor([CANARY_KEY]))
    first = gate.stream()
    assert first.live(TextDelta(part_id="t", text="done: tl-canary")) == ("answer", "done: ")
    second = gate.stream()
    assert second.live(TextDelta(part_id="t", text="-key next.")) == ("answer", "-key next.")
    assert second.finish() == []
    assert first.finish() == [("answer", "tl-canary")]
    # Within one call, a key cut across deltas is still removed.
    whole = gate.stream()
    pieces = ("a ", CANARY_KEY[:9], CANARY_KEY[9:], " b")
    texts = [whole.live(TextDelta(part_id="t", text=piece)) for piece in pieces]
    tail = "".join(text for _, text in whole.finish())
    assert "".join(live[1] for live in texts if live) + tail == f"a {REDACTED} b"
