"""The reasoning carriers of the gateway's answers, kept in memory for the client's next
call.

A client that never saw the reasoning (or dropped it) sends its assistant turns back
without their signatures, encrypted items, thought signatures or ``reasoning_content``,
which the provider needs on the next step of a tool loop. The gateway keeps each answer
as the disclosure gate handed it on (``Task.reply``: every part, carriers byte for byte,
hidden text in ``withheld``), keyed by the client and by what the client sends back: the
ids of the turn's tool calls, else a digest of the conversation's visible text up to and
including the turn. When the turn comes back from the same client, the kept one takes
its place upstream, and each wire's history sends back what that provider wants, only to
the endpoint and model that made it. One client never reaches another's turns.

The store is bounded: at most ``[gateway] carriers_max`` turns, the least recently used
dropped first, and a turn kept longer than ``carriers_ttl_s`` dropped. Nothing of it is
ever written to disk: after a restart, a turn whose carriers are gone goes upstream as
the client sent it, by the wire's own rule for turns without carriers, and a provider
that refuses it answers the client ``GATEWAY_CARRIERS_GONE`` (409), never its raw 400.
A client that sees reasoning may send the carriers back itself: those the gateway handed
it for the route go upstream (:mod:`.provenance`), any other keeps no origin.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeAlias

from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message


@dataclass(frozen=True, slots=True)
class Kept:
    endpoint: str
    model: str
    message: Message
    at: float


Accepts: TypeAlias = Callable[[str, str, ReasoningPart], bool]
"""``accepts(endpoint, model, part)``: whether a reasoning part the client sent back
itself may go to that endpoint and model (:mod:`.provenance`)."""


@dataclass(slots=True)
class Restored:
    messages: tuple[Message, ...]
    missing: int
    """Assistant turns with tool calls the gateway held nothing for, and whose client
    sent back no carrier the gateway accepts."""
    refused: int = 0
    """Reasoning parts the client sent back that were not accepted (not forwarded)."""


class _Visible:
    """A running digest of a conversation's visible text: each turn's role, text and tool
    results, as a client sends them back whatever it does with reasoning."""

    def __init__(self, client: str) -> None:
        self._hash = hashlib.sha256(client.encode("utf-8", "surrogatepass") + b"\0")

    def add(self, message: Message) -> str:
        """Take in ``message``; the digest of everything so far."""
        pieces: list[str] = [message.role]
        for part in message.parts:
            if isinstance(part, TextPart):
                pieces.append(part.text)
            elif isinstance(part, ToolResultPart):
                pieces.append(f"{part.tool_call_id}\0{part.content}")
        self._hash.update("\0".join(pieces).encode("utf-8", "surrogatepass") + b"\1")
        return self._hash.hexdigest()


def _keys(client: str, message: Message, visible: str) -> list[str]:
    calls = [part.tool_call_id for part in message.parts if isinstance(part, ToolCallPart)]
    if calls:
        return [f"{client}\0call\0{call_id}" for call_id in calls]
    return [f"{client}\0text\0{visible}"]


def has_carriers(message: Message) -> bool:
    return any(isinstance(part, ReasoningPart) for part in message.parts)


class CarrierStore:
    """Assistant turns with reasoning carriers, per client, LRU and TTL bounded, in
    memory only."""

    def __init__(self, max_turns: int, ttl_s: float) -> None:
        self.max_turns = max_turns
        self.ttl_s = ttl_s
        self._turns: OrderedDict[str, Kept] = OrderedDict()

    def __len__(self) -> int:
        return len(self._turns)

    def keep(
        self,
        client: str,
        sent: Sequence[Message],
        answer: Message,
        *,
        endpoint: str,
        model: str,
    ) -> None:
        """Hold ``answer`` (to the conversation ``sent``) if it has carriers."""
        if not has_carriers(answer):
            return
        visible = _Visible(client)
        for message in sent:
            visible.add(message)
        kept = Kept(endpoint, model, answer, time.monotonic())
        for key in _keys(client, answer, visible.add(answer)):
            self._turns[key] = kept
            self._turns.move_to_end(key)
        while len(self._turns) > self.max_turns:
            self._turns.popitem(last=False)

    def _find(self, key: str, now: float) -> Kept | None:
        kept = self._turns.get(key)
        if kept is None:
            return None
        if now - kept.at > self.ttl_s:
            del self._turns[key]
            return None
        self._turns.move_to_end(key)
        return kept

    def restore(
        self,
        client: str,
        messages: Sequence[Message],
        *,
        endpoint: str,
        model: str,
        accepts: Accepts | None = None,
    ) -> Restored:
        """``messages`` with each assistant turn the gateway kept for ``client`` put back
        whole (for the endpoint and model that made it). Another turn keeps the
        reasoning parts the client sent back itself that ``accepts`` vouches for, given
        the endpoint and model as their origin; the others keep none, so no wire sends
        them upstream."""
        now = time.monotonic()
        visible = _Visible(client)
        restored: list[Message] = []
        missing = 0
        refused = 0
        for message in messages:
            digest = visible.add(message)
            if message.role != "assistant":
                restored.append(message)
                continue
            found = [
                kept for key in _keys(client, message, digest) if (kept := self._find(key, now))
            ]
            if found and found[0].endpoint == endpoint and found[0].model == model:
                restored.append(found[0].message)
                continue
            own = [part for part in message.parts if isinstance(part, ReasoningPart)]
            vouched = [
                part for part in own if accepts is not None and accepts(endpoint, model, part)
            ]
            refused += len(own) - len(vouched)
            if vouched:
                message = _stamped(message, set(map(id, vouched)), endpoint, model)
            elif any(isinstance(part, ToolCallPart) for part in message.parts):
                missing += 1
            restored.append(message)
        return Restored(tuple(restored), missing, refused)


def _stamped(message: Message, vouched: set[int], endpoint: str, model: str) -> Message:
    """``message`` with the reasoning parts whose ids are in ``vouched`` given their
    origin, so the wire sends them back to ``endpoint`` and ``model``."""
    parts = [
        replace(part, provider=endpoint, model=model)
        if isinstance(part, ReasoningPart) and id(part) in vouched
        else part
        for part in message.parts
    ]
    return Message(role=message.role, parts=parts)
