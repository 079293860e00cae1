"""Simulator renderer → adapter round trips: the renderer behaves like hosted OpenAI."""

from __future__ import annotations

import json

import pytest

from thoughtline.model.accumulator import ModelResponse, ReasoningPart, ToolCall, accumulate
from thoughtline.model.events import Finish, Usage
from thoughtline.model.requests import ModelRequest, ReasoningRequest
from thoughtline.providers.base import decode_whole
from thoughtline.testing.renderers.openai_responses import OpenAIResponsesRenderer
from thoughtline.testing.transcript import SimReasoning, SimRequest, SimToolCall, Transcript

from ._helpers import ADAPTER, REQUEST, context, merge_deltas, sim_request

RENDERER = OpenAIResponsesRenderer()
SHOWN = ReasoningRequest(enabled=True)

SUMMARY_TRANSCRIPT = Transcript(
    answer="The answer is 42 → done ✅",
    reasoning=(
        SimReasoning(kind="summary", text="**Reading** the question é"),
        SimReasoning(kind="summary", text="**Computing** 6\u00d77 日本"),
    ),
    input_tokens=50,
    reasoning_tokens=640,
    output_tokens=700,
    chunk_chars=5,
    response_id="resp_sim",
)


def _both(transcript: Transcript, request: ModelRequest) -> tuple[ModelResponse, ModelResponse]:
    """Decode the rendered stream and body; check they agree event for event."""
    sim = sim_request(request)
    stream_bytes = b"".join(frame.data for frame in RENDERER.stream_frames(transcript, sim))
    streamed = decode_whole(ADAPTER.new_decoder(request, context(request.model)), stream_bytes)
    whole = ADAPTER.decode_body(RENDERER.body(transcript, sim), request, context(request.model))
    assert merge_deltas(streamed) == whole
    return accumulate(streamed), accumulate(whole)


def _encrypted_part(value: str) -> ReasoningPart:
    return ReasoningPart(
        kind="encrypted",
        text="",
        provider_metadata={"item_id": "rs_resp_sim", "encrypted_content": value},
    )


def test_enabled_returns_summaries_and_the_carrier() -> None:
    request = ModelRequest.simple("gpt-5.5", "q", reasoning=SHOWN)
    streamed, whole = _both(SUMMARY_TRANSCRIPT, request)
    assert streamed == whole
    assert streamed.text == "The answer is 42 → done ✅"
    assert streamed.reasoning_parts[:2] == (
        ReasoningPart(
            kind="summary",
            text="**Reading** the question é",
            provider_metadata={"item_id": "rs_resp_sim", "summary_index": 0},
        ),
        ReasoningPart(
            kind="summary",
            text="**Computing** 6\u00d77 日本",
            provider_metadata={"item_id": "rs_resp_sim", "summary_index": 1},
        ),
    )
    carrier = streamed.reasoning_parts[2]
    assert carrier.kind == "encrypted"
    assert str(carrier.provider_metadata["encrypted_content"]).startswith("gAAAAAB")
    assert len(streamed.reasoning_parts) == 3
    assert streamed.usage == Usage(
        input_tokens=50,
        output_tokens=700,
        reasoning_tokens=640,
        cached_input_tokens=0,
        cache_write_tokens=0,
        total_tokens=750,
    )
    assert streamed.finish == Finish(reason="stop", raw_reason="completed")
    assert streamed.response_id == "resp_sim"
    assert streamed.model == "gpt-5.5"


def test_carrier_is_deterministic() -> None:
    request = sim_request(ModelRequest.simple("gpt-5.5", "q", reasoning=SHOWN))
    assert RENDERER.body(SUMMARY_TRANSCRIPT, request) == RENDERER.body(SUMMARY_TRANSCRIPT, request)


def test_hidden_returns_no_reasoning_but_counts_it() -> None:
    streamed, whole = _both(SUMMARY_TRANSCRIPT, ModelRequest.simple("gpt-5.5", "q"))
    assert streamed == whole
    assert streamed.reasoning_parts == ()
    assert streamed.usage.reasoning_tokens == 640
    # The reasoning item is still in the output, with an empty summary.
    body = json.loads(
        RENDERER.body(SUMMARY_TRANSCRIPT, sim_request(ModelRequest.simple("gpt-5.5", "q")))
    )
    assert body["output"][0] == {"id": "rs_resp_sim", "type": "reasoning", "summary": []}


def test_summary_without_include_has_no_carrier() -> None:
    sim = SimRequest(
        method="POST",
        path="/v1/responses",
        query={},
        headers={},
        body={"model": "gpt-5.5", "input": "q", "reasoning": {"summary": "detailed"}},
        profile="openai",
        model="gpt-5.5",
        stream=False,
    )
    response = accumulate(
        ADAPTER.decode_body(RENDERER.body(SUMMARY_TRANSCRIPT, sim), REQUEST, context())
    )
    assert [part.kind for part in response.reasoning_parts] == ["summary", "summary"]


def test_transcript_signature_is_the_carrier_byte_for_byte() -> None:
    transcript = Transcript(
        reasoning=(
            SimReasoning(kind="summary", text="need the weather", signature="gAAAAB_exact+/="),
        ),
        tool_calls=(
            SimToolCall(call_id="call_a", name="get_weather", arguments='{"city":"Zürich"}'),
            SimToolCall(call_id="call_b", name="get_time", arguments="{}"),
        ),
        finish="tool_calls",
        response_id="resp_sim",
    )
    streamed, whole = _both(transcript, ModelRequest.simple("o3", "q", reasoning=SHOWN))
    assert streamed == whole
    assert streamed.reasoning_parts[-1] == _encrypted_part("gAAAAB_exact+/=")
    assert streamed.tool_calls == (
        ToolCall(
            tool_call_id="call_a",
            name="get_weather",
            arguments='{"city":"Zürich"}',
            provider_metadata={"item_id": "fc_resp_sim_0"},
        ),
        ToolCall(
            tool_call_id="call_b",
            name="get_time",
            arguments="{}",
            provider_metadata={"item_id": "fc_resp_sim_1"},
        ),
    )
    assert streamed.text == ""
    assert streamed.finish == Finish(reason="tool_calls", raw_reason="completed")


def test_raw_reasoning_is_sent_as_reasoning_text() -> None:
    transcript = Transcript(
        answer="4",
        reasoning=(SimReasoning(kind="raw", text="2+2 → 4, naïvely"),),
        response_id="resp_sim",
    )
    streamed, whole = _both(transcript, ModelRequest.simple("gpt-oss-120b", "q"))
    assert streamed == whole
    assert streamed.reasoning_parts == (
        ReasoningPart(
            kind="raw",
            text="2+2 → 4, naïvely",
            provider_metadata={"item_id": "rs_resp_sim", "content_index": 0},
        ),
    )


def test_non_reasoning_model_returns_no_reasoning_item() -> None:
    streamed, whole = _both(
        SUMMARY_TRANSCRIPT, ModelRequest.simple("gpt-4.1", "q", reasoning=SHOWN)
    )
    assert streamed == whole
    assert streamed.reasoning_parts == ()
    assert streamed.usage == Usage(
        input_tokens=50,
        output_tokens=60,
        reasoning_tokens=0,
        cached_input_tokens=0,
        cache_write_tokens=0,
        total_tokens=110,
    )


def test_effort_none_means_no_reasoning() -> None:
    request = ModelRequest.simple(
        "gpt-5.5", "q", reasoning=ReasoningRequest(enabled=True, effort="none")
    )
    streamed, _ = _both(SUMMARY_TRANSCRIPT, request)
    assert streamed.reasoning_parts == ()
    assert streamed.usage.reasoning_tokens == 0


@pytest.mark.parametrize(
    ("finish", "expected"),
    [
        ("length", Finish(reason="length", raw_reason="max_output_tokens")),
        ("content_filter", Finish(reason="content_filter", raw_reason="content_filter")),
        ("refusal", Finish(reason="refusal", raw_reason="refusal")),
        ("stop", Finish(reason="stop", raw_reason="completed")),
    ],
)
def test_finish_reasons_round_trip(finish: str, expected: Finish) -> None:
    transcript = Transcript(answer="partial ☂", finish=finish)  # type: ignore[arg-type]
    streamed, whole = _both(transcript, ModelRequest.simple("gpt-5.5", "q", reasoning=SHOWN))
    assert streamed == whole
    assert streamed.finish == expected
    assert streamed.text == "partial ☂"
    if finish == "refusal":
        assert streamed.text_metadata == ({"item_id": "msg_sim_1", "refusal": True},)


def test_stream_frames_are_tagged_by_role() -> None:
    sim = sim_request(ModelRequest.simple("gpt-5.5", "q", reasoning=SHOWN))
    frames = RENDERER.stream_frames(SUMMARY_TRANSCRIPT, sim)
    roles = [frame.role for frame in frames]
    assert roles[:2] == ["meta", "meta"]
    assert roles[-1] == "end"
    assert roles.count("end") == 1
    first_text = roles.index("text")
    assert set(roles[2:first_text]) == {"reasoning"}
    assert set(roles[first_text:-1]) == {"text"}
    assert all(frame.data.endswith(b"\n\n") for frame in frames)
    assert frames[-1].data.startswith(b"event: response.completed\n")


def test_request_facts() -> None:
    sim = sim_request(ModelRequest.simple("gpt-5.5", "q"))
    assert RENDERER.model_of(sim) == "gpt-5.5"
    assert RENDERER.is_stream(sim) is True
    assert RENDERER.stream_content_type == "text/event-stream"
