"""The ``openai-chat`` wire API: ``POST {base_url}/chat/completions``, with dialects.

One unit serves hosted OpenAI (``openai`` dialect: no reasoning text, only a token
count), OpenRouter (``openrouter``: ``reasoning`` + ``reasoning_details[]``) and
OpenAI-compatible servers that return raw reasoning (``raw-reasoning``: DeepSeek, vLLM,
llama.cpp, Ollama ``/v1``, user-defined endpoints; ``reasoning_content`` / ``reasoning``
fields or ``<think>`` tags inline in ``content``). The dialect and reasoning field come
from the endpoint; what to request comes from the model's capability data. Streams end
at ``data: [DONE]``. :data:`WIRE` is the unit the registry hands out.
"""

from __future__ import annotations

from collections.abc import Mapping

from thoughtline.errors import ProviderError
from thoughtline.model.events import StreamEvent
from thoughtline.model.requests import ModelRequest
from thoughtline.providers._think_tags import ThinkTagSplitter
from thoughtline.providers.base import CallContext
from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.openai_chat._errors import parse_error_body
from thoughtline.providers.openai_chat._history import reasoning_echo
from thoughtline.providers.openai_chat._request import build_chat_request, hidden_switch
from thoughtline.providers.openai_chat._response import decode_completion
from thoughtline.providers.openai_chat._scrub import ChatScrubber
from thoughtline.providers.openai_chat._stream import ChatTranslator
from thoughtline.providers.wire import EarlierReasoning, EchoedReasoning, Wire

__all__ = ["WIRE", "ThinkTagSplitter"]

_ENDPOINT_LABELS: dict[str, str] = {
    "openai": "OpenAI",
    "openrouter": "OpenRouter",
    "deepseek": "DeepSeek",
}
_UNNAMED = "The OpenAI-compatible provider"
"""Who an HTTP error message names when no call context says which endpoint answered."""


def _provider_label(context: CallContext) -> str:
    endpoint = context.endpoint
    return _ENDPOINT_LABELS.get(endpoint.name, endpoint.name)


def _translator(request: ModelRequest, context: CallContext) -> ChatTranslator:
    endpoint = context.endpoint
    return ChatTranslator(
        dialect=endpoint.dialect or "openai",
        reasoning_field=endpoint.reasoning_field,
        provider=_provider_label(context),
        model=request.model,
        raw_text_model=context.capability.returns_raw_text,
    )


def _decode(body: bytes, request: ModelRequest, context: CallContext) -> list[StreamEvent]:
    return decode_completion(body, _translator(request, context), provider=_provider_label(context))


def _errors(
    status: int, headers: Mapping[str, str], body: bytes, context: CallContext | None
) -> ProviderError:
    label = _provider_label(context) if context is not None else _UNNAMED
    endpoint = context.endpoint if context is not None else None
    return parse_error_body(status, headers, body, provider=label, endpoint=endpoint)


def _earlier_reasoning(endpoint: Endpoint, capability: ModelCapability) -> EarlierReasoning:
    """Earlier turns' reasoning goes back where the dialect's echo carries it across
    turns (``_history.reasoning_echo``, the one rule for both): OpenRouter's
    ``reasoning_details`` as they came, and DeepSeek's ``reasoning_content`` on every
    assistant message with tool calls. vLLM and llama.cpp (toggle) send it back within a
    tool loop only: their chat templates keep only the final answer of earlier turns.
    Hosted Chat Completions return no reasoning."""
    echo = reasoning_echo(endpoint.dialect or "openai", capability.thinking_control)
    return "always" if echo in ("details", "content_with_tools") else "never"


def _never_shown(endpoint: Endpoint) -> str | None:
    if endpoint.dialect != "openai":
        return None
    return (
        "OpenAI Chat Completions never returns reasoning text; use the Responses API "
        "(the default wire API of the openai endpoint) for summaries."
    )


WIRE = Wire(
    wire_api="openai-chat",
    auth="bearer",
    build=build_chat_request,
    translator=_translator,
    decode=_decode,
    errors=_errors,
    scrubber=ChatScrubber,
    echoed=EchoedReasoning(
        turns="messages",
        fields=frozenset({"reasoning_content", "reasoning", "reasoning_details"}),
    ),
    done_sentinel="[DONE]",
    earlier=_earlier_reasoning,
    hidden=hidden_switch,
    never_shown=_never_shown,
    user_defined_dialect="raw-reasoning",
    default_dialect="openai",
)
