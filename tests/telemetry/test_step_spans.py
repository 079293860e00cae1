"""A tool loop's spans, exported over real OTLP/HTTP to a receiver on 127.0.0.1 and
decoded: an ``invoke_agent`` span per task, a ``chat`` span per model call with that
call's own usage, and an ``execute_tool`` span per tool call beside the step that asked
for it. Content only with capture on and a mode that records reasoning; the reasoning
canary only in those modes; the API key nowhere."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli.test_run_cli import thoughtline
from tests.conftest import CANARY_KEY
from tests.runtime.test_disclosure_e2e import MODES, RECORDS
from tests.runtime.test_tool_loop import tooled_runtime
from tests.telemetry.support import RUN_SPAN, OtlpReceiver, ReceivedSpan
from tests.tools.test_mcp_tools import TEST_SERVER, _config
from thoughtline.config import Config
from thoughtline.records import Run
from thoughtline.records.run_events import RunEvent, TaskToolCallStarted
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.telemetry import open_telemetry
from thoughtline.testing import (
    Fault,
    SimReasoning,
    SimToolCall,
    Simulator,
    SimulatorServer,
    Transcript,
)

pytestmark = pytest.mark.slow  # every test starts a tool server process

SPAN_KIND_INTERNAL = 1
SPAN_KIND_CLIENT = 3
STATUS_UNSET = 0
STATUS_ERROR = 2

CANARY = "CANARY-STEPSPAN-5e1a"
SIGNATURE = f"sig-{CANARY}"
# endpoint -> model. Anthropic sends its thinking (with a signature) back on every step;
# OpenAI Responses asks for an encrypted carrier even when hidden and sends it back.
WIRES = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-5.5"}


def reasoning(step: int) -> tuple[SimReasoning, ...]:
    return (SimReasoning(kind="summary", text=f"Step {step}: {CANARY}.", signature=SIGNATURE),)


def call(call_id: str, text: str, times: int) -> SimToolCall:
    arguments = json.dumps({"text": text, "times": times})
    return SimToolCall(call_id=call_id, name="probe__repeat", arguments=arguments)


# Three model calls, each with usage of its own: one tool call, then two at once (one
# of them carrying the API key, which must be gone before anything records it), then
# the answer.
STEPS = (
    Transcript(
        reasoning=reasoning(1),
        tool_calls=(call("call_1", "ab", 2),),
        input_tokens=40,
        output_tokens=11,
        reasoning_tokens=21,
        finish="tool_calls",
        response_id="sim_step_1",
    ),
    Transcript(
        reasoning=reasoning(2),
        tool_calls=(call("call_2a", "cd", 1), call("call_2b", CANARY_KEY, 1)),
        input_tokens=50,
        output_tokens=12,
        reasoning_tokens=22,
        finish="tool_calls",
        response_id="sim_step_2",
    ),
    Transcript(
        reasoning=reasoning(3),
        answer="The tool said abab and cd.",
        input_tokens=60,
        output_tokens=13,
        reasoning_tokens=23,
        response_id="sim_step_3",
    ),
)
TOOL_STEPS = {"call_1": 1, "call_2a": 2, "call_2b": 2}


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as server:
        yield server


@pytest.fixture(autouse=True)
def clean_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)


async def run_exported(
    tmp_path: Path,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    receiver: OtlpReceiver,
    spec: RunSpec,
    *,
    mode: str,
    capture: bool,
    observer: Callable[[RunEvent], None] | None = None,
) -> Run:
    """``spec`` through the real runtime, with the real MCP test server, exporting over
    OTLP/HTTP to ``receiver`` (flushed before this returns)."""
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    config = Config(
        path=None,
        telemetry_exporter="otlp",
        telemetry_endpoint=receiver.base_url,
        telemetry_capture_content=capture,
    )
    telemetry = open_telemetry(config, redactor=runtime.redactor, environ={})
    assert telemetry is not None
    runtime.telemetry = telemetry
    try:
        return await runtime.run(spec, explicit_mode=mode, observer=observer)
    finally:
        await runtime.aclose()
        store.close()
        telemetry.shutdown()  # flushes the batch processor


def loop_task(endpoint: str, **task: object) -> RunSpec:
    options: dict[str, object] = {
        "name": "t",
        "role": "engineer",
        "provider": endpoint,
        "model": WIRES[endpoint],
        "tools": ("probe",),
    }
    options.update(task)
    return RunSpec(request="Use the tool.", tasks=(TaskSpec(**options),))  # type: ignore[arg-type]


def named(spans: list[ReceivedSpan], name: str) -> list[ReceivedSpan]:
    return sorted(
        (span for span in spans if span.name == name),
        key=lambda span: (span.start_ns, span.attributes.get("gen_ai.tool.call.id", "")),
    )


@pytest.mark.parametrize("endpoint", WIRES)
@pytest.mark.parametrize(
    ("mode", "capture"), [*((mode, True) for mode in MODES), ("surface_and_telemetry", False)]
)
async def test_a_three_step_loop_is_an_agent_span_with_a_chat_span_per_step(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    receiver: OtlpReceiver,
    endpoint: str,
    mode: str,
    capture: bool,
) -> None:
    model = WIRES[endpoint]
    sim.script_turns(*STEPS, profile=endpoint, model=model)
    run = await run_exported(
        tmp_path, sim_server, environ, receiver, loop_task(endpoint), mode=mode, capture=capture
    )
    (task,) = run.tasks
    assert run.status == "completed", task.error
    assert task.steps == 3 and len(sim.requests) == 3

    spans = receiver.spans()
    assert sorted(span.name for span in spans) == sorted(
        [RUN_SPAN, "invoke_agent engineer", *[f"chat {model}"] * 3, *["execute_tool repeat"] * 3]
    )
    (root,) = named(spans, RUN_SPAN)
    (agent,) = named(spans, "invoke_agent engineer")
    chats = named(spans, f"chat {model}")
    tools = named(spans, "execute_tool repeat")
    assert {span.trace_id for span in spans} == {root.trace_id}

    # The agent span: under the run, the task's outcome and its usage over all steps.
    assert agent.parent_span_id == root.span_id
    assert agent.kind == SPAN_KIND_INTERNAL
    assert agent.status_code == STATUS_UNSET
    attributes = agent.attributes
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.agent.name"] == "engineer"
    assert attributes["gen_ai.request.model"] == model
    assert attributes["thoughtline.task.id"] == task.id
    assert attributes["thoughtline.task.status"] == "done"
    assert attributes["thoughtline.steps"] == 3
    assert attributes["thoughtline.chain_of_thought"] == mode
    assert attributes["thoughtline.reasoning_status"] == task.reasoning_status
    assert attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert attributes["gen_ai.usage.input_tokens"] == 150 == task.usage.input_tokens
    assert attributes["gen_ai.usage.output_tokens"] == 36
    # Hidden Anthropic asks for no thinking, so no reasoning tokens are counted: the
    # count is left out (not reported), never sent as 0.
    counts_reasoning = not (endpoint == "anthropic" and mode == "hidden")
    reasoning_tokens = 66 if counts_reasoning else None
    assert attributes.get("gen_ai.usage.reasoning.output_tokens") == reasoning_tokens
    assert task.usage.reasoning_tokens == reasoning_tokens
    assert "gen_ai.output.messages" not in attributes  # content is on the steps

    # A chat span per model call, under the agent span, each with that call's own usage.
    assert [span.attributes["thoughtline.step"] for span in chats] == [1, 2, 3]
    for number, (span, step) in enumerate(zip(chats, STEPS, strict=True), start=1):
        attributes = span.attributes
        assert span.parent_span_id == agent.span_id
        assert span.kind == SPAN_KIND_CLIENT
        assert span.status_code == STATUS_UNSET
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.request.model"] == model
        assert attributes["thoughtline.task.id"] == task.id
        assert attributes["gen_ai.response.id"] == step.response_id
        assert attributes["gen_ai.response.finish_reasons"] == (
            ["stop"] if number == 3 else ["tool_call"]
        )
        assert attributes["gen_ai.usage.input_tokens"] == step.input_tokens
        assert attributes["gen_ai.usage.output_tokens"] == step.output_tokens
        assert attributes.get("gen_ai.usage.reasoning.output_tokens") == (
            step.reasoning_tokens if counts_reasoning else None
        )
        assert agent.start_ns <= span.start_ns <= span.end_ns <= agent.end_ns
    assert chats[0].end_ns <= chats[1].start_ns and chats[1].end_ns <= chats[2].start_ns

    # A tool span per call, beside the chat spans, naming the step that asked for it.
    assert [span.attributes["gen_ai.tool.call.id"] for span in tools] == [
        "call_1",
        "call_2a",
        "call_2b",
    ]
    for span in tools:
        attributes = span.attributes
        asked_by = TOOL_STEPS[attributes["gen_ai.tool.call.id"]]
        assert span.parent_span_id == agent.span_id
        assert span.kind == SPAN_KIND_INTERNAL
        assert attributes["gen_ai.operation.name"] == "execute_tool"
        assert attributes["gen_ai.tool.name"] == "repeat"
        assert attributes["thoughtline.tool.step"] == asked_by
        assert attributes["thoughtline.tool.status"] == "done"
        # Ran before the next step began.
        assert span.start_ns < chats[asked_by].start_ns  # chats[asked_by] is the next step
        assert agent.start_ns <= span.start_ns <= span.end_ns <= agent.end_ns

    # Content: only with capture on, for a mode that records reasoning; each step's
    # reasoning on its own span.
    content = capture and mode in RECORDS
    for span in (*chats, *tools):
        assert span.attributes["thoughtline.content_captured"] is content
    kinds = (["reasoning", "tool_call"], ["reasoning", "tool_call", "tool_call"])
    for number, span in enumerate(chats, start=1):
        assert ("gen_ai.output.messages" in span.attributes) is content
        if content:
            (message,) = json.loads(span.attributes["gen_ai.output.messages"])
            reasoned = {"type": "reasoning", "content": f"Step {number}: {CANARY}."}
            assert message["parts"][0] == reasoned
            assert [part["type"] for part in message["parts"]] == (
                [*kinds, ["reasoning", "text"]][number - 1]
            )
    for span in tools:
        assert ("gen_ai.tool.call.arguments" in span.attributes) is content
        assert ("gen_ai.tool.call.result" in span.attributes) is content
    if content:
        (first,) = json.loads(chats[0].attributes["gen_ai.output.messages"])
        assert first["parts"][1] == {
            "type": "tool_call",
            "id": "call_1",
            "name": "probe__repeat",
            "arguments": {"text": "ab", "times": 2},
        }
        (second,) = json.loads(chats[1].attributes["gen_ai.output.messages"])
        assert [part["id"] for part in second["parts"][1:]] == ["call_2a", "call_2b"]
        (last,) = json.loads(chats[2].attributes["gen_ai.output.messages"])
        assert last["parts"][1] == {"type": "text", "content": "The tool said abab and cd."}
        assert tools[0].attributes["gen_ai.tool.call.result"] == "abab"
        assert tools[1].attributes["gen_ai.tool.call.result"] == "cd"

    # The reasoning canary only where the mode records and capture is on; the carrier and
    # the API key never (hidden Responses still sent the carrier back to the provider).
    raw = receiver.raw()
    assert (CANARY in receiver.text()) is content
    assert (CANARY.encode() in raw) is content
    assert SIGNATURE.encode() not in raw
    assert CANARY_KEY.encode() not in raw
    assert CANARY_KEY not in receiver.text()
    if endpoint == "openai" and mode == "hidden":
        assert SIGNATURE in json.dumps(sim.requests[-1].body)


async def test_a_failed_step_and_a_failed_tool_call_are_errors_on_their_own_spans(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    receiver: OtlpReceiver,
) -> None:
    """Step 1 calls a tool nobody offered (an error result, the loop goes on); step 2's
    request is refused by the provider, which fails the task."""
    sim.script_turns(
        Transcript(
            reasoning=reasoning(1),
            tool_calls=(SimToolCall(call_id="call_x", name="probe__nope", arguments="{}"),),
            finish="tool_calls",
            response_id="sim_step_1",
        ),
        profile="anthropic",
    )

    def refuse_the_next_call(event: RunEvent) -> None:
        # The tool call runs between the two model calls: the provider refuses the next.
        if isinstance(event, TaskToolCallStarted):
            sim.inject(Fault.http_error(401, f"bad key {CANARY_KEY}"), profile="anthropic")

    run = await run_exported(
        tmp_path,
        sim_server,
        environ,
        receiver,
        loop_task("anthropic"),
        mode="telemetry_only",
        capture=True,
        observer=refuse_the_next_call,
    )
    (task,) = run.tasks
    assert task.status == "failed" and task.error is not None
    assert task.steps == 2

    spans = receiver.spans()
    (agent,) = named(spans, "invoke_agent engineer")
    first, second = named(spans, "chat claude-sonnet-4-6")
    (tool,) = named(spans, "execute_tool probe__nope")  # as the model named it
    assert agent.status_code == STATUS_ERROR
    assert agent.attributes["error.type"] == task.error.code
    assert agent.attributes["thoughtline.task.status"] == "failed"
    assert first.status_code == STATUS_UNSET and "error.type" not in first.attributes
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_call"]
    assert second.status_code == STATUS_ERROR
    assert second.attributes["error.type"] == task.error.code
    assert second.attributes["gen_ai.response.finish_reasons"] == ["error"]
    assert second.attributes["thoughtline.step"] == 2
    assert "gen_ai.response.id" not in second.attributes
    assert tool.status_code == STATUS_ERROR
    assert tool.attributes["error.type"] == "TOOL_NOT_FOUND"
    assert tool.attributes["thoughtline.tool.status"] == "denied"
    assert {span.parent_span_id for span in (first, second, tool)} == {agent.span_id}
    assert CANARY_KEY.encode() not in receiver.raw()


async def test_a_step_cut_mid_answer_keeps_what_the_steps_before_it_cost(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    receiver: OtlpReceiver,
) -> None:
    """Step 1 is priced; step 2's stream is cut before its usage arrives (it may have
    been billed: unknown). The agent and run spans keep step 1's cost as the known part
    and name step 2 as the unknown one."""
    sim.script_turns(STEPS[0], Transcript(answer="cut " * 200), profile="anthropic")

    def cut_the_next_call(event: RunEvent) -> None:
        if isinstance(event, TaskToolCallStarted):
            sim.inject(Fault.cut_mid_answer(), profile="anthropic")

    run = await run_exported(
        tmp_path,
        sim_server,
        environ,
        receiver,
        loop_task("anthropic"),
        mode="hidden",
        capture=False,
        observer=cut_the_next_call,
    )
    (task,) = run.tasks
    first, second = task.step_costs
    assert first.amount is not None and first.amount > 0 and second.amount is None
    spans = receiver.spans()
    (agent,) = named(spans, "invoke_agent engineer")
    (run_span,) = named(spans, RUN_SPAN)
    for span, part in ((agent, "step 2"), (run_span, "task t step 2")):
        assert "thoughtline.cost.amount" not in span.attributes
        assert span.attributes["thoughtline.cost.known_amount"] == first.amount
        assert span.attributes["thoughtline.cost.unknown_part"] == part


async def test_a_task_offered_tools_that_answers_at_once_is_an_agent_of_one_step(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    receiver: OtlpReceiver,
) -> None:
    sim.script(STEPS[-1], profile="anthropic")
    run = await run_exported(
        tmp_path,
        sim_server,
        environ,
        receiver,
        loop_task("anthropic"),
        mode="surface",
        capture=True,
    )
    assert run.status == "completed"
    spans = receiver.spans()
    assert sorted(span.name for span in spans) == sorted(
        [RUN_SPAN, "invoke_agent engineer", "chat claude-sonnet-4-6"]
    )
    (agent,) = named(spans, "invoke_agent engineer")
    (chat,) = named(spans, "chat claude-sonnet-4-6")
    assert chat.parent_span_id == agent.span_id
    assert agent.attributes["thoughtline.steps"] == 1
    assert chat.attributes["thoughtline.step"] == 1
    assert chat.attributes["gen_ai.usage.input_tokens"] == 60
    # surface: reasoning is shown, never recorded, so telemetry has none of it.
    assert CANARY.encode() not in receiver.raw()


def test_thoughtline_run_with_a_tool_delivers_every_step_span_before_it_exits(
    tmp_path: Path, sim: Simulator, environ: dict[str, str], receiver: OtlpReceiver
) -> None:
    home = tmp_path / "home"
    _config(
        home,
        f"""
[mcp_servers.probe]
command = {json.dumps(sys.executable)}
args = [{json.dumps(TEST_SERVER)}]
""",
    )
    sim.script_turns(*STEPS)
    env = dict(environ)
    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = receiver.traces_url
    env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    result = thoughtline(
        home,
        env,
        "run",
        "Use the tool.",
        "--tool",
        "probe",
        "--chain-of-thought",
        "telemetry_only",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    (task,) = json.loads(result.stdout)["tasks"]
    assert task["steps"] == 3
    # The process has exited: every span must already be at the collector.
    spans = receiver.spans()
    (agent,) = named(spans, "invoke_agent assistant")
    chats = named(spans, f"chat {task['model']}")
    tools = named(spans, "execute_tool repeat")
    assert [span.attributes["thoughtline.step"] for span in chats] == [1, 2, 3]
    assert [span.attributes["gen_ai.usage.input_tokens"] for span in chats] == [40, 50, 60]
    assert len(tools) == 3
    assert {span.parent_span_id for span in (*chats, *tools)} == {agent.span_id}
    assert agent.attributes["thoughtline.task.id"] == task["id"]
    # telemetry_only with capture on: each step's reasoning is exported; the key is not.
    assert CANARY.encode() in receiver.raw()
    assert CANARY_KEY.encode() not in receiver.raw()
    assert CANARY_KEY not in result.stdout + result.stderr
