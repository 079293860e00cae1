"""What a simulated model "says", independent of wire protocol, and the renderer contract.

A :class:`Transcript` describes the model's whole turn: its reasoning blocks (as the
model produced them), its answer, tool calls, token counts and finish reason. A
:class:`WireRenderer` turns a transcript into one protocol's bytes *the way that
provider would*, given the request it received: e.g. the Anthropic renderer sends
thinking text only when the request asked for ``display: "summarized"``, and the hosted
OpenAI chat renderer never sends reasoning text at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from thoughtline.model.events import ReasoningKind

if TYPE_CHECKING:
    from thoughtline.testing.conversation import SimConversation

FrameRole: TypeAlias = Literal["meta", "reasoning", "text", "tool", "end"]
SimFinish: TypeAlias = Literal["stop", "length", "tool_calls", "content_filter", "refusal"]
StreamErrorKind: TypeAlias = Literal["overloaded", "server_error", "rate_limited"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SimReasoning:
    """One reasoning block as the model produced it.

    ``kind`` is what the provider would label it: ``summary`` (Anthropic thinking,
    OpenAI summaries, Gemini thoughts), ``raw`` (DeepSeek, vLLM, Ollama), ``redacted``
    (Anthropic ``redacted_thinking``; ``text`` is ignored, ``signature`` carries the
    opaque data) or ``encrypted`` (a carrier only). ``signature`` is the opaque value the
    protocol attaches (Anthropic signature, Gemini thoughtSignature, OpenAI
    ``encrypted_content``, Anthropic redacted ``data``).
    """

    kind: ReasoningKind
    text: str = ""
    signature: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimToolCall:
    call_id: str
    name: str
    arguments: str  # JSON text


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcript:
    """The model's turn. Token counts left ``None`` are derived (about 4 chars a token)."""

    answer: str = ""
    reasoning: tuple[SimReasoning, ...] = ()
    tool_calls: tuple[SimToolCall, ...] = ()
    input_tokens: int = 40
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    finish: SimFinish = "stop"
    chunk_chars: int = 12
    response_id: str = "sim_1"
    # What the provider changed in the request before the model saw it (Anthropic
    # ``input_transformations``, e.g. thinking blocks dropped by a binding check).
    input_transformations: tuple[Mapping[str, Any], ...] = ()

    def effective_reasoning_tokens(self) -> int:
        if self.reasoning_tokens is not None:
            return self.reasoning_tokens
        return sum(max(1, len(block.text) // 4) for block in self.reasoning)

    def effective_output_tokens(self) -> int:
        if self.output_tokens is not None:
            return self.output_tokens
        answer_tokens = max(1, len(self.answer) // 4) if self.answer else 0
        tool_tokens = sum(max(1, len(call.arguments) // 4) for call in self.tool_calls)
        return answer_tokens + tool_tokens + self.effective_reasoning_tokens()


def chunks(text: str, size: int) -> list[str]:
    """Split text into deltas of ``size`` characters (at least one delta for non-empty text)."""
    if size <= 0:
        raise ValueError("chunk size must be positive")
    return [text[index : index + size] for index in range(0, len(text), size)]


@dataclass(frozen=True, slots=True, kw_only=True)
class SimRequest:
    """A request as the simulator received it (also what it records for assertions)."""

    method: str
    path: str
    """As sent, percent-encoding kept, without the query."""
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: Mapping[str, Any] | None
    profile: str
    model: str | None
    stream: bool
    raw_body: bytes = b""


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """One unit of a streamed response, tagged with what it carries so faults can be
    injected at the right moment (e.g. cut the connection mid-reasoning)."""

    role: FrameRole
    data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderedBody:
    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


class WireRenderer(Protocol):
    """Renders transcripts as one wire protocol. Implementations are pure functions of
    (transcript, request): no I/O, no global state."""

    stream_content_type: str
    """``text/event-stream`` or ``application/x-ndjson``."""

    def model_of(self, request: SimRequest) -> str | None:
        """The model the request names (from the body, or the path for Gemini)."""
        ...

    def conversation(self, request: SimRequest) -> SimConversation:
        """What the request asks: its system prompt, latest user text, the tools it
        offers and the tool results it sends back (what the default model reads)."""
        ...

    def is_stream(self, request: SimRequest) -> bool: ...

    def stream_frames(self, transcript: Transcript, request: SimRequest) -> list[Frame]:
        """The complete streamed response, frame by frame, ending with the protocol's
        terminal frame(s) tagged ``end``."""
        ...

    def body(self, transcript: Transcript, request: SimRequest) -> bytes:
        """The complete non-streaming JSON response body."""
        ...

    def error_body(self, status: int, message: str) -> bytes:
        """An HTTP error body in the provider's own shape for ``status``."""
        ...

    def stream_error_frame(self, kind: StreamErrorKind, message: str) -> bytes:
        """An error sent inside an HTTP-200 stream, in the provider's own shape."""
        ...

    def malformed_frame(self) -> bytes:
        """A frame whose JSON payload is broken (framing intact)."""
        ...

    def keep_alive_frame(self) -> bytes:
        """What the provider sends to keep an idle stream open (a ping event, an SSE
        comment, a blank line): it carries nothing, so a client must ignore it."""
        ...
