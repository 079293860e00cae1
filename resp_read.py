"""Reading an OpenAI Responses body into a call (see the package docstring)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from thoughtline.gateway.call import GatewayCall, ReasoningAsk, ToolChoice
from thoughtline.gateway.dialects._common import (
    Fields,
    Path,
    body_parser,
    check_keys,
    openai_path,
)
from thoughtline.gateway.dialects._openai import EFFORTS, function_tools
from thoughtline.model.events import MetadataValue
from thoughtline.model.parts import Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Effort, Message, ToolSpec

_FIELDS: Final = Fields(openai_path)

_READ: Final = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "stream",
        "store",
        "include",
        "reasoning",
        "max_output_tokens",
        "temperature",
        "top_p",
        "text",
        "background",
    }
)
_IGNORED: Final = frozenset(
    {
        "metadata",
        "user",
        "service_tier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "safety_identifier",
        "truncation",
        "top_logprobs",
        "max_tool_calls",
        "stream_options",
    }
)
_KNOWN: Final = _READ | _IGNORED
_UNKNOWN: Final = (
    "Unknown parameter: '{key}'. Leave it out: it is not a field of the Responses API."
)
_UNANSWERED: Final = (
    "no tool call found for function call output with call_id {call_id}; send the "
    "function_call item before its output."
)
_UNSERVED: Final[dict[str, str]] = {
    "previous_response_id": (
        "the gateway keeps no responses to continue; send the whole conversation in input "
        '(with store: false and include: ["reasoning.encrypted_content"] to keep reasoning)'
    ),
    "conversation": "the gateway keeps no conversations; send the whole conversation in input",
    "prompt": "stored prompt templates are not served; send instructions and input",
}
ENCRYPTED_CONTENT: Final = "reasoning.encrypted_content"
_INCLUDES: Final = frozenset(
    {
        ENCRYPTED_CONTENT,
        "message.output_text.logprobs",
        "file_search_call.results",
        "web_search_call.results",
        "web_search_call.action.sources",
        "message.input_image.image_url",
        "computer_call_output.output.image_url",
        "code_interpreter_call.outputs",
    }
)


def parse_object(body: Mapping[str, Any]) -> GatewayCall:
    """:func:`parse` for a body already read as JSON."""
    f = _FIELDS
    check_keys(
        f,
        body,
        known=_KNOWN,
        unserved=_UNSERVED,
        unknown=_UNKNOWN,
        null_unserved=True,
    )
    model = f.model(body)
    if f.boolean(body, "background"):
        f.unsupported(
            ("background",), "background responses are not served; send background: false."
        )
    _text_format(body.get("text"))
    system: list[str] = []
    instructions = f.string(body, "instructions")
    if instructions:
        system.append(instructions)
    value = body.get("input")
    if value is None:
        f.missing(("input",))
    if isinstance(value, str):
        history: tuple[Message, ...] = (Message(role="user", content=value),)
    elif isinstance(value, list):
        history = _history(value, system)
    else:
        f.wrong(("input",), "a string or an array of input items", value)
    tools = function_tools(f, body, nested=False)
    stream = f.boolean(body, "stream") or False
    return GatewayCall(
        dialect="responses",
        model=model,
        messages=history,
        system="\n\n".join(system) if system else None,
        tools=tools,
        tool_choice=_tool_choice(body.get("tool_choice"), tools),
        parallel_tool_calls=f.boolean(body, "parallel_tool_calls"),
        stream=stream,
        include_usage=True,
        max_output_tokens=f.tokens(body, "max_output_tokens"),
        temperature=f.number(body, "temperature", low=0, high=2),
        top_p=f.number(body, "top_p", low=0, high=1),
        reasoning=_reasoning(body),
        store=f.boolean(body, "store"),
    )


parse: Final = body_parser(parse_object)
"""The call a Responses body asks for, or a
:class:`~thoughtline.gateway.dialects._common.DialectError`."""


def _text_format(value: object) -> None:
    if value is None:
        return
    text = _FIELDS.mapping(value, ("text",))
    shape = text.get("format")
    if shape is not None and (not isinstance(shape, dict) or shape.get("type") != "text"):
        _FIELDS.unsupported(
            ("text", "format"), "only text responses are served; describe the format in the prompt."
        )


def _reasoning(body: Mapping[str, Any]) -> ReasoningAsk:
    f = _FIELDS
    include = f.array(body, "include") or []
    for index, entry in enumerate(include):
        if not isinstance(entry, str) or entry not in _INCLUDES:
            shown = repr(entry) if isinstance(entry, str) else "a non-string"
            f.fail(("include", index), f"{shown} is not an include value of this API.")
    effort: Effort | None = None
    summary: str | None = None
    value = body.get("reasoning")
    if value is not None:
        shape = f.mapping(value, ("reasoning",))
        if shape.get("effort") is not None:
            effort = f.choice(shape["effort"], ("reasoning", "effort"), EFFORTS)  # type: ignore[assignment]
        for key in ("summary", "generate_summary"):
            if shape.get(key) is not None:
                summary = f.choice(shape[key], ("reasoning", key), ("auto", "concise", "detailed"))
    return ReasoningAsk(
        effort=effort, summary=summary, include_encrypted=ENCRYPTED_CONTENT in include
    )


class _Turns:
    """Input items → messages: items of one side (the assistant's: its messages,
    reasoning and calls; the user's: call outputs, then the text that follows them) join
    one message, as one response's output items are one turn."""

    def __init__(self) -> None:
        self.out: list[Message] = []
        self.role: str | None = None
        self.parts: list[Part] = []
        self.names: dict[str, str] = {}

    def add(self, role: str, part: Part, *, new_turn: bool = False) -> None:
        if role != self.role or new_turn:
            self.end()
            self.role = role
        self.parts.append(part)

    def end(self) -> None:
        if self.role is not None:
            self.out.append(Message(role=self.role, parts=self.parts))  # type: ignore[arg-type]
        self.role, self.parts = None, []


def _history(items: list[Any], system: list[str]) -> tuple[Message, ...]:
    f = _FIELDS
    turns = _Turns()
    for index, entry in enumerate(items):
        path: Path = ("input", index)
        item = f.mapping(entry, path)
        kind = item.get("type", "message")
        if kind == "message":
            _message(item, path, turns, system)
        elif kind == "function_call":
            call_id = f.need(item, "call_id", path)
            name = f.need(item, "name", path)
            arguments = f.need(item, "arguments", path)
            turns.names[call_id] = name
            item_id = f.string(item, "id", path)
            metadata = {"item_id": item_id} if item_id else {}
            turns.add(
                "assistant",
                ToolCallPart(
                    tool_call_id=call_id, name=name, arguments=arguments, provider_metadata=metadata
                ),
            )
        elif kind == "function_call_output":
            turns.add("user", _output(item, path, turns.names))
        elif kind == "reasoning":
            for part in _reasoning_item(item, path):
                turns.add("assistant", part)
        elif kind == "item_reference":
            f.unsupported(
                (*path, "type"), "the gateway keeps no items to refer to; send the item itself."
            )
        elif isinstance(kind, str) and kind.endswith(("_call", "_call_output")):
            f.unsupported((*path, "type"), f"{kind} items are not served; only function tools are.")
        else:
            f.fail((*path, "type"), f"{kind!r} is not an input item type.")
    turns.end()
    return tuple(turns.out)


def _message(item: Mapping[str, Any], path: Path, turns: _Turns, system: list[str]) -> None:
    f = _FIELDS
    role = f.choice(item.get("role"), (*path, "role"), ("user", "assistant", "system", "developer"))
    text = _content(item.get("content"), (*path, "content"))
    if role in ("system", "developer"):
        system.append(text)
        return
    if role == "user":
        # A user message after tool outputs joins their turn; after text, it is a new one.
        fresh = not turns.parts or not all(isinstance(p, ToolResultPart) for p in turns.parts)
        turns.add("user", TextPart(text=text), new_turn=fresh)
        return
    metadata: dict[str, MetadataValue] = {}
    if isinstance(item.get("id"), str):
        metadata["item_id"] = item["id"]
    phase = f.string(item, "phase", path)
    if phase is not None:
        metadata["phase"] = phase
    turns.add("assistant", TextPart(text=text, provider_metadata=metadata))


def _content(content: object, path: Path) -> str:
    f = _FIELDS
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        f.wrong(path, "a string or an array of content parts", content)
    texts: list[str] = []
    for index, entry in enumerate(content):
        part = f.mapping(entry, (*path, index))
        kind = part.get("type")
        if kind in ("input_text", "output_text"):
            texts.append(f.need(part, "text", (*path, index)))
        elif kind == "refusal":
            texts.append(f.need(part, "refusal", (*path, index)))
        elif kind in ("input_image", "input_file", "input_audio"):
            f.unsupported((*path, index, "type"), f"{kind} content is not served; send text.")
        else:
            f.fail((*path, index, "type"), f"{kind!r} is not a content part type.")
    return "".join(texts)


def _output(item: Mapping[str, Any], path: Path, names: dict[str, str]) -> ToolResultPart:
    f = _FIELDS
    call_id, name = f.answered(item, "call_id", path, names, _UNANSWERED)
    return ToolResultPart(
        tool_call_id=call_id, name=name, content=_content(item.get("output"), (*path, "output"))
    )


def _reasoning_item(item: Mapping[str, Any], path: Path) -> list[ReasoningPart]:
    """A reasoning item as the Responses wire's decoder reads one: a part per summary
    and per raw text, and its ``encrypted_content`` as an ``encrypted`` part."""
    f = _FIELDS
    item_id = f.need(item, "id", path)
    parts: list[ReasoningPart] = []
    for index, entry in enumerate(f.array(item, "summary", path, required=True) or []):
        summary = f.mapping(entry, (*path, "summary", index))
        parts.append(
            ReasoningPart(
                kind="summary",
                text=f.need(summary, "text", (*path, "summary", index)),
                provider_metadata={"item_id": item_id, "summary_index": index},
            )
        )
    for index, entry in enumerate(f.array(item, "content", path) or []):
        raw = f.mapping(entry, (*path, "content", index))
        parts.append(
            ReasoningPart(
                kind="raw",
                text=f.need(raw, "text", (*path, "content", index)),
                provider_metadata={"item_id": item_id, "content_index": index},
            )
        )
    encrypted = f.string(item, "encrypted_content", path)
    if encrypted:
        parts.append(
            ReasoningPart(
                kind="encrypted",
                text="",
                provider_metadata={"item_id": item_id, "encrypted_content": encrypted},
            )
        )
    return parts


def _tool_choice(value: object, tools: tuple[ToolSpec, ...]) -> ToolChoice | None:
    f = _FIELDS
    if value is None:
        return None
    if isinstance(value, str):
        return ToolChoice(mode=f.choice(value, ("tool_choice",), ("none", "auto", "required")))  # type: ignore[arg-type]
    choice = f.mapping(value, ("tool_choice",))
    if choice.get("type") != "function":
        f.unsupported(
            ("tool_choice", "type"), f"{choice.get('type')!r} is not served; name a function."
        )
    name = f.need(choice, "name", ("tool_choice",))
    if name not in {tool.name for tool in tools}:
        f.fail(("tool_choice", "name"), f"{name!r} is not one of the tools given.")
    return ToolChoice(mode="tool", name=name)
