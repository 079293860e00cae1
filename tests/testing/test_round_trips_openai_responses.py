"""The simulated Responses API (``store: false``) refuses reasoning items that come back
without their carrier, with a changed carrier, or away from the item that followed them."""

from __future__ import annotations

import pytest

from thoughtline.testing import Simulator, SimulatorServer

from .loop import (
    FINAL_STEP,
    Loop,
    assert_refused,
    calls_first,
    post_raw,
    reasoning_of,
    with_metadata,
    without_reasoning,
)

MODEL = "gpt-5.5"


def loop(environ: dict[str, str], **options: object) -> Loop:
    return Loop(environ=environ, endpoint="openai", model=MODEL, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
async def test_reasoning_items_sent_back_as_made_are_accepted(
    sim: Simulator, environ: dict[str, str], stream: bool
) -> None:
    steps = loop(environ, stream=stream)
    first = await steps.first(sim)
    carrier = reasoning_of(first.parts)[-1].provider_metadata["encrypted_content"]
    second = await steps.second(first)
    assert second.error is None
    assert second.text == FINAL_STEP.answer
    assert [(c.kind, c.value) for c in sim.carriers.returned] == [("encrypted_content", carrier)]


@pytest.mark.parametrize("value", ["gAAAAABforged==", ""], ids=["altered", "blanked"])
async def test_a_changed_carrier_cannot_be_verified(
    sim: Simulator, environ: dict[str, str], value: str
) -> None:
    steps = loop(environ)
    first = await steps.first(sim)
    second = await steps.second(first, with_metadata("encrypted_content", value))
    assert_refused(second, 400, "could not be verified")


async def test_a_reasoning_item_after_its_call_lacks_its_following_item(
    sim: Simulator, environ: dict[str, str]
) -> None:
    steps = loop(environ)
    first = await steps.first(sim)
    second = await steps.second(first, calls_first)
    assert_refused(
        second,
        400,
        "Item 'rs_step_1' of type 'reasoning' was provided without its required following item.",
    )


async def test_a_reasoning_item_without_its_carrier_is_not_found(
    sim: Simulator, environ: dict[str, str], sim_server: SimulatorServer
) -> None:
    """The history code never sends one (it drops an item it cannot carry): this is what
    the API answers a client that does."""
    steps = loop(environ)
    first = await steps.first(sim)
    assert (await steps.second(first)).error is None
    body = dict(sim.requests[-1].body or {})
    body["input"] = [
        {key: value for key, value in item.items() if key != "encrypted_content"}
        for item in body["input"]
    ]
    status, answer = post_raw(sim_server, sim.requests[-1].path, body)
    assert status == 404
    assert answer["error"]["message"].startswith(
        "Item with id 'rs_step_1' not found. Items are not persisted when `store` is set to false."
    )


async def test_a_dropped_reasoning_item_is_accepted_as_on_the_api(
    sim: Simulator, environ: dict[str, str]
) -> None:
    steps = loop(environ)
    first = await steps.first(sim)
    second = await steps.second(first, without_reasoning)
    assert second.error is None
    assert sim.carriers.returned == []


async def test_a_raw_reasoning_item_without_a_carrier_is_taken_back(
    sim: Simulator, environ: dict[str, str], sim_server: SimulatorServer
) -> None:
    """What a raw-reasoning server (gpt-oss behind vLLM, DeepSeek's /responses) takes:
    an item with raw ``content`` and no carrier, before its call."""
    steps = loop(environ)
    first = await steps.first(sim)
    assert (await steps.second(first)).error is None
    body = dict(sim.requests[-1].body or {})
    body["input"] = [
        {key: value for key, value in item.items() if key != "encrypted_content"}
        | (
            {"content": [{"type": "reasoning_text", "text": "raw"}]}
            if item.get("type") == "reasoning"
            else {}
        )
        for item in body["input"]
    ]
    status, _ = post_raw(sim_server, sim.requests[-1].path, body)
    assert status == 200
