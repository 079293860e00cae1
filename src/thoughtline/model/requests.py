"""What a caller asks a model for, independent of any wire API.

Effort and disclosure are separate axes, as the providers treat them: ``ReasoningRequest``
says whether reasoning should be returned (``enabled``) and how hard the model should
think (``effort``).
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from thoughtline.model.parts import Part, TextPart

Effort: TypeAlias = Literal[
    "provider-default", "none", "minimal", "low", "medium", "high", "xhigh", "max"
]
EFFORTS: tuple[Effort, ...] = (
    "provider-default",
    "none",
    "minimal",
    "low",
    "medium",
    "high",
    "xhigh",
    "max",
)

Role: TypeAlias = Literal["user", "assistant"]

MAX_TEMPERATURE = 2.0
"""The highest sampling temperature any supported wire API takes (OpenAI, Gemini)."""


MAX_OUTPUT_TOKENS = 10_000_000
"""Far above any model's output limit, and within what every store and JSON reader holds."""


def max_output_tokens_problem(value: object) -> str | None:
    """Why ``value`` is not a valid ``max_output_tokens`` (``None`` when it is), worded
    for an error message that names where the value came from."""
    if not isinstance(value, int) or isinstance(value, bool):
        return f"must be a whole number of tokens (at least 1), got {value!r}"
    if not 1 <= value <= MAX_OUTPUT_TOKENS:
        return f"must be from 1 to {MAX_OUTPUT_TOKENS:,}, got {value}"
    return None


def temperature_problem(value: object) -> str | None:
    """Why ``value`` is not a valid ``temperature`` (``None`` when it is)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return f"must be a number from 0 to {MAX_TEMPERATURE:g}, got {value!r}"
    if not 0 <= value <= MAX_TEMPERATURE:  # also refuses NaN
        return f"must be from 0 to {MAX_TEMPERATURE:g}, got {value!r}"
    return None


MODEL_ID_MAX_LENGTH = 256
"""The longest model id taken, well above real ones (a Bedrock inference profile's ARN
or a Vertex model's resource name is about 100 characters)."""

MODEL_ID_CHARACTERS = frozenset(string.ascii_letters + string.digits + "._-:@~/")
"""What a model id is written with. Every provider's ids fit (``gpt-5.1``,
``deepseek/deepseek-r1:free``, ``meta-llama/Llama-3.3-70B-Instruct``,
``hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M``, ``@cf/meta/llama-3.1-8b-instruct``,
``claude-3-5-sonnet@20240620``); nothing that ends a URL's path (``?``, ``#``), escapes
into it (``%``, ``\\``) or breaks a line or a log does."""

MODEL_ID_RULE = (
    f"a model id is 1 to {MODEL_ID_MAX_LENGTH} ASCII letters, digits and . _ - : @ ~, in "
    "parts joined by single slashes (one may lead, as in a served path), as the provider "
    "lists it (e.g. gpt-5.1, meta-llama/Llama-3.3-70B-Instruct, qwen3:8b)"
)


def model_id_problem(value: str) -> str | None:
    """Why ``value`` is not a model id (``None`` when it is), as one sentence naming the
    id, what is wrong with it and what a model id is.

    A model id goes into a URL's path on some wire APIs (Gemini's
    ``models/{model}:streamGenerateContent``): an id with a ``..`` part, ``?``, ``#`` or
    ``%`` would send the request, and the endpoint's key, to another path."""
    wrong = _model_id_fault(value)
    if wrong is None:
        return None
    shown = repr(value) if len(value) <= 80 else f"{value[:60]!r}…"
    return f"Model id {shown} is not valid ({wrong}): {MODEL_ID_RULE}."


def _model_id_fault(value: str) -> str | None:
    if not value:
        return "it is empty"
    if len(value) > MODEL_ID_MAX_LENGTH:
        return f"it is {len(value):,} characters long"
    for position, character in enumerate(value, start=1):
        if character not in MODEL_ID_CHARACTERS:
            return f"{character!r} at position {position} is not allowed"
    if value.endswith("/"):
        return "it ends with '/'"
    # One leading '/' names a model by its path (vLLM and llama.cpp serve a model under
    # the path it was loaded from, unless given a name).
    for part in value.removeprefix("/").split("/"):
        if not part:
            return "it has an empty part between two slashes"
        if part in (".", ".."):
            return f"{part!r} is a path step, not a part of a name"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class GenerationSettings:
    """Sampling settings a caller may set per task; ``None`` leaves the provider's
    default (for ``max_output_tokens``, the adapter's own allowance where one is needed)."""

    max_output_tokens: int | None = None
    temperature: float | None = None

    def over(self, fallback: GenerationSettings) -> GenerationSettings:
        """These settings, each unset one taken from ``fallback``."""
        return GenerationSettings(
            max_output_tokens=fallback.max_output_tokens
            if self.max_output_tokens is None
            else self.max_output_tokens,
            temperature=fallback.temperature if self.temperature is None else self.temperature,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningRequest:
    """Whether to ask for reasoning, and how much effort to spend.

    ``enabled=False`` requests nothing (hidden mode): adapters send no reasoning
    parameters, except where a provider returns reasoning by default and must be told
    not to (OpenRouter gets ``{"exclude": true}``).
    ``budget_tokens`` is used only by wire APIs that take a token budget; when ``None`` a
    budget is derived from the effort.
    """

    enabled: bool = False
    effort: Effort = "provider-default"
    budget_tokens: int | None = None


@dataclass(frozen=True, slots=True, init=False)
class Message:
    """One turn of a conversation: its role and its parts, in order.

    ``Message(role="user", content="...")`` is the plain form: the text becomes one
    :class:`~thoughtline.model.parts.TextPart`. ``parts=`` takes any parts: an assistant turn
    with reasoning and tool calls (see ``ModelResponse.to_message``), or a user turn
    carrying tool results.
    """

    role: Role
    parts: tuple[Part, ...]
    wire_forms: dict[tuple[str, ...], tuple[list[dict[str, Any]], list[Any]]] = field(
        init=False, repr=False, compare=False
    )
    """The message as each wire API sends it, per endpoint and model, built once, with
    each item's JSON (see :func:`thoughtline.providers._history.wire_items`): a tool loop
    sends every earlier message again on every step, and converts and encodes only the
    new ones."""

    def __init__(
        self, *, role: Role, content: str | None = None, parts: Sequence[Part] | None = None
    ) -> None:
        if (content is None) == (parts is None):
            raise TypeError("Message takes either content or parts, not both or neither")
        object.__setattr__(self, "role", role)
        object.__setattr__(
            self, "parts", (TextPart(text=content),) if content is not None else tuple(parts or ())
        )
        object.__setattr__(self, "wire_forms", {})

    @property
    def content(self) -> str:
        """The message's text: its text parts joined (empty when it has none)."""
        return "".join(part.text for part in self.parts if isinstance(part, TextPart))


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A function the model may call. ``parameters`` is a JSON Schema object."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


ToolChoiceMode: TypeAlias = Literal["auto", "none", "required", "tool"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolChoice:
    """Which of the offered tools the model may or must call: ``auto`` (it decides, what
    every API does unasked), ``none``, ``required`` (at least one), ``tool`` (``name``).
    Each wire's request builder spells it as its API does."""

    mode: ToolChoiceMode
    name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    """One call to one model. ``system`` is the persona/instructions; ``messages`` the turns."""

    model: str
    messages: Sequence[Message]
    system: str | None = None
    reasoning: ReasoningRequest = field(default_factory=ReasoningRequest)
    max_output_tokens: int | None = None
    temperature: float | None = None
    """Sampling temperature; adapters leave it out (with a warning) where the model
    rejects one, as reasoning models often do."""
    tools: Sequence[ToolSpec] = ()
    tool_choice: ToolChoice | None = None
    """``None``: the API's default (``auto``); only sent with ``tools``."""
    stream: bool = True
    output_cap: int | None = None
    """A ceiling on every token the call may generate, reasoning included, set by a
    budget (:mod:`thoughtline.runtime.policy.budget`): each wire keeps its output field
    (``max_tokens``, ``max_output_tokens``, ``maxOutputTokens``, ``num_predict``...) at
    or below it, whatever ``max_output_tokens`` and a thinking budget would add up to."""

    @property
    def output_limit(self) -> int | None:
        """``max_output_tokens`` within :attr:`output_cap`: what a wire whose output
        field counts reasoning too sends (``None``: the provider's default)."""
        if self.output_cap is None:
            return self.max_output_tokens
        if self.max_output_tokens is None:
            return self.output_cap
        return min(self.max_output_tokens, self.output_cap)

    @classmethod
    def simple(
        cls,
        model: str,
        prompt: str,
        *,
        system: str | None = None,
        reasoning: ReasoningRequest | None = None,
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        stream: bool = True,
    ) -> ModelRequest:
        """A one-turn request: a user prompt and optional instructions."""
        return cls(
            model=model,
            messages=(Message(role="user", content=prompt),),
            system=system,
            reasoning=reasoning or ReasoningRequest(),
            max_output_tokens=max_output_tokens,
            temperature=temperature,
            stream=stream,
        )
