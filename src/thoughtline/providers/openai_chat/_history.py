"""A history → the Chat Completions ``messages`` array, per dialect.

Tool calls go back as the assistant message's ``tool_calls``; each tool result is a
``{"role": "tool"}`` message. What reasoning goes back depends on the dialect:

==================  ===========================================================
dialect             reasoning sent back on the assistant message
==================  ===========================================================
openai              none (hosted chat completions return no reasoning)
openrouter          ``reasoning_details`` as they came (Gemini and Claude behind
                    OpenRouter fail without them after a tool call)
raw-reasoning,      ``reasoning_content`` on every assistant message with tool
effort control      calls, even empty (DeepSeek thinking mode, ``deepseek-reasoner``
(DeepSeek)          included: 400 otherwise); never on plain turns, where the API
                    ignores it
raw-reasoning,      ``reasoning_content`` whenever the turn had reasoning
toggle control      (vLLM, llama.cpp)
(vLLM, llama.cpp)
==================  ===========================================================

Only reasoning produced by the same endpoint and model goes back. A message of one
plain text part is sent as ``{"role", "content"}`` with a string, as one-turn requests
always were.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal, TypeAlias, assert_never

from thoughtline.model.parts import (
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    from_origin,
    plain_text,
)
from thoughtline.model.requests import Message
from thoughtline.providers._history import wire_items
from thoughtline.providers.endpoints import ChatDialect

Echo: TypeAlias = Literal["none", "details", "content_with_tools", "content"]
"""How a dialect sends reasoning back (see the module docstring)."""

_DETAIL_TEXT_KEY: Final[dict[str, str]] = {
    "reasoning.text": "text",
    "reasoning.summary": "summary",
    "reasoning.encrypted": "data",
}


def reasoning_echo(dialect: ChatDialect, thinking_control: str) -> Echo:
    """How reasoning goes back on a ``dialect`` endpoint."""
    if dialect == "openrouter":
        return "details"
    if dialect != "raw-reasoning":
        return "none"
    return "content_with_tools" if thinking_control == "effort" else "content"


def chat_messages(
    messages: Sequence[Message], *, provider: str, model: str, echo: Echo
) -> list[dict[str, Any]]:
    """The turns of the ``messages`` array (the system message is added by the caller)."""
    return wire_items(
        messages,
        ("openai-chat", provider, model, echo),
        lambda m: _turns(m, provider=provider, model=model, echo=echo),
    )


def _turns(message: Message, *, provider: str, model: str, echo: Echo) -> list[dict[str, Any]]:
    text = plain_text(message.parts)
    if text is not None:
        return [{"role": message.role, "content": text}]
    if message.role == "assistant":
        return [_assistant(message, provider=provider, model=model, echo=echo)]
    return _user(message)


def _assistant(message: Message, *, provider: str, model: str, echo: Echo) -> dict[str, Any]:
    texts: list[str] = []
    reasoning: list[ReasoningPart] = []
    calls: list[dict[str, Any]] = []
    for part in message.parts:
        match part:
            case TextPart():
                texts.append(part.text)
            case ReasoningPart():
                if from_origin(part, provider=provider, model=model):
                    reasoning.append(part)
            case ToolCallPart():
                calls.append(
                    {
                        "id": part.tool_call_id,
                        "type": "function",
                        "function": {"name": part.name, "arguments": part.arguments},
                    }
                )
            case ToolResultPart():
                pass  # results belong to user turns; an assistant turn has none to send
            case _:
                assert_never(part)
    # With tool calls and no text, content is null, as the API returns it.
    content = "".join(texts) if texts or not calls else None
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if echo == "details":
        details = [detail for part in reasoning if (detail := _detail(part)) is not None]
        if details:
            out["reasoning_details"] = details
    elif (echo == "content_with_tools" and calls) or (echo == "content" and reasoning):
        out["reasoning_content"] = "".join(part.as_arrived for part in reasoning)
    if calls:
        out["tool_calls"] = calls
    return out


def _user(message: Message) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            out.append({"role": "tool", "tool_call_id": part.tool_call_id, "content": part.content})
        elif isinstance(part, TextPart):
            out.append({"role": message.role, "content": part.text})
    return out


def _detail(part: ReasoningPart) -> dict[str, Any] | None:
    """The OpenRouter ``reasoning_details`` entry a part came from, rebuilt from its
    recorded fields; parts read from the plain ``reasoning`` string have none."""
    metadata = part.provider_metadata
    detail_type = metadata.get("type")
    if not isinstance(detail_type, str) or detail_type not in _DETAIL_TEXT_KEY:
        return None
    detail: dict[str, Any] = {"type": detail_type}
    key = _DETAIL_TEXT_KEY[detail_type]
    if key == "data":
        detail["data"] = metadata.get("data")
    else:
        detail[key] = part.as_arrived
    if "signature" in metadata:
        detail["signature"] = metadata["signature"]
    for name in ("format", "id", "index"):
        if name in metadata:
            detail[name] = metadata[name]
    return detail
