"""What a caller asks a model for, independent of any wire API.

Effort and disclosure are separate axes, as the providers treat them: ``ReasoningRequest``
says whether reasoning should be returned (``enabled``) and how hard the model should
think (``effort``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from thoughtline.parts import Part, TextPart

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
    :class:`~thoughtline.parts.TextPart`. ``parts=`` takes any parts: an assistant turn
    with reasoning and tool calls (see ``ModelResponse.to_message``), or a user turn
    carrying tool results.
    """

    role: Role
    parts: tuple[Part, ...]
    wire_forms: dict[tuple[str, ...], list[dict[str, Any]]] = field(
        init=False, repr=False, compare=False
    )
    """The message as each wire API sends it, per endpoint and model, built once (see
    :func:`thoughtline.providers._history.wire_form`): a tool loop sends every earlier
    message again on every step, and converts only the new ones."""

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
    stream: bool = True

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
