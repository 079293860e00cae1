"""ModelRequest → ``POST {base_url}/responses`` body.

Effort and disclosure are separate axes in the Responses API, as in thoughtline:

- disclosure (``reasoning.enabled``) asks for a summary (``reasoning.summary = "auto"``)
  and for the encrypted carrier (``include: ["reasoning.encrypted_content"]``, needed
  with ``store: false`` to hand reasoning back in a later turn);
- effort (``reasoning.effort``) is sent whenever the caller chose one the model accepts,
  also in hidden mode.

Hosted reasoning models reason whether or not a summary is requested; hidden mode stops
the text from coming back, and the carrier too unless the request offers tools: a tool
loop asks for the carrier even hidden, to hand it back on the next step (it never leaves
memory otherwise).

``max_output_tokens`` is sent as is (it includes reasoning tokens). ``temperature`` is
left out, with a warning, for reasoning models (``thinking_control = "effort"``), which
refuse it; other models get it.
"""

from __future__ import annotations

from typing import Any

from thoughtline.model.events import StreamWarning
from thoughtline.model.requests import ModelRequest
from thoughtline.providers._generation import temperature_not_sent
from thoughtline.providers.base import CallContext, WireRequest
from thoughtline.providers.openai_responses._history import responses_input

RESPONSES_PATH = "/responses"
PROTOCOL_HEADERS: dict[str, str] = {"content-type": "application/json"}
ENCRYPTED_CONTENT_INCLUDE = "reasoning.encrypted_content"


def build_wire_request(request: ModelRequest, context: CallContext) -> WireRequest:
    """The complete wire request; credentials are added later by the transport."""
    body: dict[str, Any] = {
        "model": request.model,
        "input": responses_input(
            request.messages, provider=context.endpoint.name, model=request.model
        ),
        "stream": request.stream,
        # Nothing is kept server-side: reasoning is carried by encrypted_content instead.
        "store": False,
    }
    if request.system:
        body["instructions"] = request.system
    if request.output_limit is not None:
        body["max_output_tokens"] = request.output_limit
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.parameters),
                # Responses normalizes schemas into strict mode when `strict` is omitted
                # (unlike Chat Completions); thoughtline passes tool schemas as written.
                "strict": False,
            }
            for tool in request.tools
        ]
        if (choice := request.tool_choice) is not None:
            body["tool_choice"] = (
                {"type": "function", "name": choice.name} if choice.mode == "tool" else choice.mode
            )
    warnings = _shape_reasoning(request, context, body)
    if request.temperature is not None:
        if context.capability.thinking_control == "effort":
            why = "OpenAI reasoning models refuse a temperature"
            warnings += (temperature_not_sent(request, context.capability.label, why),)
        else:
            body["temperature"] = request.temperature
    return WireRequest(
        url=context.endpoint.base_url + RESPONSES_PATH,
        body=body,
        headers=dict(PROTOCOL_HEADERS),
        warnings=warnings,
    )


def _shape_reasoning(
    request: ModelRequest, context: CallContext, body: dict[str, Any]
) -> tuple[StreamWarning, ...]:
    capability = context.capability
    wanted = request.reasoning
    effort = wanted.effort
    warnings: list[StreamWarning] = []
    if capability.thinking_control == "none":
        if wanted.enabled:
            warnings.append(
                StreamWarning(
                    code="REASONING_UNSUPPORTED",
                    message=f"Model {request.model!r} ({capability.label}) does not reason; "
                    "no reasoning was requested.",
                )
            )
        if effort != "provider-default":
            warnings.append(_effort_warning(request, context))
        return tuple(warnings)

    reasoning: dict[str, Any] = {}
    if effort != "provider-default":
        if capability.accepts_effort(effort):
            reasoning["effort"] = effort
        else:
            warnings.append(_effort_warning(request, context))
    if wanted.enabled:
        reasoning["summary"] = "auto"
        body["include"] = [ENCRYPTED_CONTENT_INCLUDE]
    elif request.tools:
        # Hidden, with tools: no summary is asked for, but a reasoning model still reasons
        # between tool calls, and with store false only the encrypted carrier lets the next
        # step continue that reasoning. It is held in memory for the loop and sent back
        # only here; the gate keeps it from every task, trace layer and raw body.
        body["include"] = [ENCRYPTED_CONTENT_INCLUDE]
    if reasoning:
        body["reasoning"] = reasoning
    return tuple(warnings)


def _effort_warning(request: ModelRequest, context: CallContext) -> StreamWarning:
    capability = context.capability
    accepted = ", ".join(capability.efforts) if capability.efforts else "none"
    return StreamWarning(
        code="EFFORT_UNSUPPORTED",
        message=f"Effort {request.reasoning.effort!r} is not accepted by model "
        f"{request.model!r} ({capability.label}; accepted: {accepted}); no effort was "
        "sent, so the provider's default applies.",
    )
