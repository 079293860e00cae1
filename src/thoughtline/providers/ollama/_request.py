"""ModelRequest → Ollama native ``POST /api/chat`` request.

Reasoning: ``think`` is Ollama's only control and carries both axes at once — ``true``
or an effort (``"low"|"medium"|"high"``) turns thinking on *and* returns it in
``message.thinking``. So disclosure decides what ``think`` says: hidden mode sends
``think: false`` (:mod:`thoughtline.providers.hidden_requests`), except to a model that
always thinks (gpt-oss), where it sends no ``think`` key. An effort asked for in hidden
mode cannot be expressed without requesting the thinking text, so it is reported as a
warning and not sent, and thinking is not switched off either (the model's default
applies).

``max_output_tokens`` and ``temperature`` are model options: ``options.num_predict`` and
``options.temperature``.
"""

from __future__ import annotations

from typing import Any, Final

from thoughtline.model.events import StreamWarning
from thoughtline.model.requests import Effort, ModelRequest, ReasoningRequest
from thoughtline.providers._history import after_leading
from thoughtline.providers.base import CallContext, WireRequest
from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.hidden_requests import hidden_ask
from thoughtline.providers.ollama._history import ollama_messages

THINK_LEVELS: Final[frozenset[Effort]] = frozenset({"low", "medium", "high"})
"""Effort values Ollama's ``think`` accepts as strings."""


def build_ollama_request(request: ModelRequest, context: CallContext) -> WireRequest:
    """The URL, body and warnings for one call."""
    leading = [{"role": "system", "content": request.system}] if request.system else []
    messages = after_leading(
        leading,
        ollama_messages(request.messages, provider=context.endpoint.name, model=request.model),
    )
    body: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "stream": request.stream,
    }
    think, warnings = think_for(request.reasoning, context.capability, request.model)
    if think is not None:
        body["think"] = think
    elif not request.reasoning.enabled:
        asked_effort = request.reasoning.effort != "provider-default"
        hidden = hidden_ask(
            context.endpoint,
            context.capability,
            tools=bool(request.tools),
            effort_sent=asked_effort,
        )
        body.update(hidden.fields)
    options: dict[str, Any] = {}
    if request.output_limit is not None:  # thinking tokens count toward it
        options["num_predict"] = request.output_limit
    if request.temperature is not None:
        options["temperature"] = request.temperature
    if options:
        body["options"] = options
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": dict(tool.parameters),
                },
            }
            for tool in request.tools
        ]
        choice = request.tool_choice
        if choice is not None and choice.mode != "auto":
            # Ollama's chat API has no tool choice: the model decides.
            warnings.append(
                StreamWarning(
                    code="TOOL_CHOICE_UNSUPPORTED",
                    message=f"tool_choice={choice.mode} was not sent: Ollama's chat API has "
                    "no tool choice, so the model decides whether to call a tool.",
                )
            )
    return WireRequest(
        url=f"{context.endpoint.base_url}/api/chat",
        body=body,
        headers={},
        warnings=tuple(warnings),
    )


def think_for(
    reasoning: ReasoningRequest, capability: ModelCapability, model: str
) -> tuple[bool | str | None, list[StreamWarning]]:
    """The ``think`` value (``None`` = leave the key out) and warnings."""
    effort = reasoning.effort
    if capability.thinking_control == "none":
        if reasoning.enabled or effort != "provider-default":
            return None, [
                StreamWarning(
                    code="REASONING_UNSUPPORTED",
                    message=f"{model} ({capability.label}) does not think; no think "
                    "parameter was sent.",
                )
            ]
        return None, []
    if not reasoning.enabled:
        if effort == "provider-default":
            return None, []
        return None, [
            StreamWarning(
                code="EFFORT_UNSUPPORTED",
                message=f"Effort {effort!r} was not sent to {model}: Ollama takes effort "
                "only through think, which also returns the thinking text, and reasoning "
                "is hidden for this call. The model's default applies.",
            )
        ]
    if effort == "provider-default":
        return True, []
    if effort in THINK_LEVELS and capability.accepts_effort(effort):
        return effort, []
    accepted = ", ".join(effort for effort in capability.efforts if effort in THINK_LEVELS)
    return True, [
        StreamWarning(
            code="EFFORT_UNSUPPORTED",
            message=f"Effort {effort!r} is not accepted by {model} ({capability.label}; "
            f"accepted: {accepted or 'none'}). Sent think: true instead, so the model's "
            "default effort applies.",
        )
    ]
