"""Wire API name → adapter. Built-in adapters are imported on first use."""

from __future__ import annotations

from importlib import import_module

from thoughtline.errors import ConfigError
from thoughtline.providers.base import WIRE_APIS, WireAdapter

_BUILTIN: dict[str, tuple[str, str]] = {
    "anthropic-messages": ("thoughtline.providers.anthropic", "AnthropicMessagesAdapter"),
    "openai-responses": ("thoughtline.providers.openai_responses", "OpenAIResponsesAdapter"),
    "openai-chat": ("thoughtline.providers.openai_chat", "OpenAIChatAdapter"),
    "gemini": ("thoughtline.providers.gemini", "GeminiAdapter"),
    "ollama": ("thoughtline.providers.ollama", "OllamaAdapter"),
}
_cache: dict[str, WireAdapter] = {}


def adapter_for(wire_api: str) -> WireAdapter:
    """The adapter for a wire API name; a clear error for an unknown one."""
    cached = _cache.get(wire_api)
    if cached is not None:
        return cached
    try:
        module_name, class_name = _BUILTIN[wire_api]
    except KeyError:
        raise ConfigError(
            f"Unknown wire_api {wire_api!r}. Allowed values: {', '.join(WIRE_APIS)}."
        ) from None
    adapter: WireAdapter = getattr(import_module(module_name), class_name)()
    _cache[wire_api] = adapter
    return adapter
