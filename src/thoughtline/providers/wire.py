"""A wire API as one unit: everything thoughtline knows of one provider protocol.

Each wire package (``providers/anthropic``, ``openai_responses``, ``openai_chat``,
``gemini``, ``ollama``) builds one :class:`Wire` from its private modules and exports it
as ``WIRE``; the registry (:mod:`thoughtline.providers.registry`) maps wire API names to
these units, and nothing else names a wire API (``tests/core/test_wire_ownership.py``).
The rest of thoughtline asks the unit:

- the transport: :meth:`Wire.build_request`, :meth:`Wire.new_decoder`,
  :meth:`Wire.decode_body`, :meth:`Wire.parse_error` (the sans-IO
  :class:`~thoughtline.providers.base.WireAdapter` contract), and :attr:`Wire.auth`, how
  the key is sent (as the provider's official SDK sends it);
- endpoint resolution: :attr:`Wire.capability_endpoint` (whose capability data a
  user-defined endpoint's models follow) and the Chat Completions dialect defaults;
- a conversation's follow-up: :meth:`Wire.earlier_reasoning`, the one rule for which
  earlier turns' reasoning goes back (within one turn's tool loop every carrier goes
  back, by the wire's ``_history.py``). The wire's history builder sends what this rule
  lets through, and only to the endpoint and model that made it;
- a ``hidden`` call: :meth:`Wire.hidden_ask` (:mod:`thoughtline.providers.hidden_requests`);
- the ``provider_raw`` trace layer: :meth:`Wire.new_scrubber` and :attr:`Wire.framing`
  for response bodies (:mod:`thoughtline.runtime.policy.scrub`), :attr:`Wire.echoed` for the
  reasoning a request echoes back (:mod:`thoughtline.runtime.policy.scrub_requests`);
- a task's reasoning status: :meth:`Wire.reasoning_never_shown`;
- ``thoughtline providers --refresh``: :attr:`Wire.list_models`, the model API;
- the gateway's token counts: :attr:`Wire.count`, the provider's own count API where
  the wire API has one (:mod:`thoughtline.providers.counting` does the I/O).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from thoughtline.errors import ProviderError
from thoughtline.model.events import StreamEvent
from thoughtline.model.requests import ModelRequest
from thoughtline.providers.base import (
    CallContext,
    NDJSONStreamDecoder,
    OutputBounds,
    PayloadTranslator,
    SSEStreamDecoder,
    StreamDecoder,
    WireRequest,
)
from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.endpoints import AuthStyle, ChatDialect, Endpoint
from thoughtline.providers.scrubbing import PayloadScrubber

if TYPE_CHECKING:
    import httpx2

    from thoughtline.providers.hidden_requests import HiddenAsk
    from thoughtline.providers.registry import WireApi

EarlierReasoning: TypeAlias = Literal["always", "prefix", "never"]
"""How a wire API takes back an earlier turn's reasoning once a new user prompt follows
it: ``always``, ``never``, or only while the ``prefix`` it was made on is unchanged
(same system, tools, model and earlier turns)."""
Framing: TypeAlias = Literal["sse", "ndjson"]


@dataclass(frozen=True, slots=True, kw_only=True)
class EchoedReasoning:
    """Where a request of a wire API carries earlier reasoning back to the provider, for
    :mod:`thoughtline.runtime.policy.scrub_requests`."""

    turns: str
    """The request's key holding its turns (``messages``, ``input``, ``contents``)."""
    blocks: frozenset[str] = frozenset()
    """``type`` values of an object that is reasoning as a whole."""
    flags: frozenset[str] = frozenset()
    """Keys that, set to ``true``, make an object reasoning as a whole."""
    fields: frozenset[str] = frozenset()
    """Keys whose value is reasoning (or its carrier), wherever they sit in the turns."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenCount:
    """A wire API's own input token count: the call's request, turned into the count
    request of the same input (sans-IO), and the count read back from its answer."""

    request: Callable[[WireRequest], WireRequest]
    """The count request for the request a call would send (its input fields only)."""
    read: Callable[[bytes], int | None]
    """The count in the answer's body; ``None`` when the body holds none."""


Translate: TypeAlias = Callable[[ModelRequest, CallContext], PayloadTranslator]
DecodeBody: TypeAlias = Callable[[bytes, ModelRequest, CallContext], list[StreamEvent]]
ParseError: TypeAlias = Callable[[int, Mapping[str, str], bytes, CallContext | None], ProviderError]
HiddenRule: TypeAlias = Callable[[Endpoint, ModelCapability, bool, bool], "HiddenAsk | None"]
ListModels: TypeAlias = Callable[
    [Endpoint, "httpx2.AsyncClient"], Awaitable[dict[str, dict[str, Any]]]
]


def _no_switch(
    endpoint: Endpoint, capability: ModelCapability, tools: bool, effort_sent: bool
) -> HiddenAsk | None:
    return None


def _shown_when_asked(endpoint: Endpoint) -> str | None:
    return None


def _output_field(request: ModelRequest, context: CallContext) -> OutputBounds:
    return OutputBounds(most=request.max_output_tokens)


@dataclass(frozen=True, slots=True, kw_only=True)
class Wire:
    """One wire API (see the module docstring). Sans-IO: it never touches the network."""

    wire_api: WireApi
    auth: AuthStyle
    """How the key is sent; the transport adds it, so a unit never sees a key."""
    build: Callable[[ModelRequest, CallContext], WireRequest]
    translator: Translate
    """A fresh translator for one response (stream or whole body)."""
    decode: DecodeBody
    errors: ParseError
    scrubber: Callable[[Endpoint], PayloadScrubber]
    echoed: EchoedReasoning
    earlier: Callable[[Endpoint, ModelCapability], EarlierReasoning]
    """Which earlier turns' reasoning goes back in a follow-up; each wire API decides."""
    framing: Framing = "sse"
    done_sentinel: str | None = None
    """The stream's end-of-stream data line, where the protocol has one (``[DONE]``)."""
    hidden: HiddenRule = _no_switch
    never_shown: Callable[[Endpoint], str | None] = _shown_when_asked
    output: Callable[[ModelRequest, CallContext], OutputBounds] = _output_field
    """What the output field allows and the smallest valid cap (default: the field is
    ``max_output_tokens`` as asked, reasoning included, any cap valid)."""
    list_models: ListModels | None = None
    """Every model the key can see, as capability cache entries, where thoughtline reads
    the wire API's model API (:mod:`thoughtline.providers.discovery`)."""
    capability_endpoint: str = ""
    """The built-in endpoint whose capability data a user-defined endpoint speaking this
    wire API uses (a wire API spoken by one model vendor); ``""``: the generic family."""
    user_defined_dialect: ChatDialect | None = None
    """The dialect of a user-defined endpoint that names none."""
    default_dialect: ChatDialect | None = None
    """The dialect of any endpoint still without one once its settings are applied."""
    count: TokenCount | None = None
    """The provider's input token count, where the wire API has one (``None``: no count
    is asked of it, and none is estimated)."""

    def build_request(self, request: ModelRequest, context: CallContext) -> WireRequest:
        """URL, protocol headers (never credentials), JSON body and shaping warnings."""
        return self.build(request, context)

    def new_decoder(self, request: ModelRequest, context: CallContext) -> StreamDecoder:
        """A decoder for one response stream, framed as the wire API frames it."""
        translator = self.translator(request, context)
        if self.framing == "ndjson":
            return NDJSONStreamDecoder(translator)
        return SSEStreamDecoder(translator, done_sentinel=self.done_sentinel)

    def decode_body(
        self, body: bytes, request: ModelRequest, context: CallContext
    ) -> list[StreamEvent]:
        """Events for a whole non-streaming body: the same sequence the stream would give."""
        return self.decode(body, request, context)

    def parse_error(
        self,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        context: CallContext | None = None,
    ) -> ProviderError:
        """An HTTP error response → :class:`ProviderError` with a stable code; ``context``
        names the endpoint in the message (one unit serves many endpoints)."""
        return self.errors(status, headers, body, context)

    def earlier_reasoning(
        self, endpoint: Endpoint, capability: ModelCapability
    ) -> EarlierReasoning:
        """Whether an earlier turn's reasoning goes back in a follow-up (module doc)."""
        return self.earlier(endpoint, capability)

    def hidden_ask(
        self, endpoint: Endpoint, capability: ModelCapability, *, tools: bool, effort_sent: bool
    ) -> HiddenAsk | None:
        """What a hidden call sends to turn reasoning off, where the wire API has a
        switch; ``None`` where it has none (:mod:`thoughtline.providers.hidden_requests`)."""
        return self.hidden(endpoint, capability, tools, effort_sent)

    def output_bounds(self, request: ModelRequest, context: CallContext) -> OutputBounds:
        """How many tokens ``request`` lets the model generate as this wire API sends it,
        and the smallest :attr:`~ModelRequest.output_cap` it can keep valid."""
        return self.output(request, context)

    def new_scrubber(self, endpoint: Endpoint) -> PayloadScrubber:
        """A fresh provider-raw scrubber for one body from ``endpoint``."""
        return self.scrubber(endpoint)

    def reasoning_never_shown(self, endpoint: Endpoint) -> str | None:
        """Why ``endpoint`` never returns reasoning text whatever the model (one sentence,
        for the task's reasoning status), or ``None`` when it returns what is asked for."""
        return self.never_shown(endpoint)
