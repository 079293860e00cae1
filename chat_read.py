"""Reading a Chat Completions body into a call (see the package docstring)."""

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
from thoughtline.gateway.dialects._openai import (
    EFFORTS,
    function_tools,
    stop_sequences,
)
from thoughtline.model.events import MetadataValue
from thoughtline.model.parts import Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Effort, Message, ToolSpec
from thoughtline.wire.openrouter import SUMMARY_FORMATS

_FIELDS: Final = Fields(openai_path)

_DETAIL_TEXT: Final[dict[str, str]] = {
    "reasoning.text": "text",
    "reasoning.summary": "summary",
    "reasoning.encrypted": "data",
}
"""OpenRouter's ``reasoning_details`` types and the key holding each one's text."""

_READ: Final = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "stop",
        "reasoning_effort",
        "thinking",
        "n",
        "response_format",
        "logprobs",
        "modalities",
    }
)
_IGNORED: Final = frozenset(
    {
        "user",
        "metadata",
        "seed",
        "store",
        "service_tier",
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
        "top_logprobs",
        "safety_identifier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "verbosity",
    }
)
_KNOWN: Final = _READ | _IGNORED
_UNKNOWN: Final = (
    "Unrecognized request argument supplied: {key}. Leave it out: it is not a field of the "
    "Chat Completions API."
)
_UNANSWERED: Final = (
    "{call_id} answers no tool call of an earlier assistant message; a tool message must "
    "follow the assistant message whose tool_calls hold its id."
)
_UNSERVED: Final[dict[str, str]] = {
    "audio": "audio output is not served; leave audio out",
    "prediction": "predicted outputs are not served; leave prediction out",
    "web_search_options": "hosted web search is not served; offer a function tool instead",
    "functions": "the legacy functions field is not served; send tools",
    "function_call": "the legacy function_call field is not served; send tool_choice",
}


def parse_object(body: Mapping[str, Any]) -> GatewayCall:
    """:func:`parse` for a body already read as JSON."""
    f = _FIELDS
    check_keys(f, body, known=_KNOWN, unserved=_UNSERVED, unknown=_UNKNOWN)
    model = f.model(body)
    _one_choice(body)
    _text_only(body)
    messages = f.array(body, "messages", required=True)
    assert messages is not None
    if not messages:
        f.fail(("messages",), "must hold at least one message.")
    system, history = _history(messages)
    tools = function_tools(f, body, nested=True)
    stream = f.boolean(body, "stream") or False
    options = body.get("stream_options")
    include_usage = not stream
    if options is not None:
        if not stream:
            f.fail(("stream_options",), "is only allowed when stream is true.")
        include_usage = f.boolean(f.mapping(options, ("stream_options",)), "include_usage") or False
    max_tokens = f.tokens(body, "max_completion_tokens")
    if max_tokens is None:
        max_tokens = f.tokens(body, "max_tokens")
    return GatewayCall(
        dialect="chat_completions",
        model=model,
        messages=history,
        system=system,
        tools=tools,
        tool_choice=_tool_choice(body.get("tool_choice"), tools),
        parallel_tool_calls=f.boolean(body, "parallel_tool_calls"),
        stream=stream,
        include_usage=include_usage,
        max_output_tokens=max_tokens,
        temperature=f.number(body, "temperature", low=0, high=2),
        top_p=f.number(body, "top_p", low=0, high=1),
        stop=stop_sequences(f, body.get("stop")),
        reasoning=_reasoning(body),
    )


parse: Final = body_parser(parse_object)
"""The call a Chat Completions body asks for (see the module docstring), or a
:class:`~thoughtline.gateway.dialects._common.DialectError`."""


def _one_choice(body: Mapping[str, Any]) -> None:
    n = body.get("n")
    if n is not None and n != 1:
        _FIELDS.unsupported(
            ("n",), f"only one choice is served, got {n!r}; send n: 1 or leave it out."
        )
    if body.get("logprobs") is True:
        _FIELDS.unsupported(("logprobs",), "log probabilities are not served; leave logprobs out.")


def _text_only(body: Mapping[str, Any]) -> None:
    response_format = body.get("response_format")
    if response_format is not None and (
        not isinstance(response_format, dict) or response_format.get("type") != "text"
    ):
        _FIELDS.unsupported(
            ("response_format",),
            "only text responses are served; describe the format in the prompt instead.",
        )
    modalities = body.get("modalities")
    if modalities is not None and modalities != ["text"]:
        _FIELDS.unsupported(("modalities",), 'only text output is served; send ["text"].')


def _reasoning(body: Mapping[str, Any]) -> ReasoningAsk:
    f = _FIELDS
    effort: Effort | None = None
    if body.get("reasoning_effort") is not None:
        effort = f.choice(body["reasoning_effort"], ("reasoning_effort",), EFFORTS)  # type: ignore[assignment]
    enabled: bool | None = None
    thinking = body.get("thinking")
    if thinking is not None:
        kind = f.mapping(thinking, ("thinking",)).get("type")
        enabled = f.choice(kind, ("thinking", "type"), ("enabled", "disabled")) == "enabled"
    return ReasoningAsk(enabled=enabled, effort=effort)


def _history(items: list[Any]) -> tuple[str | None, tuple[Message, ...]]:
    f = _FIELDS
    system: list[str] = []
    out: list[Message] = []
    results: list[Part] = []  # the user turn being built from tool messages
    names: dict[str, str] = {}  # tool call id → the function it called
    for index, item in enumerate(items):
        path: Path = ("messages", index)
        message = f.mapping(item, path)
        role = f.choice(
            message.get("role"),
            (*path, "role"),
            ("system", "developer", "user", "assistant", "tool"),
        )
        if role in ("system", "developer"):
            system.append(_text(message.get("content"), (*path, "content"), required=True))
            continue
        if role == "tool":
            results.append(_tool_result(message, path, names))
            continue
        if role == "user":
            text = _text(message.get("content"), (*path, "content"), required=True)
            out.append(Message(role="user", parts=(*results, TextPart(text=text))))
            results = []
            continue
        if results:
            out.append(Message(role="user", parts=tuple(results)))
            results = []
        out.append(_assistant(message, path, names))
    if results:
        out.append(Message(role="user", parts=tuple(results)))
    return ("\n\n".join(system) if system else None), tuple(out)


def _text(content: object, path: Path, *, required: bool = False) -> str:
    """A message's text: a string, or an array of ``text`` parts joined."""
    if content is None:
        if required:
            _FIELDS.missing(path)
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        _FIELDS.wrong(path, "a string or an array of content parts", content)
    texts: list[str] = []
    for index, entry in enumerate(content):
        part = _FIELDS.mapping(entry, (*path, index))
        kind = part.get("type")
        if kind in ("text", "refusal"):
            key = "text" if kind == "text" else "refusal"
            texts.append(_FIELDS.need(part, key, (*path, index)))
        elif kind in ("image_url", "input_audio", "file"):
            _FIELDS.unsupported((*path, index, "type"), f"{kind} content is not served; send text.")
        else:
            _FIELDS.fail((*path, index, "type"), f"{kind!r} is not a content part type.")
    return "".join(texts)


def _tool_result(message: Mapping[str, Any], path: Path, names: dict[str, str]) -> ToolResultPart:
    call_id, name = _FIELDS.answered(message, "tool_call_id", path, names, _UNANSWERED)
    content = _text(message.get("content"), (*path, "content"), required=True)
    return ToolResultPart(tool_call_id=call_id, name=name, content=content)


def _assistant(message: Mapping[str, Any], path: Path, names: dict[str, str]) -> Message:
    f = _FIELDS
    parts: list[Part] = []
    details = f.array(message, "reasoning_details", path)
    if details:
        # OpenRouter's structured form; its plain ``reasoning`` repeats the same text.
        parts.extend(
            _detail(entry, (*path, "reasoning_details", at)) for at, entry in enumerate(details)
        )
    else:
        for key in ("reasoning_content", "reasoning"):
            thought = f.string(message, key, path)
            if thought:
                parts.append(ReasoningPart(kind="raw", text=thought))
                break
    text = _text(message.get("content"), (*path, "content"))
    if text:
        parts.append(TextPart(text=text))
    calls = f.array(message, "tool_calls", path) or []
    for index, entry in enumerate(calls):
        where: Path = (*path, "tool_calls", index)
        call = f.mapping(entry, where)
        if call.get("type", "function") != "function":
            f.unsupported((*where, "type"), f"{call.get('type')!r} tool calls are not served.")
        call_id = f.need(call, "id", where)
        function = f.mapping(call.get("function"), (*where, "function"))
        name = f.need(function, "name", (*where, "function"))
        arguments = f.need(function, "arguments", (*where, "function"))
        names[call_id] = name
        parts.append(ToolCallPart(tool_call_id=call_id, name=name, arguments=arguments))
    if not parts:
        parts.append(TextPart(text=""))
    return Message(role="assistant", parts=tuple(parts))


def _detail(value: object, path: Path) -> ReasoningPart:
    """One OpenRouter ``reasoning_details`` entry as the Chat Completions wire's decoder
    reads it: its ``type``, ``format``, ``id``, ``index`` and carrier (``signature``,
    encrypted ``data``) kept; text in a summary format is a summary, other text raw, an
    entry with a carrier and no text ``encrypted``."""
    f = _FIELDS
    detail = f.mapping(value, path)
    kind = f.choice(detail.get("type"), (*path, "type"), tuple(_DETAIL_TEXT))
    metadata: dict[str, MetadataValue] = {
        key: detail[key]
        for key in ("type", "format", "id", "index")
        if key in detail and (detail[key] is None or isinstance(detail[key], str | int))
    }
    text_key = _DETAIL_TEXT[kind]
    carrier = f.string(detail, text_key, path) or ""
    if kind == "reasoning.encrypted":
        metadata["data"] = carrier
        return ReasoningPart(kind="encrypted", text="", provider_metadata=metadata)
    signature = f.string(detail, "signature", path)
    if signature is not None:
        metadata["signature"] = signature
    if not carrier and signature:
        return ReasoningPart(kind="encrypted", text="", provider_metadata=metadata)
    summary = kind == "reasoning.summary" or detail.get("format") in SUMMARY_FORMATS
    return ReasoningPart(
        kind="summary" if summary else "raw", text=carrier, provider_metadata=metadata
    )


def _tool_choice(value: object, tools: tuple[ToolSpec, ...]) -> ToolChoice | None:
    f = _FIELDS
    if value is None:
        return None
    if isinstance(value, str):
        mode = f.choice(value, ("tool_choice",), ("none", "auto", "required"))
        if mode != "none" and not tools:
            f.fail(("tool_choice",), "is only allowed when tools are specified.")
        return ToolChoice(mode=mode)  # type: ignore[arg-type]
    choice = f.mapping(value, ("tool_choice",))
    if choice.get("type") != "function":
        f.unsupported(
            ("tool_choice", "type"), f"{choice.get('type')!r} is not served; name a function."
        )
    function = f.mapping(choice.get("function"), ("tool_choice", "function"))
    name = f.need(function, "name", ("tool_choice", "function"))
    if name not in {tool.name for tool in tools}:
        f.fail(("tool_choice", "function", "name"), f"{name!r} is not one of the tools given.")
    return ToolChoice(mode="tool", name=name)
