"""Exact event sequences for recorded Ollama NDJSON streams and non-streaming bodies."""

from __future__ import annotations

import pytest

from thoughtline.model.accumulator import ReasoningPart, ToolCall, accumulate
from thoughtline.model.events import (
    Finish,
    FinishReason,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ResponseStarted,
    StreamError,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from thoughtline.providers.ollama import OllamaTranslator

from .helpers import decode_body, decode_stream

TH = ["Okay, the user asks ", "about café → Lyon. ", "日本語 too 🤔. Let me answer."]
CT = ["Take the TGV: ", "about 2 hours, é ", "🚄."]
THINKING_TAIL = [
    Usage(input_tokens=26, output_tokens=290),
    Finish(reason="stop", raw_reason="stop"),
]


def test_thinking_stream() -> None:
    assert decode_stream("thinking_stream.ndjson") == [
        ResponseStarted(model="qwen3:8b"),
        ReasoningStart(part_id="reasoning_0", kind="raw"),
        *[ReasoningDelta(part_id="reasoning_0", text=text) for text in TH],
        ReasoningEnd(part_id="reasoning_0", kind="raw"),
        TextStart(part_id="text_1"),
        *[TextDelta(part_id="text_1", text=text) for text in CT],
        TextEnd(part_id="text_1"),
        *THINKING_TAIL,
    ]


def test_thinking_body() -> None:
    assert decode_body("thinking_body.json") == [
        ResponseStarted(model="qwen3:8b"),
        ReasoningStart(part_id="reasoning_0", kind="raw"),
        ReasoningDelta(part_id="reasoning_0", text="".join(TH)),
        ReasoningEnd(part_id="reasoning_0", kind="raw"),
        TextStart(part_id="text_1"),
        TextDelta(part_id="text_1", text="".join(CT)),
        TextEnd(part_id="text_1"),
        *THINKING_TAIL,
    ]


def test_thinking_response() -> None:
    response = accumulate(decode_stream("thinking_stream.ndjson"))
    assert response.text == "".join(CT)
    assert response.reasoning_parts == (ReasoningPart(kind="raw", text="".join(TH)),)
    # Ollama reports no separate reasoning count: unknown, not zero.
    assert response.usage == Usage(input_tokens=26, output_tokens=290)
    assert response.usage.reasoning_tokens is None
    assert response.model == "qwen3:8b"
    assert response.response_id is None


TOOL_CALLS = [
    ToolCallStart(part_id="tool_1", tool_call_id="call_7f3a", name="get_weather"),
    ToolCallDelta(part_id="tool_1", arguments_delta='{"city":"Zürich","unit":"celsius"}'),
    ToolCallEnd(part_id="tool_1", provider_metadata={"index": 0}),
    ToolCallStart(part_id="tool_2", tool_call_id="call_8b1c", name="get_weather"),
    ToolCallDelta(part_id="tool_2", arguments_delta='{"city":"東京","unit":"celsius"}'),
    ToolCallEnd(part_id="tool_2", provider_metadata={"index": 1}),
    Usage(input_tokens=143, output_tokens=61),
    Finish(reason="tool_calls", raw_reason="stop"),
]


def test_tool_call_stream() -> None:
    assert decode_stream("tool_call_stream.ndjson") == [
        ResponseStarted(model="gpt-oss:20b"),
        ReasoningStart(part_id="reasoning_0", kind="raw"),
        ReasoningDelta(part_id="reasoning_0", text="The user wants weather for "),
        ReasoningDelta(part_id="reasoning_0", text="Zürich and 東京 → two calls."),
        ReasoningEnd(part_id="reasoning_0", kind="raw"),
        *TOOL_CALLS,
    ]


def test_tool_call_body() -> None:
    assert decode_body("tool_call_body.json") == [
        ResponseStarted(model="gpt-oss:20b"),
        ReasoningStart(part_id="reasoning_0", kind="raw"),
        ReasoningDelta(
            part_id="reasoning_0", text="The user wants weather for Zürich and 東京 → two calls."
        ),
        ReasoningEnd(part_id="reasoning_0", kind="raw"),
        *TOOL_CALLS,
    ]


def test_tool_call_response() -> None:
    response = accumulate(decode_stream("tool_call_stream.ndjson"))
    assert response.tool_calls == (
        ToolCall(
            tool_call_id="call_7f3a",
            name="get_weather",
            arguments='{"city":"Zürich","unit":"celsius"}',
            provider_metadata={"index": 0},
        ),
        ToolCall(
            tool_call_id="call_8b1c",
            name="get_weather",
            arguments='{"city":"東京","unit":"celsius"}',
            provider_metadata={"index": 1},
        ),
    )


PLAIN_TAIL = [
    TextEnd(part_id="text_0"),
    Usage(input_tokens=11, output_tokens=9),
    Finish(reason="stop", raw_reason="stop"),
]


def test_plain_stream_and_body() -> None:
    assert decode_stream("plain_stream.ndjson") == [
        ResponseStarted(model="llama3.2"),
        TextStart(part_id="text_0"),
        TextDelta(part_id="text_0", text="Bonjour ! "),
        TextDelta(part_id="text_0", text="Ça va — très bien."),
        *PLAIN_TAIL,
    ]
    assert decode_body("plain_body.json") == [
        ResponseStarted(model="llama3.2"),
        TextStart(part_id="text_0"),
        TextDelta(part_id="text_0", text="Bonjour ! Ça va — très bien."),
        *PLAIN_TAIL,
    ]


def test_length_while_thinking() -> None:
    assert decode_stream("length_stream.ndjson") == [
        ResponseStarted(model="qwen3:8b"),
        ReasoningStart(part_id="reasoning_0", kind="raw"),
        ReasoningDelta(part_id="reasoning_0", text="Hmm, a long proof ∑ "),
        ReasoningDelta(part_id="reasoning_0", text="over n ≥ 1…"),
        ReasoningEnd(part_id="reasoning_0", kind="raw"),
        Usage(input_tokens=30, output_tokens=64),
        Finish(reason="length", raw_reason="length"),
    ]


def test_in_stream_error_is_last_and_leaves_the_open_part_incomplete() -> None:
    events = decode_stream("error_stream.ndjson")
    assert events == [
        ResponseStarted(model="qwen3:8b"),
        ReasoningStart(part_id="reasoning_0", kind="raw"),
        ReasoningDelta(part_id="reasoning_0", text="Let me think — "),
        StreamError(
            code="PROVIDER_SERVER_ERROR",
            message="Ollama reported an error mid-stream: an error was encountered while running "
            "the model: unexpected EOF. The provider failed; try again shortly.",
            retryable=True,
        ),
    ]
    response = accumulate(events)
    assert response.reasoning_parts == (
        ReasoningPart(kind="raw", text="Let me think — ", complete=False),
    )


@pytest.mark.parametrize(
    ("stream", "body"),
    [
        ("thinking_stream.ndjson", "thinking_body.json"),
        ("tool_call_stream.ndjson", "tool_call_body.json"),
        ("plain_stream.ndjson", "plain_body.json"),
    ],
)
def test_stream_and_body_accumulate_to_the_same_response(stream: str, body: str) -> None:
    assert accumulate(decode_stream(stream)) == accumulate(decode_body(body))


# ---------------------------------------------------------------- edge cases, inline payloads


def translate(*payloads: dict[str, object]) -> list[object]:
    translator = OllamaTranslator()
    events: list[object] = []
    for payload in payloads:
        events.extend(translator.translate("", payload))
    events.extend(translator.finish())
    return events


def test_thinking_and_content_in_one_line_then_thinking_again() -> None:
    events = translate(
        {"message": {"role": "assistant", "thinking": "a", "content": "b"}, "done": False},
        {"message": {"role": "assistant", "thinking": "c"}, "done": False},
        {"message": {"role": "assistant", "content": ""}, "done": True},
    )
    assert events == [
        ResponseStarted(),
        ReasoningStart(part_id="reasoning_0", kind="raw"),
        ReasoningDelta(part_id="reasoning_0", text="a"),
        ReasoningEnd(part_id="reasoning_0", kind="raw"),
        TextStart(part_id="text_1"),
        TextDelta(part_id="text_1", text="b"),
        TextEnd(part_id="text_1"),
        ReasoningStart(part_id="reasoning_2", kind="raw"),
        ReasoningDelta(part_id="reasoning_2", text="c"),
        ReasoningEnd(part_id="reasoning_2", kind="raw"),
        Usage(),
        Finish(reason="stop", raw_reason=None),
    ]


def test_tool_call_without_id_and_with_string_arguments() -> None:
    events = translate(
        {
            "message": {
                "role": "assistant",
                "tool_calls": [
                    {"function": {"name": "now", "arguments": {}}},
                    {"function": {"name": "echo", "arguments": '{"x":1}'}},
                ],
            },
            "done": True,
            "done_reason": "stop",
        }
    )
    assert events == [
        ResponseStarted(),
        ToolCallStart(part_id="tool_0", tool_call_id="call_0", name="now"),
        ToolCallDelta(part_id="tool_0", arguments_delta="{}"),
        ToolCallEnd(part_id="tool_0"),
        ToolCallStart(part_id="tool_1", tool_call_id="call_1", name="echo"),
        ToolCallDelta(part_id="tool_1", arguments_delta='{"x":1}'),
        ToolCallEnd(part_id="tool_1"),
        Usage(),
        Finish(reason="tool_calls", raw_reason="stop"),
    ]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [("stop", "stop"), ("length", "length"), ("load", "other"), ("unload", "other")],
)
def test_done_reasons(raw: str, reason: FinishReason) -> None:
    events = translate(
        {"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": raw}
    )
    assert events[-1] == Finish(reason=reason, raw_reason=raw)
