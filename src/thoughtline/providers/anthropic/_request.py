"""ModelRequest → Anthropic Messages request body, with reasoning shaped per model family.

Two ways to switch thinking on exist, and which one a model accepts comes from capability
data (``thinking_control``), never from the model name alone:

- ``adaptive`` families (Claude 4.6 and later): ``{"type": "adaptive", "display":
  "summarized"}``; effort goes separately into ``output_config.effort``. ``display`` is
  always sent because several families default to ``omitted`` (empty thinking text).
- ``budget`` families (Claude 4.5 and older): ``{"type": "enabled", "budget_tokens": B}``;
  effort can only be expressed through ``B``, and ``max_tokens`` must exceed ``B``.

Hidden mode (``enabled=False``) sends no ``thinking`` key at all. Effort is a separate
axis: an explicit effort still reaches adaptive families through ``output_config``.

``max_output_tokens`` becomes ``max_tokens`` (the answer's allowance, 8,192 when unset:
Anthropic requires the field; a thinking budget is added on top), never above the
model's max output from the capability data nor the request's ``output_cap`` (a thinking
budget then shrinks to fit, with ``BUDGET_ADJUSTED``). ``temperature`` is sent only while
the model is not thinking: with thinking on, Anthropic requires the default (1) and
refuses any other value, so it is left out with a ``TEMPERATURE_UNSUPPORTED`` warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from thoughtline.model.events import StreamWarning
from thoughtline.model.requests import Effort, ModelRequest
from thoughtline.providers._generation import temperature_not_sent
from thoughtline.providers._history import tool_turns_as_text, tool_turns_sent_as_text
from thoughtline.providers.anthropic._history import anthropic_messages
from thoughtline.providers.base import CallContext, OutputBounds, WireRequest
from thoughtline.providers.capabilities import ModelCapability, builtin_capabilities

DEFAULT_MAX_TOKENS: Final = 8192
"""Answer allowance when the request does not set ``max_output_tokens``."""

MIN_BUDGET_TOKENS: Final = 1024
"""Anthropic rejects ``budget_tokens`` below this."""

BUDGET_FOR_EFFORT: Final[dict[Effort, int]] = {
    "low": 1024,
    "medium": 4096,
    "high": 8192,
    "xhigh": 16384,
    "max": 32768,
    "provider-default": 4096,
}
"""Thinking budget derived from an effort on budget-controlled families."""

_ANTHROPIC_CONTROLS: Final = frozenset({"adaptive", "budget", "none"})


MESSAGES_PATH: Final = "/v1/messages"
ANTHROPIC_VERSION: Final = "2023-06-01"


@dataclass(frozen=True, slots=True)
class ShapedBody:
    """A request body and the warnings produced while shaping it."""

    body: dict[str, Any]
    warnings: tuple[StreamWarning, ...]


def anthropic_capability(capability: ModelCapability, model: str) -> ModelCapability:
    """The capability to shape by.

    A user-defined endpoint that speaks this wire API (a proxy in front of Claude) gets
    the generic fallback family from the capability table, whose control (``toggle``,
    ``effort``...) means nothing here; such requests are shaped by the built-in Claude
    family for the model instead.
    """
    if capability.thinking_control in _ANTHROPIC_CONTROLS:
        return capability
    return builtin_capabilities().lookup("anthropic", model)


def shape_body(request: ModelRequest, capability: ModelCapability, *, provider: str) -> ShapedBody:
    """The JSON body for ``POST /v1/messages`` sent to endpoint ``provider`` (the
    history's thinking blocks go back only to the endpoint and model that made them)."""
    capability = anthropic_capability(capability, request.model)
    warnings: list[StreamWarning] = []
    reasoning = request.reasoning
    answer_allowance = request.max_output_tokens or DEFAULT_MAX_TOKENS
    control = capability.thinking_control
    effort = _accepted_effort(request, capability, warnings)

    thinking: dict[str, Any] | None = None
    output_effort: Effort | None = None
    max_tokens = answer_allowance

    if control == "none":
        if reasoning.enabled:
            warnings.append(
                StreamWarning(
                    code="REASONING_UNSUPPORTED",
                    message=f"{request.model} ({capability.label}) does not reason; "
                    "no thinking was requested.",
                )
            )
    elif control == "adaptive":
        if reasoning.enabled:
            thinking = {"type": "adaptive", "display": "summarized"}
            if reasoning.budget_tokens is not None:
                warnings.append(
                    StreamWarning(
                        code="BUDGET_UNSUPPORTED",
                        message=f"budget_tokens={reasoning.budget_tokens} does not apply to "
                        f"{request.model} ({capability.label}): it uses adaptive thinking, "
                        "controlled by effort. The budget was not sent.",
                    )
                )
        if effort != "provider-default":
            output_effort = effort
    elif reasoning.enabled:  # budget
        budget = _budget(reasoning.budget_tokens, effort, request.model, warnings)
        thinking = {"type": "enabled", "budget_tokens": budget}
        # Thinking tokens count toward max_tokens: keep the answer's allowance on top.
        max_tokens = answer_allowance + budget
    elif effort != "provider-default":
        warnings.append(
            StreamWarning(
                code="EFFORT_UNSUPPORTED",
                message=f"Effort {effort!r} only applies with thinking on {request.model} "
                f"({capability.label}), which sets effort through a thinking budget; "
                "thinking is not requested, so no effort was sent.",
            )
        )

    cap = _ceiling(request, capability)
    if cap is not None and max_tokens > cap:
        max_tokens = cap
        if thinking is not None and thinking["type"] == "enabled":
            thinking["budget_tokens"] = _budget_within(thinking["budget_tokens"], cap, warnings)

    body: dict[str, Any] = {"model": request.model, "max_tokens": max_tokens}
    if request.system:
        body["system"] = request.system
    messages = request.messages
    if not request.tools:
        # "Requests which include `tool_use` or `tool_result` blocks must define tools."
        as_text = tool_turns_as_text(messages)
        if as_text is not None:
            messages = as_text
            warnings.append(tool_turns_sent_as_text("Anthropic's Messages API"))
    body["messages"] = anthropic_messages(messages, provider=provider, model=request.model)
    if request.tools:
        body["tools"] = [
            _tool(tool.name, tool.description, tool.parameters) for tool in request.tools
        ]
        if (choice := request.tool_choice) is not None:
            body["tool_choice"] = (
                {"type": "tool", "name": choice.name}
                if choice.mode == "tool"
                else {"type": {"required": "any"}.get(choice.mode, choice.mode)}
            )
    if request.temperature is not None:
        # Claude 5 families think even when no thinking parameter is sent.
        if thinking is None and not capability.reasoning_by_default:
            body["temperature"] = request.temperature
        elif request.temperature != 1:
            why = "it thinks on this request, and Anthropic allows only the default temperature (1) with thinking"
            warnings.append(temperature_not_sent(request, capability.label, why))
    if thinking is not None:
        body["thinking"] = thinking
    if output_effort is not None:
        body["output_config"] = {"effort": output_effort}
    if request.stream:
        body["stream"] = True
    return ShapedBody(body=body, warnings=tuple(warnings))


def build_request(request: ModelRequest, context: CallContext) -> WireRequest:
    """The request for ``request``, shaped by the model's capability data."""
    shaped = shape_body(request, context.capability, provider=context.endpoint.name)
    return WireRequest(
        url=context.endpoint.base_url + MESSAGES_PATH,
        body=shaped.body,
        headers={"anthropic-version": ANTHROPIC_VERSION, "content-type": "application/json"},
        warnings=shaped.warnings,
    )


def _accepted_effort(
    request: ModelRequest, capability: ModelCapability, warnings: list[StreamWarning]
) -> Effort:
    effort = request.reasoning.effort
    if capability.accepts_effort(effort):
        return effort
    accepted = ", ".join(capability.efforts) or "no effort setting"
    budget_on = capability.thinking_control == "budget" and request.reasoning.enabled
    if budget_on and request.reasoning.budget_tokens is not None:
        instead = f"the requested budget_tokens={request.reasoning.budget_tokens}"
    elif budget_on:
        default_budget = BUDGET_FOR_EFFORT["provider-default"]
        instead = f"the default thinking budget ({default_budget} tokens)"
    elif capability.thinking_control == "adaptive":
        instead = "no effort (the model's default)"
    else:
        instead = "nothing"
    warnings.append(
        StreamWarning(
            code="EFFORT_UNSUPPORTED",
            message=f"Effort {effort!r} is not accepted by {request.model} "
            f"({capability.label}; accepted: {accepted}); sent {instead} instead.",
        )
    )
    return "provider-default"


def _budget(
    requested: int | None, effort: Effort, model: str, warnings: list[StreamWarning]
) -> int:
    if requested is None:
        return BUDGET_FOR_EFFORT.get(effort, BUDGET_FOR_EFFORT["provider-default"])
    if requested < MIN_BUDGET_TOKENS:
        warnings.append(
            StreamWarning(
                code="BUDGET_ADJUSTED",
                message=f"budget_tokens={requested} is below Anthropic's minimum for {model}; "
                f"sent budget_tokens={MIN_BUDGET_TOKENS} instead.",
            )
        )
        return MIN_BUDGET_TOKENS
    return requested


def _ceiling(request: ModelRequest, capability: ModelCapability) -> int | None:
    """The most ``max_tokens`` may be: the request's output cap and the model's max
    output, the lower of those known."""
    known = [n for n in (request.output_cap, capability.max_output_tokens) if n is not None]
    return min(known) if known else None


def _budget_within(budget: int, cap: int, warnings: list[StreamWarning]) -> int:
    """A thinking budget that fits ``max_tokens = cap``: below it (Anthropic's rule),
    half of it at most so the answer keeps room, never under Anthropic's minimum (a cap
    that leaves no room for that is refused before the call: :func:`output_bounds`)."""
    fitted = max(MIN_BUDGET_TOKENS, min(budget, cap // 2))
    if fitted >= budget:
        return budget
    warnings.append(
        StreamWarning(
            code="BUDGET_ADJUSTED",
            message=f"budget_tokens={budget} does not fit max_tokens={cap:,} (the budget's "
            f"output cap, or the model's max output); sent budget_tokens={fitted} instead.",
        )
    )
    return fitted


def output_bounds(request: ModelRequest, context: CallContext) -> OutputBounds:
    """``max_tokens`` as :func:`shape_body` sends it without an output cap (thinking
    tokens count toward it, a budget family's thinking budget on top of the answer's
    allowance; never above the model's max output), and the smallest cap that keeps the
    request valid: above the minimum thinking budget when a budget family thinks."""
    capability = anthropic_capability(context.capability, request.model)
    allowance = request.max_output_tokens or DEFAULT_MAX_TOKENS
    limit = capability.max_output_tokens
    if capability.thinking_control != "budget" or not request.reasoning.enabled:
        return OutputBounds(most=allowance if limit is None else min(allowance, limit))
    effort = _accepted_effort(request, capability, [])
    budget = _budget(request.reasoning.budget_tokens, effort, request.model, [])
    most = allowance + budget
    return OutputBounds(
        most=most if limit is None else min(most, limit),
        least=MIN_BUDGET_TOKENS + 1,
        why=f"{request.model} thinks with a budget of at least {MIN_BUDGET_TOKENS:,} tokens",
    )


def _tool(name: str, description: str, parameters: Any) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": name}
    if description:
        tool["description"] = description
    tool["input_schema"] = dict(parameters)
    return tool
