"""The ``gemini`` wire API: Google Gemini ``generateContent`` / ``streamGenerateContent``
(REST ``v1beta``, streaming over SSE with ``alt=sse``; a chunk with ``finishReason``
ends the stream); ``_count`` asks ``countTokens`` (the gateway's ``count_tokens``).
:data:`WIRE` is the unit the registry hands out; the transport adds the
``x-goog-api-key`` header.
"""

from __future__ import annotations

from collections.abc import Mapping

from thoughtline.errors import ProviderError
from thoughtline.model.events import StreamEvent
from thoughtline.model.requests import ModelRequest
from thoughtline.providers.base import CallContext
from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.gemini._count import count_request, read_count
from thoughtline.providers.gemini._errors import parse_gemini_error
from thoughtline.providers.gemini._request import build_gemini_request
from thoughtline.providers.gemini._response import decode_gemini_body
from thoughtline.providers.gemini._scrub import GeminiScrubber
from thoughtline.providers.gemini._stream import GeminiTranslator
from thoughtline.providers.wire import EarlierReasoning, EchoedReasoning, TokenCount, Wire

__all__ = ["WIRE", "GeminiTranslator"]


def _errors(
    status: int, headers: Mapping[str, str], body: bytes, context: CallContext | None
) -> ProviderError:
    """A google.rpc status error body → ProviderError (honours ``RetryInfo``)."""
    endpoint = context.endpoint if context is not None else None
    return parse_gemini_error(status, headers, body, endpoint=endpoint)


def _decode(body: bytes, request: ModelRequest, context: CallContext) -> list[StreamEvent]:
    return decode_gemini_body(body)


def _earlier_reasoning(endpoint: Endpoint, capability: ModelCapability) -> EarlierReasoning:
    """Thought signatures go back on the parts they came on, in every later turn (the
    API checks only the current turn's, so a missing one is allowed)."""
    return "always"


WIRE = Wire(
    wire_api="gemini",
    auth="x-goog-api-key",
    build=build_gemini_request,
    translator=lambda request, context: GeminiTranslator(),
    decode=_decode,
    errors=_errors,
    scrubber=lambda endpoint: GeminiScrubber(),
    echoed=EchoedReasoning(
        turns="contents",
        flags=frozenset({"thought"}),
        fields=frozenset({"thoughtSignature", "thought_signature"}),
    ),
    earlier=_earlier_reasoning,
    capability_endpoint="gemini",
    count=TokenCount(request=count_request, read=read_count),
)
