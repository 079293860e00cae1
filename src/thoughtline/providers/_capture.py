"""Reading response bodies within their caps, and the redacted record of a call."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Final

import httpx2

from thoughtline.providers._attempt import CallClock
from thoughtline.providers.base import WireRequest
from thoughtline.providers.exchange import Attempt, Exchange, ExchangeTimings
from thoughtline.providers.redaction import Redactor
from thoughtline.providers.transport import DIRECT_BODY, DirectBody

MAX_ERROR_BODY_BYTES: Final = 1_000_000
"""An HTTP error body is read up to this size; the rest is not read."""
MAX_BODY_BYTES: Final = 64 * 1024 * 1024
"""Cap on a whole non-streamed response body, and on the bytes of a stream kept for the
exchange (capture stops there; decoding goes on)."""


def iter_body(response: httpx2.Response) -> AsyncIterator[bytes]:
    """The response body as it arrives. Without a content encoding the raw chunks are
    the body, and reading them directly skips httpx2's decoding layers on the hot path;
    from the default transport they are read straight from its connection (httpx2's
    raw iterator adds two generator layers per chunk). Closing the response stays the
    caller's, as always."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding == "identity" and not response.is_stream_consumed:
        direct = response.extensions.get(DIRECT_BODY)
        if isinstance(direct, DirectBody):
            response.is_stream_consumed = True  # httpx2's readers must not read it again
            return direct.chunks()
        return response.aiter_raw()
    return response.aiter_bytes()  # decodes gzip & co; also serves already-read bodies


async def read_bounded(response: httpx2.Response) -> bytes:
    """An error body, up to :data:`MAX_ERROR_BODY_BYTES`."""
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        parts.append(chunk)
        size += len(chunk)
        if size >= MAX_ERROR_BODY_BYTES:
            break
    return b"".join(parts)[:MAX_ERROR_BODY_BYTES]


def build_exchange(
    *,
    redactor: Redactor,
    endpoint_name: str,
    wire_api: str,
    wire: WireRequest,
    headers: dict[str, str],
    request_body: bytes,
    streamed: bool,
    capability: dict[str, Any],
    capture_body: bool,
    clock: CallClock,
    attempts: list[Attempt],
    status: int | None,
    response_headers: dict[str, str],
    body_chunks: list[bytes],
    body_truncated: bool = False,
    body_redacted: bool = False,
) -> Exchange:
    """What the call sent and received, every credential redacted. The response body is
    kept when ``capture_body`` is set, and always for an HTTP error. ``body_redacted``
    says the chunks were redacted as they arrived (a captured stream, see
    :class:`~thoughtline.providers._body_redaction.BodyRedactor`); other bodies (whole bodies,
    error bodies) are redacted here, in one pass."""
    body = (
        b"".join(body_chunks) if (capture_body or (status is not None and status >= 400)) else None
    )
    if body is not None and not body_redacted:
        body = redactor.bytes(body)
    return Exchange(
        endpoint=endpoint_name,
        wire_api=wire_api,
        method=wire.method,
        url=redactor.url(wire.url),
        request_headers=redactor.headers(headers),
        _body=[request_body, redactor.text],
        status=status,
        response_headers=redactor.headers(response_headers),
        response_body=body,
        response_body_truncated=body_truncated and body is not None,
        streamed=streamed,
        timings=ExchangeTimings(
            started_at=clock.started_at,
            first_byte_ms=clock.first_byte_ms,
            first_reasoning_ms=clock.first_reasoning_ms,
            first_text_ms=clock.first_text_ms,
            total_ms=clock.ms(),
        ),
        attempts=tuple(attempts),
        capability=capability,
    )
