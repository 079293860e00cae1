"""The ``openai-responses`` wire API: ``POST {base_url}/responses`` (OpenAI and
compatible servers such as gpt-oss deployments).

Reasoning comes back as ``reasoning`` output items: summaries (``kind="summary"``),
raw ``reasoning_text`` on open-weight servers (``kind="raw"``) and the opaque
``encrypted_content`` carrier (``kind="encrypted"``), plus a reasoning token count.
"""

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
from thoughtline.providers.openai_responses._errors import parse_http_error
from thoughtline.providers.openai_responses._request import build_wire_request
from thoughtline.providers.openai_responses._response import decode_response_body
from thoughtline.providers.openai_responses._stream import ResponsesTranslator
from thoughtline.requests import ModelRequest

__all__ = ["OpenAIResponsesAdapter", "ResponsesTranslator"]


class OpenAIResponsesAdapter:
    """Sans-IO adapter for the OpenAI Responses API (see the module docstring)."""

    wire_api: WireApi = "openai-responses"

    def build_request(self, request: ModelRequest, context: CallContext) -> WireRequest:
        """The ``/responses`` request: body, protocol headers and shaping warnings."""
        return build_wire_request(request, context)

    def new_decoder(self, request: ModelRequest, context: CallContext) -> StreamDecoder:
        """An SSE decoder; ``response.completed``/``incomplete``/``failed`` or ``error``
        end the stream (there is no ``[DONE]`` sentinel on this API)."""
        return SSEStreamDecoder(ResponsesTranslator())

    def decode_body(
        self, body: bytes, request: ModelRequest, context: CallContext
    ) -> list[StreamEvent]:
        """A non-streaming body, as the same events the stream would give."""
        return decode_response_body(body)

    def parse_error(
        self,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        context: CallContext | None = None,
    ) -> ProviderError:
        """An HTTP error response → :class:`ProviderError` with a stable code."""
        return parse_http_error(
            status, headers, body, endpoint=context.endpoint if context is not None else None
        )
