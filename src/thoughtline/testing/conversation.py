"""What a request asks the simulated model, read from any wire API's body.

Each renderer reads its own wire's request into one :class:`SimConversation`: the
system prompt, the latest user text, the tools offered and the tool results sent since
that text. The simulator's default model (:mod:`thoughtline.testing.default_model`)
answers from it, so it behaves the same on every wire. Reading is tolerant, as a
provider's server is: a part of a shape it does not know is skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class SimTool:
    """A tool the request offers: its name, description and JSON schema."""

    name: str
    description: str = ""
    schema: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class SimToolResult:
    """A tool result the request sends back, with the name of the call it answers."""

    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SimConversation:
    """The request as the model reads it."""

    system: str = ""
    prompt: str = ""
    """The latest user text (an earlier turn's text when the latest has none)."""
    tools: tuple[SimTool, ...] = ()
    results: tuple[SimToolResult, ...] = ()
    """The tool results sent since the latest user text, in order."""
    tool_steps: int = 0
    """How many model turns with tool calls came since the latest user text."""
    model_turns: int = 0
    """How many model turns the whole history holds (the turn a script answers next)."""


class _Reader:
    """Builds a conversation turn by turn, in the order the request sends them."""

    def __init__(self) -> None:
        self.prompt = ""
        self.results: list[SimToolResult] = []
        self.tool_steps = 0
        self.model_turns = 0
        self.call_names: dict[str, str] = {}

    def user_text(self, text: str) -> None:
        if text.strip():
            self.prompt = text
            self.results = []
            self.tool_steps = 0

    def calls(self, calls: Iterable[tuple[str, str]], *, new_turn: bool = True) -> None:
        """A model turn's tool calls, as (call id, tool name); ``new_turn=False`` when
        the turn was counted already (:meth:`model_turn`)."""
        if new_turn:
            self.model_turns += 1
        listed = list(calls)
        if listed:
            self.tool_steps += 1
        for call_id, name in listed:
            self.call_names[call_id] = name

    def model_turn(self) -> None:
        """A model turn begins (for wires whose turns are not one message each)."""
        self.model_turns += 1

    def result(self, call_id: str, content: object, *, name: str = "", error: bool = False) -> None:
        self.results.append(
            SimToolResult(
                call_id=call_id,
                name=name or self.call_names.get(call_id, ""),
                content=_text_of(content),
                is_error=error,
            )
        )

    def conversation(self, system: str, tools: tuple[SimTool, ...]) -> SimConversation:
        return SimConversation(
            system=system,
            prompt=self.prompt,
            tools=tools,
            results=tuple(self.results),
            tool_steps=self.tool_steps,
            model_turns=self.model_turns,
        )


def _text_of(content: object) -> str:
    """The text of a content value: a string, a list of text parts, or JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [_text_of(item) for item in content]
        return "\n".join(text for text in texts if text)
    if isinstance(content, Mapping):
        text = content.get("text")
        if isinstance(text, str) and content.get("type") in (None, "text", "input_text"):
            return text
        if content.get("type") in ("image", "input_image", "image_url"):
            return ""
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _dicts(value: object) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _tool(name: object, description: object, schema: object) -> SimTool | None:
    if not isinstance(name, str) or not name:
        return None
    return SimTool(
        name=name,
        description=_str(description),
        schema=schema if isinstance(schema, Mapping) else {},
    )


def _present(tools: Iterable[SimTool | None]) -> tuple[SimTool, ...]:
    return tuple(tool for tool in tools if tool is not None)


# ---------------------------------------------------------------- Anthropic Messages


def read_anthropic(body: Mapping[str, Any]) -> SimConversation:
    reader = _Reader()
    for message in _dicts(body.get("messages")):
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks = _dicts(blocks)
        if message.get("role") == "assistant":
            reader.calls(
                (_str(block.get("id")), _str(block.get("name")))
                for block in blocks
                if block.get("type") == "tool_use"
            )
            continue
        reader.user_text(_text_of([block for block in blocks if block.get("type") == "text"]))
        for block in blocks:
            if block.get("type") == "tool_result":
                reader.result(
                    _str(block.get("tool_use_id")),
                    block.get("content"),
                    error=block.get("is_error") is True,
                )
    system = body.get("system")
    tools = _present(
        _tool(tool.get("name"), tool.get("description"), tool.get("input_schema"))
        for tool in _dicts(body.get("tools"))
    )
    return reader.conversation(_text_of(system) if system is not None else "", tools)


# ---------------------------------------------------------------- OpenAI Responses


def read_openai_responses(body: Mapping[str, Any]) -> SimConversation:
    reader = _Reader()
    items = body.get("input")
    if isinstance(items, str):
        reader.user_text(items)
        items = []
    pending: list[tuple[str, str]] = []
    in_model_turn = False  # a model turn is a run of reasoning, message and call items
    for item in _dicts(items):
        item_type = item.get("type", "message")
        by_model = item_type in ("reasoning", "function_call") or (
            item_type == "message" and item.get("role") == "assistant"
        )
        if by_model and not in_model_turn:
            reader.model_turn()
        in_model_turn = by_model
        if item_type == "function_call":
            pending.append((_str(item.get("call_id")), _str(item.get("name"))))
            continue
        if by_model:
            continue
        if pending:
            reader.calls(pending, new_turn=False)
            pending = []
        if item_type == "function_call_output":
            reader.result(_str(item.get("call_id")), item.get("output"))
        elif item_type == "message" and item.get("role") == "user":
            reader.user_text(_text_of(item.get("content")))
    if pending:
        reader.calls(pending, new_turn=False)
    tools = _present(
        _tool(tool.get("name"), tool.get("description"), tool.get("parameters"))
        for tool in _dicts(body.get("tools"))
        if tool.get("type") == "function"
    )
    return reader.conversation(_str(body.get("instructions")), tools)


# ------------------------------------------------------- OpenAI Chat Completions, Ollama


def read_chat(body: Mapping[str, Any]) -> SimConversation:
    """Chat Completions and Ollama's ``/api/chat`` (the same message shapes, except that
    Ollama's tool results name the tool instead of the call)."""
    reader = _Reader()
    system: list[str] = []
    for message in _dicts(body.get("messages")):
        role = message.get("role")
        if role in ("system", "developer"):
            system.append(_text_of(message.get("content")))
        elif role == "user":
            reader.user_text(_text_of(message.get("content")))
        elif role == "assistant":
            calls = _dicts(message.get("tool_calls"))
            reader.calls(
                (
                    _str(call.get("id")) or f"#{index}",
                    _str(_function(call).get("name")),
                )
                for index, call in enumerate(calls)
            )
        elif role == "tool":
            reader.result(
                _str(message.get("tool_call_id")),
                message.get("content"),
                name=_str(message.get("tool_name")) or _str(message.get("name")),
            )
    tools = _present(
        _tool(
            _function(tool).get("name"),
            _function(tool).get("description"),
            _function(tool).get("parameters"),
        )
        for tool in _dicts(body.get("tools"))
    )
    return reader.conversation("\n".join(text for text in system if text), tools)


def _function(item: Mapping[str, Any]) -> Mapping[str, Any]:
    function = item.get("function")
    return function if isinstance(function, Mapping) else {}


# ---------------------------------------------------------------- Gemini


def read_gemini(body: Mapping[str, Any]) -> SimConversation:
    reader = _Reader()
    for content in _dicts(body.get("contents")):
        parts = _dicts(content.get("parts"))
        if content.get("role") == "model":
            reader.calls(
                (_str(call.get("id")) or _str(call.get("name")), _str(call.get("name")))
                for part in parts
                if isinstance(call := part.get("functionCall"), Mapping)
            )
            continue
        texts = [part for part in parts if isinstance(part.get("text"), str)]
        reader.user_text(_text_of([{"text": part["text"]} for part in texts]))
        for part in parts:
            response = part.get("functionResponse")
            if not isinstance(response, Mapping):
                continue
            payload = response.get("response")
            payload = payload if isinstance(payload, Mapping) else {}
            error = "error" in payload and "output" not in payload
            name = _str(response.get("name"))
            reader.result(
                _str(response.get("id")) or name,
                payload.get("error" if error else "output", payload),
                name=name,
                error=error,
            )
    system = body.get("systemInstruction")
    system_text = _text_of(system.get("parts")) if isinstance(system, Mapping) else ""
    declarations = [
        declaration
        for tool in _dicts(body.get("tools"))
        for declaration in _dicts(tool.get("functionDeclarations"))
    ]
    tools = _present(
        _tool(
            declaration.get("name"),
            declaration.get("description"),
            declaration.get("parametersJsonSchema", declaration.get("parameters")),
        )
        for declaration in declarations
    )
    return reader.conversation(system_text, tools)
