"""The ``openai-chat`` wire API: ``POST {base_url}/chat/completions``, with dialects.

One adapter serves hosted OpenAI (``openai`` dialect: no reasoning text, only a token
count), OpenRouter (``openrouter``: ``reasoning`` + ``reasoning_details[]``) and
OpenAI-compatible servers that return raw reasoning (``raw-reasoning``: DeepSeek, vLLM,
llama.cpp, Ollama ``/v1``, user-defined endpoints; ``reasoning_content`` / ``reasoning``
fields or ``<think>`` tags inline in ``content``). The dialect and reasoning field come
from the endpoint; what to request comes from the model's capability data.
"""

from __future__ import annotations

from collections.abc import Mapping

from thoughtline.errors import ProviderError
from thoughtline.events import StreamEvent
from thoughtline.providers._think_tags import ThinkTagSplitter
from thoughtline.providers.base import (
    CallContext,
    SSEStreamDecoder,
    StreamDecoder,
    WireApi,
    WireRequest,
)
from thoughtline.providers.openai_chat._errors import parse_error_body
from thoughtline.providers.openai_chat._request import build_chat_request
from thoughtline.providers.openai_chat._response import decode_completion
from thoughtline.providers.openai_chat._stream import ChatTranslator
from thoughtline.requests import ModelRequest

__all__ = ["OpenAIChatAdapter", "ThinkTagSplitter"]

_ENDPOINT_LABELS: dict[str, str] = {
    "openai": "OpenAI",
    "openrouter": "OpenRouter",
    "deepseek": "DeepSeek",
}


def _provider_label(context: CallContext) -> str:
    endpoint = context.endpoint
    return _ENDPOINT_LABELS.get(endpoint.name, endpoint.name)


class OpenAIChatAdapter:
    """Sans-IO adapter for Chat Completions (see the module docstring).

    ``provider_label`` names the provider in HTTP error messages, where no call context
    is available; stream and body errors use the endpoint's name.
    """

    wire_api: WireApi = "openai-chat"

    def __init__(self, provider_label: str = "The OpenAI-compatible provider") -> None:
        self.provider_label = provider_label

    def build_request(self, request: ModelRequest, context: CallContext) -> WireRequest:
        return build_chat_request(request, context)

    def _translator(self, request: ModelRequest, context: CallContext) -> ChatTranslator:
        endpoint = context.endpoint
        return ChatTranslator(
            dialect=endpoint.dialect or "openai",
            reasoning_field=endpoint.reasoning_field,
            provider=_provider_label(context),
            model=request.model,
            raw_text_model=context.capability.returns_raw_text,
        )

    def new_decoder(self, request: ModelRequest, context: CallContext) -> StreamDecoder:
        return SSEStreamDecoder(self._translator(request, context), done_sentinel="[DONE]")

    def decode_body(
        self, body: bytes, request: ModelRequest, context: CallContext
    ) -> list[StreamEvent]:
        return decode_completion(
            body, self._translator(request, context), provider=_provider_label(context)
        )

    def parse_error(
        self,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        context: CallContext | None = None,
    ) -> ProviderError:
        label = _provider_label(context) if context is not None else self.provider_label
        endpoint = context.endpoint if context is not None else None
        return parse_error_body(status, headers, body, provider=label, endpoint=endpoint)
