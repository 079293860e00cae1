"""The reasoning carriers of the gateway's answers, kept in memory for the client's next
call.

A client that never saw the reasoning (or dropped it) sends its assistant turns back
without their signatures, encrypted items, thought signatures or ``reasoning_content``,
which the provider needs on the next step of a tool loop. The gateway keeps each answer
as the disclosure gate handed it on (``Task.reply``: every part, carriers byte for byte,
hidden text in ``withheld``), keyed by what the client sends back: the ids of the turn's
tool calls, else a digest of its visible text. When the turn comes back, the kept one
takes its place upstream, and each wire's history sends back what that provider wants,
only to the endpoint and model that made it.

The store is bounded: at most ``[gateway] carriers_max`` turns, the least recently used
dropped first, and a turn not used for ``carriers_ttl_s`` dropped. Nothing of it is ever
written to disk: after a restart, a turn whose carriers are gone goes upstream as the
client sent it, by the wire's own rule for turns without carriers, and a provider that
refuses it answers the client ``GATEWAY_CARRIERS_GONE`` (409), never its raw 400.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart
from thoughtline.model.requests import Message


@dataclass(frozen=True, slots=True)
class Kept:
    endpoint: str
    model: str
    message: Message
    at: float


def turn_keys(message: Message) -> list[str]:
    """What identifies an assistant turn the client sends back: its tool call ids, else
    a digest of its visible text."""
    ids = [f"call:{part.tool_call_id}" for part in message.parts if isinstance(part, ToolCallPart)]
    if ids:
        return ids
    text = "".join(part.text for part in message.parts if isinstance(part, TextPart))
    return [f"text:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}"]


def has_carriers(message: Message) -> bool:
    return any(isinstance(part, ReasoningPart) for part in message.parts)


@dataclass(slots=True)
class Restored:
    messages: tuple[Message, ...]
    missing: int
    """Assistant turns with tool calls the gateway held nothing for."""


class CarrierStore:
    """Assistant turns with reasoning carriers, LRU and TTL bounded, in memory only."""

    def __init__(self, max_turns: int, ttl_s: float) -> None:
        self.max_turns = max_turns
        self.ttl_s = ttl_s
        self._turns: OrderedDict[str, Kept] = OrderedDict()

    def __len__(self) -> int:
        return len(self._turns)

    def keep(self, endpoint: str, model: str, message: Message) -> None:
        """Hold ``message`` (an answer) if it has carriers."""
        if not has_carriers(message):
            return
        kept = Kept(endpoint, model, message, time.monotonic())
        for key in turn_keys(message):
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

    def restore(self, messages: Sequence[Message], endpoint: str, model: str) -> Restored:
        """``messages`` with each assistant turn the gateway kept put back whole (for the
        endpoint and model that made it; another model gets the client's turn)."""
        now = time.monotonic()
        restored: list[Message] = []
        missing = 0
        for message in messages:
            if message.role != "assistant":
                restored.append(message)
                continue
            found = [kept for key in turn_keys(message) if (kept := self._find(key, now))]
            if found and found[0].endpoint == endpoint and found[0].model == model:
                restored.append(found[0].message)
                continue
            if any(isinstance(part, ToolCallPart) for part in message.parts):
                missing += 1
            restored.append(message)
        return Restored(tuple(restored), missing)
