"""ModelRequest → Gemini ``generateContent`` / ``streamGenerateContent`` request.

The body is camelCase, as the REST API takes it. The API key is never placed in the
URL (``?key=`` would leak into logs): the transport sends it as ``x-goog-api-key``. The
model id is part of the URL's path, percent-encoded as one segment (:func:`model_path`).

Reasoning is shaped from the model's capability entry:

- disclosure (``reasoning.enabled``) → ``thinkingConfig.includeThoughts: true``;
- effort, a separate axis, → ``thinkingLevel`` on Gemini 3 (``thinking_control =
  "level"``) or ``thinkingBudget`` on Gemini 2.5 (``"budget"``). Never both: the API
  rejects a request that sets the two.

``max_output_tokens`` and ``temperature`` go into ``generationConfig`` as
``maxOutputTokens`` and ``temperature``; every Gemini model takes both.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import quote

from thoughtline.model.events import StreamWarning
from thoughtline.model.requests import Effort, ModelRequest, ReasoningRequest
from thoughtline.providers.base import CallContext, WireRequest
from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.gemini._history import gemini_contents

THINKING_LEVELS: Final[dict[Effort, str]] = {
    "minimal": "MINIMAL",
    "low": "LOW",
    "medium": "MEDIUM",
    "high": "HIGH",
    "xhigh": "XHIGH",
}
"""Effort → Gemini 3 ``thinkingLevel``."""

THINKING_BUDGETS: Final[dict[Effort, int]] = {
    "none": 0,
    "minimal": 512,
    "low": 1024,
    "medium": 8192,
    "high": 24576,
}
"""Effort → Gemini 2.5 ``thinkingBudget`` tokens (``0`` turns thinking off)."""


def model_path(model: str) -> str:
    """The model id as the one path segment after ``models/`` in the URL: a ``models/``
    prefix is taken off (the URL has its own), and every character but ASCII letters,
    digits and ``-._~`` is percent-encoded, ``/`` ``?`` ``#`` ``%`` included, so no id
    can move the request (and its key) off the model's path."""
    return quote(model.removeprefix("models/"), safe="")


def build_gemini_request(request: ModelRequest, context: CallContext) -> WireRequest:
    """The URL, body and warnings for one call."""
    base = context.endpoint.base_url
    verb = "streamGenerateContent?alt=sse" if request.stream else "generateContent"
    url = f"{base}/v1beta/models/{model_path(request.model)}:{verb}"

    body: dict[str, Any] = {
        "contents": gemini_contents(
            request.messages, provider=context.endpoint.name, model=request.model
        )
    }
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}]}

    generation_config: dict[str, Any] = {}
    if request.output_limit is not None:  # thinking tokens count toward it
        generation_config["maxOutputTokens"] = request.output_limit
    if request.temperature is not None:
        generation_config["temperature"] = request.temperature
    thinking_config, warnings = thinking_config_for(
        request.reasoning, context.capability, request.model
    )
    if thinking_config:
        generation_config["thinkingConfig"] = thinking_config
    if generation_config:
        body["generationConfig"] = generation_config

    if request.tools:
        declarations: list[dict[str, Any]] = []
        for tool in request.tools:
            declaration: dict[str, Any] = {"name": tool.name}
            if tool.description:
                declaration["description"] = tool.description
            # ToolSpec.parameters is JSON Schema; ``parameters`` only takes Google's
            # OpenAPI subset, ``parametersJsonSchema`` takes the schema as written.
            declaration["parametersJsonSchema"] = dict(tool.parameters)
            declarations.append(declaration)
        body["tools"] = [{"functionDeclarations": declarations}]
        if (choice := request.tool_choice) is not None:
            calling: dict[str, Any] = {
                "mode": {"auto": "AUTO", "none": "NONE"}.get(choice.mode, "ANY")
            }
            if choice.mode == "tool":
                calling["allowedFunctionNames"] = [choice.name]
            body["toolConfig"] = {"functionCallingConfig": calling}

    return WireRequest(url=url, body=body, headers={}, warnings=tuple(warnings))


def thinking_config_for(
    reasoning: ReasoningRequest, capability: ModelCapability, model: str
) -> tuple[dict[str, Any], list[StreamWarning]]:
    """``generationConfig.thinkingConfig`` (empty when nothing is requested) and warnings."""
    effort = reasoning.effort
    wants_effort = effort != "provider-default" or reasoning.budget_tokens is not None
    if capability.thinking_control == "none":
        if reasoning.enabled or wants_effort:
            return {}, [
                StreamWarning(
                    code="REASONING_UNSUPPORTED",
                    message=f"{model} ({capability.label}) does not reason; no "
                    "thinkingConfig was sent.",
                )
            ]
        return {}, []

    config: dict[str, Any] = {}
    warnings: list[StreamWarning] = []
    if reasoning.enabled:
        config["includeThoughts"] = True

    if capability.thinking_control == "budget":
        if reasoning.budget_tokens is not None:
            # An explicit budget is more precise than an effort name, so it wins.
            config["thinkingBudget"] = reasoning.budget_tokens
        elif effort != "provider-default":
            budget = THINKING_BUDGETS.get(effort)
            if budget is None or not capability.accepts_effort(effort):
                warnings.append(_effort_warning(effort, capability, model, "thinkingBudget"))
            else:
                config["thinkingBudget"] = budget
    else:
        if effort != "provider-default":
            level = THINKING_LEVELS.get(effort)
            if level is None or not capability.accepts_effort(effort):
                warnings.append(_effort_warning(effort, capability, model, "thinkingLevel"))
            else:
                config["thinkingLevel"] = level
        if reasoning.budget_tokens is not None:
            warnings.append(
                StreamWarning(
                    code="BUDGET_UNSUPPORTED",
                    message=f"{model} ({capability.label}) takes a thinking level, not a "
                    f"token budget; budget_tokens={reasoning.budget_tokens} was not sent.",
                )
            )
    return config, warnings


def _effort_warning(
    effort: Effort, capability: ModelCapability, model: str, field_name: str
) -> StreamWarning:
    accepted = ", ".join(capability.efforts) or "none"
    return StreamWarning(
        code="EFFORT_UNSUPPORTED",
        message=f"Effort {effort!r} is not accepted by {model} ({capability.label}; accepted: "
        f"{accepted}). No {field_name} was sent, so the model's default thinking applies.",
    )
