"""Reading an Anthropic Messages body into a call (see the package docstring)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, Final

from thoughtline.gateway.call import GatewayCall, ReasoningAsk, ToolChoice
from thoughtline.gateway.dialects._common import (
    Fields,
    Path,
    anthropic_path,
    body_parser,
    check_keys,
    dumps,
)
from thoughtline.gateway.dialects._openai import TOOL_NAME
from thoughtline.model.parts import Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Effort, Message, ToolSpec

_FIELDS: Final = Fields(anthropic_path)

_READ: Final = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "system",
        "stop_sequences",
        "stream",
        "temperature",
        "top_p",
        "top_k",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
    }
)
_IGNORED: Final = frozenset({"metadata", "service_tier", "inference_geo", "speed"})
_KNOWN: Final = _READ | _IGNORED
_COUNTED: Final = frozenset(
    {"model", "messages", "system", "tools", "tool_choice", "thinking", "output_config"}
)
"""What a count_tokens body takes."""
_UNANSWERED: Final = (
    "unexpected tool_use_id {call_id} in a tool_result block: each tool_result block must "
    "answer a tool_use block of an earlier assistant message."
)
_UNSERVED: Final[dict[str, str]] = {
    "container": "code execution containers are not served; leave container out",
    "mcp_servers": "the MCP connector is not served; offer the tools as client tools",
    "context_management": "context management is not served; send the context to keep",
}
_UNKNOWN: Final = (
    "{key}: Extra inputs are not permitted. Leave it out: it is not a field of the Messages API"
)
_EFFORTS: Final = ("low", "medium", "high", "xhigh", "max")
_MIN_BUDGET: Final = 1024
_UNSERVED_BLOCKS: Final = frozenset(
    {"image", "document", "search_result", "container_upload", "server_tool_use"}
)


def count_tokens_body(input_tokens: int) -> dict[str, Any]:
    """The count's answer, as the API gives it."""
    return {"input_tokens": input_tokens}


def parse_object(body: Mapping[str, Any], *, counting: bool = False) -> GatewayCall:
    """:func:`parse` (or, ``counting``, :func:`parse_count_tokens`) for a body already
    read as JSON."""
    f = _FIELDS
    check_keys(
        f,
        body,
        known=_COUNTED if counting else _KNOWN,
        unserved=_UNSERVED,
        unknown=_UNKNOWN + (" count_tokens body." if counting else "."),
    )
    model = f.model(body)
    max_tokens = f.tokens(body, "max_tokens", required=not counting)
    messages = f.array(body, "messages", required=True)
    assert messages is not None
    if not messages:
        f.fail(("messages",), "must hold at least one message.")
    tools, parallel = _tools(body), None
    choice = body.get("tool_choice")
    tool_choice = None
    if choice is not None:
        tool_choice, parallel = _tool_choice(choice, tools)
    return GatewayCall(
        dialect="messages",
        model=model,
        messages=_history(messages),
        system=_system(body.get("system")),
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        stream=f.boolean(body, "stream") or False,
        include_usage=True,
        max_output_tokens=max_tokens,
        temperature=f.number(body, "temperature", low=0, high=1),
        top_p=f.number(body, "top_p", low=0, high=1),
        stop=_stop(body.get("stop_sequences")),
        reasoning=_reasoning(body),
    )


parse: Final = body_parser(parse_object)
"""The call a Messages body asks for, or a
:class:`~thoughtline.gateway.dialects._common.DialectError`."""

parse_count_tokens: Final = body_parser(partial(parse_object, counting=True))
"""The call whose input ``POST /v1/messages/count_tokens`` asks to count: the same body
less what only generation takes (``max_tokens``, ``stream``, sampling, stop sequences,
``metadata``), which the API refuses there."""


def _system(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        _FIELDS.wrong(("system",), "a string or an array of text blocks", value)
    texts: list[str] = []
    for index, entry in enumerate(value):
        block = _FIELDS.mapping(entry, ("system", index))
        if block.get("type") != "text":
            _FIELDS.fail(("system", index, "type"), "system blocks are text blocks.")
        texts.append(_FIELDS.need(block, "text", ("system", index)))
    return "\n\n".join(texts)


def _stop(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        _FIELDS.wrong(("stop_sequences",), "an array of strings", value)
    return tuple(value)


def _reasoning(body: Mapping[str, Any]) -> ReasoningAsk:
    f = _FIELDS
    enabled: bool | None = None
    budget: int | None = None
    display: str | None = None
    thinking = body.get("thinking")
    if thinking is not None:
        shape = f.mapping(thinking, ("thinking",))
        kind = f.choice(
            shape.get("type"), ("thinking", "type"), ("enabled", "adaptive", "disabled")
        )
        enabled = kind != "disabled"
        if kind == "enabled":
            budget = f.tokens(shape, "budget_tokens", ("thinking",), required=True)
            assert budget is not None
            if budget < _MIN_BUDGET:
                f.fail(
                    ("thinking", "budget_tokens"), f"must be at least {_MIN_BUDGET}, got {budget}."
                )
        if shape.get("display") is not None:
            display = f.choice(shape["display"], ("thinking", "display"), ("summarized", "omitted"))
    effort: Effort | None = None
    config = body.get("output_config")
    if config is not None:
        shape = f.mapping(config, ("output_config",))
        if shape.get("format") is not None:
            f.unsupported(
                ("output_config", "format"),
                "structured outputs are not served; describe the format in the prompt.",
            )
        if shape.get("effort") is not None:
            effort = f.choice(shape["effort"], ("output_config", "effort"), _EFFORTS)  # type: ignore[assignment]
    return ReasoningAsk(enabled=enabled, effort=effort, budget_tokens=budget, display=display)


def _history(items: list[Any]) -> tuple[Message, ...]:
    f = _FIELDS
    out: list[Message] = []
    names: dict[str, str] = {}  # tool_use id → the tool it called
    for index, item in enumerate(items):
        path: Path = ("messages", index)
        message = f.mapping(item, path)
        role = f.choice(message.get("role"), (*path, "role"), ("user", "assistant"))
        content = message.get("content")
        if isinstance(content, str):
            out.append(Message(role=role, content=content))  # type: ignore[arg-type]
            continue
        if not isinstance(content, list):
            f.wrong((*path, "content"), "a string or an array of content blocks", content)
        parts = [_part(block, (*path, "content", at), names) for at, block in enumerate(content)]
        out.append(Message(role=role, parts=[part for part in parts if part is not None]))  # type: ignore[arg-type]
    return tuple(out)


def _part(value: object, path: Path, names: dict[str, str]) -> Part | None:
    f = _FIELDS
    block = f.mapping(value, path)
    kind = block.get("type")
    if kind == "text":
        text = f.need(block, "text", path)
        return TextPart(text=text) if text else None
    if kind == "thinking":
        text = f.need(block, "thinking", path)
        signature = f.need(block, "signature", path)
        return ReasoningPart(
            kind="summary" if text else "encrypted",
            text=text,
            provider_metadata={"signature": signature},
        )
    if kind == "redacted_thinking":
        return ReasoningPart(
            kind="redacted", text="", provider_metadata={"data": f.need(block, "data", path)}
        )
    if kind == "tool_use":
        call_id = f.need(block, "id", path)
        name = f.need(block, "name", path)
        arguments = f.mapping(block.get("input"), (*path, "input"))
        names[call_id] = name
        return ToolCallPart(tool_call_id=call_id, name=name, arguments=dumps(arguments).decode())
    if kind == "tool_result":
        return _tool_result(block, path, names)
    if kind in _UNSERVED_BLOCKS or (isinstance(kind, str) and kind.endswith("_tool_result")):
        f.unsupported((*path, "type"), f"{kind} blocks are not served; send text.")
    shown = repr(kind) if isinstance(kind, str) else "a block without a type"
    f.fail((*path, "type"), f"{shown} is not a content block type the gateway reads.")


def _tool_result(block: Mapping[str, Any], path: Path, names: dict[str, str]) -> ToolResultPart:
    f = _FIELDS
    call_id, name = f.answered(block, "tool_use_id", path, names, _UNANSWERED)
    content = block.get("content")
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):
        pieces: list[str] = []
        for index, entry in enumerate(content):
            inner = f.mapping(entry, (*path, "content", index))
            if inner.get("type") != "text":
                f.unsupported(
                    (*path, "content", index, "type"),
                    f"{inner.get('type')!r} blocks in a tool result are not served; send text.",
                )
            pieces.append(f.need(inner, "text", (*path, "content", index)))
        text = "".join(pieces)
    else:
        f.wrong((*path, "content"), "a string or an array of text blocks", content)
    return ToolResultPart(
        tool_call_id=call_id,
        name=name,
        content=text,
        is_error=f.boolean(block, "is_error", path) or False,
    )


def _tools(body: Mapping[str, Any]) -> tuple[ToolSpec, ...]:
    f = _FIELDS
    tools: list[ToolSpec] = []
    seen: set[str] = set()
    for index, entry in enumerate(f.array(body, "tools") or []):
        path: Path = ("tools", index)
        tool = f.mapping(entry, path)
        kind = tool.get("type", "custom")
        if kind != "custom":
            f.unsupported(
                (*path, "type"),
                f"{kind!r} tools are not served; send client tools (name, input_schema).",
            )
        name = f.need(tool, "name", path)
        if TOOL_NAME.fullmatch(name) is None:
            f.fail((*path, "name"), "must be 1 to 64 letters, digits, '_' or '-'.")
        if name in seen:
            f.fail((*path, "name"), f"{name!r} names two tools; give each tool its own name.")
        seen.add(name)
        schema = tool.get("input_schema")
        if schema is None:
            f.missing((*path, "input_schema"))
        tools.append(
            ToolSpec(
                name=name,
                description=f.string(tool, "description", path) or "",
                parameters=f.mapping(schema, (*path, "input_schema")),
            )
        )
    return tuple(tools)


def _tool_choice(value: object, tools: tuple[ToolSpec, ...]) -> tuple[ToolChoice, bool | None]:
    f = _FIELDS
    choice = f.mapping(value, ("tool_choice",))
    kind = f.choice(choice.get("type"), ("tool_choice", "type"), ("auto", "any", "tool", "none"))
    disable = f.boolean(choice, "disable_parallel_tool_use", ("tool_choice",))
    parallel = None if disable is None else not disable
    if kind == "tool":
        name = f.need(choice, "name", ("tool_choice",))
        if name not in {tool.name for tool in tools}:
            f.fail(("tool_choice", "name"), f"{name!r} is not one of the tools given.")
        return ToolChoice(mode="tool", name=name), parallel
    mode = {"auto": "auto", "any": "required", "none": "none"}[kind]
    return ToolChoice(mode=mode), parallel  # type: ignore[arg-type]
