"""The one accumulator: order, kinds, metadata, partial parts, usage merging."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

import pytest

from thoughtline.model.accumulator import ReasoningPart, ToolCall, accumulate
from thoughtline.model.events import (
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ResponseStarted,
    StreamError,
    StreamEvent,
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
    error = StreamError(code="PROVIDER_STREAM_INTERRUPTED", message="cut", retryable=True)
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


def _reasoning_stream(deltas: int) -> Iterator[StreamEvent]:
    """One reasoning part of ``deltas`` two-character deltas, each its own string object
    (as a decoder produces them), made one at a time so only the accumulator holds text."""
    yield ReasoningStart(part_id="r", kind="raw")
    for index in range(deltas):
        yield ReasoningDelta(part_id="r", text=f"{index % 100:02d}")
    yield ReasoningEnd(part_id="r", kind="raw")


def _peak_bytes_while_accumulating(deltas: int) -> tuple[int, str]:
    tracemalloc.start()
    try:
        response = accumulate(_reasoning_stream(deltas))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, response.reasoning_parts[0].text


@pytest.mark.slow
def test_million_deltas_join_linearly() -> None:
    """Ten times the deltas cost ten times the memory, and the peak stays a small
    multiple of the text itself. Keeping each delta as its own string would cost ~25
    bytes per character; a join that copies the text per delta grows with its square."""
    small_peak, small_text = _peak_bytes_while_accumulating(100_000)
    large_peak, large_text = _peak_bytes_while_accumulating(1_000_000)

    assert small_text == "".join(f"{index % 100:02d}" for index in range(100_000))
    assert large_text == "".join(f"{index % 100:02d}" for index in range(1_000_000))
    assert 8 <= large_peak / small_peak <= 12
    assert large_peak <= 4 * len(large_text)
