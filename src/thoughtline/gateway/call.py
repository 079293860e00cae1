"""The neutral call a gateway request becomes, whichever API the client spoke.

A client's body is read by its dialect (:mod:`thoughtline.gateway.dialects`) into a
:class:`GatewayCall`: the history as thoughtline's own parts and messages (the same types
every wire builds its requests from, so any wire can serve any dialect), the client's
tools and tool choice, and what it asked for: streaming, usage, limits, sampling,
reasoning. What the client *asked* of reasoning is recorded, never obeyed here: the
client's policy decides what it gets.

Reasoning the client sent back itself (a Messages ``thinking`` block with its signature,
a Responses ``reasoning`` item with ``encrypted_content``, a Chat Completions
``reasoning_content``) is kept as :class:`~thoughtline.model.parts.ReasoningPart`\\ s with
the carrier in ``provider_metadata`` under the keys that wire's decoder uses, and with
no ``provider`` or ``model``: a part of unknown origin is never sent back upstream until
the gateway, which knows the call's :attr:`GatewayCall.dialect` and the route, stamps
the parts it accepts (:meth:`GatewayCall.client_carriers` lists them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from thoughtline.model.parts import ReasoningPart
from thoughtline.model.requests import Effort, Message, ToolSpec

Dialect: TypeAlias = Literal["chat_completions", "messages", "responses"]
"""The client APIs the gateway speaks: OpenAI Chat Completions, Anthropic Messages,
OpenAI Responses."""

DIALECTS: tuple[Dialect, ...] = ("chat_completions", "messages", "responses")

ToolChoiceMode: TypeAlias = Literal["auto", "none", "required", "tool"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolChoice:
    """Which tools the model may or must call: ``auto`` (it decides), ``none`` (none),
    ``required`` (at least one: Chat's and Responses' ``required``, Messages' ``any``),
    ``tool`` (the one named)."""

    mode: ToolChoiceMode
    name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningAsk:
    """What the client asked of reasoning, as it said it (``None``: not said).

    - ``enabled``: an explicit switch (Messages ``thinking.type``: ``enabled`` and
      ``adaptive`` are on, ``disabled`` off; DeepSeek's ``thinking`` on Chat Completions);
    - ``effort``: Chat's ``reasoning_effort``, Responses' ``reasoning.effort``, Messages'
      ``output_config.effort``;
    - ``budget_tokens``: Messages' ``thinking.budget_tokens``;
    - ``summary``: Responses' ``reasoning.summary``; ``display``: Messages'
      ``thinking.display``;
    - ``include_encrypted``: Responses' ``include: ["reasoning.encrypted_content"]``.
    """

    enabled: bool | None = None
    effort: Effort | None = None
    budget_tokens: int | None = None
    summary: str | None = None
    display: str | None = None
    include_encrypted: bool = False

    @property
    def asked(self) -> bool:
        """Whether the client asked to see reasoning or for effort spent on it (an
        explicit ``enabled=False`` or effort ``none`` is not asking)."""
        return (
            self.enabled is True
            or (self.effort is not None and self.effort != "none")
            or self.budget_tokens is not None
            or self.summary not in (None, "none")
            or self.include_encrypted
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayCall:
    """One client request, read (see the module docstring).

    ``model`` is the name as the client sent it (an alias or ``ENDPOINT/MODEL``: routing
    is the gateway's). ``system`` joins every system and developer instruction in order.
    ``messages`` alternate as the client sent them; tool results are ``ToolResultPart``\\ s
    of a user message, named after the call they answer.
    """

    dialect: Dialect
    model: str
    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    stream: bool = False
    include_usage: bool = False
    """Whether usage goes to the client: always for Messages and Responses; for Chat
    Completions when not streamed, or streamed with ``stream_options.include_usage``."""
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    reasoning: ReasoningAsk = field(default_factory=ReasoningAsk)
    store: bool | None = None
    """Responses' ``store`` as sent (the gateway stores no responses either way)."""

    def client_carriers(self) -> tuple[ReasoningPart, ...]:
        """Every reasoning part the client sent back, in order (their carriers, if any,
        came from :attr:`dialect`)."""
        return tuple(
            part
            for message in self.messages
            for part in message.parts
            if isinstance(part, ReasoningPart)
        )
