"""Messages and responses made of ordered parts; ``ModelResponse.to_message``; who
produced a carrier, from the accumulator to the client."""

from __future__ import annotations

from dataclasses import replace

import httpx2
import pytest

from tests.support import anthropic_stream
from thoughtline.model.accumulator import ModelResponse, ResponseAccumulator, accumulate
from thoughtline.model.events import (
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest, ToolSpec
from thoughtline.providers.client import ProviderClient
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.testing.transcript import SimReasoning, SimToolCall, Transcript

INTERLEAVED: list[StreamEvent] = [
    ReasoningStart(part_id="r0", kind="summary"),
    ReasoningDelta(part_id="r0", text="Look it up."),
    ReasoningEnd(part_id="r0", kind="summary", provider_metadata={"signature": "sig-1"}),
    TextStart(part_id="t1"),
    TextDelta(part_id="t1", text="Checking."),
    TextEnd(part_id="t1"),
    ToolCallStart(part_id="c2", tool_call_id="toolu_1", name="lookup"),
    ToolCallDelta(part_id="c2", arguments_delta='{"q":"x"}'),
    ToolCallEnd(part_id="c2"),
    ReasoningStart(part_id="r3", kind="redacted", provider_metadata={"data": "opaque"}),
    ReasoningEnd(part_id="r3", kind="redacted"),
]


def test_a_plain_message_is_one_text_part_and_keeps_its_content() -> None:
    message = Message(role="user", content="Wie groß ist π?")
    assert message.parts == (TextPart(text="Wie groß ist π?"),)
    assert message.content == "Wie groß ist π?"
    assert message == Message(role="user", parts=[TextPart(text="Wie groß ist π?")])
    assert hash(message) == hash(Message(role="user", content="Wie groß ist π?"))


def test_a_message_of_parts_reads_its_text_parts_as_content() -> None:
    message = Message(
        role="user",
        parts=[
            ToolResultPart(tool_call_id="toolu_1", name="lookup", content="42"),
            TextPart(text="And now?"),
        ],
    )
    assert message.content == "And now?"


def test_a_message_takes_content_or_parts_not_both() -> None:
    with pytest.raises(TypeError, match="content or parts"):
        Message(role="user", content="a", parts=[TextPart(text="b")])
    with pytest.raises(TypeError, match="content or parts"):
        Message(role="user")


def test_response_parts_keep_arrival_order_and_the_views_share_them() -> None:
    response = accumulate(INTERLEAVED)
    assert [part.type for part in response.parts] == ["reasoning", "text", "tool_call", "reasoning"]
    assert response.parts == (
        ReasoningPart(kind="summary", text="Look it up.", provider_metadata={"signature": "sig-1"}),
        TextPart(text="Checking."),
        ToolCallPart(tool_call_id="toolu_1", name="lookup", arguments='{"q":"x"}'),
        ReasoningPart(kind="redacted", text="", provider_metadata={"data": "opaque"}),
    )
    assert response.reasoning_parts == (response.parts[0], response.parts[3])
    assert response.reasoning_parts[0] is response.parts[0]
    assert response.tool_calls[0] is response.parts[2]
    assert response.text == "Checking."


def test_a_response_cannot_be_built_with_views_that_disagree_with_its_parts() -> None:
    response = accumulate(INTERLEAVED)
    # The views are not fields: neither a constructor nor replace() can set them.
    for view in ("text", "reasoning_parts", "tool_calls", "commentary", "text_metadata"):
        with pytest.raises(TypeError):
            ModelResponse(parts=response.parts, **{view: ()})  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            replace(response, **{view: ()})
    # New parts are new views: a cleaner that replaces the parts changes every view.
    cleaned = replace(
        response,
        parts=(
            replace(response.parts[0], text=""),
            TextPart(text="Checked."),
            replace(response.tool_calls[0], arguments="{}"),
        ),
    )
    assert cleaned.text == "Checked."
    assert cleaned.reasoning_parts == (cleaned.parts[0],)
    assert cleaned.reasoning_text == ""
    assert cleaned.tool_calls == (cleaned.parts[2],)
    assert cleaned.tool_calls[0].arguments == "{}"
    assert cleaned != response
    # A preamble is the answer only while no final answer came.
    preamble = TextPart(text="Looking.", provider_metadata={"phase": "commentary"})
    alone = ModelResponse(parts=(preamble,))
    assert (alone.text, alone.commentary) == ("Looking.", "Looking.")
    both = ModelResponse(parts=(preamble, TextPart(text="Done.")))
    assert (both.text, both.commentary) == ("Done.", "Looking.")
    assert both.text_metadata == ({"phase": "commentary"},)
    with pytest.raises(ValueError, match="no tool result"):
        ModelResponse(parts=(ToolResultPart(tool_call_id="c", name="n", content="r"),))


def test_responses_with_the_same_views_are_equal_whatever_the_order_between_kinds() -> None:
    # A Chat Completions body and its stream give reasoning, content and calls in
    # different orders, yet say the same thing.
    thought = ReasoningPart(kind="raw", text="Hmm.")
    text = TextPart(text="Hi.")
    call = ToolCallPart(tool_call_id="c1", name="f", arguments="{}")
    assert ModelResponse(parts=(thought, text, call)) == ModelResponse(parts=(call, text, thought))
    assert ModelResponse(parts=(text,)) != ModelResponse(parts=(TextPart(text="Ho."),))
    assert ModelResponse.of("Hi.", reasoning=(thought,), tool_calls=(call,)) == ModelResponse(
        parts=(thought, text, call)
    )


def test_to_message_is_the_assistant_turn_with_every_part_in_order() -> None:
    response = accumulate(INTERLEAVED)
    message = response.to_message()
    assert message.role == "assistant"
    assert message.parts == response.parts
    assert message.content == "Checking."


def test_the_accumulator_stamps_who_produced_carriers_without_changing_equality() -> None:
    accumulator = ResponseAccumulator(provider="anthropic", model="claude-sonnet-4-6")
    accumulator.add_all(INTERLEAVED)
    stamped = accumulator.result()
    origins = {(part.provider, part.model) for part in stamped.reasoning_parts}
    assert origins == {("anthropic", "claude-sonnet-4-6")}
    call = stamped.tool_calls[0]
    assert (call.provider, call.model) == ("anthropic", "claude-sonnet-4-6")
    unstamped = accumulate(INTERLEAVED)
    assert unstamped.reasoning_parts[0].provider is None
    assert stamped == unstamped  # provenance is not content


async def test_a_tool_loop_through_the_client_sends_the_signature_back_unchanged() -> None:
    model = "claude-sonnet-4-6"
    transcript = Transcript(
        reasoning=(SimReasoning(kind="summary", text="Need the time.", signature="sig/Ω+=="),),
        tool_calls=(SimToolCall(call_id="toolu_7", name="now", arguments='{"tz":"UTC"}'),),
        finish="tool_calls",
        chunk_chars=4,
    )
    bodies: list[bytes] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(request.content)
        return httpx2.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=anthropic_stream(transcript, model),
        )

    registry = EndpointRegistry(
        environ={"ANTHROPIC_BASE_URL": "http://sim.test", "ANTHROPIC_API_KEY": "sk-ant-x"}
    )
    client = ProviderClient(
        registry.resolve("anthropic"),
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
    )
    first = ModelRequest.simple(model, "What time is it?", reasoning=ReasoningRequest(enabled=True))
    async with client:
        call = await client.complete(first)
        history = (
            *first.messages,
            call.response.to_message(),
            Message(
                role="user",
                parts=[ToolResultPart(tool_call_id="toolu_7", name="now", content="12:00")],
            ),
        )
        # A tool loop offers its tools on every step (Anthropic refuses tool blocks
        # in a request that defines none).
        now = ToolSpec(name="now", description="The time.", parameters={"type": "object"})
        await client.complete(
            ModelRequest(model=model, messages=history, reasoning=first.reasoning, tools=(now,))
        )
    second = httpx2.Response(200, content=bodies[1]).json()
    assert second["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Need the time.", "signature": "sig/Ω+=="},
                {"type": "tool_use", "id": "toolu_7", "name": "now", "input": {"tz": "UTC"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_7", "content": "12:00"}],
        },
    ]
