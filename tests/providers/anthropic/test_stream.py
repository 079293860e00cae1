"""Streamed responses: exact event sequences, split invariance, errors and odd streams."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import byte_by_byte, decode_in_pieces
from thoughtline.model.accumulator import ReasoningPart, ToolCall, accumulate
from thoughtline.model.events import (
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ResponseStarted,
    StreamError,
    StreamEvent,
    StreamWarning,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)

from .expected import ERROR_STREAM, STREAMS, SUMMARY_SIGNATURE, SUMMARY_STREAM
from .helpers import decode_stream, fixture, new_decoder


def sse(*payloads: dict[str, Any]) -> bytes:
    return b"".join(
        f"event: {payload['type']}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()
        for payload in payloads
    )


START = {
    "type": "message_start",
    "message": {
        "id": "msg_x",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-8",
        "content": [],
        "usage": {"input_tokens": 5, "output_tokens": 1},
    },
}
STOP = {"type": "message_stop"}


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def block_delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


# ---------------------------------------------------------------- recorded fixtures


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_recorded_stream_decodes_to_exact_events(name: str) -> None:
    assert decode_stream(fixture(f"{name}_stream.sse")) == STREAMS[name]


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_recorded_stream_byte_by_byte(name: str) -> None:
    assert byte_by_byte(new_decoder, fixture(f"{name}_stream.sse")) == STREAMS[name]


@pytest.mark.parametrize("name", sorted(STREAMS))
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_any_split_of_a_recorded_stream_gives_the_same_events(
    name: str, data: st.DataObject
) -> None:
    raw = fixture(f"{name}_stream.sse")
    cuts = data.draw(st.lists(st.integers(min_value=1, max_value=len(raw) - 1), max_size=40))
    assert decode_in_pieces(new_decoder, raw, cuts) == STREAMS[name]


def test_fixtures_contain_multibyte_characters() -> None:
    # Split invariance only means something if cuts can land inside a character.
    for name in STREAMS:
        raw = fixture(f"{name}_stream.sse")
        assert len(raw) > len(raw.decode("utf-8")), name


def test_crlf_line_endings_decode_the_same() -> None:
    raw = fixture("summary_stream.sse").replace(b"\n", b"\r\n")
    assert decode_stream(raw) == SUMMARY_STREAM


def test_summary_stream_accumulates_to_the_answer_and_summary() -> None:
    response = accumulate(SUMMARY_STREAM)
    assert response.text == "The answer is 42 — voilà, 日本語 ✅."
    assert response.reasoning_parts == (
        ReasoningPart(
            kind="summary",
            text="Let me check the café → 日本 route first 🙂. Distance ≈ 9 700 km.",
            provider_metadata={"signature": SUMMARY_SIGNATURE},
        ),
    )
    assert response.usage.reasoning_tokens == 780
    assert response.usage.cached_input_tokens == 1200
    assert response.finish == Finish(reason="stop", raw_reason="end_turn")
    assert response.error is None


# ---------------------------------------------------------------- errors and breaks


def test_in_stream_error_is_last_and_keeps_the_cut_reasoning_open() -> None:
    events = decode_stream(fixture("error_stream.sse"))
    assert events == ERROR_STREAM
    response = accumulate(events)
    assert response.reasoning_parts == (
        ReasoningPart(kind="summary", text="Première étape : lire l'énoncé…", complete=False),
    )
    assert response.error is not None
    assert response.error.code == "PROVIDER_OVERLOADED"
    assert response.error.retryable is True


@pytest.mark.parametrize(
    ("error_type", "code", "retryable"),
    [
        ("overloaded_error", "PROVIDER_OVERLOADED", True),
        ("api_error", "PROVIDER_SERVER_ERROR", True),
        ("rate_limit_error", "PROVIDER_RATE_LIMITED", True),
        ("invalid_request_error", "PROVIDER_BAD_REQUEST", False),
        ("timeout_error", "PROVIDER_TIMEOUT", True),
        ("brand_new_error", "PROVIDER_ERROR", False),
    ],
)
def test_in_stream_error_types_map_to_stable_codes(
    error_type: str, code: str, retryable: bool
) -> None:
    raw = sse(START, {"type": "error", "error": {"type": error_type, "message": "Boom ⚡"}})
    events = decode_stream(raw + sse(STOP))
    error = events[-1]
    assert isinstance(error, StreamError)
    assert (error.code, error.retryable, error.provider_error_type) == (code, retryable, error_type)
    assert f"({error_type}): Boom ⚡" in error.message
    assert [type(event) for event in events] == [ResponseStarted, Usage, StreamError]


def test_stream_cut_between_frames_is_interrupted() -> None:
    raw = fixture("summary_stream.sse")
    cut = raw.index(
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"signature_delta"'
    )
    events = decode_stream(raw[:cut])
    assert events[:-1] == SUMMARY_STREAM[:5]
    error = events[-1]
    assert isinstance(error, StreamError)
    assert error.code == "PROVIDER_STREAM_INTERRUPTED"
    assert error.retryable is True
    response = accumulate(events)
    assert response.reasoning_parts[0].complete is False
    assert response.reasoning_parts[0].provider_metadata == {}


def test_stream_cut_inside_a_frame_is_an_interruption() -> None:
    # The connection broke mid-frame (here inside the multi-byte 日): the provider did
    # not send bad data, so this is a retryable interruption, not a malformed response.
    raw = fixture("summary_stream.sse")
    cut = raw.index("日本 route".encode()) + 2
    events = decode_stream(raw[:cut])
    assert events[:-1] == SUMMARY_STREAM[:3]
    assert isinstance(events[-1], StreamError)
    assert events[-1].code == "PROVIDER_STREAM_INTERRUPTED"
    assert events[-1].retryable is True


def test_malformed_json_frame_stops_decoding() -> None:
    raw = (
        sse(START, block_start(0, {"type": "text", "text": ""}))
        + b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,\n\n'
        + sse(block_delta(0, {"type": "text_delta", "text": "never seen"}), STOP)
    )
    events = decode_stream(raw)
    assert events[:-1] == [
        ResponseStarted(response_id="msg_x", model="claude-opus-4-8"),
        Usage(input_tokens=5),
        TextStart(part_id="text-0"),
    ]
    assert isinstance(events[-1], StreamError)
    assert events[-1].code == "PROVIDER_MALFORMED_RESPONSE"
    assert events[-1].retryable is False


# ---------------------------------------------------------------- odd but legal streams


def test_interleaved_block_indexes_are_tracked_per_index() -> None:
    raw = sse(
        START,
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        block_delta(0, {"type": "thinking_delta", "thinking": "A"}),
        block_start(1, {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}),
        block_delta(1, {"type": "input_json_delta", "partial_json": '{"x":'}),
        block_delta(0, {"type": "thinking_delta", "thinking": "B"}),
        block_delta(1, {"type": "input_json_delta", "partial_json": "1}"}),
        block_delta(0, {"type": "signature_delta", "signature": "sig-0"}),
        block_stop(1),
        block_stop(0),
        STOP,
    )
    assert decode_stream(raw)[2:] == [
        ReasoningStart(part_id="reasoning-0", kind="summary"),
        ReasoningDelta(part_id="reasoning-0", text="A"),
        ToolCallStart(part_id="tool-1", tool_call_id="toolu_1", name="f"),
        ToolCallDelta(part_id="tool-1", arguments_delta='{"x":'),
        ReasoningDelta(part_id="reasoning-0", text="B"),
        ToolCallDelta(part_id="tool-1", arguments_delta="1}"),
        ToolCallEnd(part_id="tool-1"),
        ReasoningEnd(
            part_id="reasoning-0", kind="summary", provider_metadata={"signature": "sig-0"}
        ),
    ]


def test_signature_delta_is_assigned_not_appended() -> None:
    raw = sse(
        START,
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        block_delta(0, {"type": "signature_delta", "signature": "first"}),
        block_delta(0, {"type": "signature_delta", "signature": "second"}),
        block_stop(0),
        STOP,
    )
    assert decode_stream(raw)[-1] == ReasoningEnd(
        part_id="reasoning-0", kind="encrypted", provider_metadata={"signature": "second"}
    )


def test_thinking_without_text_or_signature_stays_an_empty_summary() -> None:
    raw = sse(
        START,
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        block_stop(0),
        STOP,
    )
    assert decode_stream(raw)[2:] == [
        ReasoningStart(part_id="reasoning-0", kind="summary"),
        ReasoningEnd(part_id="reasoning-0", kind="summary"),
    ]


def test_unknown_event_type_is_a_warning_and_the_stream_goes_on() -> None:
    raw = sse(
        START,
        {"type": "thinking_progress", "percent": 50},
        block_start(0, {"type": "text", "text": ""}),
        block_delta(0, {"type": "text_delta", "text": "ok"}),
        block_delta(0, {"type": "emphasis_delta", "level": 2}),
        block_delta(0, {"type": "emphasis_delta", "level": 3}),
        block_stop(0),
        STOP,
    )
    assert decode_stream(raw)[2:] == [
        StreamWarning(
            code="UNKNOWN_EVENT",
            message="Skipped an Anthropic stream event of unknown type 'thinking_progress'.",
        ),
        TextStart(part_id="text-0"),
        TextDelta(part_id="text-0", text="ok"),
        StreamWarning(
            code="UNKNOWN_EVENT",
            message="Skipped Anthropic 'emphasis_delta' deltas on a text block (index 0).",
        ),
        TextEnd(part_id="text-0"),
    ]


def test_delta_without_start_opens_the_part_it_implies() -> None:
    raw = sse(
        START,
        block_delta(0, {"type": "text_delta", "text": "orphan"}),
        block_stop(0),
        block_stop(7),
        STOP,
    )
    assert decode_stream(raw)[2:] == [
        TextStart(part_id="text-0"),
        TextDelta(part_id="text-0", text="orphan"),
        TextEnd(part_id="text-0"),
        StreamWarning(
            code="UNKNOWN_EVENT",
            message="Skipped an Anthropic stream event: content_block_stop for index 7 that "
            "never started.",
        ),
    ]


def test_reused_index_gets_a_fresh_part_id() -> None:
    raw = sse(
        START,
        block_start(0, {"type": "text", "text": "a"}),
        block_stop(0),
        block_start(0, {"type": "text", "text": "b"}),
        block_stop(0),
        STOP,
    )
    events = decode_stream(raw)
    assert events[2:] == [
        TextStart(part_id="text-0"),
        TextDelta(part_id="text-0", text="a"),
        TextEnd(part_id="text-0"),
        TextStart(part_id="text-0.1"),
        TextDelta(part_id="text-0.1", text="b"),
        TextEnd(part_id="text-0.1"),
    ]
    assert accumulate(events).text == "ab"


UNCLOSED_TOOL = StreamWarning(
    code="INCOMPLETE_PART",
    message="Anthropic never closed the tool_use block at index 0; its arguments may be "
    "truncated, so the tool call is kept as incomplete.",
)


def test_tool_block_left_open_at_message_stop_is_an_incomplete_call() -> None:
    raw = sse(
        START,
        block_start(0, {"type": "tool_use", "id": "toolu_9", "name": "g", "input": {}}),
        block_delta(0, {"type": "input_json_delta", "partial_json": '{"a":'}),
        STOP,
    )
    events: list[StreamEvent] = decode_stream(raw)
    assert events[2:] == [
        ToolCallStart(part_id="tool-0", tool_call_id="toolu_9", name="g"),
        ToolCallDelta(part_id="tool-0", arguments_delta='{"a":'),
        UNCLOSED_TOOL,
    ]
    assert accumulate(events).tool_calls == (
        ToolCall(tool_call_id="toolu_9", name="g", arguments='{"a":', complete=False),
    )


def test_second_message_start_leaves_the_open_tool_call_incomplete() -> None:
    second_start = {
        "type": "message_start",
        "message": {"id": "msg_2", "model": "claude-sonnet-4-6", "content": []},
    }
    raw = sse(
        START,
        block_start(0, {"type": "tool_use", "id": "toolu_9", "name": "g", "input": {}}),
        block_delta(0, {"type": "input_json_delta", "partial_json": '{"city":"Mü'}),
        second_start,
        block_start(0, {"type": "text", "text": ""}),
        block_delta(0, {"type": "text_delta", "text": "Erneut: München."}),
        block_stop(0),
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
        STOP,
    )
    events: list[StreamEvent] = decode_stream(raw)
    assert events[2:] == [
        ToolCallStart(part_id="tool-0", tool_call_id="toolu_9", name="g"),
        ToolCallDelta(part_id="tool-0", arguments_delta='{"city":"Mü'),
        StreamWarning(
            code="PROVIDER_PROTOCOL",
            message="Anthropic started a new message before the previous one ended; what "
            "the previous message left unfinished is kept as incomplete.",
        ),
        UNCLOSED_TOOL,
        ResponseStarted(response_id="msg_2", model="claude-sonnet-4-6"),
        TextStart(part_id="text-0"),
        TextDelta(part_id="text-0", text="Erneut: München."),
        TextEnd(part_id="text-0"),
        Usage(),
        Finish(reason="stop", raw_reason="end_turn"),
    ]
    response = accumulate(events)
    assert [call.complete for call in response.tool_calls] == [False]
    assert response.text == "Erneut: München."


@pytest.mark.parametrize(
    ("stop_reason", "reason"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "refusal"),
        ("pause_turn", "other"),
        ("something_new", "other"),
    ],
)
def test_stop_reasons_are_normalized(stop_reason: str, reason: str) -> None:
    raw = sse(
        START,
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": 3},
        },
        STOP,
    )
    assert decode_stream(raw)[-1] == Finish(reason=reason, raw_reason=stop_reason)  # type: ignore[arg-type]


def test_missing_usage_fields_stay_none() -> None:
    raw = sse(
        {"type": "message_start", "message": {"id": "msg_y", "model": "claude-sonnet-5"}},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 7},
        },
        STOP,
    )
    usage = accumulate(decode_stream(raw)).usage
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (None, 7, None)
    assert (usage.cached_input_tokens, usage.total_tokens) == (None, None)


def test_pause_turn_is_other_with_a_warning_that_the_answer_may_be_incomplete() -> None:
    raw = sse(
        START,
        {"type": "message_delta", "delta": {"stop_reason": "pause_turn"}, "usage": {}},
        STOP,
    )
    assert decode_stream(raw)[-2:] == [
        StreamWarning(
            code="PROVIDER_PAUSED_TURN",
            message="Anthropic paused the turn before it finished (a long-running server "
            "tool); the answer may be incomplete.",
        ),
        Finish(reason="other", raw_reason="pause_turn"),
    ]


def test_usage_input_is_the_total_with_cache_reads_and_writes() -> None:
    # Anthropic's input_tokens excludes cache reads and writes; thoughtline's input is
    # every input token, as OpenAI's prompt_tokens is.
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_c",
            "model": "claude-sonnet-4-6",
            "content": [],
            "usage": {
                "input_tokens": 20,
                "cache_creation_input_tokens": 1500,
                "cache_read_input_tokens": 3000,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": 1500,
                    "ephemeral_1h_input_tokens": 0,
                },
                "output_tokens": 1,
            },
        },
    }
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"input_tokens": 20, "output_tokens": 7},
    }
    events = decode_stream(sse(start, delta, STOP))
    assert [event for event in events if isinstance(event, Usage)] == [
        Usage(input_tokens=4520, cached_input_tokens=3000, cache_write_tokens=1500),
        Usage(input_tokens=4520, output_tokens=7),
    ]
    assert accumulate(events).usage == Usage(
        input_tokens=4520, output_tokens=7, cached_input_tokens=3000, cache_write_tokens=1500
    )


def test_server_side_fallback_reports_the_model_that_answered() -> None:
    fallback = {
        "type": "fallback",
        "from": {"model": "claude-opus-4-8"},
        "to": {"model": "claude-sonnet-5-20260901"},
        "trigger": {"type": "refusal", "category": "cyber"},
    }
    raw = sse(
        START,
        block_start(0, fallback),
        block_stop(0),
        block_start(1, {"type": "text", "text": ""}),
        block_delta(1, {"type": "text_delta", "text": "Hier die Antwort."}),
        block_stop(1),
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
        STOP,
    )
    events: list[StreamEvent] = decode_stream(raw)
    assert events[2:5] == [
        StreamWarning(
            code="PROVIDER_MODEL_FALLBACK",
            message="Anthropic handed the response from claude-opus-4-8 to "
            "claude-sonnet-5-20260901 (refusal, category cyber); the rest was written by "
            "the fallback model.",
        ),
        ResponseStarted(model="claude-sonnet-5-20260901"),
        TextStart(part_id="text-1"),
    ]
    response = accumulate(events)
    assert response.model == "claude-sonnet-5-20260901"
    assert response.response_id == "msg_x"
    assert response.text == "Hier die Antwort."


def test_protocol_break_fixture_keeps_the_cut_tool_call_incomplete() -> None:
    response = accumulate(decode_stream(fixture("protocol_break_stream.sse")))
    assert response.tool_calls == (
        ToolCall(
            tool_call_id="toolu_01ProxyCut",
            name="get_weather",
            arguments='{"city":"Zür',
            complete=False,
        ),
    )
    assert response.text == "Entschuldigung — bitte erneut fragen."
