"""``ModelRequest`` → ``POST {base_url}/chat/completions`` body, per dialect.

Reasoning is shaped by dialect and model capability:

================  =============================================  ===========================
dialect           reasoning enabled                              hidden
================  =============================================  ===========================
openai            ``reasoning_effort`` only (chat completions    ``reasoning_effort`` when
                  never return reasoning text)                   an effort was given
openrouter        ``reasoning: {"effort": E}`` /                 ``reasoning: {"exclude":
                  ``{"max_tokens": B}`` / ``{"enabled": true}``  true}`` (+ ``effort``);
                                                                 no ``exclude`` with tools
raw-reasoning,    ``thinking: {"type": "enabled"}``              ``thinking: {"type":
effort control    + ``reasoning_effort``                         "disabled"}`` (not with
                                                                 tools), or
                                                                 ``reasoning_effort`` when
                                                                 an effort was given
raw-reasoning,    ``chat_template_kwargs: {"enable_thinking":    ``chat_template_kwargs:
toggle control    true}`` + ``reasoning_effort``                 {"enable_thinking":
                                                                 false}``, or
                                                                 ``reasoning_effort`` when
                                                                 an effort was given
================  =============================================  ===========================

The hidden column's off switches come from :mod:`thoughtline.providers.hidden_requests`
(none to a model that always reasons, e.g. ``deepseek-reasoner``).

Effort and disclosure are separate axes: an explicit effort the model accepts is sent
even when reasoning is hidden, because it changes how hard the model works, not what it
returns. An effort the model does not accept becomes an ``EFFORT_UNSUPPORTED`` warning
and is not sent.

``max_output_tokens`` is ``max_completion_tokens`` for OpenAI (it counts reasoning
tokens) and ``max_tokens`` for every other dialect. ``temperature`` is sent, except to
OpenAI's reasoning models (``openai`` dialect, ``thinking_control = "effort"``), which
refuse it: it is left out with a ``TEMPERATURE_UNSUPPORTED`` warning.
"""

from __future__ import annotations

from typing import Any

from thoughtline.model.events import StreamWarning
from thoughtline.model.requests import Effort, ModelRequest
from thoughtline.providers._generation import temperature_not_sent
from thoughtline.providers._history import (
    after_leading,
    tool_turns_as_text,
    tool_turns_sent_as_text,
)
from thoughtline.providers.base import CallContext, WireRequest
from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.hidden_requests import HiddenAsk, hidden_ask
from thoughtline.providers.openai_chat._history import chat_messages, reasoning_echo

CHAT_PATH = "/chat/completions"


def _effort_to_send(
    effort: Effort, capability: ModelCapability, model: str, warnings: list[StreamWarning]
) -> Effort | None:
    """The explicit effort to send, or ``None`` (provider default / not accepted)."""
    if effort == "provider-default":
        return None
    if capability.accepts_effort(effort):
        return effort
    accepted = ", ".join(capability.efforts) or "none"
    warnings.append(
        StreamWarning(
            code="EFFORT_UNSUPPORTED",
            message=f"Effort {effort!r} is not accepted by model {model!r} "
            f"({capability.label}; accepts: {accepted}). No effort was sent, so the "
            "provider's default effort applies.",
        )
    )
    return None


def _shape_openai(body: dict[str, Any], effort: Effort | None) -> None:
    if effort is not None:
        body["reasoning_effort"] = effort


def _shape_openrouter(
    body: dict[str, Any], request: ModelRequest, effort: Effort | None, hidden: HiddenAsk
) -> None:
    reasoning = request.reasoning
    if not reasoning.enabled:
        # Some upstreams reason and return it by default; hidden says exclude (but not
        # to a tool loop, whose next step needs the upstream's carriers back).
        shape: dict[str, Any] = dict(hidden.fields.get("reasoning", {}))
        if effort is not None:
            shape["effort"] = effort
        if shape:
            body["reasoning"] = shape
        return
    # effort and max_tokens are mutually exclusive on OpenRouter; effort wins because
    # budget_tokens is only a fallback for wire APIs that take a budget.
    if effort is not None:
        body["reasoning"] = {"effort": effort}
    elif reasoning.budget_tokens is not None:
        body["reasoning"] = {"max_tokens": reasoning.budget_tokens}
    else:
        body["reasoning"] = {"enabled": True}


def _shape_raw(
    body: dict[str, Any],
    request: ModelRequest,
    capability: ModelCapability,
    effort: Effort | None,
    hidden: HiddenAsk,
) -> None:
    if request.reasoning.enabled:
        if capability.thinking_control == "effort":
            body["thinking"] = {"type": "enabled"}  # DeepSeek
        else:
            # vLLM, llama.cpp and other template-driven servers switch thinking here.
            body["chat_template_kwargs"] = {"enable_thinking": True}
    else:
        body.update(hidden.fields)
    if effort is not None:
        body["reasoning_effort"] = effort


def build_chat_request(request: ModelRequest, context: CallContext) -> WireRequest:
    """The complete wire request for one call (see the module docstring)."""
    endpoint = context.endpoint
    capability = context.capability
    dialect = endpoint.dialect or "openai"
    warnings: list[StreamWarning] = []

    leading = [{"role": "system", "content": request.system}] if request.system else []
    echo = reasoning_echo(dialect, capability.thinking_control)
    history = request.messages
    if dialect == "openrouter" and not request.tools:
        # OpenRouter validates every request that holds tool calls against its tools.
        as_text = tool_turns_as_text(history)
        if as_text is not None:
            history = as_text
            warnings.append(tool_turns_sent_as_text("OpenRouter"))
    messages = after_leading(
        leading, chat_messages(history, provider=endpoint.name, model=request.model, echo=echo)
    )
    body: dict[str, Any] = {"model": request.model, "messages": messages, "stream": request.stream}
    if request.stream:
        # Without this, streamed chat completions report no usage at all.
        body["stream_options"] = {"include_usage": True}
    if request.output_limit is not None:
        # OpenAI deprecated max_tokens for reasoning models; other servers only know it.
        key = "max_completion_tokens" if dialect == "openai" else "max_tokens"
        body[key] = request.output_limit
    if request.temperature is not None:
        if dialect == "openai" and capability.thinking_control == "effort":
            why = "OpenAI reasoning models refuse a temperature"
            warnings.append(temperature_not_sent(request, capability.label, why))
        else:
            body["temperature"] = request.temperature
    if request.tools:
        body["tools"] = [
            _tool(tool.name, tool.description, tool.parameters) for tool in request.tools
        ]
        if (choice := request.tool_choice) is not None:
            body["tool_choice"] = (
                {"type": "function", "function": {"name": choice.name}}
                if choice.mode == "tool"
                else choice.mode
            )

    reasoning = request.reasoning
    if capability.thinking_control == "none":
        if reasoning.enabled:
            warnings.append(
                StreamWarning(
                    code="REASONING_UNSUPPORTED",
                    message=f"Model {request.model!r} ({capability.label}) does not reason; "
                    "no reasoning was requested.",
                )
            )
        _effort_to_send(reasoning.effort, capability, request.model, warnings)
    else:
        effort = _effort_to_send(reasoning.effort, capability, request.model, warnings)
        hidden = hidden_ask(
            endpoint, capability, tools=bool(request.tools), effort_sent=effort is not None
        )
        if dialect == "openrouter":
            _shape_openrouter(body, request, effort, hidden)
        elif dialect == "raw-reasoning":
            _shape_raw(body, request, capability, effort, hidden)
        else:
            _shape_openai(body, effort)

    headers = {"content-type": "application/json"}
    if request.stream:
        headers["accept"] = "text/event-stream"
    return WireRequest(
        url=endpoint.base_url + CHAT_PATH, body=body, headers=headers, warnings=tuple(warnings)
    )


def hidden_switch(
    endpoint: Endpoint, capability: ModelCapability, tools: bool, effort_sent: bool
) -> HiddenAsk | None:
    """What a hidden call sends where the dialect has a switch (``hidden_requests``):
    OpenRouter ``reasoning.exclude`` (not with tools: the loop needs the upstream's
    ``reasoning_details``); on a raw-reasoning server, unless no request turns the
    model's reasoning off or an effort was asked for, DeepSeek's ``thinking`` disabled
    (not with tools: the history sends ``reasoning_content`` back on tool-call turns) or
    a toggle template's ``enable_thinking: false``."""
    if endpoint.dialect == "openrouter":
        if tools:
            return HiddenAsk(
                note="nothing with tools (the loop needs the upstream's reasoning_details)"
            )
        return HiddenAsk(fields={"reasoning": {"exclude": True}}, note="reasoning.exclude: true")
    if endpoint.dialect != "raw-reasoning" or capability.always_reasons:
        return None
    if effort_sent:
        return HiddenAsk(note="nothing (an effort was asked for)")
    if capability.thinking_control == "effort":
        if tools:
            return HiddenAsk(note="nothing with tools (the loop needs reasoning_content)")
        return HiddenAsk(fields={"thinking": {"type": "disabled"}}, note="thinking.type: disabled")
    return HiddenAsk(
        fields={"chat_template_kwargs": {"enable_thinking": False}},
        note="chat_template_kwargs.enable_thinking: false",
    )


def _tool(name: str, description: str, parameters: Any) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if description:
        function["description"] = description
    function["parameters"] = dict(parameters)
    return {"type": "function", "function": function}
