"""Shared helpers for the openai-chat adapter tests."""

from __future__ import annotations

from pathlib import Path

from tests.support import call_context
from thoughtline.model.events import StreamEvent
from thoughtline.model.requests import ModelRequest, ReasoningRequest
from thoughtline.providers.base import CallContext
from thoughtline.providers.endpoints import EndpointSettings, ReasoningField
from thoughtline.providers.openai_chat import WIRE

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "openai_chat"
ADAPTER = WIRE

# fixture stem -> (endpoint, model, reasoning_field override)
FIXTURE_CONTEXTS: dict[str, tuple[str, str, ReasoningField | None]] = {
    "openai_reasoning_tokens": ("openai", "gpt-5-mini", None),
    "openai_tool_calls": ("openai", "gpt-5.5", None),
    "openai_error_midstream": ("openai", "gpt-5.5", None),
    "openrouter_anthropic_summary": ("openrouter", "anthropic/claude-sonnet-4.6", None),
    "openrouter_raw": ("openrouter", "deepseek/deepseek-r1", None),
    "openrouter_openai_encrypted": ("openrouter", "openai/gpt-5.5", None),
    "openrouter_omitted": ("openrouter", "anthropic/claude-opus-4.7", None),
    "openrouter_plain_reasoning": ("openrouter", "qwen/qwen3-235b-a22b", None),
    "openrouter_gemini_tool_calls": ("openrouter", "google/gemini-3-pro", None),
    "openrouter_error_midstream": ("openrouter", "anthropic/claude-sonnet-4.6", None),
    "openrouter_error_midstream_string": ("openrouter", "openai/gpt-5.5", None),
    "openrouter_unknown_detail": ("openrouter", "x-ai/grok-5", None),
    "openrouter_claude37_thinking": ("openrouter", "anthropic/claude-3.7-sonnet:thinking", None),
    "deepseek_reasoning_content": ("deepseek", "deepseek-reasoner", None),
    "deepseek_tool_calls": ("deepseek", "deepseek-chat", None),
    "vllm_reasoning": ("vllm", "Qwen/Qwen3-8B", None),
    "llamacpp_think_tags": ("llamacpp", "qwen3-8b-q4_k_m.gguf", "think_tags"),
    "mistral_magistral_chunks": ("mistral", "magistral-medium-latest", None),
    "groq_x_groq_usage": ("groq", "qwen/qwen3-32b", None),
    "groq_tool_use_failed": ("groq", "openai/gpt-oss-120b", None),
}

# user-defined endpoints the fixtures stand for: name -> [providers.NAME] base_url
USER_ENDPOINTS: dict[str, str] = {
    "mistral": "https://api.mistral.ai/v1",
    "groq": "https://api.groq.com/openai/v1",
}


def make_context(
    endpoint: str,
    model: str,
    *,
    reasoning_field: ReasoningField | None = None,
    wire_api: str | None = None,
) -> CallContext:
    settings: dict[str, EndpointSettings] = {}
    base_url = USER_ENDPOINTS.get(endpoint)
    if reasoning_field is not None or wire_api is not None or base_url is not None:
        settings[endpoint] = EndpointSettings(
            reasoning_field=reasoning_field, wire_api=wire_api, base_url=base_url
        )
    return call_context(endpoint, model, settings=settings)


def fixture_context(stem: str) -> tuple[ModelRequest, CallContext]:
    endpoint, model, field = FIXTURE_CONTEXTS[stem]
    wire_api = "openai-chat" if endpoint == "openai" else None
    request = ModelRequest.simple(model, "hi", reasoning=ReasoningRequest(enabled=True))
    return request, make_context(endpoint, model, reasoning_field=field, wire_api=wire_api)


def read_fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def decode_stream(stem: str, data: bytes | None = None) -> list[StreamEvent]:
    request, context = fixture_context(stem)
    decoder = ADAPTER.new_decoder(request, context)
    raw = read_fixture(f"{stem}.sse") if data is None else data
    return [*decoder.feed(raw), *decoder.close()]


def decode_body(stem: str, data: bytes | None = None) -> list[StreamEvent]:
    request, context = fixture_context(stem)
    raw = read_fixture(f"{stem}.json") if data is None else data
    return ADAPTER.decode_body(raw, request, context)
