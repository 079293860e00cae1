"""The gateway's Chat Completions dialect: bodies read back into thoughtline's parts,
replies written so the official ``openai`` SDK reads them, refusals in OpenAI's shape."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.support import call_context
from thoughtline.gateway.call import GatewayCall, ToolChoice
from thoughtline.gateway.dialects import chat_completions as chat
from thoughtline.gateway.dialects._common import DialectError, Rendering
from thoughtline.model.events import Finish, StreamError, TextDelta, TextEnd, TextStart
from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message, ModelRequest, ToolSpec
from thoughtline.providers.registry import wire_for
from thoughtline.wire.jsonio import dumps_bytes

from .helpers import CANARY, a_reply, render_stream, response_of, text, transport

LIMIT = 1 << 20
WEATHER = ToolSpec(
    name="get_weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def history(provider: str, model: str) -> tuple[Message, ...]:
    """A tool loop's history: reasoning, text and two calls, their results, a new prompt."""
    return (
        Message(role="user", content="Weather in Paris?"),
        Message(
            role="assistant",
            parts=(
                ReasoningPart(kind="raw", text="Need the weather.", provider=provider, model=model),
                TextPart(text="Let me check."),
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


def sent(provider: str, model: str, messages: tuple[Message, ...], **extra: Any) -> dict[str, Any]:
    """The body the Chat Completions wire sends for ``messages``."""
    request = ModelRequest(model=model, messages=messages, system="Be brief.", **extra)
    wire = wire_for("openai-chat")
    return dict(wire.build_request(request, call_context(provider, model)).body)


def without_reasoning(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    return tuple(
        Message(
            role=message.role,
            parts=[part for part in message.parts if not isinstance(part, ReasoningPart)],
        )
        for message in messages
    )


# ---------------------------------------------------------------------- reading


def test_a_deepseek_history_reads_back_into_the_parts_it_was_built_from() -> None:
    messages = history("deepseek", "deepseek-v4-pro")
    call = chat.parse_object(sent("deepseek", "deepseek-v4-pro", messages, tools=(WEATHER,)))
    assert call.messages == messages
    assert call.system == "Be brief."
    assert call.tools == (WEATHER,)
    # The client's reasoning_content is a carrier of unknown origin, never sent on as is.
    (carrier,) = call.client_carriers()
    assert (carrier.provider, carrier.model, carrier.kind) == (None, None, "raw")
    assert call.dialect == "chat_completions"


def test_an_openai_history_reads_back_without_the_reasoning_it_never_sends() -> None:
    messages = history("openai", "gpt-5.1")
    call = chat.parse_object(sent("openai", "gpt-5.1", messages, max_output_tokens=300))
    assert call.messages == without_reasoning(messages)
    assert call.max_output_tokens == 300
    assert call.stream is True
    assert call.include_usage is True  # the wire asks for usage on every stream


def test_options_are_read_as_the_client_sent_them() -> None:
    call = chat.parse_object(
        {
            "model": "fast",
            "messages": [
                {"role": "developer", "content": "One."},
                {"role": "system", "content": [{"type": "text", "text": "Two."}]},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                },
            ],
            "tools": [{"type": "function", "function": {"name": "get_weather"}}],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
            "parallel_tool_calls": False,
            "reasoning_effort": "high",
            "stop": "END",
            "temperature": 0.5,
            "top_p": 0.9,
            "max_tokens": 50,
            "user": "someone",
            "seed": 7,
        }
    )
    assert call.system == "One.\n\nTwo."
    assert call.messages == (Message(role="user", content="ab"),)
    assert call.tool_choice == ToolChoice(mode="tool", name="get_weather")
    assert call.tools[0].parameters == {"type": "object", "properties": {}}
    assert (call.parallel_tool_calls, call.stop, call.temperature, call.top_p) == (
        False,
        ("END",),
        0.5,
        0.9,
    )
    assert (call.max_output_tokens, call.reasoning.effort, call.reasoning.asked) == (
        50,
        "high",
        True,
    )
    assert (call.stream, call.include_usage) == (False, True)


def refusal(body: object, *, raw: bytes | None = None, limit: int = LIMIT) -> DialectError:
    with pytest.raises(DialectError) as caught:
        chat.parse(dumps_bytes(body) if raw is None else raw, max_bytes=limit)
    return caught.value


USER = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("body", "code", "param", "words"),
    [
        ([1, 2], "REQUEST_INVALID", None, "not a JSON object"),
        ({"messages": USER}, "REQUEST_INVALID", "model", "model: is required"),
        ({"model": "m", "messages": []}, "REQUEST_INVALID", "messages", "at least one"),
        (
            {"model": "m", "messages": USER, "foo": 1},
            "REQUEST_INVALID",
            "foo",
            "Unrecognized request argument supplied: foo",
        ),
        (
            {"model": "m", "messages": [{"role": "user", "content": 3}]},
            "REQUEST_INVALID",
            "messages[0].content",
            "got an integer",
        ),
        (
            {"model": "m", "messages": [{"role": "wizard", "content": "x"}]},
            "REQUEST_INVALID",
            "messages[0].role",
            "'wizard' is not one of",
        ),
        (
            {
                "model": "m",
                "messages": [*USER, {"role": "tool", "tool_call_id": "x", "content": "1"}],
            },
            "REQUEST_INVALID",
            "messages[1].tool_call_id",
            "answers no tool call",
        ),
        (
            {
                "model": "m",
                "messages": [
                    {
                        "role": "assistant",
                        "content": "x",
                        "reasoning_details": [{"type": "reasoning.foo"}],
                    }
                ],
            },
            "REQUEST_INVALID",
            "messages[0].reasoning_details[0].type",
            "'reasoning.foo' is not one of",
        ),
        (
            {"model": "m", "messages": USER, "n": 2},
            "GATEWAY_REQUEST_UNSUPPORTED",
            "n",
            "only one choice",
        ),
        (
            {
                "model": "m",
                "messages": [
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
                ],
            },
            "GATEWAY_REQUEST_UNSUPPORTED",
            "messages[0].content[0].type",
            "image_url content",
        ),
        (
            {"model": "m", "messages": USER, "response_format": {"type": "json_object"}},
            "GATEWAY_REQUEST_UNSUPPORTED",
            "response_format",
            "only text",
        ),
        (
            {"model": "m", "messages": USER, "stream_options": {"include_usage": True}},
            "REQUEST_INVALID",
            "stream_options",
            "only allowed when stream is true",
        ),
        (
            {"model": "m", "messages": USER, "temperature": 3},
            "REQUEST_INVALID",
            "temperature",
            "from 0 to 2",
        ),
        (
            {"model": "m", "messages": USER, "max_tokens": 0},
            "REQUEST_INVALID",
            "max_tokens",
            "from 1 to",
        ),
        (
            {"model": "m", "messages": USER, "reasoning_effort": "turbo"},
            "REQUEST_INVALID",
            "reasoning_effort",
            "'turbo' is not one of",
        ),
        (
            {
                "model": "m",
                "messages": USER,
                "tools": [{"type": "function", "function": {"name": "bad name"}}],
            },
            "REQUEST_INVALID",
            "tools[0].function.name",
            "not a function name",
        ),
        (
            {"model": "m", "messages": USER, "tools": [{"type": "custom", "custom": {}}]},
            "GATEWAY_REQUEST_UNSUPPORTED",
            "tools[0].type",
            "function tools",
        ),
        (
            {"model": "m", "messages": USER, "tool_choice": "required"},
            "REQUEST_INVALID",
            "tool_choice",
            "only allowed when tools",
        ),
        (
            {"model": "m", "messages": USER, "stop": ["a", "b", "c", "d", "e"]},
            "REQUEST_INVALID",
            "stop",
            "at most 4",
        ),
    ],
)
def test_a_bad_body_is_one_sentence_naming_the_field(
    body: object, code: str, param: str | None, words: str
) -> None:
    error = refusal(body)
    assert (error.code, error.param, error.status) == (code, param, 400)
    assert words in error.message


def test_bytes_that_are_not_utf8_json_or_small_enough_are_refused() -> None:
    not_utf8 = refusal(None, raw=b'{"model": "m\xff"}')
    assert (not_utf8.code, not_utf8.status) == ("JSON_INVALID", 400)
    assert "byte 0xff at offset 12" in not_utf8.message
    assert refusal(None, raw=b'{"model": ').code == "JSON_INVALID"
    lone = refusal(None, raw=b'{"model": "\\ud800", "messages": []}')
    assert lone.code == "JSON_INVALID"
    big = refusal(None, raw=b" " * 101, limit=100)
    assert (big.code, big.status) == ("REQUEST_TOO_LARGE", 413)


def test_a_refusal_reaches_the_openai_sdk_as_its_own_error_with_the_code_inside() -> None:
    error = refusal({"model": "m", "messages": USER, "n": 3})
    status, body = chat.error_response(
        error.code, error.message, status=error.status, param=error.param
    )
    client = openai.OpenAI(
        api_key="k",
        base_url="http://127.0.0.1:9/v1",
        http_client=transport(dumps_bytes(body), status=status),
        max_retries=0,
    )
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.code == "GATEWAY_REQUEST_UNSUPPORTED"
    assert caught.value.param == "n"
    assert caught.value.type == "invalid_request_error"


# ---------------------------------------------------------------------- rendering


def client_for(body: bytes, *, stream: bool) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="k",
        base_url="http://127.0.0.1:9/v1",
        http_client=transport(body, stream=stream),
        max_retries=0,
        _strict_response_validation=True,
    )


def a_call(*, stream: bool = True, include_usage: bool = True) -> GatewayCall:
    return GatewayCall(
        dialect="chat_completions",
        model="fast",
        messages=(Message(role="user", content="hi"),),
        stream=stream,
        include_usage=include_usage,
    )


def streamed_chunks(shows: bool, *, include_usage: bool = True) -> tuple[bytes, list[Any]]:
    stream = chat.ChatCompletionsStream(
        a_call(include_usage=include_usage),
        Rendering(shows_reasoning=shows, reply_id="abc", created=1),
    )
    data = render_stream(stream, a_reply())
    client = client_for(data, stream=True)
    chunks = list(client.chat.completions.create(model="fast", messages=[], stream=True))
    return data, chunks


def test_a_shown_stream_reads_in_the_sdk_with_reasoning_content_tool_calls_and_usage() -> None:
    _, chunks = streamed_chunks(True)
    deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    assert deltas[0].role == "assistant"
    assert (
        "".join((delta.model_extra or {}).get("reasoning_content", "") for delta in deltas)
        == f"Let me think. {CANARY} Done."
    )
    assert "".join(delta.content or "" for delta in deltas) == "Checking the weather."
    calls: dict[int, list[str]] = {}
    for delta in deltas:
        for call in delta.tool_calls or ():
            if call.id is not None:
                calls[call.index] = [call.id, call.function.name, ""]  # type: ignore[union-attr, list-item]
            calls[call.index][2] += call.function.arguments or ""  # type: ignore[union-attr]
    assert calls == {
        0: ["call_1", "get_weather", '{"city":"Paris"}'],
        1: ["call_2", "get_time", "{}"],
    }
    assert [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices][-1] == "tool_calls"
    usage = chunks[-1].usage
    assert chunks[-1].choices == []
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (40, 900, 940)
    assert usage.completion_tokens_details.reasoning_tokens == 780
    assert all(chunk.id == "chatcmpl-abc" and chunk.model == "fast" for chunk in chunks)


def test_a_hidden_stream_carries_nothing_of_the_reasoning() -> None:
    data, chunks = streamed_chunks(False)
    assert CANARY.encode() not in data
    assert b"reasoning" not in data
    assert b"EqQBsig" not in data
    assert chunks[-1].usage.completion_tokens == 900
    assert chunks[-1].usage.completion_tokens_details is None
    assert data.endswith(b"data: [DONE]\n\n")


def test_usage_is_streamed_only_when_the_client_asked() -> None:
    data, chunks = streamed_chunks(True, include_usage=False)
    assert b'"usage"' not in data
    assert all(chunk.usage is None for chunk in chunks)


def test_a_body_reads_in_the_sdk_as_a_chat_completion() -> None:
    response = response_of(a_reply())
    for shows in (True, False):
        body = chat.render(a_call(stream=False), Rendering(shows_reasoning=shows), response)
        completion = client_for(dumps_bytes(body), stream=False).chat.completions.create(
            model="fast", messages=[]
        )
        message = completion.choices[0].message
        assert message.content == "Checking the weather."
        assert [call.function.arguments for call in message.tool_calls or ()] == [
            '{"city":"Paris"}',
            "{}",
        ]  # type: ignore[union-attr]
        assert completion.choices[0].finish_reason == "tool_calls"
        extra = message.model_extra or {}
        if shows:
            assert extra["reasoning_content"] == f"Let me think. {CANARY} Done."
        else:
            assert "reasoning_content" not in extra
            assert CANARY not in json.dumps(body)
            assert completion.usage.completion_tokens_details is None  # type: ignore[union-attr]


def test_a_failure_mid_stream_is_the_apis_error_frame_and_the_sdk_raises_it() -> None:
    stream = chat.ChatCompletionsStream(a_call(), Rendering(shows_reasoning=False))
    events = [
        *text("t0", "Half"),
        StreamError(
            code="PROVIDER_OVERLOADED",
            message="The provider is overloaded.",
            retryable=True,
            status=529,
        ),
    ]
    data = render_stream(stream, events)
    assert b"[DONE]" not in data
    with pytest.raises(openai.APIError) as caught:
        list(
            client_for(data, stream=True).chat.completions.create(
                model="fast", messages=[], stream=True
            )
        )
    assert "overloaded" in caught.value.message


def test_hostile_text_stays_inside_its_json_frame() -> None:
    nasty = '</script><b>x</b>\n\ndata: [DONE]\n\nevent: error\r\n\u2028"\\'
    stream = chat.ChatCompletionsStream(a_call(), Rendering(shows_reasoning=True))
    data = render_stream(stream, [*text("t0", nasty), Finish(reason="stop")])
    chunks = list(
        client_for(data, stream=True).chat.completions.create(
            model="fast", messages=[], stream=True
        )
    )
    assert (
        "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices) == nasty
    )


def test_huge_arguments_are_read_and_streamed_whole() -> None:
    arguments = '{"blob":"' + "x" * 2_000_000 + '"}'
    body = {
        "model": "m",
        "messages": [
            *USER,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c",
                        "type": "function",
                        "function": {"name": "f", "arguments": arguments},
                    }
                ],
            },
        ],
    }
    call = chat.parse(dumps_bytes(body), max_bytes=4 << 20)
    assert call.messages[1].parts == (
        ToolCallPart(tool_call_id="c", name="f", arguments=arguments),
    )


def test_each_delta_costs_one_frame_whatever_came_before() -> None:
    # 20,000 deltas: every frame is the same size, so the stream is linear in its deltas.
    stream = chat.ChatCompletionsStream(a_call(), Rendering(shows_reasoning=True))
    stream.feed(text("t0")[0])
    sizes = {len(stream.feed(event)) for event in text("t0", *["ab"] * 20_000)[1:-1]}
    assert len(sizes) == 1
    assert sizes.pop() < 300


def test_a_client_that_turned_thinking_off_gets_no_reasoning_content() -> None:
    # DeepSeek's switch, sent by the client: it gets what DeepSeek would give, nothing.
    call = chat.parse_object(
        {"model": "m", "messages": USER, "stream": True, "thinking": {"type": "disabled"}}
    )
    data = render_stream(
        chat.ChatCompletionsStream(call, Rendering(shows_reasoning=True)), a_reply()
    )
    assert b"reasoning_content" not in data and CANARY.encode() not in data


def test_an_openrouter_history_reads_back_with_its_reasoning_details() -> None:
    model = "anthropic/claude-sonnet-4.6"
    made = {"provider": "openrouter", "model": model}
    details = (
        ReasoningPart(
            kind="summary",
            text="Need the weather.",
            provider_metadata={
                "type": "reasoning.text",
                "format": "anthropic-claude-v1",
                "index": 0,
                "signature": "sig==",
            },
            **made,
        ),
        ReasoningPart(
            kind="encrypted",
            text="",
            provider_metadata={
                "type": "reasoning.encrypted",
                "format": "openai-responses-v1",
                "id": "rs_1",
                "index": 1,
                "data": "gAAAA==",
            },
            **made,
        ),
    )
    messages = history("openrouter", model)
    assistant = Message(role="assistant", parts=(*details, *messages[1].parts[1:]))
    messages = (messages[0], assistant, messages[2])
    body = sent("openrouter", model, messages, tools=(WEATHER,))
    assert body["messages"][2]["reasoning_details"]  # the wire sent them
    call = chat.parse_object(body)
    assert call.messages == messages
    assert [part.kind for part in call.client_carriers()] == ["summary", "encrypted"]


def test_a_refusal_is_the_refusal_field_streamed_and_not() -> None:
    events = [
        TextStart(part_id="t", provider_metadata={"refusal": True}),
        TextDelta(part_id="t", text="I can't help with that."),
        TextEnd(part_id="t"),
        Finish(reason="refusal"),
    ]
    data = render_stream(
        chat.ChatCompletionsStream(a_call(), Rendering(shows_reasoning=False)), events
    )
    chunks = list(
        client_for(data, stream=True).chat.completions.create(
            model="fast", messages=[], stream=True
        )
    )
    deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    assert "".join(delta.refusal or "" for delta in deltas) == "I can't help with that."
    assert "".join(delta.content or "" for delta in deltas) == ""
    body = chat.render(a_call(stream=False), Rendering(shows_reasoning=False), response_of(events))
    message = (
        client_for(dumps_bytes(body), stream=False)
        .chat.completions.create(model="fast", messages=[])
        .choices[0]
        .message
    )
    assert (message.content, message.refusal) == (None, "I can't help with that.")
