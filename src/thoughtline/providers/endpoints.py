"""Named provider endpoints: base URL, credential source, wire API, dialect.

Built-in endpoints need no configuration. ``[providers.NAME]`` in thoughtline.toml
overrides a built-in's settings or defines a new endpoint (OpenAI-compatible unless it
names another ``wire_api``).
Base URL precedence: config ``base_url`` > the endpoint's environment variable > default.

What follows from the wire API unless the endpoint says otherwise, as its unit
(:class:`~thoughtline.providers.wire.Wire`) says:

- how the key is sent (``auth``, as the provider's official SDK sends it);
- whose capability data its models use (``capability_endpoint``): a user-defined
  endpoint speaking Anthropic's wire API in front of Claude shapes requests for Claude
  models exactly as the ``anthropic`` endpoint does;
- the dialect of an endpoint that names none (Chat Completions).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal, TypeAlias

from thoughtline.errors import ConfigError, ProviderError, UnknownEndpointError
from thoughtline.providers.redaction import shown_url
from thoughtline.providers.registry import DEFAULT_WIRE_API, known_wire
from thoughtline.providers.timeouts import Timeouts, TimeoutSettings

AuthStyle: TypeAlias = Literal["x-api-key", "bearer", "x-goog-api-key", "none"]
ReasoningField: TypeAlias = Literal["auto", "reasoning", "reasoning_content", "think_tags", "none"]
"""Where an endpoint's reasoning arrives, for ``<think>`` tags in the answer text:

- ``auto`` (every built-in endpoint's default): per response, the server's reasoning
  field when it arrives first, else a ``<think>`` block leading the answer text;
- ``think_tags``: every ``<think>`` block in the answer text (raw-reasoning dialect);
- ``reasoning``, ``reasoning_content``, ``none``: the answer text is taken as it comes.

The raw-reasoning dialect reads both ``reasoning_content`` and ``reasoning`` whatever the
value (vLLM sent both for a while)."""
ChatDialect: TypeAlias = Literal["openai", "openrouter", "raw-reasoning"]
"""Dialects of ``openai-chat``:

- ``openai``: hosted OpenAI — no reasoning text, only a reasoning token count;
- ``openrouter``: ``reasoning`` + ``reasoning_details[]``, ``reasoning: {...}`` request object;
- ``raw-reasoning``: DeepSeek/vLLM/llama.cpp/Ollama ``/v1`` — ``reasoning_content`` or
  ``reasoning`` text, optionally ``<think>`` tags inline in ``content``.
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class EndpointSpec:
    """A named place to send requests, before the environment is consulted."""

    name: str
    wire_api: str
    default_base_url: str
    base_url_env: str | None
    api_key_env: str | None
    auth: AuthStyle
    key_required: bool
    dialect: ChatDialect | None = None
    reasoning_field: ReasoningField = "auto"
    description: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    """An endpoint resolved against config and environment: ready to call.

    ``api_key`` is a secret: it is only ever placed in the auth header by the transport,
    and its value is redacted from every captured exchange.
    """

    name: str
    wire_api: str
    base_url: str
    base_url_source: Literal["config", "env", "default"]
    auth: AuthStyle
    api_key: str | None
    api_key_env: str | None
    key_required: bool
    dialect: ChatDialect | None = None
    reasoning_field: ReasoningField = "auto"
    capability_endpoint: str = ""
    """The endpoint whose capability data this endpoint's models follow (``""``: its own
    name)."""
    timeouts: TimeoutSettings = field(default_factory=TimeoutSettings)
    """Timeouts from ``[providers.NAME.timeouts]``; they win over the client's own."""

    @property
    def capability_key(self) -> str:
        """The endpoint name to look models up under in the capability table."""
        return self.capability_endpoint or self.name

    def __repr__(self) -> str:  # never show the key, even in a debugger or a traceback
        key = "set" if self.api_key else "unset"
        return (
            f"Endpoint(name={self.name!r}, wire_api={self.wire_api!r}, "
            f"base_url={shown_url(self.base_url)!r}, api_key={key})"
        )

    def require_key(self) -> str | None:
        """The key, or a clear error when the endpoint needs one and none is set."""
        if self.key_required and not self.api_key:
            raise ProviderError(
                "PROVIDER_KEY_MISSING",
                f"No API key for provider {self.name!r}: set {self.api_key_env} in the "
                "environment (or api_key_env under [providers."
                f"{self.name}] in thoughtline.toml).",
                retryable=False,
            )
        return self.api_key

    def auth_headers(self) -> dict[str, str]:
        """The header that carries the key, as ``auth`` says (the wire API's way unless
        the endpoint names another); none without a key. Only the transport sends it."""
        key = self.require_key()
        if not key:
            return {}
        match self.auth:
            case "x-api-key":
                return {"x-api-key": key}
            case "bearer":
                return {"authorization": f"Bearer {key}"}
            case "x-goog-api-key":
                return {"x-goog-api-key": key}
            case "none":
                return {}


BUILTIN_ENDPOINTS: dict[str, EndpointSpec] = {
    spec.name: spec
    for spec in (
        EndpointSpec(
            name="anthropic",
            wire_api="anthropic-messages",
            default_base_url="https://api.anthropic.com",
            base_url_env="ANTHROPIC_BASE_URL",
            api_key_env="ANTHROPIC_API_KEY",
            auth="x-api-key",
            key_required=True,
            description="Anthropic Messages API",
        ),
        EndpointSpec(
            name="openai",
            wire_api="openai-responses",
            default_base_url="https://api.openai.com/v1",
            base_url_env="OPENAI_BASE_URL",
            api_key_env="OPENAI_API_KEY",
            auth="bearer",
            key_required=True,
            dialect="openai",
            description="OpenAI (Responses by default; Chat Completions selectable)",
        ),
        EndpointSpec(
            name="openrouter",
            wire_api="openai-chat",
            default_base_url="https://openrouter.ai/api/v1",
            base_url_env="OPENROUTER_BASE_URL",
            api_key_env="OPENROUTER_API_KEY",
            auth="bearer",
            key_required=True,
            dialect="openrouter",
            description="OpenRouter (reasoning + reasoning_details, or <think> tags)",
        ),
        EndpointSpec(
            name="gemini",
            wire_api="gemini",
            default_base_url="https://generativelanguage.googleapis.com",
            base_url_env="GEMINI_BASE_URL",
            api_key_env="GEMINI_API_KEY",
            auth="x-goog-api-key",
            key_required=True,
            description="Google Gemini API",
        ),
        EndpointSpec(
            name="deepseek",
            wire_api="openai-chat",
            default_base_url="https://api.deepseek.com",
            base_url_env="DEEPSEEK_BASE_URL",
            api_key_env="DEEPSEEK_API_KEY",
            auth="bearer",
            key_required=True,
            dialect="raw-reasoning",
            description="DeepSeek (raw reasoning_content or <think> tags)",
        ),
        EndpointSpec(
            name="ollama",
            wire_api="ollama",
            default_base_url="http://127.0.0.1:11434",
            base_url_env="OLLAMA_HOST",
            api_key_env=None,
            auth="none",
            key_required=False,
            description="Ollama native /api/chat (NDJSON, message.thinking or <think> tags)",
        ),
        EndpointSpec(
            name="vllm",
            wire_api="openai-chat",
            default_base_url="http://127.0.0.1:8000/v1",
            base_url_env="VLLM_BASE_URL",
            api_key_env="VLLM_API_KEY",
            auth="bearer",
            key_required=False,
            dialect="raw-reasoning",
            description="vLLM OpenAI-compatible server (raw reasoning or <think> tags)",
        ),
        EndpointSpec(
            name="llamacpp",
            wire_api="openai-chat",
            default_base_url="http://127.0.0.1:8080/v1",
            base_url_env="LLAMACPP_BASE_URL",
            api_key_env="LLAMACPP_API_KEY",
            auth="bearer",
            key_required=False,
            dialect="raw-reasoning",
            description="llama.cpp llama-server (raw reasoning_content or <think> tags)",
        ),
    )
}


@dataclass(frozen=True, slots=True, kw_only=True)
class EndpointSettings:
    """``[providers.NAME]`` from config, already validated by the config loader."""

    wire_api: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    reasoning_field: ReasoningField | None = None
    dialect: ChatDialect | None = None
    auth: AuthStyle | None = None
    """How to send the key; by default what the wire API expects (its unit's ``auth``)."""
    timeouts: TimeoutSettings = field(default_factory=TimeoutSettings)
    max_concurrency: int | None = None
    """At most this many calls to the endpoint at once, across runs (None: no limit
    beyond ``orchestration.max_concurrency``)."""
    prices: str | None = None
    """A built-in endpoint whose price data prices this endpoint's models (``anthropic``
    for a gateway in front of Claude); ``None``: the endpoint's own, if it has any."""


def _user_defined_spec(name: str, settings: EndpointSettings, source: str) -> EndpointSpec:
    if settings.base_url is None:
        raise ConfigError(
            f"{source}: [providers.{name}] defines a new endpoint and needs base_url "
            '(e.g. base_url = "http://127.0.0.1:8000/v1").'
        )
    wire_api = settings.wire_api or DEFAULT_WIRE_API
    wire = known_wire(wire_api)
    return EndpointSpec(
        name=name,
        wire_api=wire_api,
        default_base_url=settings.base_url,
        base_url_env=None,
        api_key_env=settings.api_key_env,
        auth=wire.auth if wire is not None else "bearer",
        key_required=False,
        dialect=settings.dialect or (wire.user_defined_dialect if wire is not None else None),
        reasoning_field=settings.reasoning_field or "auto",
        description="user-defined endpoint",
    )


class EndpointRegistry:
    """Built-in endpoints merged with ``[providers.*]`` settings, resolved against an
    environment mapping (``os.environ`` by default; tests pass their own)."""

    def __init__(
        self,
        settings: Mapping[str, EndpointSettings] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        config_source: str = "thoughtline.toml",
    ) -> None:
        self._environ = os.environ if environ is None else environ
        self._settings = dict(settings or {})
        specs = dict(BUILTIN_ENDPOINTS)
        for name, endpoint_settings in self._settings.items():
            if name not in specs:
                specs[name] = _user_defined_spec(name, endpoint_settings, config_source)
        self._specs = specs

    @property
    def names(self) -> list[str]:
        return list(self._specs)

    def spec(self, name: str) -> EndpointSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise UnknownEndpointError(name, list(self._specs)) from None

    def resolve(self, name: str) -> Endpoint:
        spec = self.spec(name)
        settings = self._settings.get(name, EndpointSettings())
        if settings.base_url:
            base_url, source = settings.base_url, "config"
        elif spec.base_url_env and self._environ.get(spec.base_url_env):
            base_url, source = self._environ[spec.base_url_env], "env"
        else:
            base_url, source = spec.default_base_url, "default"
        if settings.base_url and spec.name not in BUILTIN_ENDPOINTS:
            source = "config"
        if name == "ollama" and "://" not in base_url:
            base_url = f"http://{base_url}"  # OLLAMA_HOST is often written as host:port
        key_env = settings.api_key_env or spec.api_key_env
        api_key = self._environ.get(key_env) if key_env else None
        wire_api = settings.wire_api or spec.wire_api
        dialect = settings.dialect or spec.dialect
        wire = known_wire(wire_api)
        if settings.auth is not None:
            auth = settings.auth
        elif wire_api == spec.wire_api or wire is None:
            auth = spec.auth
        else:  # a built-in endpoint told to speak another wire API: send the key its way
            auth = wire.auth
        builtin = spec.name in BUILTIN_ENDPOINTS
        capability_endpoint = "" if builtin or wire is None else wire.capability_endpoint
        endpoint = Endpoint(
            name=spec.name,
            wire_api=wire_api,
            base_url=base_url.rstrip("/"),
            base_url_source=source,  # type: ignore[arg-type]
            auth=auth,
            api_key=api_key or None,
            api_key_env=key_env,
            key_required=spec.key_required,
            dialect=dialect,
            reasoning_field=settings.reasoning_field or spec.reasoning_field,
            capability_endpoint=capability_endpoint,
            timeouts=settings.timeouts,
        )
        if endpoint.dialect is None and wire is not None and wire.default_dialect is not None:
            endpoint = replace(endpoint, dialect=wire.default_dialect)
        return endpoint

    def loaded_secrets(self) -> list[str]:
        """Every credential value visible to this registry (for redaction)."""
        secrets: list[str] = []
        for name in self._specs:
            spec = self._specs[name]
            settings = self._settings.get(name, EndpointSettings())
            key_env = settings.api_key_env or spec.api_key_env
            value = self._environ.get(key_env) if key_env else None
            if value:
                secrets.append(value)
        return secrets


def timeout_entries(
    configured: TimeoutSettings, providers: Mapping[str, EndpointSettings]
) -> list[tuple[str, float]]:
    """The timeout keys to show a person, as ``(dotted key, seconds)``: every
    ``timeouts.*`` key with its effective value (built-in default unless configured),
    then each ``providers.NAME.timeouts.*`` key an endpoint sets."""
    effective = Timeouts().overridden_by(configured)
    entries: list[tuple[str, float]] = [
        ("timeouts.connect", effective.connect),
        ("timeouts.read", effective.read),
    ]
    if effective.total is not None:
        entries.append(("timeouts.total", effective.total))
    for name, settings in providers.items():
        entries += [
            (f"providers.{name}.timeouts.{key}", value) for key, value in settings.timeouts.items()
        ]
    return entries
