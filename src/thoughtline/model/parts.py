"""The ordered parts a message is made of: text, reasoning, tool calls and tool results.

A message (``requests.Message``) and a response (``accumulator.ModelResponse``) hold
their parts in the order they arrived, so a history can be sent back exactly as it
came: Anthropic wants thinking blocks before the ``tool_use`` they led to, OpenAI
Responses wants a reasoning item right before its ``function_call``.

Parts are a closed union with a ``type`` discriminator; consumers ``match`` on it and
end with ``assert_never``. Provider data (signatures, ``encrypted_content``, item ids,
Gemini ``thoughtSignature``) lives in ``provider_metadata``, byte for byte.

A reasoning carrier is valid only for the endpoint and model that produced it, so
reasoning parts and tool calls record both (``provider``, ``model``). Provenance is not
content: two parts with the same text and carrier are equal wherever they came from.
Metadata is left out of the hash (a mapping has none), so plain messages stay hashable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from thoughtline.model.events import ProviderMetadata, ReasoningKind


def _no_metadata() -> ProviderMetadata:
    return {}


@dataclass(frozen=True, slots=True, kw_only=True)
class TextPart:
    """Text written by the user or the model. ``provider_metadata`` keeps what came with
    it (an OpenAI Responses ``item_id`` and ``phase``, a refusal flag)."""

    text: str
    provider_metadata: ProviderMetadata = field(default_factory=_no_metadata, hash=False)
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningPart:
    """One reasoning part as the provider returned it. ``complete`` is False when the
    stream broke before the part closed.

    ``provider`` (the endpoint name) and ``model`` say who produced it: its carrier
    (signature, encrypted content) goes back only to them.

    ``withheld`` is set by the disclosure gate alone, on a part whose text it did not let
    through as it came (the mode hides reasoning, so ``text`` is empty; or a loaded
    credential value is in the part, so ``text`` is redacted): the text as it arrived.
    Within one task it is the carrier the provider wants back on its next call
    (Anthropic's ``signature`` signs the thinking text; DeepSeek's thinking mode wants
    ``reasoning_content`` back), so each wire's history sends :attr:`as_arrived`. It
    lives in memory only: never stored, shown, traced or compared, and such a part never
    enters a stored thread (:func:`unstorable`).
    """

    kind: ReasoningKind
    text: str
    provider_metadata: ProviderMetadata = field(default_factory=_no_metadata, hash=False)
    complete: bool = True
    provider: str | None = field(default=None, compare=False)
    model: str | None = field(default=None, compare=False)
    withheld: str | None = field(default=None, compare=False, repr=False)
    type: Literal["reasoning"] = "reasoning"

    @property
    def as_arrived(self) -> str:
        """The text as it arrived, withheld or not: what a wire's history sends back to
        the provider and model that made the part; nothing else reads it."""
        return self.text if self.withheld is None else self.withheld


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallPart:
    """A call the model made. ``arguments`` is the JSON text as it arrived;
    ``provider_metadata`` keeps ids and carriers (Gemini ``thought_signature``)."""

    tool_call_id: str
    name: str
    arguments: str
    provider_metadata: ProviderMetadata = field(default_factory=_no_metadata, hash=False)
    complete: bool = True
    provider: str | None = field(default=None, compare=False)
    model: str | None = field(default=None, compare=False)
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultPart:
    """What running a tool call returned, sent back in a user message. ``is_error``
    marks a failed call (the model is told, and the loop goes on)."""

    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"


Part: TypeAlias = TextPart | ReasoningPart | ToolCallPart | ToolResultPart
"""Any part of a message or a response."""


def from_origin(part: ReasoningPart | ToolCallPart, *, provider: str, model: str) -> bool:
    """Whether ``part`` was produced by ``provider`` and ``model``: only then may its
    carrier go back (a part of unknown origin is never sent back)."""
    return part.provider == provider and part.model == model


def plain_text(parts: tuple[Part, ...]) -> str | None:
    """The text of a message made of one text part with no provider data, which every
    wire API sends as a plain string; ``None`` for any other message."""
    if len(parts) == 1:
        only = parts[0]
        if isinstance(only, TextPart) and not only.provider_metadata:
            return only.text
    return None


def unstorable(part: Part) -> bool:
    """Whether ``part`` must stay in memory: a reasoning part the disclosure gate could
    not clean without breaking its carrier (``withheld``), which no stored thread keeps."""
    return isinstance(part, ReasoningPart) and part.withheld is not None
