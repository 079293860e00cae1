"""Python callables as tools, through the library API, the real runtime and store and the
provider simulator over loopback HTTP: the schema the model is sent, sync and async
tools, a tool that raises, arguments that do not fit, a slow tool timing out, a key in a
result, cancellation, hidden-mode canaries, and bad input refused before anything runs."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import thoughtline
from tests.conftest import CANARY_KEY
from tests.runtime.test_disclosure_e2e import all_bytes_under
from thoughtline import Orchestrator, ThoughtlineError
from thoughtline.providers.redaction import REDACTED
from thoughtline.records.event_log import to_wire
from thoughtline.records.run_events import RunEvent, TaskToolCallCompleted, TaskToolCallStarted
from thoughtline.testing import SimReasoning, SimRequest, SimToolCall, Simulator, Transcript
from thoughtline.tools.python_tools import PythonTool

CANARY = "CANARY-PYTOOL-41e9"
SIGNATURE = f"sig-{CANARY}"
REASONING = (SimReasoning(kind="summary", text=f"Call the tool; {CANARY}.", signature=SIGNATURE),)
FINAL = Transcript(reasoning=REASONING, answer="Done with the tools.", reasoning_tokens=30)

# Two wire APIs with different tool shapes: (endpoint, model, where its request keeps
# the tools' schemas)
WIRES = {
    "anthropic": ("anthropic", "claude-sonnet-4-6", "input_schema"),
    "openai-responses": ("openai", "gpt-5.5", "parameters"),
}


def add(a: int, b: int = 2) -> int:
    """Add two numbers.

    Longer text that is not the description.

    Args:
        a: The first number.
        b: The second number,
            two unless given.
    """
    return a + b


async def greet(name: str) -> dict[str, str]:
    """Greet someone by name.

    :param name: Who to greet.
    """
    await asyncio.sleep(0)
    return {"greeting": f"hi {name}"}


def fail() -> str:
    """Always fails."""
    raise ValueError("no luck today")


def calls(*made: tuple[str, str, dict[str, Any]]) -> Transcript:
    """A step that calls the Python tools ``made`` (call id, name, arguments)."""
    return Transcript(
        reasoning=REASONING,
        tool_calls=tuple(
            SimToolCall(call_id=call_id, name=f"python__{name}", arguments=json.dumps(arguments))
            for call_id, name, arguments in made
        ),
        reasoning_tokens=20,
    )


@pytest.fixture
def user_env(tmp_path: Path, environ: dict[str, str]) -> dict[str, str]:
    return {**environ, "THOUGHTLINE_HOME": str(tmp_path / "home")}


@pytest.fixture
async def orchestrator(user_env: dict[str, str]) -> AsyncIterator[Orchestrator]:
    config = thoughtline.Config(path=None, tool_timeout_s=0.5, trace_provider_raw=True)
    async with Orchestrator.open(config, environ=user_env) as opened:
        yield opened


def tools_sent(request: SimRequest) -> dict[str, Any]:
    assert request.body is not None
    return {tool["name"]: tool for tool in request.body["tools"]}


@pytest.mark.parametrize("wire", list(WIRES))
async def test_sync_and_async_callables_run_with_the_schema_from_their_hints(
    orchestrator: Orchestrator, sim: Simulator, wire: str
) -> None:
    endpoint, model, schema_key = WIRES[wire]
    sim.script(FINAL)
    sim.script(calls(("c1", "add", {"a": 3}), ("c2", "greet", {"name": "Ada"})), times=1)
    events: list[RunEvent] = []
    handle = orchestrator.start(
        "Add and greet.", provider=endpoint, model=model, tools=[add, greet], max_steps=3
    )
    async for event in handle:
        events.append(event)
    run = await handle
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.output == "Done with the tools."
    assert task.tools == ("python.add", "python.greet")

    first, second = sim.requests
    offered = tools_sent(first)
    assert set(offered) == {"python__add", "python__greet"}
    assert offered["python__add"]["description"] == "Add two numbers."
    assert offered["python__add"][schema_key] == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first number."},
            "b": {
                "type": "integer",
                "default": 2,
                "description": "The second number, two unless given.",
            },
        },
        "required": ["a"],
        "additionalProperties": False,
    }
    assert offered["python__greet"][schema_key]["properties"] == {
        "name": {"type": "string", "description": "Who to greet."}
    }
    # The results went back: the int as JSON, the dict as JSON.
    sent = json.dumps(second.body)
    assert json.dumps('{"greeting":"hi Ada"}')[1:-1] in sent

    assert task.tool_calls is not None
    assert [(c.id, c.server, c.name, c.status, c.result, c.is_error) for c in task.tool_calls] == [
        ("c1", "python", "add", "done", "5", False),
        ("c2", "python", "greet", "done", '{"greeting":"hi Ada"}', False),
    ]
    # The same recording path as an MCP server's tools: live events, trace, store.
    told = [e for e in events if isinstance(e, TaskToolCallStarted | TaskToolCallCompleted)]
    assert len(told) == 4
    trace = orchestrator.trace(run.id, "answer")
    completed = [e.metadata for e in trace if e.type == "tool.completed"]
    # (in the order they ended: the two ran at the same time)
    assert sorted((m["server"], m["tool"], m["status"]) for m in completed) == [
        ("python", "add", "done"),
        ("python", "greet", "done"),
    ]
    assert orchestrator.status(run.id).snapshot()["tasks"] == run.snapshot()["tasks"]


async def test_a_tool_that_raises_and_arguments_that_do_not_fit_go_back_as_errors(
    orchestrator: Orchestrator, sim: Simulator
) -> None:
    sim.script(FINAL)
    sim.script(
        calls(("boom", "fail", {}), ("bad", "add", {"a": "three", "c": 1})),
        times=1,
    )
    handle = orchestrator.start(
        "Try.", provider="anthropic", model="claude-sonnet-4-6", tools=[add, fail]
    )
    run = await handle
    task = run.tasks[0]
    assert task.status == "done", task.error  # the loop went on to the answer
    assert task.tool_calls is not None
    found = {call.id: call for call in task.tool_calls}
    assert (found["boom"].status, found["boom"].is_error, found["boom"].error) == (
        "failed",
        True,
        None,
    )
    assert found["boom"].result == "The tool raised ValueError: no luck today"
    assert (found["bad"].status, found["bad"].error) == ("failed", "TOOL_ARGUMENTS_INVALID")
    assert found["bad"].result is not None
    assert found["bad"].result.startswith("The arguments do not fit the tool python.add: a: ")
    assert "c: Extra inputs are not permitted" in found["bad"].result
    sent = json.dumps(sim.requests[1].body)
    assert "no luck today" in sent and "Extra inputs are not permitted" in sent
    assert "Traceback" not in sent and "test_python_tools.py" not in sent


async def test_a_slow_sync_tool_times_out_without_blocking_the_loop(
    orchestrator: Orchestrator, sim: Simulator
) -> None:
    released = threading.Event()
    entered = threading.Event()

    def slow() -> str:
        """Wait for a long time."""
        entered.set()
        released.wait(30)
        return "late"

    sim.script(FINAL)
    sim.script(calls(("s1", "slow", {})), times=1)
    try:
        run = await orchestrator.start("Wait.", provider="openai", model="gpt-5.5", tools=[slow])
    finally:
        released.set()  # the thread cannot be stopped: let it end
    task = run.tasks[0]
    assert entered.is_set()
    assert task.status == "done", task.error
    assert task.tool_calls is not None
    (call,) = task.tool_calls
    assert (call.status, call.error, call.is_error) == ("timed_out", "TOOL_TIMEOUT", True)
    assert "python.slow did not answer within 0.5 s" in json.dumps(sim.requests[1].body)


async def test_a_loaded_key_in_a_result_is_redacted_before_anything_sees_it(
    orchestrator: Orchestrator, sim: Simulator, user_env: dict[str, str], tmp_path: Path
) -> None:
    def leak() -> str:
        """Return something that holds a key."""
        return f"the key is {CANARY_KEY}"

    sim.script(FINAL)
    sim.script(calls(("k1", "leak", {})), times=1)
    run = await orchestrator.start(
        "Leak.", provider="anthropic", model="claude-sonnet-4-6", tools=[leak]
    )
    task = run.tasks[0]
    assert task.tool_calls is not None
    (call,) = task.tool_calls
    assert call.result == f"the key is {REDACTED}"
    assert CANARY_KEY not in json.dumps(sim.requests[1].body)
    orchestrator.store.close()
    assert CANARY_KEY not in all_bytes_under(tmp_path / "home").decode("utf-8", "replace")


async def test_a_large_result_is_cut_for_the_model_and_the_record(
    orchestrator: Orchestrator, sim: Simulator
) -> None:
    class Report:
        """A callable object as a tool."""

        def __call__(self, lines: int) -> list[str]:
            """Write a long report.

            Args:
                lines: How many lines.
            """
            return [f"line {number:07d}" for number in range(lines)]

    report = thoughtline.tool(name="report")(Report())
    sim.script(FINAL)
    sim.script(calls(("r1", "report", {"lines": 50_000})), times=1)
    run = await orchestrator.start(
        "Report.", provider="anthropic", model="claude-sonnet-4-6", tools=[report]
    )
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert tools_sent(sim.requests[0])["python__report"]["input_schema"]["properties"] == {
        "lines": {"type": "integer", "description": "How many lines."}
    }
    assert task.tool_calls is not None
    (call,) = task.tool_calls
    assert (call.status, call.result_truncated) == ("done", True)
    assert call.result is not None and len(call.result) == 2_000
    sent = json.dumps(sim.requests[1].body)
    assert "[result cut at 100,000 of 750,001 characters]" in sent
    assert len(sent) < 200_000


async def test_cancelling_stops_an_async_tool_in_flight(
    orchestrator: Orchestrator, sim: Simulator
) -> None:
    async def wait_forever() -> str:
        """Never answers."""
        await asyncio.Event().wait()
        return "never"

    sim.script(FINAL)
    sim.script(calls(("w1", "wait_forever", {})), times=1)
    handle = orchestrator.start(
        "Wait.", provider="anthropic", model="claude-sonnet-4-6", tools=[wait_forever]
    )
    async for event in handle:
        if isinstance(event, TaskToolCallStarted):
            handle.cancel()
    run = await handle
    task = run.tasks[0]
    assert run.status == "cancelled" and task.status == "cancelled"
    assert task.tool_calls is not None
    (call,) = task.tool_calls
    assert (call.status, call.error) == ("cancelled", "TOOL_CANCELLED")
    assert len(sim.requests) == 1


async def test_a_hidden_loop_keeps_no_reasoning_while_its_carrier_goes_back(
    orchestrator: Orchestrator, sim: Simulator, tmp_path: Path
) -> None:
    sim.script(FINAL)
    sim.script(calls(("c1", "add", {"a": 1, "b": 1})), times=1)
    events: list[RunEvent] = []
    handle = orchestrator.start(
        "Add.",
        provider="openai",
        model="gpt-5.5",
        tools=[add],
        chain_of_thought="hidden",
    )
    async for event in handle:
        events.append(event)
    run = await handle
    assert run.status == "completed", run.tasks[0].error
    # OpenAI Responses: even hidden, the loop hands the encrypted carrier back.
    assert SIGNATURE in json.dumps(sim.requests[1].body)
    assert CANARY not in json.dumps(run.snapshot())
    assert CANARY not in json.dumps([to_wire(e).data for e in events])
    orchestrator.store.close()
    assert CANARY not in all_bytes_under(tmp_path / "home").decode("utf-8", "replace")


def test_the_sync_api_runs_a_callable(
    sim: Simulator, user_env: dict[str, str], tmp_path: Path
) -> None:
    sim.script(FINAL)
    sim.script(calls(("c1", "add", {"a": 40})), times=1)
    run = thoughtline.run(
        "Add.",
        provider="anthropic",
        model="claude-sonnet-4-6",
        tools=[add],
        config=thoughtline.Config(path=None),
        environ=user_env,
    )
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.tool_calls is not None
    assert [(c.name, c.result) for c in task.tool_calls] == [("add", "42")]


@thoughtline.tool(name="lookup", description="Find a user.", destructive=True)
def find_user(user_id: int) -> str:
    """Not this text."""
    return str(user_id)


def test_the_decorator_names_and_describes_a_tool() -> None:
    made = PythonTool(find_user)
    assert (made.name, made.description, made.destructive) == ("lookup", "Find a user.", True)
    assert find_user(7) == "7"  # still the function


def test_numpy_and_sphinx_docstrings_describe_parameters() -> None:
    def numpy_style(path: str, depth: int = 1) -> str:
        """List a folder.

        Parameters
        ----------
        path : str
            The folder to list.
        depth : int
            How deep to go.

        Returns
        -------
        str
        """
        return path

    def sphinx_style(query: str, limit: int | None = None) -> list[str]:
        """Search.

        :param query: What to look for.
        :param int limit: At most this many.
        :returns: the hits.
        """
        return [query]

    numpy = PythonTool(numpy_style).parameters["properties"]
    assert numpy["path"]["description"] == "The folder to list."
    assert numpy["depth"]["description"] == "How deep to go."
    sphinx = PythonTool(sphinx_style)
    assert sphinx.description == "Search."
    assert sphinx.parameters["properties"]["query"]["description"] == "What to look for."
    assert sphinx.parameters["properties"]["limit"]["description"] == "At most this many."


async def test_bad_tools_are_refused_before_anything_is_stored(
    orchestrator: Orchestrator, sim: Simulator
) -> None:
    def other() -> None:
        """Another."""

    def clash() -> None:
        """A second function named like the first."""

    clash.__name__ = "other"

    def spread(*items: str) -> None:
        """Takes anything."""

    cases: list[tuple[list[Any], str, str]] = [
        ([other, clash], "TOOL_NAME_TAKEN", "Two callables are tools named 'other'"),
        ([add, "python.nope"], "TOOL_NOT_FOUND", "none of the run's Python callables"),
        (["python"], "TOOL_SERVER_UNKNOWN", "only through the library API"),
        ([42], "REQUEST_INVALID", "each must be a tool name"),
        ([spread], "REQUEST_INVALID", "takes *items"),
        ([lambda: 1], "REQUEST_INVALID", "'<lambda>'"),
    ]
    for tools, code, words in cases:
        with pytest.raises(ThoughtlineError) as caught:
            orchestrator.start("x", provider="anthropic", model="claude-sonnet-4-6", tools=tools)
        assert (caught.value.code, words in caught.value.message) == (code, True), caught.value
    assert orchestrator.runs() == []
    assert sim.requests == []


def test_importing_thoughtline_and_its_orchestrator_leaves_pydantic_out() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, thoughtline; thoughtline.Orchestrator; thoughtline.run; "
            "thoughtline.tool; print('pydantic' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "False"
