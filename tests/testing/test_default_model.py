"""The simulator's default model, through the library API, the real runtime and tool
loop and the simulator over loopback HTTP on every wire it speaks: it calls the tool
that fits the request with arguments valid for the tool's schema, answers quoting the
result, reasons on every step, stops after one tool step, and names the model, role and
request in its answers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import thoughtline
from tests.runtime.test_disclosure_e2e import all_bytes_under
from thoughtline import Orchestrator
from thoughtline.testing import SimRequest, Simulator
from thoughtline.testing.default_model import (
    PLAIN_ANSWER,
    REASONING_OPENING,
    arguments_for,
    respond,
)
from thoughtline.testing.profiles import default_profiles

# (endpoint, model): one per wire API and Chat Completions dialect the simulator speaks.
WIRES = {
    "anthropic-messages": ("anthropic", "claude-sonnet-4-6"),
    "openai-responses": ("openai", "gpt-5.5"),
    "openai-chat (openrouter)": ("openrouter", "anthropic/claude-sonnet-4.6"),
    "openai-chat (raw reasoning)": ("deepseek", "deepseek-reasoner"),
    "gemini": ("gemini", "gemini-3-pro"),
    "ollama": ("ollama", "qwen3"),
}


def now(timezone: str = "UTC") -> str:
    """The current time in an IANA timezone.

    Args:
        timezone: The IANA zone, e.g. Europe/Paris.
    """
    return f"09:30 in {timezone}"


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def greet(name: str) -> str:
    """Greet someone by name."""
    return f"hello {name}"


@pytest.fixture
def model_sim(sim: Simulator) -> Simulator:
    """The session's simulator with its default model answering (the fixture puts the
    fixed transcript back afterwards)."""
    sim.default_transcript = None
    return sim


@pytest.fixture
async def orchestrator(tmp_path: Path, environ: dict[str, str]) -> AsyncIterator[Orchestrator]:
    config = thoughtline.Config(path=None)
    user_env = {**environ, "THOUGHTLINE_HOME": str(tmp_path / "home")}
    async with Orchestrator.open(config, environ=user_env) as opened:
        yield opened


@pytest.mark.parametrize("wire", list(WIRES))
async def test_it_calls_the_fitting_tool_then_answers_quoting_its_result(
    orchestrator: Orchestrator, model_sim: Simulator, wire: str
) -> None:
    endpoint, model = WIRES[wire]
    run = await orchestrator.start(
        "What time is it in Tokyo?",
        provider=endpoint,
        model=model,
        tools=[add, now],
        chain_of_thought="surface",
    )
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.tool_calls is not None
    # The clock, not the calculator, with the zone the request implies.
    assert [(call.name, json.loads(call.arguments), call.result) for call in task.tool_calls] == [
        ("now", {"timezone": "Asia/Tokyo"}, "09:30 in Asia/Tokyo")
    ]
    assert task.output == (
        f"(simulated {model}) On 'What time is it in Tokyo?': "
        "python__now returned: 09:30 in Asia/Tokyo."
    )
    # Two model calls (strict round trips: every carrier went back as handed out).
    assert len(model_sim.requests) == 2
    if endpoint != "ollama":  # Ollama reasons only when asked, and this one was not
        assert task.reasoning is not None
        assert task.reasoning.count(REASONING_OPENING) == 2  # reasoning on both steps


async def test_two_tools_that_each_fit_are_called_in_parallel(
    orchestrator: Orchestrator, model_sim: Simulator
) -> None:
    run = await orchestrator.start(
        "Add two numbers and greet someone",
        provider="anthropic",
        model="claude-sonnet-4-6",
        tools=[now, add, greet],
    )
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.tool_calls is not None
    assert [(call.name, json.loads(call.arguments)) for call in task.tool_calls] == [
        ("add", {"a": 1, "b": 1}),
        ("greet", {"name": "Add two numbers and greet someone"}),
    ]
    assert len(model_sim.requests) == 2  # both in one step, then the answer
    assert task.output == (
        "(simulated claude-sonnet-4-6) On 'Add two numbers and greet someone': "
        "python__add returned: 2; python__greet returned: hello Add two numbers and greet someone."
    )


async def test_no_tool_is_called_when_none_of_several_fits(
    orchestrator: Orchestrator, model_sim: Simulator
) -> None:
    run = await orchestrator.start(
        "Why is the sky blue?", provider="openai", model="gpt-5.5", tools=[add, greet]
    )
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert not task.tool_calls
    assert task.output == f"(simulated gpt-5.5) On 'Why is the sky blue?': {PLAIN_ANSWER}"
    assert len(model_sim.requests) == 1


async def test_the_only_tool_offered_is_called_even_with_no_word_in_common(
    orchestrator: Orchestrator, model_sim: Simulator
) -> None:
    run = await orchestrator.start(
        "Why is the sky blue?", provider="gemini", model="gemini-3-pro", tools=[greet]
    )
    task = run.tasks[0]
    assert task.tool_calls is not None
    assert [(call.name, call.status) for call in task.tool_calls] == [("greet", "done")]
    assert task.output is not None and "python__greet returned: hello" in task.output


async def test_a_tool_step_comes_once_per_request_however_many_steps_are_allowed(
    orchestrator: Orchestrator, model_sim: Simulator
) -> None:
    run = await orchestrator.start(
        "What time is it in Paris?",
        provider="deepseek",
        model="deepseek-reasoner",
        tools=[now],
        max_steps=10,
    )
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.tool_calls is not None and len(task.tool_calls) == 1
    assert len(model_sim.requests) == 2


async def test_answers_name_the_model_the_role_and_the_request(
    orchestrator: Orchestrator, model_sim: Simulator
) -> None:
    run = await orchestrator.start(
        "Plan a cache", roles=["architect", "reviewer"], provider="openai", model="gpt-5.5"
    )
    assert [task.output for task in run.tasks] == [
        f"(simulated gpt-5.5, as architect) On 'Plan a cache': {PLAIN_ANSWER}",
        f"(simulated gpt-5.5, as reviewer) On 'Plan a cache': {PLAIN_ANSWER}",
    ]
    inline = await orchestrator.start(
        "Plan a cache", system="Answer in French.", provider="anthropic", model="claude-opus-4-7"
    )
    assert inline.tasks[0].output == (
        f"(simulated claude-opus-4-7, with a system prompt) On 'Plan a cache': {PLAIN_ANSWER}"
    )


SCHEMAS: dict[str, tuple[dict[str, Any], str, dict[str, Any]]] = {
    # name: (schema, request, the arguments expected)
    "zone named by a place": (
        {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]},
        "Time in new york please",
        {"tz": "America/New_York"},
    ),
    "zone named as such": (
        {"type": "object", "properties": {"timezone": {"type": "string"}}},
        "Is it late in Europe/Lisbon?",
        {"timezone": "Europe/Lisbon"},
    ),
    "zone not in the request: the default": (
        {
            "type": "object",
            "properties": {"timezone": {"type": "string", "default": "Europe/Paris"}},
            "required": ["timezone"],
        },
        "What time is it?",
        {"timezone": "Europe/Paris"},
    ),
    "an enum, and the request's value when it is one of it": (
        {
            "type": "object",
            "properties": {
                "unit": {"enum": ["celsius", "fahrenheit"]},
                "zone": {"type": "string", "enum": ["UTC", "Asia/Tokyo"]},
            },
            "required": ["unit", "zone"],
        },
        "Weather in Tokyo",
        {"unit": "celsius", "zone": "Asia/Tokyo"},
    ),
    "arithmetic, a file and a URL from the request": (
        {
            "type": "object",
            "properties": {
                "expression": {"type": "string"},
                "path": {"type": "string"},
                "url": {"type": "string", "format": "uri"},
            },
            "required": ["expression", "path", "url"],
        },
        "Compute (2 + 3) * 4 from notes/todo.txt, see https://example.org/a.",
        {"expression": "(2 + 3) * 4", "path": "notes/todo.txt", "url": "https://example.org/a"},
    ),
    "a name read by its words, not its letters": (
        {
            "type": "object",
            "properties": {"profile": {"type": "string"}, "sourceTimezone": {"type": "string"}},
            "required": ["profile"],
        },
        "Read notes.txt in Tokyo",
        {"profile": "Read notes.txt in Tokyo", "sourceTimezone": "Asia/Tokyo"},
    ),
    "types, bounds, examples, nesting and a $ref": (
        {
            "type": "object",
            "$defs": {
                "point": {
                    "type": "object",
                    "properties": {"x": {"type": "number"}},
                    "required": ["x"],
                }
            },
            "properties": {
                "count": {"type": "integer", "minimum": 5, "maximum": 9},
                "ratio": {"type": "number", "exclusiveMaximum": 1},
                "flag": {"type": "boolean"},
                "tags": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": 3},
                    "minItems": 2,
                },
                "where": {"$ref": "#/$defs/point"},
                "label": {"type": ["string", "null"], "examples": ["first"]},
                "choice": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 3}]},
                "id": {"type": "string", "minLength": 40},
                "optional": {"type": "string"},
            },
            "required": ["count", "ratio", "flag", "tags", "where", "label", "choice", "id"],
        },
        "Go",
        {
            "count": 5,
            "ratio": 0.0,
            "flag": False,
            "tags": ["Go", "Go"],
            "where": {"x": 1.0},
            "label": "first",
            "choice": 3,
            "id": "Go" + "x" * 38,
        },
    ),
}


@pytest.mark.parametrize("case", list(SCHEMAS))
def test_arguments_are_valid_for_the_schema(case: str) -> None:
    schema, request, expected = SCHEMAS[case]
    arguments = arguments_for(schema, request)
    assert arguments == expected
    jsonschema.validate(arguments, schema)


def test_a_self_referencing_schema_ends() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"next": {"$ref": "#/$defs/node"}},
                "required": ["next"],
            }
        },
        "properties": {"root": {"$ref": "#/$defs/node"}},
        "required": ["root"],
    }
    arguments = arguments_for(schema, "anything")
    depth = 0
    node: Any = arguments["root"]
    while isinstance(node, dict):
        node = node.get("next")
        depth += 1
    assert depth <= 10


async def test_a_hidden_tool_loop_keeps_none_of_the_raw_reasoning_it_was_sent(
    tmp_path: Path, orchestrator: Orchestrator, model_sim: Simulator
) -> None:
    """DeepSeek sends its reasoning whatever was asked, and wants it back in a tool loop:
    it goes back on the wire, and nowhere else."""
    run = await orchestrator.start(
        "What time is it in Tokyo?", provider="deepseek", model="deepseek-reasoner", tools=[now]
    )
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.output is not None and "returned: 09:30 in Asia/Tokyo" in task.output
    _, answer_step = (json.dumps(request.body) for request in model_sim.requests)
    assert REASONING_OPENING in answer_step  # the canary was live: the step's reasoning went back
    assert REASONING_OPENING not in task.output
    assert REASONING_OPENING not in json.dumps(run.snapshot())
    assert REASONING_OPENING not in all_bytes_under(tmp_path / "home").decode("utf-8", "replace")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "messages",
                    "input",
                    "contents",
                    "tools",
                    "system",
                    "instructions",
                    "role",
                    "content",
                    "type",
                    "text",
                    "parts",
                    "functionCall",
                    "functionResponse",
                    "tool_calls",
                    "function",
                    "name",
                    "parameters",
                    "input_schema",
                    "properties",
                    "required",
                    "enum",
                    "$ref",
                    "items",
                    "anyOf",
                    "tool_use_id",
                    "call_id",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(body=st.dictionaries(st.sampled_from(["messages", "input", "contents", "tools"]), JSON))
def test_any_request_body_gets_a_turn_on_every_wire(body: dict[str, Any]) -> None:
    """A body of any shape is read tolerantly, as a provider's server reads it: the
    default model answers it instead of failing the simulator."""
    for profile in default_profiles().values():
        for route in profile.routes:
            request = SimRequest(
                method="POST",
                path="/",
                query={},
                headers={},
                body=body,
                profile=profile.name,
                model="m",
                stream=False,
            )
            transcript = respond(route.renderer.conversation(request), "m")
            assert transcript.answer or transcript.tool_calls
