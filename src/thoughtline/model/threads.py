"""A task's thread: the messages one turn of a conversation added, as the store keeps them.

A follow-up run builds its request from the threads of the runs it continues
(:mod:`thoughtline.runtime.planning.conversation`). Each thread is kept twice:

- ``answer``: the turn's prompt, the model's text, its tool calls and their results, with
  no reasoning and no carrier (a Gemini ``thought_signature`` on a call is one). It
  belongs to the answer layer: every mode keeps it, for as long as that layer is kept.
- ``carriers``: the same messages as they were sent, reasoning parts and their carriers
  byte for byte, for the provider that demands them back. Kept only when the task's mode
  requested reasoning (never for ``hidden``: a hidden carrier lives in memory only), and
  cleared with the reasoning retention.

Both are JSON arrays of messages, each ``{"role", "parts"}``; a part is the dataclass's
fields (``type`` first). Decoding is strict about shape: a row that does not read back is
reported, never half-used.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, assert_never

import orjson

from thoughtline.model.parts import Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message, ToolSpec

CARRIER_KEYS = frozenset({"thought_signature", "signature", "encrypted_content"})
"""Provider metadata keys that carry reasoning on a part that is not itself reasoning
(Gemini puts a ``thought_signature`` on a function call); the answer layer leaves them out."""


class ThreadDecodeError(ValueError):
    """A stored thread that does not read back as messages."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskThread:
    """What one task added to its conversation, ready to store."""

    answer: tuple[Message, ...]
    carriers: tuple[Message, ...] | None
    system_digest: str
    """What the task's system prompt was (a hash): a carrier bound to its prefix is valid
    only under the same one."""
    tools_digest: str
    """What tools the task was offered (a hash), for the same reason."""


@dataclass(kw_only=True)
class StoredTurn:
    """One earlier turn of a conversation, as a follow-up task is given it: the thread a
    task of an earlier run stored (or, for a task new to the conversation, that run's
    request and answers as plain text). Its messages are decoded when first read: a
    follow-up reads each turn in one of its two forms only."""

    run_id: str
    provider: str
    model: str
    mode: str
    """The earlier task's ``chain_of_thought``."""
    answer_json: str
    carriers_json: str | None = None
    """The messages with their reasoning and carriers; ``None`` when none were kept
    (``hidden``), when the retention removed them, or for a plain-text turn."""
    carriers_cleared: bool = False
    """The retention removed the carriers this turn had."""
    plain: bool = False
    """Made from another role's turn, as plain text."""
    system_digest: str = ""
    tools_digest: str = ""

    @cached_property
    def answer(self) -> tuple[Message, ...]:
        """The answer layer's messages (:class:`ThreadDecodeError` if they do not read)."""
        return decode(self.answer_json)

    @cached_property
    def carriers(self) -> tuple[Message, ...] | None:
        return None if self.carriers_json is None else decode(self.carriers_json)

    @cached_property
    def size(self) -> int:
        """The answer layer's bytes, as stored."""
        return len(self.answer_json.encode())


def digest(value: object) -> str:
    """A short stable hash of a JSON value (a system prompt, a list of tool specs)."""
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]


def _tools_json(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
        for t in tools
    ]


def tools_digest(tools: Sequence[ToolSpec]) -> str:
    return digest(_tools_json(tools))


def encode_tools(tools: Sequence[ToolSpec]) -> str:
    """The JSON text of tool specs (for counting their size)."""
    return orjson.dumps(_tools_json(tools)).decode() if tools else ""


def answer_layer(messages: Iterable[Message]) -> tuple[Message, ...]:
    """``messages`` with every reasoning part and reasoning carrier removed; a message
    left with no part is left out."""
    out: list[Message] = []
    for message in messages:
        parts = [kept for part in message.parts if (kept := _answer_part(part)) is not None]
        if parts:
            out.append(Message(role=message.role, parts=parts))
    return tuple(out)


def _answer_part(part: Part) -> Part | None:
    match part:
        case ReasoningPart():
            return None
        case TextPart() | ToolCallPart():
            if CARRIER_KEYS.isdisjoint(part.provider_metadata):
                return part
            metadata = {k: v for k, v in part.provider_metadata.items() if k not in CARRIER_KEYS}
            return replace(part, provider_metadata=metadata)
        case ToolResultPart():
            return part
        case _:
            assert_never(part)


def encode(messages: Sequence[Message]) -> str:
    """The JSON text of ``messages`` (a lone surrogate from provider text, which is not
    UTF-8, is written as an ASCII escape)."""
    data = [_message_json(m) for m in messages]
    try:
        return orjson.dumps(data).decode()
    except TypeError:
        return json.dumps(data, separators=(",", ":"))


def decode(text: str) -> tuple[Message, ...]:
    """The messages :func:`encode` wrote; :class:`ThreadDecodeError` for anything else."""
    try:
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError:  # a lone surrogate's escape, which orjson refuses
            data = json.loads(text)
        if not isinstance(data, list):
            raise TypeError("not a list of messages")
        return tuple(_message(item) for item in data)
    except (TypeError, KeyError, ValueError) as exc:
        raise ThreadDecodeError(f"a stored thread does not read back: {exc}") from exc


def _message_json(message: Message) -> dict[str, Any]:
    return {"role": message.role, "parts": [_part_json(part) for part in message.parts]}


def _part_json(part: Part) -> dict[str, Any]:
    match part:
        case TextPart():
            out: dict[str, Any] = {"type": "text", "text": part.text}
        case ReasoningPart():
            out = {"type": "reasoning", "kind": part.kind, "text": part.text}
            out.update(complete=part.complete, provider=part.provider, model=part.model)
        case ToolCallPart():
            out = {"type": "tool_call", "id": part.tool_call_id, "name": part.name}
            out.update(arguments=part.arguments, complete=part.complete)
            out.update(provider=part.provider, model=part.model)
        case ToolResultPart():
            out = {"type": "tool_result", "id": part.tool_call_id, "name": part.name}
            out.update(content=part.content, is_error=part.is_error)
        case _:
            assert_never(part)
    if not isinstance(part, ToolResultPart) and part.provider_metadata:
        out["metadata"] = dict(part.provider_metadata)
    return out


def _message(item: Mapping[str, Any]) -> Message:
    role = item["role"]
    if role not in ("user", "assistant"):
        raise ValueError(f"unknown role {role!r}")
    return Message(role=role, parts=[_part(part) for part in item["parts"]])


def _text(item: Mapping[str, Any], key: str) -> str:
    value = item[key]
    if not isinstance(value, str):
        raise TypeError(f"{key} is not text")
    return value


def _optional_text(item: Mapping[str, Any], key: str) -> str | None:
    value = item.get(key)
    return value if isinstance(value, str) else None


def _part(item: Mapping[str, Any]) -> Part:
    metadata = item.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise TypeError("metadata is not an object")
    kind = item["type"]
    if kind == "text":
        return TextPart(text=_text(item, "text"), provider_metadata=metadata)
    if kind == "reasoning":
        return ReasoningPart(
            kind=item["kind"],
            text=_text(item, "text"),
            provider_metadata=metadata,
            complete=bool(item.get("complete", True)),
            provider=_optional_text(item, "provider"),
            model=_optional_text(item, "model"),
        )
    if kind == "tool_call":
        return ToolCallPart(
            tool_call_id=_text(item, "id"),
            name=_text(item, "name"),
            arguments=_text(item, "arguments"),
            provider_metadata=metadata,
            complete=bool(item.get("complete", True)),
            provider=_optional_text(item, "provider"),
            model=_optional_text(item, "model"),
        )
    if kind == "tool_result":
        return ToolResultPart(
            tool_call_id=_text(item, "id"),
            name=_text(item, "name"),
            content=_text(item, "content"),
            is_error=bool(item.get("is_error", False)),
        )
    raise ValueError(f"unknown part type {kind!r}")
