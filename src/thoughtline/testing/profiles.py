"""The simulated providers: one path prefix per built-in endpoint, each served by the
renderer of its wire protocol, configured the way that provider behaves."""

from __future__ import annotations

import re

from thoughtline.testing.renderers.anthropic import AnthropicRenderer
from thoughtline.testing.renderers.gemini import GeminiRenderer
from thoughtline.testing.renderers.ollama import OllamaRenderer
from thoughtline.testing.renderers.openai_chat import OpenAIChatRenderer
from thoughtline.testing.renderers.openai_responses import OpenAIResponsesRenderer
from thoughtline.testing.round_trips import RoundTripRule
from thoughtline.testing.round_trips.anthropic import AnthropicRoundTrips
from thoughtline.testing.round_trips.chat import ChatRoundTrips
from thoughtline.testing.round_trips.gemini import GeminiRoundTrips
from thoughtline.testing.round_trips.openai_responses import ResponsesRoundTrips
from thoughtline.testing.served_models import catalogue
from thoughtline.testing.simulator import Profile, Route


def _route(pattern: str, renderer: object, rule: RoundTripRule | None = None) -> Route:
    return Route(pattern=re.compile(pattern), renderer=renderer, rule=rule)  # type: ignore[arg-type]


def default_profiles() -> dict[str, Profile]:
    """Every built-in endpoint, plus ``llamacpp-think-tags`` (a llama.cpp server that
    leaves ``<think>`` tags inline, for a user-defined endpoint with
    ``reasoning_field = "think_tags"``). Each route enforces its provider's round-trip
    rule (:mod:`thoughtline.testing.round_trips`), and each provider but llama.cpp's
    serves only the model ids it knows (:mod:`thoughtline.testing.served_models`)."""
    anthropic = AnthropicRenderer()
    lenient = ChatRoundTrips("lenient")
    profiles = [
        Profile(
            name="anthropic",
            models=catalogue("anthropic"),
            base_path="/anthropic",
            base_url_env="ANTHROPIC_BASE_URL",
            routes=(_route(r"/v1/messages", anthropic, AnthropicRoundTrips(anthropic)),),
        ),
        Profile(
            name="openai",
            models=catalogue("openai"),
            base_path="/openai/v1",
            base_url_env="OPENAI_BASE_URL",
            routes=(
                _route(r"/v1/responses", OpenAIResponsesRenderer(), ResponsesRoundTrips()),
                _route(
                    r"/v1/chat/completions",
                    OpenAIChatRenderer(dialect="openai", reasons_by_default=True),
                ),
            ),
        ),
        Profile(
            name="openrouter",
            models=catalogue("openrouter"),
            base_path="/openrouter/api/v1",
            base_url_env="OPENROUTER_BASE_URL",
            routes=(
                _route(
                    r"/api/v1/chat/completions",
                    OpenAIChatRenderer(dialect="openrouter"),
                    ChatRoundTrips("openrouter"),
                ),
            ),
        ),
        Profile(
            name="gemini",
            models=catalogue("gemini"),
            base_path="/gemini",
            base_url_env="GEMINI_BASE_URL",
            routes=(
                _route(
                    r"/v1beta/models/[^/]+:(?:streamGenerateContent|generateContent)",
                    GeminiRenderer(),
                    GeminiRoundTrips(),
                ),
            ),
        ),
        Profile(
            name="deepseek",
            models=catalogue("deepseek"),
            base_path="/deepseek",
            base_url_env="DEEPSEEK_BASE_URL",
            routes=(
                _route(
                    r"/chat/completions",
                    OpenAIChatRenderer(
                        dialect="raw-reasoning",
                        reasoning_field="reasoning_content",
                        reasons_by_default=True,
                    ),
                    ChatRoundTrips("deepseek"),
                ),
            ),
        ),
        Profile(
            name="vllm",
            models=catalogue("vllm"),
            base_path="/vllm/v1",
            base_url_env="VLLM_BASE_URL",
            routes=(
                _route(
                    r"/v1/chat/completions",
                    OpenAIChatRenderer(dialect="raw-reasoning", reasoning_field="reasoning"),
                    lenient,
                ),
            ),
        ),
        Profile(
            name="llamacpp",
            base_path="/llamacpp/v1",
            base_url_env="LLAMACPP_BASE_URL",
            routes=(
                _route(
                    r"/v1/chat/completions",
                    OpenAIChatRenderer(
                        dialect="raw-reasoning", reasoning_field="reasoning_content"
                    ),
                    lenient,
                ),
            ),
        ),
        Profile(
            name="llamacpp-think-tags",
            base_path="/llamacpp-think-tags/v1",
            routes=(
                _route(
                    r"/v1/chat/completions",
                    OpenAIChatRenderer(dialect="raw-reasoning", reasoning_field="think_tags"),
                ),
            ),
        ),
        Profile(
            name="ollama",
            models=catalogue("ollama"),
            base_path="/ollama",
            base_url_env="OLLAMA_HOST",
            routes=(_route(r"/api/chat", OllamaRenderer(), lenient),),
        ),
    ]
    return {profile.name: profile for profile in profiles}
