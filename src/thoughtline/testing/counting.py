"""The simulated Anthropic token count: ``POST /anthropic/v1/messages/count_tokens``.

It answers as Anthropic's count API does: ``{"input_tokens": N}`` for a body of a
Messages request's input fields (``model``, ``messages``, ``system``, ``tools``,
``tool_choice``, ``thinking``, ``output_config``), the provider's 400 for a field only
generation takes (``max_tokens: Extra inputs are not permitted``) or a missing one, its
404 for a model it does not serve, and an injected ``http_error`` fault as for a call.
It counts the way the simulator derives token counts (about 4 characters a token, each
piece of text at least one): the system prompt, each tool's name, description and
schema, each message's text, tool calls (name and input) and tool results, and, as
Anthropic counts them, the thinking of the current assistant turn only (the last
assistant message; earlier turns' thinking is not counted).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from thoughtline.testing._asgi import Receive, Scope, Send, plain, read_body
from thoughtline.testing.transcript import SimRequest
from thoughtline.wire.api_errors import anthropic_error_type
from thoughtline.wire.jsonio import MalformedJSON, loads_object

if TYPE_CHECKING:
    from thoughtline.testing.simulator import Simulator

COUNT_PATH: Final = "/anthropic/v1/messages/count_tokens"

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
    """The simulated count of a count request's input (module docstring)."""
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


def _error(status: int, message: str) -> bytes:
    error = {"type": anthropic_error_type(status), "message": message}
    return json.dumps({"type": "error", "error": error, "request_id": "req_sim_count"}).encode()


async def serve_count(sim: Simulator, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer one count request as Anthropic does (module docstring)."""
    raw = await read_body(receive)
    try:
        body = loads_object(raw)
    except MalformedJSON:
        await plain(send, 400, _error(400, "request body is not JSON"))
        return
    model = body.get("model")
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    request = SimRequest(
        method="POST",
        path=COUNT_PATH,
        query={},
        headers=headers,
        body=body,
        profile="anthropic",
        model=model if isinstance(model, str) else None,
        stream=False,
        raw_body=raw,
    )
    sim.record(request)
    extra = sorted(set(body) - _FIELDS)
    if extra:
        await plain(send, 400, _error(400, f"{extra[0]}: Extra inputs are not permitted"))
        return
    for field in ("model", "messages"):
        if not body.get(field):
            await plain(send, 400, _error(400, f"{field}: Field required"))
            return
    profile = sim.profiles["anthropic"]
    if profile.models is not None and not sim.serves(profile, str(model)):
        await plain(send, *profile.models.refuse(str(model)))
        return
    fault = sim.take_fault("anthropic")
    if fault is not None and fault.kind == "http_error":
        await plain(send, fault.status, _error(fault.status, fault.message))
        return
    answer = {"input_tokens": count_input_tokens(body)}
    await plain(send, 200, json.dumps(answer).encode())
