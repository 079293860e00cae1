"""The ``gemini`` wire API: Google Gemini ``generateContent`` / ``streamGenerateContent``."""

from __future__ import annotations

from collections.abc import Mapping

from thoughtline.errors import ProviderError
from thoughtline.events import StreamEvent
from thoughtline.providers.base import (
    CallContext,
    SSEStreamDecoder,
    StreamDecoder,
    WireApi,
    WireRequest,
)
from thoughtline.providers.gemini._errors import parse_gemini_error
from thoughtline.providers.gemini._request import build_gemini_request
from thoughtline.providers.gemini._response import decode_gemini_body
from thoughtline.providers.gemini._stream import GeminiTranslator
from thoughtline.requests import ModelRequest

__all__ = ["GeminiAdapter", "GeminiTranslator"]


class GeminiAdapter:
    """Speaks the Gemini REST API (``v1beta``), streaming over SSE (``alt=sse``)."""

    wire_api: WireApi = "gemini"

    def build_request(self, request: ModelRequest, context: CallContext) -> WireRequest:
        """URL, camelCase body and warnings; the transport adds ``x-goog-api-key``."""
        return build_gemini_request(request, context)

    def new_decoder(self, request: ModelRequest, context: CallContext) -> StreamDecoder:
        """A decoder for one SSE stream; a chunk with ``finishReason`` ends it."""
        return SSEStreamDecoder(GeminiTranslator())

    def decode_body(
        self, body: bytes, request: ModelRequest, context: CallContext
    ) -> list[StreamEvent]:
        """Events for a whole non-streaming body (same shape as the stream's)."""
        return decode_gemini_body(body)

    def parse_error(
        self,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        context: CallContext | None = None,
    ) -> ProviderError:
        """A google.rpc status error body → ProviderError (honours ``RetryInfo``)."""
        return parse_gemini_error(
            status, headers, body, endpoint=context.endpoint if context is not None else None
        )
