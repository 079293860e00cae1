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


# -- bounded memory: a frame or line that never ends ---------------------------------


def feed_until_refused(decoder: SSEDecoder, chunk: bytes, times: int) -> FramingError | None:
    for _ in range(times):
        try:
            decoder.feed(chunk)
        except FramingError as exc:
            return exc
    return None


def test_sse_frame_without_line_end_past_the_cap_is_refused_and_dropped() -> None:
    decoder = SSEDecoder(max_frame_bytes=1024)
    assert decoder.feed(b"data: " + b"x" * 1000) == []
    with pytest.raises(FramingError, match="exceeds the limit of 1024 bytes"):
        decoder.feed(b"x" * 100)
    assert decoder.pending_bytes == 0  # what was held is let go
    with pytest.raises(FramingError):  # and nothing more is accepted
        decoder.feed(b'\n\ndata: {"ok": 1}\n\n')
    assert decoder.flush() == []


def test_sse_frame_of_many_lines_without_blank_line_is_capped() -> None:
    # Line ends but never the blank line that ends a frame: the frame is what grows.
    decoder = SSEDecoder(max_frame_bytes=4096)
    assert feed_until_refused(decoder, b"data: " + b"y" * 58 + b"\n", 1000) is not None
    assert decoder.pending_bytes == 0


def test_sse_whole_frame_over_the_cap_in_one_chunk_is_refused() -> None:
    small = b'data: {"a": 1}\n\n'
    big = b"data: " + b"z" * 5000 + b"\n\n"
    with pytest.raises(FramingError):
        SSEDecoder(max_frame_bytes=4096).feed(small + big)
    # Frames at the cap pass, in one chunk or in many.
    exact = b"data: " + b"z" * (4096 - 6) + b"\n\n"
    assert len(SSEDecoder(max_frame_bytes=4096).feed(small + exact + small)) == 3
    assert decode([exact[i : i + 100] for i in range(0, len(exact), 100)])[0].data == "z" * 4090


def test_sse_default_cap_is_16_mib_and_real_frames_pass() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: " + b"x" * (8 * 1024 * 1024)) == []
    frames = decoder.feed(b"\n\n")
    assert len(frames) == 1 and len(frames[0].data) == 8 * 1024 * 1024
    refused = feed_until_refused(decoder, b"x" * (1024 * 1024), 17)
    assert refused is not None and "16 MiB" in str(refused)


def test_ndjson_line_past_the_cap_is_refused_and_dropped() -> None:
    decoder = NDJSONDecoder(max_line_bytes=1024)
    assert decoder.feed(b'{"a": 1}\n{"b": "' + b"x" * 900) == ['{"a": 1}']
    with pytest.raises(FramingError, match="NDJSON line exceeds the limit of 1024 bytes"):
        decoder.feed(b"x" * 200)
    assert decoder.pending_bytes == 0
    with pytest.raises(FramingError):
        decoder.feed(b'"}\n')
    assert decoder.flush() == []
    with pytest.raises(FramingError):  # a complete line over the cap in one chunk
        NDJSONDecoder(max_line_bytes=1024).feed(b'{"a": "' + b"x" * 2000 + b'"}\n')


def test_stream_decoder_turns_an_endless_frame_into_one_malformed_error() -> None:
    from thoughtline.model.events import StreamError
    from thoughtline.providers.anthropic._stream import AnthropicStreamTranslator
    from thoughtline.providers.base import NDJSONStreamDecoder, SSEStreamDecoder
    from thoughtline.providers.ollama._stream import OllamaTranslator

    for decoder in (
        SSEStreamDecoder(AnthropicStreamTranslator(), max_frame_bytes=1000),
        NDJSONStreamDecoder(OllamaTranslator(), max_line_bytes=1000),
    ):
        events = [event for _ in range(5) for event in decoder.feed(b"q" * 400)]
        assert len(events) == 1 and isinstance(events[0], StreamError)
        assert events[0].code == "PROVIDER_MALFORMED_RESPONSE"
        assert "exceeds the limit of 1000 bytes" in events[0].message
        assert decoder.finished
        assert decoder.feed(b"\n\n") == [] and decoder.close() == []


class Recording:
    """A translator that hands back what it was given, as text, so a test sees which
    payload reached it under which event name."""

    finished = False

    def translate(self, event_name: str, payload: dict[str, object]) -> list[object]:
        from thoughtline.model.events import TextDelta

        return [TextDelta(part_id=event_name, text=str(sorted(payload.items())))]

    def finish(self) -> list[object]:
        return []


# Each frame read through the stream decoder's bytes path must give what reading it as
# text gives: the payload and event name, or the same error sentence.
FRAMES = [
    b'event: content_block_delta\ndata: {"t": "th\xc3\xa9 \xf0\x9f\x99\x82"}',
    b'data: {"t": 1}',
    b"event: ping\ndata: {}",
    b"event: ping\ndata: ",
    b'event: done\ndata: {"t": 1}\nid: 4',
    b'data: {"t":\ndata: 2}',
    b": comment\ndata: {}",
    b'event: \xff\ndata: {"t": 1}',
    b'event: content_block_delta\ndata: {"t": "\xff"}',
    b"event: content_block_delta\ndata: {not json",
    b"event: content_block_delta\ndata: [1, 2]",
    b"data: [DONE]",
    b"event: x\ndata: [DONE]",
]


def read_as_text(frame: bytes, sentinel: str | None) -> tuple[list[object], bool]:
    """The reference: ``frame`` decoded as text, then its data parsed; the events, and
    whether the stream is finished."""
    from thoughtline.providers.base import malformed_error
    from thoughtline.wire.frames import parse_frame
    from thoughtline.wire.jsonio import MalformedJSON, loads_object

    try:
        parsed = parse_frame(frame)
    except FramingError as exc:
        return [malformed_error(str(exc))], True
    if parsed is None or not parsed.data or parsed.data in {"[DONE]", sentinel}:
        return [], parsed is not None and parsed.data == sentinel
    try:
        payload = loads_object(parsed.data)
    except MalformedJSON as exc:
        return [malformed_error(str(exc))], True
    return Recording().translate(parsed.event, payload), False


@pytest.mark.parametrize("frame", FRAMES)
@pytest.mark.parametrize("sentinel", [None, "[DONE]"])
def test_stream_decoder_reads_each_frame_as_its_text_reads(
    frame: bytes, sentinel: str | None
) -> None:
    from thoughtline.providers.base import SSEStreamDecoder

    decoder = SSEStreamDecoder(Recording(), done_sentinel=sentinel)  # type: ignore[arg-type]
    got = decoder.feed(frame + b"\n\n")
    assert (got, decoder.finished) == read_as_text(frame, sentinel)


def test_a_stream_naming_endless_events_keeps_a_bounded_set_of_names() -> None:
    from thoughtline.wire import frames

    decoder = SSEDecoder()
    for index in range(2000):
        (raw,) = decoder.feed_raw(f"event: name{index}\ndata: {{}}\n\n".encode())
        assert frames.event_and_data(raw) == (f"name{index}", b"{}")
    assert len(frames._EVENT_NAMES) <= frames._MAX_EVENT_NAMES
