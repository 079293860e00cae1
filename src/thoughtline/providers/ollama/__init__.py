"""The ``ollama`` wire API: Ollama's native ``POST /api/chat`` (NDJSON streaming; the
``done: true`` line ends a stream). Thinking arrives raw in ``message.thinking``, or as
a ``<think>`` block leading the answer. :data:`WIRE` is the unit the registry hands out.
"""

from __future__ import annotations

from collections.abc import Mapping

from thoughtline.errors import ProviderError
from thoughtline.model.events import StreamEvent
from thoughtline.model.requests import ModelRequest
from thoughtline.providers.base import CallContext
from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.hidden_requests import HiddenAsk
from thoughtline.providers.ollama._errors import parse_ollama_error
from thoughtline.providers.ollama._request import build_ollama_request
from thoughtline.providers.ollama._response import decode_ollama_body
from thoughtline.providers.ollama._scrub import OllamaScrubber
from thoughtline.providers.ollama._stream import OllamaTranslator
from thoughtline.providers.wire import EarlierReasoning, EchoedReasoning, Wire

__all__ = ["WIRE", "OllamaTranslator"]


def _errors(
    status: int, headers: Mapping[str, str], body: bytes, context: CallContext | None
) -> ProviderError:
    """``{"error": "..."}`` with its status → ProviderError."""
    endpoint = context.endpoint if context is not None else None
    return parse_ollama_error(status, headers, body, endpoint=endpoint)


def _decode(body: bytes, request: ModelRequest, context: CallContext) -> list[StreamEvent]:
    return decode_ollama_body(body, context.endpoint.reasoning_field)


def _earlier_reasoning(endpoint: Endpoint, capability: ModelCapability) -> EarlierReasoning:
    """Earlier turns' reasoning never goes back: the chat templates (Qwen3, DeepSeek-R1
    and the like) keep only the final answer of earlier turns."""
    return "never"


def _hidden_ask(
    endpoint: Endpoint, capability: ModelCapability, tools: bool, effort_sent: bool
) -> HiddenAsk | None:
    """``think: false``, unless no request turns the model's reasoning off or an effort
    was asked for (effort is a separate axis: the caller asked the model to reason)."""
    if capability.always_reasons:
        return None
    if effort_sent:
        return HiddenAsk(note="nothing (an effort was asked for)")
    return HiddenAsk(fields={"think": False}, note="think: false")


WIRE = Wire(
    wire_api="ollama",
    # Ollama itself takes no key; a proxy or hosted Ollama in front of it takes a bearer
    # token. Without a key nothing is sent either way.
    auth="bearer",
    build=build_ollama_request,
    translator=lambda request, context: OllamaTranslator(context.endpoint.reasoning_field),
    decode=_decode,
    errors=_errors,
    scrubber=OllamaScrubber,
    echoed=EchoedReasoning(turns="messages", fields=frozenset({"thinking"})),
    framing="ndjson",
    earlier=_earlier_reasoning,
    hidden=_hidden_ask,
    capability_endpoint="ollama",
)
