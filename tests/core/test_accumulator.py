"""The one accumulator: order, kinds, metadata, partial parts, usage merging."""

from __future__ import annotations

from thoughtline.accumulator import ReasoningPart, ToolCall, accumulate
from thoughtline.events import (
    Error,
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ResponseStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)


def test_interleaved_parts_keep_order_kind_and_metadata() -> None:
    response = accumulate(
        [
            ResponseStarted(response_id="msg_1", model="m"),
            ReasoningStart(part_id="r0", kind="summary"),
            ReasoningDelta(part_id="r0", text="Let "),
            ReasoningDelta(part_id="r0", text="me"),
            ReasoningEnd(part_id="r0", kind="summary", provider_metadata={"signature": "sig"}),
            ReasoningStart(part_id="r1", kind="summary"),
            ReasoningEnd(part_id="r1", kind="encrypted", provider_metadata={"signature": "s2"}),
            TextStart(part_id="t2"),
            TextDelta(part_id="t2", text="Answer"),
            TextEnd(part_id="t2"),
            ToolCallStart(part_id="c3", tool_call_id="call_1", name="lookup"),
            ToolCallDelta(part_id="c3", arguments_delta='{"q":'),
            ToolCallDelta(part_id="c3", arguments_delta='"x"}'),
            ToolCallEnd(part_id="c3"),
            Usage(input_tokens=10, output_tokens=1),
            Usage(output_tokens=20, reasoning_tokens=15),
            Finish(reason="tool_calls", raw_reason="tool_use"),
        ]
    )
    assert response.text == "Answer"
    assert response.reasoning_parts == (
        ReasoningPart(kind="summary", text="Let me", provider_metadata={"signature": "sig"}),
        ReasoningPart(kind="encrypted", text="", provider_metadata={"signature": "s2"}),
    )
    assert response.tool_calls == (
        ToolCall(tool_call_id="call_1", name="lookup", arguments='{"q":"x"}'),
    )
    assert response.usage == Usage(input_tokens=10, output_tokens=20, reasoning_tokens=15)
    assert response.finish == Finish(reason="tool_calls", raw_reason="tool_use")
    assert response.reasoning_text == "Let me"
    assert (response.response_id, response.model) == ("msg_1", "m")


def test_parts_open_at_an_error_are_marked_incomplete() -> None:
    error = Error(code="PROVIDER_STREAM_INTERRUPTED", message="cut", retryable=True)
    response = accumulate(
        [
            ReasoningStart(part_id="r0", kind="raw"),
            ReasoningDelta(part_id="r0", text="half a thou"),
            error,
        ]
    )
    assert response.reasoning_parts == (
        ReasoningPart(kind="raw", text="half a thou", complete=False),
    )
    assert response.error == error
    assert response.usage == Usage()


def test_million_deltas_join_linearly() -> None:
    events = [ReasoningStart(part_id="r", kind="raw")]
    events += [ReasoningDelta(part_id="r", text="ab") for _ in range(1_000_000)]
    events.append(ReasoningEnd(part_id="r", kind="raw"))
    response = accumulate(events)
    assert len(response.reasoning_parts[0].text) == 2_000_000
