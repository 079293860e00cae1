"""The tool step loop through the real runtime, store and simulator, with a real MCP
server over stdio (``tests/tools/mcp_test_server.py``): a two-step loop on every wire API
in every mode, what the second request carries back, where reasoning may and may not go,
and every way a tool call can fail without stopping the loop."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
from itertools import pairwise
from pathlib import Path

import pytest

from tests.conftest import CANARY_KEY
from tests.runtime.test_disclosure_e2e import MODES, RECORDS, all_bytes_under, make_runtime
from tests.tools.test_mcp_tools import TEST_SERVER, _git_repository, http_server
from thoughtline.config.pricing import format_amount
from thoughtline.providers.redaction import REDACTED
from thoughtline.records import Run
from thoughtline.records.event_log import to_wire
from thoughtline.records.run_events import RunEvent, TaskToolCallCompleted, TaskToolCallStarted
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import (
    Fault,
    SimReasoning,
    SimRequest,
    SimToolCall,
    Simulator,
    SimulatorServer,
    Transcript,
)
from thoughtline.tools.settings import McpServerSettings

pytestmark = pytest.mark.slow  # every test starts a tool server process
__all__ = ["http_server"]  # a fixture used here: the test MCP server over Streamable HTTP

CANARY = "CANARY-LOOP-7c2d"
SIGNATURE = f"sig-{CANARY}"
REASONING = (SimReasoning(kind="summary", text=f"Call the tool; {CANARY}.", signature=SIGNATURE),)
FINAL = Transcript(reasoning=REASONING, answer="The tool said abab.", reasoning_tokens=30)

# task name -> (endpoint, model, what the second request must carry back when the mode
# requests reasoning: the carrier that wire's round-trip rule demands)
WIRES = {
    "anthropic": ("anthropic", "claude-sonnet-4-6", SIGNATURE),
    "openai-responses": ("openai", "gpt-5.5", SIGNATURE),
    "openai-chat": ("openai-chat", "gpt-4.1", None),  # Chat Completions sends none back
    "openrouter": ("openrouter", "anthropic/claude-sonnet-4.6", SIGNATURE),
    "gemini": ("gemini", "gemini-3-pro", SIGNATURE),
    "deepseek": ("deepseek", "deepseek-v4-pro", CANARY),  # reasoning_content, the text
    "ollama": ("ollama", "qwen3:8b", CANARY),  # thinking, the text
}


def probe_server() -> McpServerSettings:
    return McpServerSettings(name="probe", command=sys.executable, args=(TEST_SERVER,))


def calling(name: str, arguments: object, call_id: str = "call_1") -> Transcript:
    """A step that calls the probe server's tool ``name``."""
    return Transcript(
        reasoning=REASONING,
        tool_calls=(
            SimToolCall(call_id=call_id, name=f"probe__{name}", arguments=json.dumps(arguments)),
        ),
        reasoning_tokens=20,
    )


def tooled_runtime(
    home: Path, sim_server: SimulatorServer, environ: dict[str, str], **config: object
) -> tuple[Runtime, SQLiteStore]:
    return make_runtime(home, sim_server, environ, mcp_servers={"probe": probe_server()}, **config)


def one_task(**task: object) -> RunSpec:
    options: dict[str, object] = {"name": "t", "role": "engineer", "tools": ("probe",)}
    options.update(task)
    return RunSpec(request="Use the tool.", tasks=(TaskSpec(**options),))  # type: ignore[arg-type]


def requests_of(sim: Simulator, endpoint: str, model: str) -> list[SimRequest]:
    profile = "openai" if endpoint == "openai-chat" else endpoint
    return [r for r in sim.requests if r.profile == profile and r.model == model]


@pytest.mark.parametrize("mode", MODES)
async def test_a_two_step_loop_on_every_wire_carries_the_result_and_the_carrier_back(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str], mode: str
) -> None:
    for endpoint, model, _ in WIRES.values():
        profile = "openai" if endpoint == "openai-chat" else endpoint
        sim.script(FINAL, profile=profile, model=model)
        sim.script(
            calling("repeat", {"text": "ab", "times": 2}), profile=profile, model=model, times=1
        )
    home = tmp_path / "home"
    runtime, store = tooled_runtime(home, sim_server, environ)
    events: list[RunEvent] = []
    spec = RunSpec(
        request="Use the tool.",
        tasks=tuple(
            TaskSpec(name=name, role="engineer", provider=endpoint, model=model, tools=("probe",))
            for name, (endpoint, model, _) in WIRES.items()
        ),
    )
    try:
        run = await runtime.run(spec, explicit_mode=mode, observer=events.append)
    finally:
        await runtime.aclose()
    assert run.status == "completed", [(t.name, t.error) for t in run.tasks]

    requests_reasoning = mode != "hidden"
    for task in run.tasks:
        endpoint, model, carrier = WIRES[task.name]
        assert task.steps == 2
        assert task.output == "The tool said abab."
        assert task.tool_calls is not None and len(task.tool_calls) == 1
        call = task.tool_calls[0]
        assert (call.server, call.name, call.status, call.result) == (
            "probe",
            "repeat",
            "done",
            "abab",
        )
        assert (call.step, call.is_error, call.error) == (1, False, None)
        first, second = requests_of(sim, endpoint, model)
        # The tools are offered on every call, under a name every wire accepts.
        assert "probe__repeat" in json.dumps(first.body)
        sent = json.dumps(second.body)
        # Append-only: the second request holds the tool result after the first's turns.
        assert "abab" in sent, task.name
        if requests_reasoning and carrier is not None:
            assert carrier in sent, (task.name, sent)
        if task.name == "openai-responses":
            # Even hidden, a loop asks for the encrypted carrier and hands it back: with
            # store false it is the only way the model's reasoning continues. The checks
            # below prove it never reaches a file, the snapshot or an event.
            assert first.body is not None
            assert first.body["include"] == ["reasoning.encrypted_content"]
            assert SIGNATURE in sent, sent
        if task.reasoning_parts:
            assert {part.step for part in task.reasoning_parts} == {1, 2}

    # Live: each call started then completed, in that order, per task.
    told = [e for e in events if isinstance(e, TaskToolCallStarted | TaskToolCallCompleted)]
    assert len(told) == 2 * len(WIRES)
    for task in run.tasks:
        own = [e for e in told if e.task_id == task.id]
        assert [type(e) for e in own] == [TaskToolCallStarted, TaskToolCallCompleted]
        assert own[1].call["result"] == "abab"

    # The store gives back the same steps and calls.
    stored = store.get_run(run.id)
    assert stored is not None
    assert stored.snapshot()["tasks"] == run.snapshot()["tasks"]
    trace = store.trace(run.id, "answer")
    assert [e.type for e in trace].count("tool.completed") == len(WIRES)

    if mode not in RECORDS:
        # Echoed reasoning went to the provider only: no request body in provider_raw
        # holds it, and in hidden mode no byte under THOUGHTLINE_HOME does.
        raw = json.dumps([e.metadata for e in store.trace(run.id, "provider_raw")])
        assert CANARY not in raw
        assert SIGNATURE not in raw
    if mode == "hidden":
        store.close()
        assert CANARY not in all_bytes_under(home).decode("utf-8", "replace")
        assert CANARY not in json.dumps(run.snapshot())
        assert CANARY not in json.dumps([to_wire(e).data for e in events])
    else:
        store.close()


async def run_one(
    tmp_path: Path,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    spec: RunSpec,
    **config: object,
) -> Run:
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ, **config)
    try:
        return await runtime.run(spec, explicit_mode="surface")
    finally:
        await runtime.aclose()
        store.close()


async def test_a_hidden_loop_writes_no_reasoning_or_key_to_any_log(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Every logger at DEBUG (the mcp client, httpx2, thoughtline) through a two-step loop
    # whose step 1 carries the reasoning canary in its text and its signature.
    caplog.set_level(logging.DEBUG)
    sim.script(FINAL)
    sim.script(calling("repeat", {"text": "ab", "times": 2}), times=1)
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    try:
        # OpenAI Responses: even hidden, the loop asks for the encrypted carrier and sends
        # it back, so the canary passes through memory on its way.
        spec = one_task(provider="openai", model="gpt-5.5")
        run = await runtime.run(spec, explicit_mode="hidden")
    finally:
        await runtime.aclose()
        store.close()
    assert run.status == "completed", run.tasks[0].error
    assert SIGNATURE in json.dumps(sim.requests[-1].body)  # it did go back to the provider
    assert caplog.records
    text = "\n".join(f"{record.getMessage()} {record.args!r}" for record in caplog.records)
    assert CANARY not in text
    assert CANARY_KEY not in text


async def test_the_step_limit_fails_the_task_and_keeps_what_arrived(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(calling("repeat", {"text": "x", "times": 1}))  # every step calls the tool
    run = await run_one(tmp_path, sim_server, environ, one_task(max_steps=3))
    task = run.tasks[0]
    assert task.status == "failed"
    assert task.error is not None and task.error.code == "MAX_STEPS_REACHED"
    assert task.steps == 3 and len(sim.requests) == 3
    # The calls of the first two steps ran; the last step's were not.
    assert task.tool_calls is not None
    assert [(c.step, c.status) for c in task.tool_calls] == [(1, "done"), (2, "done")]
    assert task.usage.input_tokens == 3 * 40


async def test_a_timeout_and_a_tool_nobody_offered_go_back_to_the_model(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    """Each is an error result the model is sent, and the loop goes on to the answer."""
    sim.script(FINAL)
    sim.script(
        Transcript(
            tool_calls=(
                SimToolCall(call_id="slow", name="probe__sleep", arguments='{"seconds": 30}'),
                SimToolCall(call_id="nope", name="other__tool", arguments="{}"),
            )
        ),
        times=1,
    )
    run = await run_one(
        tmp_path, sim_server, environ, one_task(tools=("probe.sleep",)), tool_timeout_s=1.0
    )
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.tool_calls is not None
    calls = {call.id: call for call in task.tool_calls}
    assert (calls["slow"].status, calls["slow"].error) == ("timed_out", "TOOL_TIMEOUT")
    assert (calls["nope"].status, calls["nope"].error, calls["nope"].server) == (
        "denied",
        "TOOL_NOT_FOUND",
        None,
    )
    second = json.dumps(sim.requests[1].body)
    assert "did not answer within 1 s" in second
    assert "There is no tool named 'other__tool' here." in second


async def test_a_ten_megabyte_result_is_cut_for_the_model_and_the_record(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(FINAL)
    sim.script(calling("repeat", {"text": "0123456789", "times": 1_000_000}), times=1)
    run = await run_one(tmp_path, sim_server, environ, one_task())
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.tool_calls is not None
    (call,) = task.tool_calls
    assert call.status == "done" and call.result_truncated
    assert call.result is not None and len(call.result) == 2_000
    second = json.dumps(sim.requests[1].body)
    # The model got the cut result (under the cap, marked), never 10 MB: the server's
    # answer (the text twice, as content and structured content) was cut as it was read.
    assert re.search(
        r"\[result cut at 100,000 characters; the server sent 20,000,\d{3} bytes\]", second
    )
    assert len(second) < 200_000


async def test_a_server_that_dies_mid_call_is_an_error_result(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(FINAL)
    sim.script(calling("die", {}), times=1)
    run = await run_one(tmp_path, sim_server, environ, one_task())
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.tool_calls is not None
    (call,) = task.tool_calls
    assert (call.status, call.error, call.is_error) == ("failed", "TOOL_SERVER_UNAVAILABLE", True)


async def test_a_call_to_a_tool_of_the_server_the_task_was_not_given_is_denied(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(FINAL)
    sim.script(calling("environment", {}), times=1)
    run = await run_one(tmp_path, sim_server, environ, one_task(tools=("probe.repeat",)))
    task = run.tasks[0]
    assert task.status == "done"
    assert task.tool_calls is not None
    (call,) = task.tool_calls
    assert (call.status, call.error) == ("denied", "TOOL_NOT_FOUND")


async def test_no_tool_server_receives_a_provider_key(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(FINAL)
    sim.script(calling("environment", {}), times=1)
    environ = {**environ, "PATH": "/usr/bin:/bin"}  # the server's PATH is thoughtline's
    run = await run_one(tmp_path, sim_server, environ, one_task())
    task = run.tasks[0]
    assert task.tool_calls is not None
    (call,) = task.tool_calls
    assert call.status == "done" and call.result is not None
    assert json.loads(call.result)["PATH"] == "/usr/bin:/bin"
    assert CANARY_KEY not in json.dumps(sim.requests[1].body)
    assert not any(name.endswith("_API_KEY") for name in json.loads(call.result or "{}"))


async def test_a_tool_the_server_does_not_list_fails_the_task_before_any_call(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    run = await run_one(tmp_path, sim_server, environ, one_task(tools=("probe.missing",)))
    task = run.tasks[0]
    assert task.status == "failed"
    assert task.error is not None and task.error.code == "TOOL_NOT_FOUND"
    assert "probe has no tool 'missing'" in task.error.message
    assert sim.requests == []


async def test_a_hundred_step_loop_sends_each_earlier_turn_unchanged(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    """Append-only over a long loop: every request starts with the turns of the one
    before, byte for byte, and grows by the same amount each step."""
    sim.script(FINAL)
    sim.script(calling("repeat", {"text": "x", "times": 1}), times=99)
    run = await run_one(tmp_path, sim_server, environ, one_task(max_steps=100))
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.steps == 100 and len(sim.requests) == 100
    turns = [request.body["messages"] for request in sim.requests if request.body is not None]
    for before, after in pairwise(turns):
        assert after[: len(before)] == before
        assert len(after) == len(before) + 2
    growth = {
        len(json.dumps(after)) - len(json.dumps(before)) for before, after in pairwise(turns[1:])
    }
    assert len(growth) == 1  # every step adds the same bytes: nothing earlier is rebuilt


async def test_cancelling_stops_the_call_in_flight_and_the_server(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(FINAL)
    sim.script(calling("sleep", {"seconds": 60}), times=1)
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    run = runtime.prepare(one_task(), explicit_mode="surface")

    def observe(event: RunEvent) -> None:
        if isinstance(event, TaskToolCallStarted):  # the call is in flight: stop the run
            asyncio.get_running_loop().call_soon(runtime.cancel, run.id)

    try:
        ended = await runtime.execute(run, observer=observe)
    finally:
        await runtime.aclose()
        store.close()
    task = ended.tasks[0]
    assert ended.status == "cancelled" and task.status == "cancelled"
    assert task.tool_calls is not None
    (call,) = task.tool_calls
    assert (call.status, call.error) == ("cancelled", "TOOL_CANCELLED")
    assert len(sim.requests) == 1  # nothing more was asked of the model


async def test_cancelling_while_a_tool_runs_keeps_the_whole_reasoning_and_says_where_it_stopped(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(FINAL)
    sim.script(calling("sleep", {"seconds": 60}), times=1)
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    run = runtime.prepare(one_task(), explicit_mode="surface")

    def observe(event: RunEvent) -> None:
        if isinstance(event, TaskToolCallStarted):  # step 1 ended whole; its tool runs
            asyncio.get_running_loop().call_soon(runtime.cancel, run.id)

    try:
        ended = await runtime.execute(run, observer=observe)
    finally:
        await runtime.aclose()
        store.close()
    task = ended.tasks[0]
    assert task.status == "cancelled"
    # The reasoning of the one call made arrived whole: shown, not "marked partial".
    assert task.reasoning_status == "shown"
    assert task.reasoning_notice is not None
    assert task.reasoning_notice.startswith("Shown: the provider's summary"), task.reasoning_notice
    assert task.reasoning_notice.endswith(
        " The task was cancelled while the tool calls of step 1 ran."
    ), task.reasoning_notice
    assert task.reasoning == REASONING[0].text


async def test_cancelling_a_later_step_before_its_reasoning_says_which_step(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(FINAL)
    sim.script(calling("repeat", {"text": "ab", "times": 2}), times=1)
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    run = runtime.prepare(one_task(), explicit_mode="surface")

    def observe(event: RunEvent) -> None:
        if isinstance(event, TaskToolCallStarted):  # step 2's call will send nothing back
            sim.inject(Fault.stall())

    async def cancel_in_step_2() -> None:
        for _ in range(6000):  # at most a minute
            if len(sim.requests) == 2:
                runtime.cancel(run.id)
                return
            await asyncio.sleep(0.01)

    try:
        ended, _ = await asyncio.gather(runtime.execute(run, observer=observe), cancel_in_step_2())
    finally:
        await runtime.aclose()
        store.close()
    task = ended.tasks[0]
    assert task.status == "cancelled"
    assert task.steps == 2
    assert task.reasoning_status == "interrupted"
    # Step 1's reasoning was shown: the notice speaks of step 2, and only once.
    assert task.reasoning_notice == (
        "The task was cancelled in step 2, before any of its reasoning text arrived. "
        "Reasoning shown for 1 of 2 steps."
    )
    assert task.reasoning_parts is not None
    assert [part.step for part in task.reasoning_parts] == [1]


async def test_a_loaded_key_in_tool_arguments_is_redacted_before_anything_sees_it(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(FINAL)
    sim.script(calling("repeat", {"text": CANARY_KEY, "times": 2}), times=1)
    home = tmp_path / "home"
    run = await run_one(tmp_path, sim_server, environ, one_task())
    task = run.tasks[0]
    assert task.tool_calls is not None
    (call,) = task.tool_calls
    assert CANARY_KEY not in call.arguments and REDACTED in call.arguments
    assert call.result == REDACTED * 2  # the tool itself never received the key
    assert CANARY_KEY not in json.dumps(sim.requests[1].body)
    assert CANARY_KEY not in all_bytes_under(home).decode("utf-8", "replace")


@pytest.mark.parametrize("allowed", [False, True])
async def test_a_destructive_tool_runs_only_where_its_server_allows_it(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    allowed: bool,
) -> None:
    repository = _git_repository(tmp_path / "repo")
    git = McpServerSettings(
        name="git",
        command=sys.executable,
        args=("-m", "mcp_server_git", "--repository", str(repository)),
        allow_destructive=allowed,
    )
    sim.script(FINAL)
    reset = SimToolCall(
        call_id="r1", name="git__git_reset", arguments=json.dumps({"repo_path": str(repository)})
    )
    sim.script(Transcript(tool_calls=(reset,)), times=1)
    runtime, store = make_runtime(tmp_path / "home", sim_server, environ, mcp_servers={"git": git})
    try:
        run = await runtime.run(one_task(tools=("git.git_reset",)), explicit_mode="hidden")
    finally:
        await runtime.aclose()
        store.close()
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.tool_calls is not None
    (call,) = task.tool_calls
    if allowed:
        assert (call.status, call.error) == ("done", None), call
    else:
        assert (call.status, call.error, call.is_error) == ("denied", "TOOL_NOT_ALLOWED", True)
        assert "allow_destructive" in json.dumps(sim.requests[1].body)


async def test_the_loop_calls_a_streamable_http_server(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    http_server: tuple[str, str],
) -> None:
    url, token = http_server
    remote = McpServerSettings(
        name="remote", url=url, headers={"Authorization": "Bearer ${REMOTE_TOKEN}"}
    )
    sim.script(FINAL)
    call = SimToolCall(call_id="h1", name="remote__repeat", arguments='{"text": "h", "times": 3}')
    sim.script(Transcript(tool_calls=(call,)), times=1)
    runtime, store = make_runtime(
        tmp_path / "home",
        sim_server,
        {**environ, "REMOTE_TOKEN": token},
        mcp_servers={"remote": remote},
    )
    try:
        run = await runtime.run(one_task(tools=("remote",)), explicit_mode="hidden")
    finally:
        await runtime.aclose()
        store.close()
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.tool_calls is not None
    assert [(c.server, c.status, c.result) for c in task.tool_calls] == [("remote", "done", "hhh")]


async def test_the_notice_accounts_for_every_step(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    """A step that returned no reasoning text is named, with the tokens it reasoned for
    and what they cost (212 tokens at gpt-5.5's $30 per million output tokens)."""
    sim.script(Transcript(answer="The tool said abab.", reasoning_tokens=212))
    sim.script(calling("repeat", {"text": "ab", "times": 2}), times=1)
    run = await run_one(tmp_path, sim_server, environ, one_task(provider="openai", model="gpt-5.5"))
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.reasoning_status == "shown"
    assert task.reasoning_notice is not None
    assert task.reasoning_notice.endswith(
        "Reasoning shown for 1 of 2 steps; step 2 returned none "
        "(the model reasoned for 212 tokens ($0.0064))."
    ), task.reasoning_notice
    assert task.reasoning_parts is not None
    assert [part.step for part in task.reasoning_parts] == [1]


async def test_the_notice_counts_every_steps_reasoning_tokens_and_their_cost(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    """A task that reasoned over two steps: its notice gives the tokens of both and what
    they cost, as its usage and cost do (it gave the last step's alone)."""
    sim.script(Transcript(reasoning=REASONING, answer="The tool said abab.", reasoning_tokens=212))
    sim.script(calling("repeat", {"text": "ab", "times": 2}), times=1)  # 20 tokens
    run = await run_one(tmp_path, sim_server, environ, one_task(provider="openai", model="gpt-5.5"))
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.usage.reasoning_tokens == 232
    reasoning = task.cost.parts.reasoning if task.cost.parts is not None else None
    assert reasoning
    assert task.reasoning_notice is not None
    assert (
        f"The model reasoned for 232 tokens ({format_amount(reasoning)}); the summary is shorter."
        in task.reasoning_notice
    ), task.reasoning_notice
    assert task.reasoning_notice.endswith("Reasoning shown for all 2 steps.")


async def test_each_call_is_stored_as_it_starts_and_ends_in_its_own_rows(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(FINAL)
    sim.script(calling("sleep", {"seconds": 60}, call_id="call_slow"), times=1)
    sim.script(calling("repeat", {"text": "ab", "times": 2}), times=2)
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    run = runtime.prepare(one_task(), explicit_mode="surface")
    while_running: list[Run | None] = []
    looking: list[asyncio.Task[None]] = []

    async def look_then_stop() -> None:
        await runtime.writer.flush()  # what was queued with the event is committed
        while_running.append(store.get_run(run.id))
        runtime.cancel(run.id)

    def observe(event: RunEvent) -> None:
        if isinstance(event, TaskToolCallStarted) and event.call["id"] == "call_slow":
            looking.append(asyncio.get_running_loop().create_task(look_then_stop()))

    try:
        ended = await runtime.execute(run, observer=observe)
        await asyncio.gather(*looking)
    finally:
        await runtime.aclose()
        store.close()
    (seen,) = while_running
    assert seen is not None
    assert seen.tasks[0].status == "running"
    assert [(c.id, c.step, c.status) for c in seen.tasks[0].tool_calls or ()] == [
        ("call_1", 1, "done"),
        ("call_1", 2, "done"),
        ("call_slow", 3, "running"),
    ]
    with SQLiteStore(tmp_path / "home" / "thoughtline.db") as reopened:
        stored = reopened.get_run(run.id)
    assert stored is not None
    assert stored.tasks[0] == ended.tasks[0]
    assert [c.status for c in stored.tasks[0].tool_calls or ()] == ["done", "done", "cancelled"]
    assert stored.tasks[0].steps == 3
    assert stored.tasks[0].tool_calls is not None
    assert stored.tasks[0].tool_calls[0].result == "abab"
