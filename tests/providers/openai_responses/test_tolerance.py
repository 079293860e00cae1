"""Tolerant parsing: compatible servers that skip events, unknown types, odd statuses."""

from __future__ import annotations

import json
from typing import Any

from thoughtline.model.accumulator import accumulate
from thoughtline.model.events import (
    Finish,
    ProviderMetadata,
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

from ._helpers import decode_body, decode_stream, fixture


def _sse(*payloads: dict[str, Any], named: bool = True) -> bytes:
    frames = []
    for payload in payloads:
        data = json.dumps(payload, ensure_ascii=False)
        event = f"event: {payload.get('type', 'x')}\n" if named else ""
        frames.append(f"{event}data: {data}\n\n")
    return "".join(frames).encode()


CREATED = {"type": "response.created", "response": {"id": "resp_t", "model": "gpt-oss-20b"}}
COMPLETED: dict[str, Any] = {
    "type": "response.completed",
    "response": {"id": "resp_t", "status": "completed"},
}
STARTED = ResponseStarted(response_id="resp_t", model="gpt-oss-20b")


def test_final_items_fill_in_what_was_never_streamed() -> None:
    reasoning = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "short ✓"}],
        "content": [{"type": "reasoning_text", "text": "raw → text"}],
        "encrypted_content": "gAAAA_x",
    }
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "answer", "annotations": []}],
    }
    call = {
        "id": "fc_1",
        "type": "function_call",
        "call_id": "call_1",
        "name": "f",
        "arguments": "{}",
    }
    events = decode_stream(
        _sse(
            CREATED,
            {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
            {"type": "response.output_item.done", "output_index": 1, "item": message},
            {"type": "response.output_item.done", "output_index": 2, "item": call},
            COMPLETED,
        )
    )
    summary: ProviderMetadata = {"item_id": "rs_1", "summary_index": 0}
    raw: ProviderMetadata = {"item_id": "rs_1", "content_index": 0}
    encrypted: ProviderMetadata = {"item_id": "rs_1", "encrypted_content": "gAAAA_x"}
    assert events == [
        STARTED,
        ReasoningStart(part_id="rs_1/summary/0", kind="summary", provider_metadata=summary),
        ReasoningDelta(part_id="rs_1/summary/0", text="short ✓"),
        ReasoningEnd(part_id="rs_1/summary/0", kind="summary", provider_metadata=summary),
        ReasoningStart(part_id="rs_1/raw/0", kind="raw", provider_metadata=raw),
        ReasoningDelta(part_id="rs_1/raw/0", text="raw → text"),
        ReasoningEnd(part_id="rs_1/raw/0", kind="raw", provider_metadata=raw),
        ReasoningStart(part_id="rs_1/encrypted", kind="encrypted", provider_metadata=encrypted),
        ReasoningEnd(part_id="rs_1/encrypted", kind="encrypted", provider_metadata=encrypted),
        TextStart(part_id="msg_1/text/0", provider_metadata={"item_id": "msg_1"}),
        TextDelta(part_id="msg_1/text/0", text="answer"),
        TextEnd(part_id="msg_1/text/0", provider_metadata={"item_id": "msg_1"}),
        ToolCallStart(
            part_id="fc_1/call",
            tool_call_id="call_1",
            name="f",
            provider_metadata={"item_id": "fc_1"},
        ),
        ToolCallDelta(part_id="fc_1/call", arguments_delta="{}"),
        ToolCallEnd(part_id="fc_1/call", provider_metadata={"item_id": "fc_1"}),
        Finish(reason="tool_calls", raw_reason="completed"),
    ]


def test_deltas_without_their_part_events_open_the_part() -> None:
    events = decode_stream(
        _sse(
            CREATED,
            {
                "type": "response.reasoning_text.delta",
                "item_id": "rs_1",
                "content_index": 0,
                "delta": "a",
            },
            {
                "type": "response.reasoning_summary_text.delta",
                "item_id": "rs_1",
                "summary_index": 2,
                "delta": "b",
            },
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "content_index": 0,
                "delta": "c",
            },
            {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{"},
            {"type": "response.function_call_arguments.done", "item_id": "fc_1", "arguments": "{}"},
            COMPLETED,
        )
    )
    raw: ProviderMetadata = {"item_id": "rs_1", "content_index": 0}
    summary: ProviderMetadata = {"item_id": "rs_1", "summary_index": 2}
    assert events == [
        STARTED,
        ReasoningStart(part_id="rs_1/raw/0", kind="raw", provider_metadata=raw),
        ReasoningDelta(part_id="rs_1/raw/0", text="a"),
        ReasoningStart(part_id="rs_1/summary/2", kind="summary", provider_metadata=summary),
        ReasoningDelta(part_id="rs_1/summary/2", text="b"),
        TextStart(part_id="msg_1/text/0", provider_metadata={"item_id": "msg_1"}),
        TextDelta(part_id="msg_1/text/0", text="c"),
        # Arguments before the item: the call id falls back to the item id.
        ToolCallStart(
            part_id="fc_1/call", tool_call_id="fc_1", name="", provider_metadata={"item_id": "fc_1"}
        ),
        ToolCallDelta(part_id="fc_1/call", arguments_delta="{"),
        ToolCallEnd(part_id="fc_1/call", provider_metadata={"item_id": "fc_1"}),
        # Parts still open at the terminal event are closed before usage and finish.
        ReasoningEnd(part_id="rs_1/raw/0", kind="raw", provider_metadata=raw),
        ReasoningEnd(part_id="rs_1/summary/2", kind="summary", provider_metadata=summary),
        TextEnd(part_id="msg_1/text/0", provider_metadata={"item_id": "msg_1"}),
        Finish(reason="tool_calls", raw_reason="completed"),
    ]


def test_unknown_items_and_parts_are_warned_about_once() -> None:
    search = {"id": "ws_1", "type": "web_search_call", "status": "completed"}
    events = decode_stream(
        _sse(
            CREATED,
            {"type": "response.output_item.added", "output_index": 0, "item": search},
            {"type": "response.web_search_call.searching", "item_id": "ws_1", "output_index": 0},
            {"type": "response.output_item.done", "output_index": 0, "item": search},
            {
                "type": "response.content_part.added",
                "item_id": "msg_1",
                "content_index": 0,
                "part": {"type": "hologram"},
            },
            COMPLETED,
        )
    )
    assert events == [
        STARTED,
        StreamWarning(
            code="UNKNOWN_PART",
            message="Skipped an OpenAI Responses output item of unknown type 'web_search_call'.",
        ),
        StreamWarning(
            code="UNKNOWN_PART",
            message="Skipped an OpenAI Responses content part of unknown type 'hologram'.",
        ),
        Finish(reason="stop", raw_reason="completed"),
    ]


def test_event_type_falls_back_to_the_sse_event_name() -> None:
    frames = (
        b'event: response.created\ndata: {"response":{"id":"r"}}\n\n'
        b'event: response.completed\ndata: {"response":{}}\n\n'
    )
    assert decode_stream(frames) == [
        ResponseStarted(response_id="r", model=None),
        Finish(reason="stop", raw_reason="completed"),
    ]


def test_response_started_once_and_missing_ids_use_output_index() -> None:
    events = decode_stream(
        _sse(
            CREATED,
            {"type": "response.queued", "response": {"id": "other"}},
            {"type": "response.in_progress", "response": {"id": "other"}},
            {
                "type": "response.output_text.delta",
                "output_index": 3,
                "content_index": 0,
                "delta": "x",
            },
            {
                "type": "response.output_text.done",
                "output_index": 3,
                "content_index": 0,
                "text": "x",
            },
            COMPLETED,
        ),
    )
    assert events == [
        STARTED,
        TextStart(part_id="output_3/text/0", provider_metadata={"item_id": "output_3"}),
        TextDelta(part_id="output_3/text/0", text="x"),
        TextEnd(part_id="output_3/text/0", provider_metadata={"item_id": "output_3"}),
        Finish(reason="stop", raw_reason="completed"),
    ]


def test_incomplete_by_content_filter_is_a_finish() -> None:
    events = decode_stream(
        _sse(
            CREATED,
            {
                "type": "response.incomplete",
                "response": {
                    "status": "incomplete",
                    "incomplete_details": {"reason": "content_filter"},
                    "usage": {"input_tokens": 5, "output_tokens": 2},
                },
            },
        )
    )
    assert events == [
        STARTED,
        Usage(input_tokens=5, output_tokens=2),
        Finish(reason="content_filter", raw_reason="content_filter"),
    ]


def test_incomplete_without_a_reason() -> None:
    events = decode_stream(_sse(CREATED, {"type": "response.incomplete", "response": {}}))
    assert events == [STARTED, Finish(reason="other", raw_reason="incomplete")]


def _body(**fields: Any) -> bytes:
    return json.dumps({"id": "resp_b", "model": "gpt-5.5", "output": [], **fields}).encode()


def test_body_statuses() -> None:
    started = ResponseStarted(response_id="resp_b", model="gpt-5.5")
    assert decode_body(_body()) == [started, Finish(reason="stop", raw_reason="completed")]
    assert decode_body(_body(status="cancelled")) == [
        started,
        Finish(reason="other", raw_reason="cancelled"),
    ]
    events = decode_body(_body(status="in_progress"))
    assert events[0] == started
    last = events[-1]
    assert isinstance(last, StreamError)
    assert (last.code, last.retryable, last.provider_error_type) == (
        "PROVIDER_INCOMPLETE",
        False,
        "in_progress",
    )
    assert len(events) == 2


def test_usage_fields_not_reported_stay_none() -> None:
    events = decode_body(
        _body(
            status="completed",
            usage={"input_tokens": 7, "output_tokens": 3, "output_tokens_details": {}},
        )
    )
    assert Usage(input_tokens=7, output_tokens=3) in events
    no_usage = decode_body(_body(status="completed", usage=None))
    assert not any(isinstance(event, Usage) for event in no_usage)


def test_non_mapping_garbage_is_ignored_not_fatal() -> None:
    events: list[StreamEvent] = decode_stream(
        _sse(
            CREATED,
            {"type": "response.output_item.added", "item": "nope"},
            {"type": "response.output_item.done", "item": None},
            {"type": "response.output_text.delta", "item_id": "m", "delta": 5},
            {"type": "response.completed", "response": "?"},
        )
    )
    assert events == [STARTED, Finish(reason="stop", raw_reason="completed")]


def test_interleaved_deltas_go_to_their_own_parts() -> None:
    def text(item: str, index: int, delta: str) -> dict[str, Any]:
        return {
            "type": "response.output_text.delta",
            "item_id": item,
            "content_index": index,
            "delta": delta,
        }

    def summary(item: str, index: int, delta: str) -> dict[str, Any]:
        return {
            "type": "response.reasoning_summary_text.delta",
            "item_id": item,
            "summary_index": index,
            "delta": delta,
        }

    events = decode_stream(
        _sse(
            CREATED,
            summary("rs_1", 0, "a"),
            summary("rs_1", 1, "b"),
            summary("rs_1", 0, "c"),
            summary("rs_2", 0, "d"),
            text("msg_1", 0, "x"),
            text("msg_1", 1, "y"),
            text("msg_2", 0, "z"),
            text("msg_1", 0, "w"),
            COMPLETED,
        )
    )
    response = accumulate(events)
    assert [(part.text, part.provider_metadata) for part in response.reasoning_parts] == [
        ("ac", {"item_id": "rs_1", "summary_index": 0}),
        ("b", {"item_id": "rs_1", "summary_index": 1}),
        ("d", {"item_id": "rs_2", "summary_index": 0}),
    ]
    assert [meta["item_id"] for meta in response.text_metadata] == ["msg_1", "msg_1", "msg_2"]
    assert response.text == "xwyz"


def test_a_stream_of_only_the_final_response_is_decoded_from_its_output() -> None:
    response = json.loads(fixture("summary_reasoning.json"))
    events = decode_stream(
        _sse({"type": "response.completed", "sequence_number": 0, "response": response})
    )
    assert events == decode_body(fixture("summary_reasoning.json"))
    assert len(events) == 14


def test_final_output_adds_nothing_that_already_streamed() -> None:
    # Every recorded stream repeats its items in response.completed; none is emitted twice.
    events = decode_stream(fixture("tool_call.sse"))
    starts = [
        event for event in events if isinstance(event, ToolCallStart | ReasoningStart | TextStart)
    ]
    assert len(starts) == len({event.part_id for event in starts}) == 4
