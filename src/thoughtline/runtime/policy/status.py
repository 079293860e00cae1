"""Honest reasoning status: derived from what arrived, never from what was hoped for.

Every task gets a ``reasoning_status`` and a one-sentence ``reasoning_notice`` for
people. Whenever reasoning text is absent or partial but the provider reported
reasoning tokens, the notice states that count. Nothing here invents reasoning.
"""

from __future__ import annotations

from dataclasses import dataclass

from thoughtline.config.pricing import reasoning_cost_clause
from thoughtline.model.accumulator import ModelResponse
from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.registry import wire_for
from thoughtline.records import Cost, ReasoningStatus
from thoughtline.runtime.policy.disclosure import DisclosureGate


@dataclass(frozen=True, slots=True)
class ReasoningVerdict:
    status: ReasoningStatus
    notice: str


def inline_verdict() -> ReasoningVerdict:
    return ReasoningVerdict(
        "not_applicable",
        "No model was called (inline backend): the prompts were prepared only.",
    )


def derive_reasoning_status(
    *,
    gate: DisclosureGate,
    response: ModelResponse,
    endpoint: Endpoint,
    capability: ModelCapability,
    cancelled: bool = False,
    stopped_by: str | None = None,
    cost: Cost | None = None,
    step: int | None = None,
    reasoning_tokens: int | None = None,
) -> ReasoningVerdict:
    """The status for one provider call, from the mode and what the provider returned.

    ``stopped_by`` says why a cancelled call was stopped when nobody cancelled the task
    (e.g. its store could not be written); it leads the notice in place of "The task was
    cancelled". ``cost`` is what the call cost: the notice says what its reasoning
    tokens cost where that is known (``hidden`` withholds the text, not the bill).
    ``step`` is the call's number in a task of several: a broken call's notice names it
    (the task's other steps may have reasoned whole). ``reasoning_tokens`` (with ``cost``
    the task's) speaks of a task of several steps as a whole: the tokens the provider
    counted over all its calls, in place of this call's."""
    tokens = response.usage.reasoning_tokens if reasoning_tokens is None else reasoning_tokens
    spent = reasoning_cost_clause(cost)
    token_clause = f" The model reasoned for {tokens} tokens{spent}." if tokens else ""
    if not gate.requests_reasoning:
        return ReasoningVerdict(
            "not_requested",
            "Reasoning was not requested (chain_of_thought is hidden)." + token_clause,
        )

    parts = response.reasoning_parts
    text_parts = [part for part in parts if part.text]
    redacted = [part for part in parts if part.kind == "redacted"]
    carriers = [part for part in parts if part.kind == "encrypted" and not part.text]
    error = response.error
    # A total timeout that cuts a stream after something arrived leaves it as partial as
    # a broken connection does: the same story, with its own lead.
    timed_out = (
        error is not None
        and error.code == "PROVIDER_TIMEOUT"
        and bool(response.text or parts or response.tool_calls)
    )
    broken = (
        (error is not None and error.code == "PROVIDER_STREAM_INTERRUPTED")
        or cancelled
        or timed_out
    )
    partial = any(not part.complete for part in parts)

    if broken or partial:
        # An error the provider sent inside the stream (overloaded, failed, a tool-call
        # it could not parse) is not a broken connection: name it, with its code.
        if error is not None and not broken:
            code = error.code
            if error.provider_error_type and error.provider_error_type != code:
                code = f"{code}, {error.provider_error_type}"
            lead = f"The provider reported an error ({code})"
        elif cancelled:
            lead = stopped_by or "The task was cancelled"
        elif timed_out:
            lead = "The call reached its total timeout"
        else:
            lead = "The stream broke"
        if step is not None:
            lead += f" in step {step}"
        # Where it stopped: once answer text arrived, the reasoning before it was whole.
        answering = bool(response.text)
        if text_parts and answering and not partial:
            chars = sum(len(part.text) for part in text_parts)
            kept = f"all {chars} characters of reasoning had arrived and are kept"
            if not gate.displays:
                kept += " in the trace" if gate.records else ""
            return ReasoningVerdict(
                "interrupted",
                f"{lead} during the answer; {kept}; the answer is partial." + token_clause,
            )
        if answering and not text_parts:
            return ReasoningVerdict(
                "interrupted",
                f"{lead} during the answer; no reasoning text had arrived." + token_clause,
            )
        if text_parts:
            chars = sum(len(part.text) for part in text_parts)
            kept = f"{chars} characters of reasoning arrived and are kept, marked partial"
            if not gate.displays:
                kept += " in the trace" if gate.records else ""
            return ReasoningVerdict(
                "interrupted", f"{lead} during reasoning; {kept}." + token_clause
            )
        before = " before any reasoning text arrived"
        if step is not None:
            before = ", before any of its reasoning text arrived"
        return ReasoningVerdict("interrupted", f"{lead}{before}." + token_clause)

    never_shown = wire_for(endpoint.wire_api).reasoning_never_shown(endpoint)
    if never_shown is not None:
        return ReasoningVerdict("unsupported", never_shown + token_clause)
    if capability.thinking_control == "none":
        return ReasoningVerdict(
            "unsupported", f"{capability.label} does not reason, so there is nothing to show."
        )

    if text_parts:
        status: ReasoningStatus = "shown" if gate.displays else "recorded"
        kinds = {part.kind for part in text_parts}
        what = (
            "the model's own reasoning"
            if kinds == {"raw"}
            else "the provider's summary of the model's reasoning"
            if "raw" not in kinds
            else "the model's reasoning (raw and summarized parts)"
        )
        where = "Shown" if gate.displays else "Recorded to the trace only (not displayed)"
        notice = f"{where}: {what}."
        if redacted:
            notice += (
                f" {len(redacted)} of {len(redacted) + len(text_parts)} reasoning blocks "
                "were redacted by the provider for safety and have no text."
            )
        if tokens and "raw" not in kinds:
            notice += f" The model reasoned for {tokens} tokens{spent}; the summary is shorter."
        return ReasoningVerdict(status, notice)

    if redacted:
        return ReasoningVerdict(
            "redacted_by_provider",
            "The provider redacted all of the model's reasoning for safety; only opaque "
            "data was returned." + token_clause,
        )
    if carriers:
        return ReasoningVerdict(
            "omitted_by_provider",
            "The provider returned only an encrypted or signed carrier of the reasoning, "
            "not its text." + token_clause,
        )
    if tokens:
        return ReasoningVerdict(
            "not_returned",
            f"The model reasoned for {tokens} tokens{spent}; this provider does not return "
            "the text.",
        )
    return ReasoningVerdict(
        "not_returned", "Reasoning was requested, but the provider returned none for this task."
    )
