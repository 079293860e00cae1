"""The gateway's OpenAI Responses dialect: bodies read back into thoughtline's parts,
replies written so the official ``openai`` SDK reads them, refusals in OpenAI's shape."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.support import call_context
from thoughtline.gateway.call import GatewayCall, ReasoningAsk, ToolChoice
from thoughtline.gateway.dialects import responses
from thoughtline.gateway.dialects._common import DialectError, Rendering
from thoughtline.model.events import Finish, StreamError
from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest, ToolSpec
from thoughtline.providers.registry import wire_for
from thoughtline.wire.jsonio import dumps_bytes

from .helpers import (
    CANARY,
    reasoning,
    render_stream,
    response_of,
    text,
    the_answer,
    tool_call,
    transport,
)

MODEL = "gpt-5.1"
WEATHER = ToolSpec(
    name="get_weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def history() -> tuple[Message, ...]:
    """A tool loop's history as the Responses wire sends it back (text and call items go
    without their ids, which the wire never sends)."""
    made = {"provider": "openai", "model": MODEL}
    return (
        Message(role="user", content="Weather in Paris?"),
        Message(
            role="assistant",
            parts=(
                ReasoningPart(
                    kind="summary",
                    text="Plan.",
                    provider_metadata={"item_id": "rs_1", "summary_index": 0},
                    **made,
                ),
                ReasoningPart(
                    kind="summary",
                    text="Check.",
                    provider_metadata={"item_id": "rs_1", "summary_index": 1},
                    **made,
                ),
                ReasoningPart(
                    kind="encrypted",
                    text="",
                    provider_metadata={"item_id": "rs_1", "encrypted_content": "gAAAA=="},
                    **made,
                ),
                TextPart(text="Let me check.", provider_metadata={"phase": "commentary"}),
                ToolCallPart(
                    tool_call_id="call_1", name="get_weather", arguments='{"city":"Paris"}'
                ),
                ToolCallPart(tool_call_id="call_2", name="get_time", arguments="{}"),
            ),
        ),
        Message(
            role="user",
            parts=(
                ToolResultPart(tool_call_id="call_1", name="get_weather", content="18 C"),
                ToolResultPart(tool_call_id="call_2", name="get_time", content="09:00"),
                TextPart(text="And tomorrow?"),
            ),
        ),
    )


def test_a_responses_history_reads_back_into_the_parts_it_was_built_from() -> None:
    request = ModelRequest(
        model=MODEL,
        messages=history(),
        system="Be brief.",
        tools=(WEATHER,),
        max_output_tokens=500,
        reasoning=ReasoningRequest(enabled=True, effort="high"),
    )
    body = dict(
        wire_for("openai-responses").build_request(request, call_context("openai", MODEL)).body
    )
    call = responses.parse_object(body)
    assert call.messages == history()
    assert (call.system, call.tools, call.max_output_tokens, call.store) == (
        "Be brief.",
        (WEATHER,),
        500,
        False,
    )
    assert call.reasoning == ReasoningAsk(effort="high", summary="auto", include_encrypted=True)
    carriers = call.client_carriers()
    assert [part.kind for part in carriers] == ["summary", "summary", "encrypted"]
    assert {(part.provider, part.model) for part in carriers} == {(None, None)}
    assert call.dialect == "responses"


def test_a_string_input_and_options_are_read_as_the_client_sent_them() -> None:
    call = responses.parse_object(
        {
            "model": "fast",
            "input": "hi",
            "instructions": "Be brief.",
            "tools": [
                {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True}
            ],
            "tool_choice": {"type": "function", "name": "f"},
            "store": True,
            "stream": True,
            "truncation": "auto",
            "metadata": {"a": "b"},
            "previous_response_id": None,
        }
    )
    assert call.messages == (Message(role="user", content="hi"),)
    assert (call.system, call.tool_choice, call.store, call.stream) == (
        "Be brief.",
        ToolChoice(mode="tool", name="f"),
        True,
        True,
    )


USER = [{"role": "user", "content": "hi"}]


def refusal(body: object) -> DialectError:
    with pytest.raises(DialectError) as caught:
        responses.parse(dumps_bytes(body), max_bytes=1 << 20)
    return caught.value


@pytest.mark.parametrize(
    ("body", "code", "param", "words"),
    [
        ({"model": "m"}, "REQUEST_INVALID", "input", "input: is required"),
        (
            {"model": "m", "input": "x", "foo": 1},
            "REQUEST_INVALID",
            "foo",
            "Unknown parameter: 'foo'.",
        ),
        (
            {"model": "m", "input": "x", "previous_response_id": "resp_1"},
            "GATEWAY_REQUEST_UNSUPPORTED",
            "previous_response_id",
            "send the whole conversation in input",
        ),
        (
            {"model": "m", "input": "x", "conversation": "conv_1"},
            "GATEWAY_REQUEST_UNSUPPORTED",
            "conversation",
            "keeps no conversations",
        ),
        (
            {"model": "m", "input": "x", "background": True},
            "GATEWAY_REQUEST_UNSUPPORTED",
            "background",
            "background: false",
        ),
        (
            {"model": "m", "input": [{"type": "item_reference", "id": "msg_1"}]},
            "GATEWAY_REQUEST_UNSUPPORTED",
            "input[0].type",
            "send the item itself",
        ),
        (
            {
                "model": "m",
                "input": [{"type": "function_call_output", "call_id": "c", "output": "1"}],
            },
            "REQUEST_INVALID",
            "input[0].call_id",
            "no tool call found",
        ),
        (
            {"model": "m", "input": [{"type": "reasoning", "id": "rs_1"}]},
            "REQUEST_INVALID",
            "input[0].summary",
            "is required",
        ),
        (
            {
                "model": "m",
                "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}],
            },
            "GATEWAY_REQUEST_UNSUPPORTED",
            "input[0].content[0].type",
            "input_image content",
        ),
        (
            {"model": "m", "input": "x", "tools": [{"type": "web_search"}]},
            "GATEWAY_REQUEST_UNSUPPORTED",
            "tools[0].type",
            "function tools",
        ),
        (
            {"model": "m", "input": "x", "include": ["reasoning.everything"]},
            "REQUEST_INVALID",
            "include[0]",
            "not an include value",
        ),
        (
            {"model": "m", "input": "x", "text": {"format": {"type": "json_schema"}}},
            "GATEWAY_REQUEST_UNSUPPORTED",
            "text.format",
            "only text",
        ),
        (
            {"model": "m", "input": "x", "reasoning": {"effort": "turbo"}},
            "REQUEST_INVALID",
            "reasoning.effort",
            "'turbo' is not one of",
        ),
        ({"model": "m", "input": 5}, "REQUEST_INVALID", "input", "got an integer"),
    ],
)
def test_a_bad_body_is_one_sentence_naming_the_field(
    body: object, code: str, param: str, words: str
) -> None:
    error = refusal(body)
    assert (error.code, error.param, error.status) == (code, param, 400)
    assert words in error.message


def client_for(body: bytes, *, status: int = 200, stream: bool = False) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="k",
        base_url="http://127.0.0.1:9/v1",
        http_client=transport(body, status=status, stream=stream),
        max_retries=0,
        _strict_response_validation=True,
    )


def test_previous_response_id_reaches_the_sdk_as_a_bad_request_saying_what_to_send() -> None:
    error = refusal({"model": "m", "input": "x", "previous_response_id": "resp_1"})
    status, body = responses.error_response(
        error.code, error.message, status=error.status, param=error.param
    )
    with pytest.raises(openai.BadRequestError) as caught:
        client_for(dumps_bytes(body), status=status).responses.create(model="m", input="x")
    assert (caught.value.code, caught.value.param) == (
        "GATEWAY_REQUEST_UNSUPPORTED",
        "previous_response_id",
    )


def a_call(*, include_encrypted: bool = False, stream: bool = True) -> GatewayCall:
    return GatewayCall(
        dialect="responses",
        model="fast",
        messages=(Message(role="user", content="hi"),),
        stream=stream,
        include_usage=True,
        tools=(WEATHER,),
        reasoning=ReasoningAsk(summary="auto", include_encrypted=include_encrypted),
    )


def reply_with_an_openai_carrier() -> list[Any]:
    """Two summaries of one reasoning item, its encrypted carrier, text, calls."""
    carrier = {"item_id": "rs_up", "encrypted_content": "gAAAA-carrier"}
    return [
        *reasoning(
            "s0", "", deltas=("Plan ", CANARY, "."), start={"item_id": "rs_up", "summary_index": 0}
        ),
        *reasoning("s1", "Check.", start={"item_id": "rs_up", "summary_index": 1}),
        *reasoning("e", "", kind="encrypted", start=carrier, end=carrier),
        *the_answer(),
    ]


def streamed(
    shows: bool, *, include_encrypted: bool = False, events: list[Any] | None = None
) -> tuple[bytes, list[Any], Any]:
    stream = responses.ResponsesStream(
        a_call(include_encrypted=include_encrypted),
        Rendering(shows_reasoning=shows, reply_id="abc"),
    )
    data = render_stream(stream, reply_with_an_openai_carrier() if events is None else events)
    with client_for(data, stream=True).responses.stream(model="fast", input="hi") as reading:
        seen = list(reading)
        # The SDK builds a final response only from response.completed.
        done = seen[-1].type == "response.completed"
        final = reading.get_final_response() if done else seen[-1].response
    return data, seen, final


def test_a_shown_stream_reads_in_the_sdk_with_one_reasoning_item_and_its_summaries() -> None:
    _, seen, final = streamed(True, include_encrypted=True)
    assert [item.type for item in final.output] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]
    item = final.output[0]
    assert [part.text for part in item.summary] == [f"Plan {CANARY}.", "Check."]
    assert item.encrypted_content == "gAAAA-carrier"
    assert final.output_text == "Checking the weather."
    assert [(call.call_id, call.name, call.arguments) for call in final.output[2:]] == [
        ("call_1", "get_weather", '{"city":"Paris"}'),
        ("call_2", "get_time", "{}"),
    ]
    assert final.status == "completed"
    assert (
        final.usage.input_tokens,
        final.usage.output_tokens,
        final.usage.output_tokens_details.reasoning_tokens,
    ) == (40, 900, 780)
    numbers = [event.sequence_number for event in seen]
    assert numbers == list(range(len(numbers)))
    deltas = "".join(e.delta for e in seen if e.type == "response.reasoning_summary_text.delta")
    assert deltas == f"Plan {CANARY}.Check."


def test_the_encrypted_carrier_goes_out_only_when_include_asks() -> None:
    data, _, final = streamed(True, include_encrypted=False)
    assert b"gAAAA-carrier" not in data
    assert final.output[0].encrypted_content is None


def test_a_hidden_stream_has_no_reasoning_item_at_all() -> None:
    data, _, final = streamed(False, include_encrypted=True)
    assert CANARY.encode() not in data
    assert b"reasoning_summary" not in data and b'"type":"reasoning"' not in data
    assert b"gAAAA" not in data and b"EqQBsig" not in data
    assert [item.type for item in final.output] == ["message", "function_call", "function_call"]
    assert final.usage.output_tokens_details.reasoning_tokens == 0


def test_a_cut_output_is_an_incomplete_response() -> None:
    _, _, final = streamed(True, events=[*text("t", "Half"), Finish(reason="length")])
    assert (final.status, final.incomplete_details.reason) == ("incomplete", "max_output_tokens")


def test_a_failure_mid_stream_fails_the_response() -> None:
    stream = responses.ResponsesStream(a_call(), Rendering(shows_reasoning=False))
    data = render_stream(
        stream,
        [
            *text("t", "Half"),
            StreamError(
                code="PROVIDER_SERVER_ERROR", message="Upstream failed.", retryable=True, status=502
            ),
        ],
    )
    with client_for(data, stream=True).responses.stream(model="fast", input="hi") as reading:
        kinds = [event.type for event in reading]
    assert kinds[-1] == "response.failed"
    assert b'"code":"PROVIDER_SERVER_ERROR"' in data


def test_interleaved_parts_stream_one_item_at_a_time() -> None:
    events = [
        *tool_call("a", "call_a", "f")[:1],
        *tool_call("b", "call_b", "g")[:1],
        *tool_call("a", "call_a", "f", '{"x":')[1:2],
        *tool_call("b", "call_b", "g", '{"y":2}')[1:],
        *tool_call("a", "call_a", "f", "1}")[1:],
        Finish(reason="tool_calls"),
    ]
    _, _, final = streamed(True, events=events)
    assert [(item.call_id, item.arguments) for item in final.output] == [
        ("call_a", '{"x":1}'),
        ("call_b", '{"y":2}'),
    ]


def test_a_body_reads_in_the_sdk_as_a_response() -> None:
    response = response_of(reply_with_an_openai_carrier())
    for shows in (True, False):
        body = responses.render(
            a_call(stream=False, include_encrypted=True), Rendering(shows_reasoning=shows), response
        )
        read = client_for(dumps_bytes(body)).responses.create(model="fast", input="hi")
        kinds = [item.type for item in read.output]
        assert kinds == (["reasoning"] if shows else []) + [
            "message",
            "function_call",
            "function_call",
        ]
        assert read.output_text == "Checking the weather."
        if shows:
            assert [part.text for part in read.output[0].summary] == [f"Plan {CANARY}.", "Check."]
        else:
            assert CANARY not in json.dumps(body)
            assert "gAAAA" not in json.dumps(body)


def test_each_delta_costs_one_frame_whatever_came_before() -> None:
    stream = responses.ResponsesStream(a_call(), Rendering(shows_reasoning=True))
    stream.feed(text("t0")[0])
    sizes = {len(stream.feed(event)) for event in text("t0", *["ab"] * 20_000)[1:-1]}
    # the sequence number grows by one digit at 10, 100, 1000 and 10000
    assert max(sizes) - min(sizes) <= 4
    assert max(sizes) < 300


def test_items_a_broken_stream_left_open_are_done_with_what_arrived() -> None:
    events = [
        *text("t", "Half an ", "answer")[:-1],  # no TextEnd
        *tool_call("c", "call_1", "f", '{"cut":')[:-1],  # no ToolCallEnd
        StreamError(
            code="PROVIDER_STREAM_INTERRUPTED", message="The stream broke.", retryable=True
        ),
    ]
    stream = responses.ResponsesStream(a_call(), Rendering(shows_reasoning=True))
    data = render_stream(stream, events)
    with client_for(data, stream=True).responses.stream(model="fast", input="hi") as reading:
        seen = list(reading)
    done = [event.item for event in seen if event.type == "response.output_item.done"]
    assert [(item.type, item.status) for item in done] == [
        ("message", "incomplete"),
        ("function_call", "incomplete"),
    ]
    assert done[0].content[0].text == "Half an answer"
    assert done[1].arguments == '{"cut":'
    assert seen[-1].type == "response.failed"
    assert [item.type for item in seen[-1].response.output] == ["message", "function_call"]


def test_raw_reasoning_from_a_deepseek_model_is_the_reasoning_items_content() -> None:
    events = [*reasoning("w", "", kind="raw", deltas=("Think ", "hard.")), *the_answer()]
    _, seen, final = streamed(True, events=events)
    (item, *_) = final.output
    assert item.type == "reasoning"
    assert item.summary == []
    assert [(part.type, part.text) for part in item.content] == [("reasoning_text", "Think hard.")]
    deltas = [event.delta for event in seen if event.type == "response.reasoning_text.delta"]
    assert deltas == ["Think ", "hard."]
    body = responses.render(
        a_call(stream=False), Rendering(shows_reasoning=True), response_of(events)
    )
    read = client_for(dumps_bytes(body)).responses.create(model="fast", input="hi")
    assert read.output[0].content[0].text == "Think hard."  # type: ignore[union-attr,index]
