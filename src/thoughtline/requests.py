"""What a caller asks a model for, independent of any wire API.

Effort and disclosure are separate axes, as the providers treat them: ``ReasoningRequest``
says whether reasoning should be returned (``enabled``) and how hard the model should
think (``effort``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

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


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    role: Role
    content: str


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
        stream: bool = True,
    ) -> ModelRequest:
        """A one-turn request: a user prompt and optional instructions."""
        return cls(
            model=model,
            messages=(Message(role="user", content=prompt),),
            system=system,
            reasoning=reasoning or ReasoningRequest(),
            max_output_tokens=max_output_tokens,
            stream=stream,
        )
