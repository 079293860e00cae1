"""The ``ollama`` wire API: Ollama's native ``POST /api/chat`` (NDJSON streaming)."""

from __future__ import annotations

from collections.abc import Mapping

from thoughtline.errors import ProviderError
from thoughtline.events import StreamEvent
from thoughtline.providers.base import (
    CallContext,
    NDJSONStreamDecoder,
    StreamDecoder,
    WireApi,
    WireRequest,
)
from thoughtline.providers.ollama._errors import parse_ollama_error
from thoughtline.providers.ollama._request import build_ollama_request
from thoughtline.providers.ollama._response import decode_ollama_body
from thoughtline.providers.ollama._stream import OllamaTranslator
from thoughtline.requests import ModelRequest

__all__ = ["OllamaAdapter", "OllamaTranslator"]


class OllamaAdapter:
    """Speaks Ollama's native chat API; thinking arrives raw in ``message.thinking``."""

    wire_api: WireApi = "ollama"

    def build_request(self, request: ModelRequest, context: CallContext) -> WireRequest:
        """URL, body (``think`` only when reasoning is requested) and warnings."""
        return build_ollama_request(request, context)

    def new_decoder(self, request: ModelRequest, context: CallContext) -> StreamDecoder:
        """A decoder for one NDJSON stream; the ``done: true`` line ends it."""
        return NDJSONStreamDecoder(OllamaTranslator(context.endpoint.reasoning_field))

    def decode_body(
        self, body: bytes, request: ModelRequest, context: CallContext
    ) -> list[StreamEvent]:
        """Events for a whole non-streaming body (same shape as the stream's)."""
        return decode_ollama_body(body, context.endpoint.reasoning_field)

    def parse_error(
        self,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        context: CallContext | None = None,
    ) -> ProviderError:
        """``{"error": "..."}`` with its status → ProviderError."""
        return parse_ollama_error(
            status, headers, body, endpoint=context.endpoint if context is not None else None
        )
