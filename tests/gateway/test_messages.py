"""The gateway's Anthropic Messages dialect: bodies read back into thoughtline's parts,
replies written so the official ``anthropic`` SDK reads them, refusals in Anthropic's
error shape."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import anthropic
import pytest

from tests.support import call_context
from thoughtline.gateway.call import GatewayCall, ReasoningAsk, ToolChoice
from thoughtline.gateway.dialects import messages
from thoughtline.gateway.dialects._common import DialectError, Rendering
from thoughtline.model.events import Finish, StreamError, Usage
from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest, ToolSpec
from thoughtline.providers.registry import wire_for
from thoughtline.wire.jsonio import dumps_bytes

from .helpers import (
    CANARY,
    a_reply,
    reasoning,
    render_stream,
    response_of,
    text,
    tool_call,
    transport,
)

MODEL = "claude-sonnet-4-6"
WEATHER = ToolSpec(
    name="get_weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def history() -> tuple[Message, ...]:
    """A tool loop's history with every block Anthropic sends back."""
    made = {"provider": "anthropic", "model": MODEL}
    return (
        Message(role="user", content="Weather in Paris?"),
        Message(
            role="assistant",
            parts=(
                ReasoningPart(
                    kind="summary",
                    text="Need the weather.",
                    provider_metadata={"signature": "sig-1"},
                    **made,
                ),
                ReasoningPart(
                    kind="redacted", text="", provider_metadata={"data": "opaque=="}, **made
                ),
                ReasoningPart(
                    kind="encrypted", text="", provider_metadata={"signature": "sig-2"}, **made
                ),
                TextPart(text="Let me check."),
                ToolCallPart(
                    tool_call_id="toolu_1", name="get_weather", arguments='{"city":"Paris"}'
                ),
                ToolCallPart(tool_call_id="toolu_2", name="get_time", arguments="{}"),
            ),
        ),
        Message(
            role="user",
            parts=(
                ToolResultPart(tool_call_id="toolu_1", name="get_weather", content="18 C"),
                ToolResultPart(
                    tool_call_id="toolu_2", name="get_time", content="no clock", is_error=True
                ),
                TextPart(text="And tomorrow?"),
            ),
        ),
    )


def test_an_anthropic_history_reads_back_into_the_parts_it_was_built_from() -> None:
    request = ModelRequest(
        model=MODEL,
        messages=history(),
        system="Be brief.",
        tools=(WEATHER,),
        max_output_tokens=4000,
        temperature=0.5,
        reasoning=ReasoningRequest(enabled=True, budget_tokens=2048),
    )
    body = dict(
        wire_for("anthropic-messages").build_request(request, call_context("anthropic", MODEL)).body
    )
    call = messages.parse_object(body)
    assert call.messages == history()
    assert (call.system, call.tools, call.max_output_tokens) == ("Be brief.", (WEATHER,), 4000)
    assert call.stream is True
    assert call.reasoning.enabled is True
    # The signatures the client sent are carriers of unknown origin until the gateway checks them.
    carriers = call.client_carriers()
    assert [part.provider_metadata for part in carriers] == [
        {"signature": "sig-1"},
        {"data": "opaque=="},
        {"signature": "sig-2"},
    ]
    assert {(part.provider, part.model) for part in carriers} == {(None, None)}
    assert call.dialect == "messages"


def test_options_are_read_as_the_client_sent_them() -> None:
    call = messages.parse_object(
        {
            "model": "claude",
            "max_tokens": 100,
            "system": [{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
            "thinking": {"type": "adaptive", "display": "omitted"},
            "output_config": {"effort": "xhigh"},
            "stop_sequences": ["END"],
            "metadata": {"user_id": "u"},
            "top_k": 5,
        }
    )
    assert call.system == "One.\n\nTwo."
    assert call.messages == (Message(role="user", parts=(TextPart(text="hi"),)),)
    assert (call.tool_choice, call.parallel_tool_calls) == (ToolChoice(mode="required"), False)
    assert (call.reasoning.enabled, call.reasoning.display, call.reasoning.effort) == (
        True,
        "omitted",
        "xhigh",
    )
    assert (call.stop, call.stream, call.include_usage) == (("END",), False, True)


USER = [{"role": "user", "content": "hi"}]


def refusal(body: object) -> DialectError:
    with pytest.raises(DialectError) as caught:
        messages.parse(dumps_bytes(body), max_bytes=1 << 20)
    return caught.value


@pytest.mark.parametrize(
    ("body", "code", "param", "words"),
    [
        (
            {"model": "m", "messages": USER},
            "REQUEST_INVALID",
            "max_tokens",
            "max_tokens: is required",
        ),
        (
            {"model": "m", "max_tokens": 5, "messages": USER, "foo": 1},
            "REQUEST_INVALID",
            "foo",
            "foo: Extra inputs are not permitted",
        ),
        (
            {"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]},
            "REQUEST_INVALID",
            "messages.0.role",
            "'system' is not one of",
        ),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}],
            },
            "GATEWAY_REQUEST_UNSUPPORTED",
            "messages.0.content.0.type",
            "image blocks",
        ),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}],
                    }
                ],
            },
            "REQUEST_INVALID",
            "messages.0.content.0.tool_use_id",
            "unexpected tool_use_id",
        ),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [
                    {"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}]}
                ],
            },
            "REQUEST_INVALID",
            "messages.0.content.0.signature",
            "is required",
        ),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": USER,
                "thinking": {"type": "enabled", "budget_tokens": 10},
            },
            "REQUEST_INVALID",
            "thinking.budget_tokens",
            "at least 1024",
        ),
        (
            {"model": "m", "max_tokens": 5, "messages": USER, "thinking": {"type": "enabled"}},
            "REQUEST_INVALID",
            "thinking.budget_tokens",
            "thinking.budget_tokens: is required",
        ),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "web_search_tool_result", "tool_use_id": "s", "content": []}
                        ],
                    }
                ],
            },
            "GATEWAY_REQUEST_UNSUPPORTED",
            "messages.0.content.0.type",
            "web_search_tool_result blocks are not served",
        ),
        (
            {"model": "m", "max_tokens": 5, "messages": USER, "temperature": 1.5},
            "REQUEST_INVALID",
            "temperature",
            "from 0 to 1",
        ),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": USER,
                "tools": [{"type": "web_search_20250305", "name": "web_search"}],
            },
            "GATEWAY_REQUEST_UNSUPPORTED",
            "tools.0.type",
            "client tools",
        ),
        (
            {"model": "m", "max_tokens": 5, "messages": USER, "tools": [{"name": "t"}]},
            "REQUEST_INVALID",
            "tools.0.input_schema",
            "is required",
        ),
        (
            {"model": "m", "max_tokens": 5, "messages": USER, "mcp_servers": []},
            "GATEWAY_REQUEST_UNSUPPORTED",
            "mcp_servers",
            "MCP connector",
        ),
    ],
)
def test_a_bad_body_is_one_sentence_naming_the_field(
    body: object, code: str, param: str, words: str
) -> None:
    error = refusal(body)
    assert (error.code, error.param, error.status) == (code, param, 400)
    assert words in error.message


def sdk(body: bytes, *, status: int = 200, stream: bool = False) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="k",
        base_url="http://127.0.0.1:9",
        http_client=transport(body, status=status, stream=stream),
        max_retries=0,
        _strict_response_validation=True,
    )


def test_a_refusal_reaches_the_anthropic_sdk_as_its_own_error_with_the_code_inside() -> None:
    error = refusal({"model": "m", "max_tokens": 5, "messages": USER, "bar": 1})
    status, body = messages.error_response(
        error.code, error.message, status=error.status, param=error.param
    )
    with pytest.raises(anthropic.BadRequestError) as caught:
        sdk(dumps_bytes(body), status=status).messages.create(
            model="m", max_tokens=5, messages=USER
        )  # type: ignore[arg-type]
    assert caught.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "bar: Extra inputs are not permitted. Leave it out: it is not a field of the Messages API.",
            "code": "REQUEST_INVALID",
        },
    }
    status, body = messages.error_response("GATEWAY_CARRIERS_GONE", "Gone.", status=409)  # type: ignore[arg-type]
    with pytest.raises(anthropic.ConflictError):
        sdk(dumps_bytes(body), status=status).messages.create(
            model="m", max_tokens=5, messages=USER
        )  # type: ignore[arg-type]


def a_call(stream: bool = True) -> GatewayCall:
    return GatewayCall(
        dialect="messages",
        model="claude",
        messages=(Message(role="user", content="hi"),),
        stream=stream,
        include_usage=True,
    )


def streamed(shows: bool, events: list[Any] | None = None) -> tuple[bytes, Any]:
    stream = messages.MessagesStream(a_call(), Rendering(shows_reasoning=shows, reply_id="abc"))
    data = render_stream(stream, a_reply() if events is None else events)
    with sdk(data, stream=True).messages.stream(
        model="claude", max_tokens=5, messages=USER
    ) as reading:  # type: ignore[arg-type]
        final = reading.get_final_message()
    return data, final


def test_a_shown_stream_reads_in_the_sdk_with_thinking_its_signature_and_tool_use() -> None:
    _, final = streamed(True)
    kinds = [block.type for block in final.content]
    assert kinds == ["thinking", "text", "tool_use", "tool_use"]
    assert final.content[0].thinking == f"Let me think. {CANARY} Done."
    assert final.content[0].signature == "EqQBsig=="
    assert final.content[1].text == "Checking the weather."
    assert [(b.id, b.name, b.input) for b in final.content[2:]] == [
        ("call_1", "get_weather", {"city": "Paris"}),
        ("call_2", "get_time", {}),
    ]
    assert final.stop_reason == "tool_use"
    assert (final.id, final.model) == ("msg_abc", "claude")
    assert (
        final.usage.input_tokens,
        final.usage.cache_read_input_tokens,
        final.usage.output_tokens,
    ) == (32, 8, 900)


def test_a_hidden_stream_carries_no_block_signature_or_count_of_the_thinking() -> None:
    data, final = streamed(False)
    assert CANARY.encode() not in data
    assert b"thinking" not in data
    assert b"signature" not in data
    assert [block.type for block in final.content] == ["text", "tool_use", "tool_use"]
    assert b'"index":0' in data and b'"index":3' not in data  # three blocks: 0, 1, 2


def test_interleaved_parts_stream_one_block_at_a_time() -> None:
    # Two tool calls whose arguments arrive interleaved, as parallel calls may.
    events = [
        *tool_call("a", "call_a", "f")[:1],
        *tool_call("b", "call_b", "g")[:1],
        *tool_call("a", "call_a", "f", '{"x":')[1:2],
        *tool_call("b", "call_b", "g", '{"y":2}')[1:],
        *tool_call("a", "call_a", "f", "1}")[1:],
        Finish(reason="tool_calls"),
    ]
    _, final = streamed(True, events)
    assert [(block.id, block.input) for block in final.content] == [
        ("call_a", {"x": 1}),
        ("call_b", {"y": 2}),
    ]


def test_an_openai_carrier_has_no_block_in_this_api() -> None:
    events = [
        *reasoning(
            "r",
            "",
            kind="encrypted",
            start={"item_id": "rs_1", "encrypted_content": "gAAA"},
            end={"item_id": "rs_1", "encrypted_content": "gAAA"},
        ),
        *text("t", "Hi."),
        Finish(reason="stop"),
    ]
    data, final = streamed(True, events)
    assert b"gAAA" not in data
    assert [block.type for block in final.content] == ["text"]
    assert final.stop_reason == "end_turn"


def test_a_body_reads_in_the_sdk_as_a_message() -> None:
    response = response_of(a_reply())
    for shows in (True, False):
        body = messages.render(a_call(stream=False), Rendering(shows_reasoning=shows), response)
        message = sdk(dumps_bytes(body)).messages.create(
            model="claude", max_tokens=5, messages=USER
        )  # type: ignore[arg-type]
        kinds = [block.type for block in message.content]
        assert kinds == (["thinking"] if shows else []) + ["text", "tool_use", "tool_use"]
        assert message.stop_reason == "tool_use"
        if not shows:
            assert CANARY not in json.dumps(body)
            assert "signature" not in json.dumps(body)
            assert message.usage.output_tokens_details is None


def test_a_failure_mid_stream_is_an_error_event_the_sdk_raises() -> None:
    stream = messages.MessagesStream(a_call(), Rendering(shows_reasoning=False))
    data = render_stream(
        stream,
        [
            *text("t", "Half"),
            StreamError(
                code="PROVIDER_OVERLOADED", message="Overloaded.", retryable=True, status=529
            ),
        ],
    )
    assert b"event: error" in data and b"message_stop" not in data
    client = sdk(data, stream=True)
    with (
        pytest.raises(anthropic.APIStatusError) as caught,
        client.messages.stream(model="claude", max_tokens=5, messages=USER) as reading,  # type: ignore[arg-type]
    ):
        reading.get_final_message()
    assert "Overloaded." in str(caught.value)


def test_a_reply_with_no_events_is_still_a_whole_message() -> None:
    stream = messages.MessagesStream(a_call(), Rendering(shows_reasoning=True))
    data = render_stream(stream, [Usage(input_tokens=3, output_tokens=0)])
    with sdk(data, stream=True).messages.stream(
        model="claude", max_tokens=5, messages=USER
    ) as reading:  # type: ignore[arg-type]
        final = reading.get_final_message()
    assert (final.content, final.stop_reason, final.usage.input_tokens) == ([], "end_turn", 3)


def test_each_delta_costs_one_frame_whatever_came_before() -> None:
    stream = messages.MessagesStream(a_call(), Rendering(shows_reasoning=True))
    stream.feed(text("t0")[0])
    sizes = {len(stream.feed(event)) for event in text("t0", *["ab"] * 20_000)[1:-1]}
    assert len(sizes) == 1
    assert sizes.pop() < 200


def test_a_client_asking_for_omitted_thinking_gets_signatures_without_text() -> None:
    call = replace(a_call(), reasoning=ReasoningAsk(enabled=True, display="omitted"))
    data = render_stream(messages.MessagesStream(call, Rendering(shows_reasoning=True)), a_reply())
    assert CANARY.encode() not in data
    with sdk(data, stream=True).messages.stream(
        model="claude", max_tokens=5, messages=USER
    ) as reading:  # type: ignore[arg-type]
        final = reading.get_final_message()
    assert (final.content[0].type, final.content[0].thinking, final.content[0].signature) == (
        "thinking",
        "",
        "EqQBsig==",
    )
    body = messages.render(
        replace(call, stream=False), Rendering(shows_reasoning=True), response_of(a_reply())
    )
    assert body["content"][0] == {"type": "thinking", "thinking": "", "signature": "EqQBsig=="}


def test_a_client_that_turned_thinking_off_gets_none_whatever_its_mode_shows() -> None:
    call = replace(a_call(), reasoning=ReasoningAsk(enabled=False))
    data = render_stream(messages.MessagesStream(call, Rendering(shows_reasoning=True)), a_reply())
    assert b"thinking" not in data and b"signature" not in data
    body = messages.render(
        replace(call, stream=False), Rendering(shows_reasoning=True), response_of(a_reply())
    )
    assert [block["type"] for block in body["content"]] == ["text", "tool_use", "tool_use"]


def test_raw_reasoning_from_a_deepseek_model_is_a_thinking_block_with_no_signature() -> None:
    events = [
        *reasoning("w", "", kind="raw", deltas=("Think ", "hard.")),
        *text("t", "Hi."),
        Finish(reason="stop"),
    ]
    data, final = streamed(True, events)
    assert b"signature_delta" not in data
    first = final.content[0]
    assert (first.type, first.thinking) == ("thinking", "Think hard.")
    assert final.content[0].signature == ""


def test_a_count_tokens_body_is_read_without_max_tokens_and_answered_as_the_api_does() -> None:
    body = {
        "model": "claude",
        "system": "Be brief.",
        "messages": USER,
        "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
        "thinking": {"type": "enabled", "budget_tokens": 2048},
    }
    call = messages.parse_count_tokens(dumps_bytes(body), max_bytes=1 << 20)
    assert (call.system, call.max_output_tokens, call.reasoning.budget_tokens) == (
        "Be brief.",
        None,
        2048,
    )
    assert call.messages == (Message(role="user", content="hi"),)
    with pytest.raises(DialectError) as caught:
        messages.parse_count_tokens(dumps_bytes({**body, "max_tokens": 5}), max_bytes=1 << 20)
    assert (caught.value.param, caught.value.message) == (
        "max_tokens",
        "max_tokens: Extra inputs are not permitted. Leave it out: it is not a field of the "
        "Messages API count_tokens body.",
    )
    count = sdk(dumps_bytes(messages.count_tokens_body(57))).messages.count_tokens(
        model="claude", messages=USER
    )  # type: ignore[arg-type]
    assert count.input_tokens == 57
