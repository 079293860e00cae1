"""The simulated Gemini 3 API refuses a function call sent back without the
``thoughtSignature`` it came with, or with one it never made."""

from __future__ import annotations

import pytest

from thoughtline.model.parts import Part, ToolCallPart
from thoughtline.testing import Simulator

from .loop import (
    CALL,
    FINAL_STEP,
    SECOND_CALL,
    TOOL_STEP,
    Loop,
    assert_refused,
    with_metadata,
)

MISSING = "Function call is missing a thought_signature in functionCall parts."
PARALLEL = TOOL_STEP.__class__(
    reasoning=TOOL_STEP.reasoning,
    tool_calls=(CALL, SECOND_CALL),
    finish="tool_calls",
    response_id="step_1_parallel",
)

WITH_TEXT = TOOL_STEP.__class__(
    answer="Let me look that up.",
    reasoning=TOOL_STEP.reasoning,
    tool_calls=(CALL,),
    finish="tool_calls",
    response_id="step_1_with_text",
)


def loop(environ: dict[str, str], model: str = "gemini-3-pro", **options: object) -> Loop:
    return Loop(environ=environ, endpoint="gemini", model=model, **options)  # type: ignore[arg-type]


def signatures(parts: tuple[Part, ...]) -> list[object]:
    return [
        part.provider_metadata.get("thought_signature")
        for part in parts
        if isinstance(part, ToolCallPart)
    ]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
@pytest.mark.parametrize(
    "first_step", [TOOL_STEP, PARALLEL, WITH_TEXT], ids=["one call", "parallel", "text first"]
)
async def test_signed_calls_sent_back_as_made_are_accepted(
    sim: Simulator, environ: dict[str, str], stream: bool, first_step: object
) -> None:
    steps = loop(environ, stream=stream)
    first = await steps.first(sim, first_step)  # type: ignore[arg-type]
    signed = signatures(first.parts)
    assert isinstance(signed[0], str)
    assert signed[1:] == [None] * (len(signed) - 1)  # only the first parallel call
    second = await steps.second(first)
    assert second.error is None
    assert second.text == FINAL_STEP.answer
    assert [c.value for c in sim.carriers.returned] == [signed[0]]


async def test_a_dropped_signature_is_missing(sim: Simulator, environ: dict[str, str]) -> None:
    steps = loop(environ)
    first = await steps.first(sim)
    second = await steps.second(first, with_metadata("thought_signature", None, kinds=ToolCallPart))
    assert_refused(second, 400, MISSING, "`default_api:get_weather` , position 2")


def _calls_swapped(parts: tuple[Part, ...]) -> list[Part]:
    calls = [part for part in parts if isinstance(part, ToolCallPart)]
    return [*(p for p in parts if not isinstance(p, ToolCallPart)), *reversed(calls)]


async def test_parallel_calls_reordered_leave_the_first_unsigned(
    sim: Simulator, environ: dict[str, str]
) -> None:
    steps = loop(environ)
    first = await steps.first(sim, PARALLEL)
    second = await steps.second(first, _calls_swapped)
    assert_refused(second, 400, MISSING)


@pytest.mark.parametrize("value", ["Q29ycnVwdGVk", ""], ids=["altered", "blanked"])
async def test_a_changed_signature_is_corrupted(
    sim: Simulator, environ: dict[str, str], value: str
) -> None:
    steps = loop(environ)
    first = await steps.first(sim)
    second = await steps.second(
        first, with_metadata("thought_signature", value, kinds=ToolCallPart)
    )
    assert_refused(second, 400, "Corrupted thought signature.")


async def test_gemini_2_5_does_not_demand_signatures(
    sim: Simulator, environ: dict[str, str]
) -> None:
    steps = loop(environ, model="gemini-2.5-flash")
    first = await steps.first(sim)
    second = await steps.second(first, with_metadata("thought_signature", None, kinds=ToolCallPart))
    assert second.error is None
