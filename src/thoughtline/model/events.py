"""The one event model every wire adapter produces.

Adapters turn provider bytes into a stream of these events; nothing vendor-specific
crosses that boundary except the opaque ``provider_metadata`` mapping, which keeps
signatures, encrypted carriers, ids and formats byte-for-byte.

Parts are addressed by ``part_id`` (unique within one response). A part opens with a
``*Start`` event, receives zero or more ``*Delta`` events and closes with a ``*End``
event. Reasoning, text and tool-call parts may interleave.

Consumers ``match`` on the union and finish with ``assert_never`` so that a new event
type is a type error everywhere it is not handled.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, TypeVar

ReasoningKind: TypeAlias = Literal["summary", "raw", "redacted", "encrypted"]
"""What a reasoning part really is.

- ``summary``: a provider-written summary of the model's reasoning (Anthropic Claude 4+,
  OpenAI Responses summaries, Gemini thought parts).
- ``raw``: the model's own reasoning text (DeepSeek, vLLM, llama.cpp, Ollama).
- ``redacted``: safety-redacted reasoning; the text is empty, the opaque data is kept.
- ``encrypted``: an opaque carrier only (signature, ``encrypted_content``); no text.
"""

REASONING_KINDS: tuple[ReasoningKind, ...] = ("summary", "raw", "redacted", "encrypted")

FinishReason: TypeAlias = Literal[
    "stop", "length", "tool_calls", "content_filter", "refusal", "error", "other"
]
FINISH_REASONS: tuple[FinishReason, ...] = (
    "stop",
    "length",
    "tool_calls",
    "content_filter",
    "refusal",
    "error",
    "other",
)

MetadataValue: TypeAlias = str | int | float | bool | None
ProviderMetadata: TypeAlias = Mapping[str, MetadataValue]
"""Opaque provider data. Values are kept exactly as received; never edit them."""


_T = TypeVar("_T")


def _no_metadata() -> ProviderMetadata:
    return {}


def fast_init(cls: type[_T]) -> type[_T]:
    """Give a frozen slotted dataclass an ``__init__`` that fills its slots through the
    slot descriptors instead of ``object.__setattr__``.

    Events are built once per wire event on the streaming hot path (and live run events
    once per displayed delta, :mod:`thoughtline.records.run_events`); the dataclass-made
    frozen ``__init__`` costs about twice as much. Behaviour is unchanged: same
    keyword-only parameters and defaults, instances stay frozen (assignment still raises
    ``FrozenInstanceError``), ``dataclasses.replace`` works.
    """
    namespace: dict[str, Any] = {"_MISSING": dataclasses.MISSING}
    parameters: list[str] = []
    body: list[str] = []
    for spec in dataclasses.fields(cls):  # type: ignore[arg-type]
        name = spec.name
        namespace[f"_set_{name}"] = cls.__dict__[name].__set__
        if spec.default is not dataclasses.MISSING:
            namespace[f"_default_{name}"] = spec.default
            parameters.append(f"{name}=_default_{name}")
            body.append(f"    _set_{name}(self, {name})")
        elif spec.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{name}"] = spec.default_factory
            parameters.append(f"{name}=_MISSING")
            body.append(
                f"    _set_{name}(self, _factory_{name}() if {name} is _MISSING else {name})"
            )
        else:
            parameters.append(name)
            body.append(f"    _set_{name}(self, {name})")
    source = f"def __init__(self, *, {', '.join(parameters)}):\n" + "\n".join(body) + "\n"
    exec(source, namespace)  # the source is built above from the class's own fields
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseStarted:
    """The provider accepted the request; ids and the model that answers, when known."""

    response_id: str | None = None
    model: str | None = None
    type: Literal["response_started"] = "response_started"


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningStart:
    part_id: str
    kind: ReasoningKind
    provider_metadata: ProviderMetadata = field(default_factory=_no_metadata)
    type: Literal["reasoning_start"] = "reasoning_start"


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningDelta:
    part_id: str
    text: str
    type: Literal["reasoning_delta"] = "reasoning_delta"


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningEnd:
    """Closes a reasoning part.

    ``kind`` is the part's final kind: an Anthropic thinking block that ends with a
    signature and no text is ``encrypted`` although it started as ``summary``.
    ``provider_metadata`` holds the final opaque data (e.g. the complete signature),
    which replaces what the start event carried for the same keys.
    """

    part_id: str
    kind: ReasoningKind
    provider_metadata: ProviderMetadata = field(default_factory=_no_metadata)
    type: Literal["reasoning_end"] = "reasoning_end"


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class TextStart:
    part_id: str
    provider_metadata: ProviderMetadata = field(default_factory=_no_metadata)
    type: Literal["text_start"] = "text_start"


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    part_id: str
    text: str
    type: Literal["text_delta"] = "text_delta"


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class TextEnd:
    part_id: str
    provider_metadata: ProviderMetadata = field(default_factory=_no_metadata)
    type: Literal["text_end"] = "text_end"


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStart:
    part_id: str
    tool_call_id: str
    name: str
    provider_metadata: ProviderMetadata = field(default_factory=_no_metadata)
    type: Literal["tool_call_start"] = "tool_call_start"


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallDelta:
    part_id: str
    arguments_delta: str
    type: Literal["tool_call_delta"] = "tool_call_delta"


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEnd:
    part_id: str
    provider_metadata: ProviderMetadata = field(default_factory=_no_metadata)
    type: Literal["tool_call_end"] = "tool_call_end"


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts. ``None`` means the provider did not report it, never zero.

    Counts are cumulative: a later ``Usage`` event replaces fields it reports and keeps
    the ones it leaves ``None``. They mean the same for every provider (adapters convert):

    - ``input_tokens``: every input token, cached or not (OpenAI's ``prompt_tokens``;
      Anthropic's ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``);
    - ``cached_input_tokens``: the part of the input read from the provider's cache;
    - ``cache_write_tokens``: the part of the input written to the cache (Anthropic's
      ``cache_creation_input_tokens``; providers that cache implicitly report none);
    - ``output_tokens``: every generated token, reasoning included;
    - ``reasoning_tokens``: the reasoning share of the output.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    total_tokens: int | None = None
    cache_write_tokens: int | None = None
    type: Literal["usage"] = "usage"


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Finish:
    """The provider finished the response. ``raw_reason`` is the provider's own value."""

    reason: FinishReason
    raw_reason: str | None = None
    type: Literal["finish"] = "finish"


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class StreamWarning:
    """Something the caller should know that did not stop the response.

    Examples: an effort the model does not accept, an unknown part type that was skipped.
    """

    code: str
    message: str
    type: Literal["warning"] = "warning"


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class StreamError:
    """The provider failed, before or during the stream. Always the last event.

    ``code`` is one of the stable error codes (see :mod:`thoughtline.errors`).
    """

    code: str
    message: str
    retryable: bool
    status: int | None = None
    provider_error_type: str | None = None
    retry_after_s: float | None = None
    """The wait the provider asked for (its ``Retry-After``), when it gave one."""
    type: Literal["error"] = "error"


StreamEvent: TypeAlias = (
    ResponseStarted
    | ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | TextStart
    | TextDelta
    | TextEnd
    | ToolCallStart
    | ToolCallDelta
    | ToolCallEnd
    | Usage
    | Finish
    | StreamWarning
    | StreamError
)
"""The closed union of events an adapter yields."""


def merge_usage(current: Usage | None, update: Usage) -> Usage:
    """Combine cumulative usage reports: fields the update reports win."""
    if current is None:
        return update
    return Usage(
        input_tokens=_pick(update.input_tokens, current.input_tokens),
        output_tokens=_pick(update.output_tokens, current.output_tokens),
        reasoning_tokens=_pick(update.reasoning_tokens, current.reasoning_tokens),
        cached_input_tokens=_pick(update.cached_input_tokens, current.cached_input_tokens),
        total_tokens=_pick(update.total_tokens, current.total_tokens),
        cache_write_tokens=_pick(update.cache_write_tokens, current.cache_write_tokens),
    )


def _pick(new: int | None, old: int | None) -> int | None:
    return old if new is None else new
