"""A captured response body is redacted as it arrives (BodyRedactor), chunk by chunk:
the same bytes as redacting the whole body, whatever the chunking, with bounded memory;
and with capture off the transport keeps and scans nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import anthropic_stream
from thoughtline.model.requests import ModelRequest, ReasoningRequest
from thoughtline.providers import _body_redaction, redaction
from thoughtline.providers._body_redaction import (
    BODY_BLOCK_BYTES,
    BODY_CARRY_LIMIT,
    PIECE_MIN_BYTES,
    BodyRedactor,
)
from thoughtline.providers.client import ProviderClient
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.providers.redaction import REDACTED, Redactor
from thoughtline.testing.transcript import SimReasoning, Transcript

CANARY_KEY = "sk-ant-canary-0123456789abcdefXYZ"
MODEL = "claude-sonnet-4-6"
REQUEST = ModelRequest.simple(MODEL, "Echo my key", reasoning=ReasoningRequest(enabled=True))


def canary_stream() -> bytes:
    """An Anthropic stream whose reasoning and answer echo the loaded key."""
    transcript = Transcript(
        reasoning=(
            SimReasoning(kind="summary", text=f"The key is {CANARY_KEY}, é.", signature="sig"),
        ),
        answer=f"Your key: {CANARY_KEY}",
        chunk_chars=400,  # each echo whole within one delta, so the wire holds it whole
    )
    return anthropic_stream(transcript, MODEL)


class Chunks(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


def client_serving(chunks: list[bytes], *, capture_body: bool) -> ProviderClient:
    environ = {"ANTHROPIC_BASE_URL": "http://sim.test", "ANTHROPIC_API_KEY": CANARY_KEY}
    return ProviderClient(
        EndpointRegistry(environ=environ).resolve("anthropic"),
        http_client=httpx2.AsyncClient(
            transport=httpx2.MockTransport(
                lambda request: httpx2.Response(
                    200, headers={"content-type": "text/event-stream"}, stream=Chunks(chunks)
                )
            )
        ),
        capture_body=capture_body,
    )


async def test_a_key_cut_at_every_chunk_boundary_never_reaches_the_captured_body() -> None:
    data = canary_stream()
    key = CANARY_KEY.encode()
    assert data.count(key) == 2
    expected = data.replace(key, REDACTED.encode())
    first = data.index(key)
    # Every cut through the first echo, and its neighbourhood, as two chunks...
    splits = [[data[:cut], data[cut:]] for cut in range(first - 2, first + len(key) + 3)]
    # ...and the whole stream in small pieces of every size up to past the key's length.
    splits += [[data[i : i + size] for i in range(0, len(data), size)] for size in range(1, 40)]
    for chunks in splits:
        call = await client_serving(chunks, capture_body=True).complete(REQUEST)
        assert call.exchange is not None
        body = call.exchange.response_body
        assert body == expected, [len(chunk) for chunk in chunks][:4]
        assert key not in body
        assert CANARY_KEY not in str(call.exchange.to_dict())
        # Redaction is the exchange's business: the response itself is untouched.
        assert call.response.text == f"Your key: {CANARY_KEY}"


async def test_capture_off_keeps_nothing_and_scans_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_body_redactor(self: Redactor) -> BodyRedactor:
        raise AssertionError("capture is off: no body redactor may be made")

    monkeypatch.setattr(Redactor, "body", no_body_redactor)
    data = canary_stream()
    client = client_serving([data[i : i + 64] for i in range(0, len(data), 64)], capture_body=False)
    call = await client.complete(REQUEST)
    assert call.exchange is not None
    assert call.exchange.response_body is None
    assert call.exchange.to_dict()["response_body"] is None
    assert call.response.text == f"Your key: {CANARY_KEY}"


def test_the_library_default_captures_a_redacted_body() -> None:
    # The documented default: ProviderClient captures (redacted, as it streams); the
    # runtime passes capture_body=config.trace_provider_raw, off unless asked for.
    endpoint = EndpointRegistry(environ={"ANTHROPIC_API_KEY": CANARY_KEY}).resolve("anthropic")
    assert ProviderClient(endpoint).capture_body is True


# -- BodyRedactor against Redactor.bytes, for any chunking ------------------------------

SECRETS = ("tl-canary-value-42", "sk-ant-loaded-0123456789")
fragments = st.one_of(
    st.sampled_from(
        [
            *SECRETS,
            "sk-ant-api03-" + "A" * 20,
            "sk-proj-" + "b" * 18,
            "sk-" + "c" * 33,
            "AIza" + "d" * 35,
            "Bearer " + "t0k.en" * 4,
            "bearer xyz",
            "sk-",
            "AIza",
            "Bear",
            '"',
            "\n",
            " ",
            ",",
            "é",
            "日本",
        ]
    ),
    st.sampled_from(SECRETS).map(lambda secret: secret[: len(secret) // 2]),
    st.text(alphabet="abs-kAIz ", max_size=8),
)


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    pieces, start = [], 0
    for point in points:
        pieces.append(data[start:point])
        start = point
    pieces.append(data[start:])
    return pieces


def _stream(redactor: Redactor, chunks: list[bytes]) -> bytes:
    body = redactor.body()
    return b"".join([body.feed(chunk) for chunk in chunks]) + body.flush()


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(fragments, max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=100_000), max_size=20),
    block=st.sampled_from([1, 7, 64, BODY_BLOCK_BYTES]),
)
def test_streamed_body_equals_whole_body_redaction_for_any_split(
    parts: list[str], cuts: list[int], block: int
) -> None:
    redactor = Redactor(SECRETS)
    data = "".join(parts).encode()
    original = _body_redaction.BODY_BLOCK_BYTES
    _body_redaction.BODY_BLOCK_BYTES = block  # type: ignore[misc]  # small blocks: every path
    try:
        released = _stream(redactor, _split(data, cuts))
    finally:
        _body_redaction.BODY_BLOCK_BYTES = original  # type: ignore[misc]
    assert released == redactor.bytes(data) == redactor.text(data.decode()).encode()
    for secret in SECRETS:
        assert secret.encode() not in released


def test_invalid_utf8_passes_through_and_values_next_to_it_are_removed() -> None:
    redactor = Redactor(SECRETS)
    data = b"\xff\xfe" + SECRETS[0].encode() + b"\xc3"
    assert redactor.bytes(data) == b"\xff\xfe" + REDACTED.encode() + b"\xc3"
    assert _stream(redactor, [data[:5], data[5:]]) == redactor.bytes(data)


def test_a_long_run_of_key_bytes_is_released_with_bounded_memory() -> None:
    # A base64 blob far past the carry limit, in small chunks, with no byte that ends a
    # key shape: the redactor releases it as it goes instead of holding all of it.
    blob = b"QUJD" * (BODY_CARRY_LIMIT // 2)
    body = Redactor(SECRETS).body()
    released = []
    for i in range(0, len(blob), 1000):
        released.append(body.feed(blob[i : i + 1000]))
        assert body._carry_size <= BODY_CARRY_LIMIT + BODY_BLOCK_BYTES + 1000
    released.append(body.flush())
    assert b"".join(released) == blob


def test_a_key_shape_running_across_a_forced_cut_is_redacted_to_its_end() -> None:
    # A key shape longer than the carry limit: its whole run is redacted, the text after
    # it kept; the only case where the stream may redact more than the whole-body scan.
    key = b"sk-ant-" + b"K" * (3 * BODY_CARRY_LIMIT)
    data = b'{"k":"' + key + b'","next":"plain"}'
    chunks = [data[i : i + 4096] for i in range(0, len(data), 4096)]
    released = _stream(Redactor(), chunks)
    assert released == b'{"k":"' + REDACTED.encode() + b'","next":"plain"}'
    assert released == Redactor().bytes(data)


def test_a_bearer_token_after_a_long_run_keeps_its_bearer() -> None:
    data = b"x" * (BODY_CARRY_LIMIT + 50) + b" Bearer " + b"t" * 40 + b'"'
    chunks = [data[i : i + 333] for i in range(0, len(data), 333)]
    released = _stream(Redactor(), chunks)
    assert b"t" * 16 not in released
    assert released.endswith(b" Bearer " + REDACTED.encode() + b'"')


long_fragments = st.one_of(
    fragments,
    st.sampled_from(["x" * 400, "QUJD" * 90, "ab cd " * 60, "sk-ant-" + "K" * 350]),
    st.sampled_from(["Bearer " + "t" * 300, "AIza" + "z" * 35 + "q" * 300]),
)


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(long_fragments, max_size=20),
    cuts=st.lists(st.integers(min_value=0, max_value=100_000), max_size=30),
)
def test_past_the_carry_limit_no_credential_survives_any_split(
    parts: list[str], cuts: list[int]
) -> None:
    # A small carry limit sends long runs of key bytes through the forced cut, where the
    # stream may redact more than the whole-body scan, but never less.
    redactor = Redactor(SECRETS)
    data = "".join(parts).encode()
    saved = _body_redaction.BODY_CARRY_LIMIT, _body_redaction.BODY_BLOCK_BYTES
    _body_redaction.BODY_CARRY_LIMIT, _body_redaction.BODY_BLOCK_BYTES = 300, 50  # type: ignore[misc]
    try:
        released = _stream(redactor, _split(data, cuts))
    finally:
        _body_redaction.BODY_CARRY_LIMIT, _body_redaction.BODY_BLOCK_BYTES = saved  # type: ignore[misc]
    for secret in SECRETS:
        assert secret.encode() not in released
    assert redaction._KEY_SHAPES_BYTES.search(released) is None, released
    if len(data) <= 300:  # nothing could pass the limit: exactly the whole-body result
        assert released == redactor.bytes(data)


# -- pieces of a value cut across a stream's strings -----------------------------------

SPLIT_KEY = "sk-FAKESECRET-abcdef0123456789"


def _frames(*texts: str) -> bytes:
    return b"".join(
        b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"'
        + text.encode()
        + b'"}}\n\n'
        for text in texts
    )


def test_the_pieces_of_a_key_cut_across_two_frames_are_removed() -> None:
    body = _frames("Here it is: sk-FAKESECRET-a", "bcdef0123456789, done.")
    assert Redactor([SPLIT_KEY]).bytes(body) == body  # never whole in the bytes
    cleaned = Redactor([SPLIT_KEY]).split_pieces(body)
    assert cleaned == _frames(f"Here it is: {REDACTED}", f"{REDACTED}, done.")


def test_a_three_way_cut_removes_the_middle_string_whole() -> None:
    body = _frames("sk-FAKE", "SECRET-abc", "def0123456789")
    assert Redactor([SPLIT_KEY]).split_pieces(body) == _frames(REDACTED, REDACTED, REDACTED)


@pytest.mark.parametrize("offset", range(1, len(SPLIT_KEY)))
def test_no_piece_of_four_bytes_or_more_survives_a_cut_anywhere(offset: int) -> None:
    body = _frames("key " + SPLIT_KEY[:offset], SPLIT_KEY[offset:] + " end")
    cleaned = Redactor([SPLIT_KEY]).split_pieces(body)
    for start in range(len(SPLIT_KEY) - PIECE_MIN_BYTES + 1):
        assert SPLIT_KEY[start : start + PIECE_MIN_BYTES].encode() not in cleaned, offset
    assert b'"key ' in cleaned and b' end"' in cleaned  # the text around it stays


def test_strings_that_are_not_pieces_of_a_key_stay_byte_for_byte() -> None:
    # Runs of the key's own characters next to quotes, none a start, end or middle of it.
    body = _frames("sk-FAKE is an example", "SECRET", "the abcdef", "0123 then") + (
        b'{"id":"sk-other","usage":{"input_tokens":3}}'
    )
    assert Redactor([SPLIT_KEY]).split_pieces(body) == body.replace(
        b'"SECRET"', f'"{REDACTED}"'.encode()
    )
