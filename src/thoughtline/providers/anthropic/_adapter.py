"""The ``anthropic-messages`` wire adapter: ``POST {base_url}/v1/messages``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from thoughtline.errors import ProviderError
from thoughtline.events import ReasoningKind, StreamEvent
from thoughtline.providers.anthropic._errors import parse_error
from thoughtline.providers.anthropic._request import shape_body
from thoughtline.providers.anthropic._response import decode_body
from thoughtline.providers.anthropic._stream import AnthropicStreamTranslator
from thoughtline.providers.base import (
    CallContext,
    SSEStreamDecoder,
    StreamDecoder,
    WireApi,
    WireRequest,
)
from thoughtline.requests import ModelRequest

MESSAGES_PATH: Final = "/v1/messages"
ANTHROPIC_VERSION: Final = "2023-06-01"


class AnthropicMessagesAdapter:
    """Speaks the Anthropic Messages API (streaming SSE and whole JSON bodies).

    Sans-IO: it shapes requests and decodes bytes; the transport sends them and adds
    the ``x-api-key`` header.
    """

    wire_api: WireApi = "anthropic-messages"

    def build_request(self, request: ModelRequest, context: CallContext) -> WireRequest:
        """The request for ``request``, shaped by the model's capability data."""
        shaped = shape_body(request, context.capability, provider=context.endpoint.name)
        return WireRequest(
            url=context.endpoint.base_url + MESSAGES_PATH,
            body=shaped.body,
            headers={"anthropic-version": ANTHROPIC_VERSION, "content-type": "application/json"},
            warnings=shaped.warnings,
        )

    def new_decoder(self, request: ModelRequest, context: CallContext) -> StreamDecoder:
        """A decoder for one ``"stream": true`` response (ends at ``message_stop``)."""
        return SSEStreamDecoder(AnthropicStreamTranslator(thinking_kind=_thinking_kind(context)))

    def decode_body(
        self, body: bytes, request: ModelRequest, context: CallContext
    ) -> list[StreamEvent]:
        """Events for a non-streaming body: the same sequence the stream would give."""
        return decode_body(body, thinking_kind=_thinking_kind(context))

    def parse_error(
        self,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        context: CallContext | None = None,
    ) -> ProviderError:
        """The error for an HTTP error response (a rejected key names the endpoint's
        key variable)."""
        return parse_error(
            status, headers, body, endpoint=context.endpoint if context is not None else None
        )


def _thinking_kind(context: CallContext) -> ReasoningKind:
    return "raw" if context.capability.returns_raw_text else "summary"
