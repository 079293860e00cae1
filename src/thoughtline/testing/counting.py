"""The simulated token counts: Anthropic's ``POST /anthropic/v1/messages/count_tokens``
and Gemini's ``POST /gemini/v1beta/models/{model}:countTokens``.

Each answers as that API does. Anthropic's: ``{"input_tokens": N}`` for a body of a
Messages request's input fields (``model``, ``messages``, ``system``, ``tools``,
``tool_choice``, ``thinking``, ``output_config``), its 400 for a field only generation
takes (``max_tokens: Extra inputs are not permitted``) or a missing one. Gemini's:
``{"totalTokens": N}`` for ``contents`` or a ``generateContentRequest`` (one of the two,
the latter naming its ``model``), its 400 ``INVALID_ARGUMENT`` otherwise. Both answer a
model they do not serve with their not-found answer, and an injected ``http_error``
fault as for a call.

They count the way the simulator derives token counts (about 4 characters a token, each
piece of text at least one): the system prompt, each tool's name, description and
schema, each message's text, tool calls (name and arguments) and tool results, and, as
Anthropic counts them, the reasoning of the current model turn only (the last assistant
message; earlier turns' thinking is not counted).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote

from thoughtline.testing._asgi import Receive, Scope, Send, plain, read_body
from thoughtline.testing.transcript import SimRequest
from thoughtline.wire.jsonio import MalformedJSON, loads_object

if TYPE_CHECKING:
    from thoughtline.testing.simulator import Simulator

ANTHROPIC_COUNT: Final = "/anthropic/v1/messages/count_tokens"
GEMINI_COUNT: Final = re.compile(r"/gemini/v1beta/models/([^/:]+):countTokens")


def is_count(method: str, path: str) -> bool:
    """Whether a request is one of the count APIs."""
    return method == "POST" and (path == ANTHROPIC_COUNT or bool(GEMINI_COUNT.fullmatch(path)))


_FIELDS: Final = frozenset(
    {"model", "messages", "system", "tools", "tool_choice", "thinking", "output_config"}
)


def tokens(text: str) -> int:
    """The simulator's token count of one piece of text."""
    return max(1, len(text) // 4) if text else 0


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _block_tokens(block: Any, *, current: bool) -> int:
    if isinstance(block, str):
        return tokens(block)
    if not isinstance(block, Mapping):
        return 0
    kind = block.get("type")
    if kind == "text":
        return tokens(str(block.get("text", "")))
    if kind == "tool_use":
        return tokens(str(block.get("name", ""))) + tokens(_json(block.get("input", {})))
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, list):
            return sum(_block_tokens(inner, current=current) for inner in content)
        return tokens(str(content))
    if kind == "thinking" and current:
        return tokens(str(block.get("thinking", "")))
    if kind == "redacted_thinking" and current:
        return tokens(str(block.get("data", "")))
    return 0


def count_input_tokens(body: Mapping[str, Any]) -> int:
    """The simulated count of an Anthropic count request's input (module docstring)."""
    total = 0
    system = body.get("system")
    if isinstance(system, str):
        total += tokens(system)
    elif isinstance(system, list):
        total += sum(_block_tokens(block, current=False) for block in system)
    for tool in body.get("tools") or ():
        if isinstance(tool, Mapping):
            total += tokens(str(tool.get("name", ""))) + tokens(str(tool.get("description", "")))
            total += tokens(_json(tool.get("input_schema", {})))
    messages = [m for m in body.get("messages") or () if isinstance(m, Mapping)]
    last_assistant = max(
        (index for index, m in enumerate(messages) if m.get("role") == "assistant"), default=-1
    )
    for index, message in enumerate(messages):
        content = message.get("content")
        blocks = content if isinstance(content, list) else [content]
        current = index == last_assistant
        total += sum(_block_tokens(block, current=current) for block in blocks if block)
    return total


def _part_tokens(part: Mapping[str, Any], *, current: bool) -> int:
    if part.get("thought") is True:
        return tokens(str(part.get("text", ""))) if current else 0
    if "text" in part:
        return tokens(str(part["text"]))
    for key, inner in (("functionCall", "args"), ("functionResponse", "response")):
        if isinstance(call := part.get(key), Mapping):
            return tokens(str(call.get("name", ""))) + tokens(_json(call.get(inner, {})))
    return 0


def count_gemini_tokens(request: Mapping[str, Any]) -> int:
    """The simulated count of a ``generateContent`` request's input (module docstring)."""
    total = 0
    system = request.get("systemInstruction")
    if isinstance(system, Mapping):
        total += sum(_part_tokens(p, current=False) for p in system.get("parts") or ())
    for tool in request.get("tools") or ():
        declarations = tool.get("functionDeclarations") if isinstance(tool, Mapping) else None
        for declaration in declarations or ():
            if not isinstance(declaration, Mapping):
                continue
            schema = declaration.get("parametersJsonSchema", declaration.get("parameters", {}))
            total += tokens(str(declaration.get("name", ""))) + tokens(_json(schema))
            total += tokens(str(declaration.get("description", "")))
    contents = [c for c in request.get("contents") or () if isinstance(c, Mapping)]
    last_model = max(
        (index for index, c in enumerate(contents) if c.get("role") == "model"), default=-1
    )
    for index, content in enumerate(contents):
        parts = [p for p in content.get("parts") or () if isinstance(p, Mapping)]
        total += sum(_part_tokens(p, current=index == last_model) for p in parts)
    return total


async def serve_count(
    sim: Simulator, scope: Scope, receive: Receive, send: Send, path: str
) -> None:
    """Answer one count request as its API does (module docstring)."""
    raw = await read_body(receive)
    gemini = GEMINI_COUNT.fullmatch(path)
    profile = sim.profiles["gemini" if gemini else "anthropic"]
    errors = profile.routes[0].renderer  # the provider's error bodies
    try:
        body = loads_object(raw)
    except MalformedJSON:
        await plain(send, 400, errors.error_body(400, "request body is not JSON"))
        return
    model = unquote(gemini.group(1)) if gemini else body.get("model")
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    sim.record(
        SimRequest(
            method="POST",
            path=path,
            query={},
            headers=headers,
            body=body,
            profile=profile.name,
            model=model if isinstance(model, str) else None,
            stream=False,
            raw_body=raw,
        )
    )
    refused = _gemini_refusal(body) if gemini else _anthropic_refusal(body)
    if refused is not None:
        await plain(send, 400, errors.error_body(400, refused))
        return
    if profile.models is not None and not sim.serves(profile, str(model)):
        await plain(send, *profile.models.refuse(str(model)))
        return
    fault = sim.take_fault(profile.name)
    if fault is not None and fault.kind == "http_error":
        await plain(send, fault.status, errors.error_body(fault.status, fault.message))
        return
    if gemini:
        counted = body.get("generateContentRequest") or body
        answer: dict[str, Any] = {"totalTokens": count_gemini_tokens(counted)}
    else:
        answer = {"input_tokens": count_input_tokens(body)}
    await plain(send, 200, json.dumps(answer).encode())


def _anthropic_refusal(body: Mapping[str, Any]) -> str | None:
    extra = sorted(set(body) - _FIELDS)
    if extra:
        return f"{extra[0]}: Extra inputs are not permitted"
    for field in ("model", "messages"):
        if not body.get(field):
            return f"{field}: Field required"
    return None


def _gemini_refusal(body: Mapping[str, Any]) -> str | None:
    whole = body.get("generateContentRequest")
    if (whole is None) == ("contents" not in body) or set(body) - {
        "contents",
        "generateContentRequest",
    }:
        return "Exactly one of contents or generateContentRequest must be set."
    if whole is not None and (not isinstance(whole, Mapping) or not whole.get("model")):
        return "generateContentRequest.model: field is required (models/{model})."
    return None
