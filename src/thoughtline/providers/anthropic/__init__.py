"""The Anthropic Messages wire API (``anthropic-messages``): ``POST {base_url}/v1/messages``.

Split by verb: ``_request`` shapes bodies (thinking per model family), ``_history`` the
``messages`` array, ``_stream`` translates SSE payloads, ``_response`` replays whole
bodies through the same translator, ``_errors`` maps error bodies and in-stream errors
to stable codes, ``_scrub`` blanks reasoning in raw bodies, ``_models`` reads the
Models API (``thoughtline providers --refresh``), ``_count`` asks the count API (the
gateway's ``count_tokens``). :data:`WIRE` is the unit the
registry hands out; the transport adds the ``x-api-key`` header.
"""

from __future__ import annotations

from collections.abc import Mapping

from thoughtline.errors import ProviderError
from thoughtline.model.events import ReasoningKind, StreamEvent
from thoughtline.model.requests import ModelRequest
from thoughtline.providers.anthropic._count import count_request, read_count
from thoughtline.providers.anthropic._errors import parse_error
from thoughtline.providers.anthropic._models import list_models
from thoughtline.providers.anthropic._request import (
    ANTHROPIC_VERSION,
    BUDGET_FOR_EFFORT,
    DEFAULT_MAX_TOKENS,
    MESSAGES_PATH,
    build_request,
    output_bounds,
)
from thoughtline.providers.anthropic._response import decode_body
from thoughtline.providers.anthropic._scrub import AnthropicScrubber
from thoughtline.providers.anthropic._stream import (
    FINISH_FOR_STOP_REASON,
    AnthropicStreamTranslator,
)
from thoughtline.providers.base import CallContext
from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.wire import EarlierReasoning, EchoedReasoning, TokenCount, Wire

__all__ = [
    "ANTHROPIC_VERSION",
    "BUDGET_FOR_EFFORT",
    "DEFAULT_MAX_TOKENS",
    "FINISH_FOR_STOP_REASON",
    "MESSAGES_PATH",
    "WIRE",
]


def _thinking_kind(context: CallContext) -> ReasoningKind:
    return "raw" if context.capability.returns_raw_text else "summary"


def _translator(request: ModelRequest, context: CallContext) -> AnthropicStreamTranslator:
    return AnthropicStreamTranslator(thinking_kind=_thinking_kind(context))


def _decode(body: bytes, request: ModelRequest, context: CallContext) -> list[StreamEvent]:
    return decode_body(body, thinking_kind=_thinking_kind(context))


def _errors(
    status: int, headers: Mapping[str, str], body: bytes, context: CallContext | None
) -> ProviderError:
    # A rejected key names the endpoint's key variable.
    endpoint = context.endpoint if context is not None else None
    return parse_error(status, headers, body, endpoint=endpoint)


def _earlier_reasoning(endpoint: Endpoint, capability: ModelCapability) -> EarlierReasoning:
    """On models with preserved thinking the blocks stay in context, each bound to
    everything before it, so they go back only while the prefix is unchanged (same
    system, tools, model and earlier turns); the other models' API removes earlier
    turns' blocks from context anyway, so none go back."""
    return "prefix" if capability.preserved_thinking else "never"


WIRE = Wire(
    wire_api="anthropic-messages",
    auth="x-api-key",
    build=build_request,
    translator=_translator,
    decode=_decode,
    errors=_errors,
    scrubber=lambda endpoint: AnthropicScrubber(),
    echoed=EchoedReasoning(
        turns="messages",
        blocks=frozenset({"thinking", "redacted_thinking"}),
        fields=frozenset({"signature"}),
    ),
    earlier=_earlier_reasoning,
    output=output_bounds,
    list_models=list_models,
    capability_endpoint="anthropic",
    count=TokenCount(request=count_request, read=read_count),
)
"""Anthropic Messages: streaming SSE (ends at ``message_stop``) and whole JSON bodies."""
