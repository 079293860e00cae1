"""The ``openai-responses`` wire API: ``POST {base_url}/responses`` (OpenAI and
compatible servers such as gpt-oss deployments).

Reasoning comes back as ``reasoning`` output items: summaries (``kind="summary"``),
raw ``reasoning_text`` on open-weight servers (``kind="raw"``) and the opaque
``encrypted_content`` carrier (``kind="encrypted"``), plus a reasoning token count.
``response.completed``/``incomplete``/``failed`` or ``error`` end a stream (there is no
``[DONE]`` sentinel on this API). :data:`WIRE` is the unit the registry hands out.
"""

from __future__ import annotations

from collections.abc import Mapping

from thoughtline.errors import ProviderError
from thoughtline.model.events import StreamEvent
from thoughtline.model.requests import ModelRequest
from thoughtline.providers.base import CallContext
from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.openai_responses._errors import parse_http_error
from thoughtline.providers.openai_responses._request import build_wire_request
from thoughtline.providers.openai_responses._response import decode_response_body
from thoughtline.providers.openai_responses._scrub import ResponsesScrubber
from thoughtline.providers.openai_responses._stream import ResponsesTranslator
from thoughtline.providers.wire import EarlierReasoning, EchoedReasoning, Wire

__all__ = ["WIRE", "ResponsesTranslator"]


def _errors(
    status: int, headers: Mapping[str, str], body: bytes, context: CallContext | None
) -> ProviderError:
    endpoint = context.endpoint if context is not None else None
    return parse_http_error(status, headers, body, endpoint=endpoint)


def _decode(body: bytes, request: ModelRequest, context: CallContext) -> list[StreamEvent]:
    return decode_response_body(body)


def _earlier_reasoning(endpoint: Endpoint, capability: ModelCapability) -> EarlierReasoning:
    """Reasoning items go back with their ``encrypted_content`` in every later turn
    (``store: false`` keeps nothing server-side to point at)."""
    return "always"


WIRE = Wire(
    wire_api="openai-responses",
    auth="bearer",
    build=build_wire_request,
    translator=lambda request, context: ResponsesTranslator(),
    decode=_decode,
    errors=_errors,
    scrubber=lambda endpoint: ResponsesScrubber(),
    echoed=EchoedReasoning(
        turns="input",
        blocks=frozenset({"reasoning"}),
        fields=frozenset({"encrypted_content"}),
    ),
    earlier=_earlier_reasoning,
)
