"""Sans-IO framing: SSE and NDJSON from arbitrary byte splits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thoughtline.wire.frames import FramingError, NDJSONDecoder, SSEDecoder, SSEFrame

STREAM = (
    b": OPENROUTER PROCESSING\n\n"
    b'event: message_start\ndata: {"a": "\xc3\xa9\xe2\x86\x92\xe6\x97\xa5\xf0\x9f\x99\x82"}\n\n'
    b"event: ping\ndata: {}\r\n\r\n"
    b"data: line one\ndata: line two\nid: 7\n\n"
    b"data: [DONE]\n\n"
)
EXPECTED = [
    SSEFrame(event="message_start", data='{"a": "é→日🙂"}'),
    SSEFrame(event="ping", data="{}"),
    SSEFrame(event="", data="line one\nline two", id="7"),
    SSEFrame(event="", data="[DONE]"),
]


def decode(chunks: list[bytes]) -> list[SSEFrame]:
    decoder = SSEDecoder()
    frames = [frame for chunk in chunks for frame in decoder.feed(chunk)]
    return frames + decoder.flush()


def test_sse_whole_stream() -> None:
    assert decode([STREAM]) == EXPECTED


def test_sse_byte_by_byte_including_inside_utf8() -> None:
    assert decode([STREAM[i : i + 1] for i in range(len(STREAM))]) == EXPECTED


@settings(max_examples=200)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_sse_any_split(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    assert decode(pieces) == EXPECTED


def test_sse_unterminated_last_frame_is_flushed() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"x": 1}') == []
    assert decoder.pending_bytes == len(b'data: {"x": 1}')
    assert decoder.flush() == [SSEFrame(event="", data='{"x": 1}')]


def test_sse_comment_only_frames_produce_nothing() -> None:
    assert decode([b": keep-alive\n\n: another\n\n"]) == []


def test_sse_invalid_utf8_is_a_framing_error() -> None:
    with pytest.raises(FramingError):
        SSEDecoder().feed(b"data: \xff\xfe\n\n")


def test_ndjson_lines_any_split() -> None:
    data = '{"a":"é"}\n\n{"b":2}\r\n{"c":3}'.encode()
    for cut in range(len(data) + 1):
        decoder = NDJSONDecoder()
        lines = decoder.feed(data[:cut]) + decoder.feed(data[cut:]) + decoder.flush()
        assert lines == ['{"a":"é"}', '{"b":2}', '{"c":3}']


def test_sse_linear_in_many_small_chunks() -> None:
    # A frame that arrives one byte at a time must not be rescanned from its start.
    payload = b"data: " + b"x" * 200_000 + b"\n\n"
    decoder = SSEDecoder()
    frames = []
    for index in range(0, len(payload), 7):
        frames += decoder.feed(payload[index : index + 7])
    assert len(frames) == 1 and len(frames[0].data) == 200_000
