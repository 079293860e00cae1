"""What OpenAI's two APIs (Chat Completions, Responses) share in the gateway: efforts,
stop sequences, a message's content parts, function tools, and the error types by
status."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from thoughtline.gateway.dialects._common import Fields, Path
from thoughtline.model.requests import ToolSpec
from thoughtline.wire.api_errors import openai_error

EFFORTS: Final = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
"""The efforts OpenAI's APIs take (``max`` for the models that accept it)."""

TOOL_NAME: Final = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""A function's name as OpenAI takes it (Anthropic's rule is the same)."""

MAX_STOP_SEQUENCES: Final = 4


def stop_sequences(fields: Fields, value: object) -> tuple[str, ...]:
    """``stop``: a string or up to four strings."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        fields.wrong(("stop",), "a string or an array of strings", value)
    if len(value) > MAX_STOP_SEQUENCES:
        fields.fail(("stop",), f"takes at most {MAX_STOP_SEQUENCES} sequences, got {len(value)}.")
    return tuple(value)


def content_text(
    fields: Fields, content: object, path: Path, *, texts: tuple[str, ...], media: tuple[str, ...]
) -> str:
    """A message's text as OpenAI's APIs send it: a string, or an array of content parts,
    the text of those of a ``texts`` type and of refusals joined; a part of a ``media``
    type is not served."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        fields.wrong(path, "a string or an array of content parts", content)
    joined: list[str] = []
    for index, entry in enumerate(content):
        part = fields.mapping(entry, (*path, index))
        kind = part.get("type")
        if kind in texts:
            joined.append(fields.need(part, "text", (*path, index)))
        elif kind == "refusal":
            joined.append(fields.need(part, "refusal", (*path, index)))
        elif kind in media:
            fields.unsupported((*path, index, "type"), f"{kind} content is not served; send text.")
        else:
            fields.fail((*path, index, "type"), f"{kind!r} is not a content part type.")
    return "".join(joined)


def function_tools(
    fields: Fields, body: Mapping[str, Any], *, nested: bool
) -> tuple[ToolSpec, ...]:
    """``tools``: function tools only, each named once. Chat Completions holds a tool's
    ``name``, ``description`` and ``parameters`` in its ``function`` (``nested``),
    Responses in the tool itself."""
    tools: list[ToolSpec] = []
    seen: set[str] = set()
    for index, entry in enumerate(fields.array(body, "tools") or []):
        path: Path = ("tools", index)
        tool = fields.mapping(entry, path)
        if tool.get("type") != "function":
            fields.unsupported(
                (*path, "type"), f"{tool.get('type')!r} tools are not served; send function tools."
            )
        if nested:
            path = (*path, "function")
            tool = fields.mapping(tool.get("function"), path)
        name = _tool_name(fields, tool, path, seen)
        tools.append(
            ToolSpec(
                name=name,
                description=fields.string(tool, "description", path) or "",
                parameters=_tool_parameters(fields, tool, path),
            )
        )
    return tuple(tools)


def _tool_name(fields: Fields, function: Mapping[str, Any], path: Path, seen: set[str]) -> str:
    """A function tool's name, checked (the pattern, and unique among the tools)."""
    name = fields.need(function, "name", path)
    if TOOL_NAME.fullmatch(name) is None:
        shown = repr(name) if len(name) <= 80 else f"{name[:60]!r}…"
        fields.fail(
            (*path, "name"),
            f"{shown} is not a function name: 1 to 64 letters, digits, '_' or '-'.",
        )
    if name in seen:
        fields.fail((*path, "name"), f"{name!r} names two tools; give each tool its own name.")
    seen.add(name)
    return name


def _tool_parameters(fields: Fields, function: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """A function tool's JSON schema (an empty object schema when none is given)."""
    parameters = function.get("parameters")
    if parameters is None:
        return {"type": "object", "properties": {}}
    return fields.mapping(parameters, (*path, "parameters"))


def error_type(status: int) -> str:
    """The ``type`` OpenAI gives an error of this status (:mod:`thoughtline.wire.api_errors`)."""
    return openai_error(status)[0]
