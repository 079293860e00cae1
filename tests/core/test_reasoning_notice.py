"""An error the provider reports inside the stream is not a broken stream: the task's
notice names the provider's error and its code, whichever wire API carried it."""

from __future__ import annotations

import pytest

from tests.providers.anthropic import helpers as anthropic
from tests.providers.openai_chat import helpers as chat
from tests.providers.openai_responses import _helpers as responses
from thoughtline.model.accumulator import accumulate
from thoughtline.model.events import StreamEvent
from thoughtline.providers.base import CallContext
from thoughtline.records import ChainOfThought
from thoughtline.runtime.policy.disclosure import DisclosureGate
from thoughtline.runtime.policy.status import ReasoningVerdict, derive_reasoning_status


def _verdict(
    events: list[StreamEvent], context: CallContext, mode: ChainOfThought = "surface"
) -> ReasoningVerdict:
    return derive_reasoning_status(
        gate=DisclosureGate(mode),
        response=accumulate(events),
        endpoint=context.endpoint,
        capability=context.capability,
    )


def test_anthropic_error_event_while_thinking() -> None:
    events = anthropic.decode_stream(anthropic.fixture("error_stream.sse"))
    verdict = _verdict(events, anthropic.context("claude-opus-4-7"))
    assert verdict == ReasoningVerdict(
        "interrupted",
        "The provider reported an error (PROVIDER_OVERLOADED, overloaded_error) during "
        "reasoning; 31 characters of reasoning arrived and are kept, marked partial.",
    )


def test_responses_failed_while_summarizing() -> None:
    events = responses.decode_stream(responses.fixture("failed.sse"))
    verdict = _verdict(events, responses.context(), mode="telemetry_only")
    assert verdict.status == "interrupted"
    assert verdict.notice.startswith("The provider reported an error (PROVIDER_SERVER_ERROR")
    assert "during reasoning" in verdict.notice
    assert "kept, marked partial in the trace." in verdict.notice
    assert "stream broke" not in verdict.notice


def test_groq_tool_use_failed_while_reasoning() -> None:
    events = chat.decode_stream("groq_tool_use_failed")
    _, context = chat.fixture_context("groq_tool_use_failed")
    assert _verdict(events, context) == ReasoningVerdict(
        "interrupted",
        "The provider reported an error (PROVIDER_BAD_REQUEST, tool_use_failed) during "
        "reasoning; 29 characters of reasoning arrived and are kept, marked partial.",
    )


@pytest.mark.parametrize("cut", [b"event: error", b"event: content_block_delta"])
def test_a_broken_connection_still_says_the_stream_broke(cut: bytes) -> None:
    raw = anthropic.fixture("error_stream.sse")
    events = anthropic.decode_stream(raw[: raw.rindex(cut)])
    verdict = _verdict(events, anthropic.context("claude-opus-4-7"))
    assert verdict.status == "interrupted"
    assert verdict.notice.startswith("The stream broke")
