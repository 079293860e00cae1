"""Recorded-style streams and bodies → exact event sequences; both paths accumulate alike."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import byte_by_byte, decode_in_pieces
from thoughtline.model.accumulator import ReasoningPart, ToolCall, accumulate
from thoughtline.model.events import (
    Finish,
    ProviderMetadata,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ResponseStarted,
    StreamError,
    StreamEvent,
    StreamWarning,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)

from ._helpers import decode_body, decode_stream, fixture, merge_deltas, new_decoder

ENCRYPTED = (
    "gAAAAABpZ3Rsbm9fZW5jcnlwdGVkX3JlYXNvbmluZ19jYXJyaWVyX3YxX2J5dGVz"
    "-_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789=="
)


def _summary(item: str, index: int) -> dict[str, str | int]:
    return {"item_id": item, "summary_index": index}


def _encrypted(item: str) -> list[StreamEvent]:
    metadata = {"item_id": item, "encrypted_content": ENCRYPTED}
    part = f"{item}/encrypted"
    return [
        ReasoningStart(part_id=part, kind="encrypted", provider_metadata=metadata),
        ReasoningEnd(part_id=part, kind="encrypted", provider_metadata=metadata),
    ]


def _text(item: str, *deltas: str, **metadata: str | bool) -> list[StreamEvent]:
    part = f"{item}/text/0"
    meta = {"item_id": item, **metadata}
    return [
        TextStart(part_id=part, provider_metadata=meta),
        *(TextDelta(part_id=part, text=delta) for delta in deltas),
        TextEnd(part_id=part, provider_metadata=meta),
    ]


SUMMARY: list[StreamEvent] = [
    ResponseStarted(response_id="resp_summary_01", model="gpt-5.5"),
    ReasoningStart(
        part_id="rs_summary_01/summary/0",
        kind="summary",
        provider_metadata=_summary("rs_summary_01", 0),
    ),
    ReasoningDelta(part_id="rs_summary_01/summary/0", text="**Planning the café route**\n\n"),
    ReasoningDelta(part_id="rs_summary_01/summary/0", text="Compare Paris → Lyon "),
    ReasoningDelta(part_id="rs_summary_01/summary/0", text="travel times first."),
    ReasoningEnd(
        part_id="rs_summary_01/summary/0",
        kind="summary",
        provider_metadata=_summary("rs_summary_01", 0),
    ),
    ReasoningStart(
        part_id="rs_summary_01/summary/1",
        kind="summary",
        provider_metadata=_summary("rs_summary_01", 1),
    ),
    ReasoningDelta(part_id="rs_summary_01/summary/1", text="**Checking 日本 options** 🚄\n\n"),
    ReasoningDelta(part_id="rs_summary_01/summary/1", text="The Shinkansen is faster."),
    ReasoningEnd(
        part_id="rs_summary_01/summary/1",
        kind="summary",
        provider_metadata=_summary("rs_summary_01", 1),
    ),
    # The carrier comes from output_item.done, not the partial one in output_item.added.
    *_encrypted("rs_summary_01"),
    *_text("msg_summary_01", "Take the TGV: ", "about 2 h → ", "Lyon, café included ☕."),
    Usage(
        input_tokens=52,
        output_tokens=731,
        reasoning_tokens=640,
        cached_input_tokens=12,
        cache_write_tokens=0,
        total_tokens=783,
    ),
    Finish(reason="stop", raw_reason="completed"),
]

RAW_META: ProviderMetadata = {"item_id": "rs_raw_01", "content_index": 0}
RAW: list[StreamEvent] = [
    ResponseStarted(response_id="resp_raw_01", model="openai/gpt-oss-120b"),
    ReasoningStart(part_id="rs_raw_01/raw/0", kind="raw", provider_metadata=RAW_META),
    ReasoningDelta(part_id="rs_raw_01/raw/0", text="We need to answer: "),
    ReasoningDelta(part_id="rs_raw_01/raw/0", text="naïve sum 2+2 → 4. "),
    ReasoningDelta(part_id="rs_raw_01/raw/0", text="Simple."),
    ReasoningEnd(part_id="rs_raw_01/raw/0", kind="raw", provider_metadata=RAW_META),
    *_text("msg_raw_01", "2 + 2 = 4 ", "✅"),
    Usage(
        input_tokens=30,
        output_tokens=25,
        reasoning_tokens=18,
        cached_input_tokens=0,
        cache_write_tokens=0,
        total_tokens=55,
    ),
    Finish(reason="stop", raw_reason="completed"),
]

ENCRYPTED_ONLY: list[StreamEvent] = [
    ResponseStarted(response_id="resp_enc_01", model="gpt-5.5"),
    *_encrypted("rs_enc_01"),
    *_text("msg_enc_01", "Bonjour, ", "le monde → 🌍"),
    Usage(
        input_tokens=20,
        output_tokens=96,
        reasoning_tokens=64,
        cached_input_tokens=0,
        cache_write_tokens=0,
        total_tokens=116,
    ),
    Finish(reason="stop", raw_reason="completed"),
]

HIDDEN: list[StreamEvent] = [
    ResponseStarted(response_id="resp_hidden_01", model="gpt-5.5"),
    *_text("msg_hidden_01", "Réponse : ", "42."),
    Usage(
        input_tokens=50,
        output_tokens=700,
        reasoning_tokens=640,
        cached_input_tokens=0,
        cache_write_tokens=0,
        total_tokens=750,
    ),
    Finish(reason="stop", raw_reason="completed"),
]


def _call(item: str, call_id: str, *deltas: str) -> list[StreamEvent]:
    part = f"{item}/call"
    meta = {"item_id": item}
    return [
        ToolCallStart(
            part_id=part, tool_call_id=call_id, name="get_weather", provider_metadata=meta
        ),
        *(ToolCallDelta(part_id=part, arguments_delta=delta) for delta in deltas),
        ToolCallEnd(part_id=part, provider_metadata=meta),
    ]


TOOL: list[StreamEvent] = [
    ResponseStarted(response_id="resp_tool_01", model="gpt-5.5"),
    ReasoningStart(
        part_id="rs_tool_01/summary/0", kind="summary", provider_metadata=_summary("rs_tool_01", 0)
    ),
    ReasoningDelta(part_id="rs_tool_01/summary/0", text="**Need weather** for Zürich and 東京"),
    ReasoningEnd(
        part_id="rs_tool_01/summary/0", kind="summary", provider_metadata=_summary("rs_tool_01", 0)
    ),
    *_encrypted("rs_tool_01"),
    *_call("fc_tool_01", "call_W1x", '{"city":', '"Zürich"}'),
    *_call("fc_tool_02", "call_W2x", '{"city":"東京"', "}"),
    Usage(
        input_tokens=80,
        output_tokens=150,
        reasoning_tokens=96,
        cached_input_tokens=0,
        cache_write_tokens=0,
        total_tokens=230,
    ),
    Finish(reason="tool_calls", raw_reason="completed"),
]

REFUSAL: list[StreamEvent] = [
    ResponseStarted(response_id="resp_refusal_01", model="gpt-5.5"),
    *_encrypted("rs_refusal_01"),
    *_text("msg_refusal_01", "I can\u2019t help ", "with that — sorry.", refusal=True),
    Usage(
        input_tokens=25,
        output_tokens=40,
        reasoning_tokens=24,
        cached_input_tokens=0,
        cache_write_tokens=0,
        total_tokens=65,
    ),
    Finish(reason="refusal", raw_reason="refusal"),
]

LENGTH: list[StreamEvent] = [
    ResponseStarted(response_id="resp_len_01", model="gpt-5.5"),
    ReasoningStart(
        part_id="rs_len_01/summary/0", kind="summary", provider_metadata=_summary("rs_len_01", 0)
    ),
    ReasoningDelta(part_id="rs_len_01/summary/0", text="**Long proof** über many steps"),
    ReasoningEnd(
        part_id="rs_len_01/summary/0", kind="summary", provider_metadata=_summary("rs_len_01", 0)
    ),
    *_encrypted("rs_len_01"),
    Usage(
        input_tokens=60,
        output_tokens=256,
        reasoning_tokens=256,
        cached_input_tokens=0,
        cache_write_tokens=0,
        total_tokens=316,
    ),
    Finish(reason="length", raw_reason="max_output_tokens"),
]

NON_REASONING: list[StreamEvent] = [
    ResponseStarted(response_id="resp_41_01", model="gpt-4.1"),
    *_text("msg_41_01", "Hello ", "wörld 👋"),
    Usage(
        input_tokens=10,
        output_tokens=4,
        reasoning_tokens=0,
        cached_input_tokens=0,
        cache_write_tokens=0,
        total_tokens=14,
    ),
    Finish(reason="stop", raw_reason="completed"),
]

SERVER_ERROR = StreamError(
    code="PROVIDER_SERVER_ERROR",
    message="OpenAI Responses API reported an error during the response: The server had an "
    "error processing your request. Sorry about that! (server_error). The provider failed; "
    "try again shortly.",
    retryable=True,
    provider_error_type="server_error",
)
FAILED: list[StreamEvent] = [
    ResponseStarted(response_id="resp_fail_01", model="gpt-5.5"),
    ReasoningStart(
        part_id="rs_fail_01/summary/0", kind="summary", provider_metadata=_summary("rs_fail_01", 0)
    ),
    ReasoningDelta(part_id="rs_fail_01/summary/0", text="**Thinking** → "),
    # No ReasoningEnd: the part stays open, so the accumulator marks it incomplete.
    SERVER_ERROR,
]

ERROR_EVENT: list[StreamEvent] = [
    ResponseStarted(response_id="resp_err_01", model="gpt-5.5"),
    TextStart(part_id="msg_err_01/text/0", provider_metadata={"item_id": "msg_err_01"}),
    TextDelta(part_id="msg_err_01/text/0", text="Partial ánswer"),
    StreamError(
        code="PROVIDER_RATE_LIMITED",
        message="OpenAI Responses API reported an error during the response: Rate limit reached "
        "for gpt-5.5 on tokens per min (TPM). Please try again in 1.2s. (rate_limit_exceeded). "
        "Wait and try again, or lower max_concurrency.",
        retryable=True,
        provider_error_type="rate_limit_exceeded",
    ),
]

UNKNOWN: list[StreamEvent] = [
    ResponseStarted(response_id="resp_unknown_01", model="gpt-5.5"),
    # Reported once per type; annotation.added is known and informational: no warning.
    StreamWarning(
        code="UNKNOWN_EVENT",
        message="Skipped an unknown OpenAI Responses stream event 'response.future_feature.delta'.",
    ),
    *_text("msg_unknown_01", "Hello, ", "world", phase="final_answer"),
    Usage(
        input_tokens=10,
        output_tokens=30,
        reasoning_tokens=26,
        cached_input_tokens=0,
        cache_write_tokens=0,
        total_tokens=40,
    ),
    Finish(reason="stop", raw_reason="completed"),
]

# name → expected stream events; every one of these also has a non-streaming body.
WITH_BODY: dict[str, list[StreamEvent]] = {
    "summary_reasoning": SUMMARY,
    "raw_reasoning": RAW,
    "encrypted_only": ENCRYPTED_ONLY,
    "hidden": HIDDEN,
    "tool_call": TOOL,
    "refusal": REFUSAL,
    "incomplete_length": LENGTH,
    "non_reasoning": NON_REASONING,
}
PHASE_PREAMBLE = {"phase": "commentary"}
PHASE_FINAL = {"phase": "final_answer"}
PHASE = [
    ResponseStarted(response_id="resp_phase_42", model="gpt-5.5"),
    *_text("msg_pre_1", "Ich schaue kurz nach — ", "dann die Antwort.", **PHASE_PREAMBLE),
    *_text("msg_final_2", "Die Hauptstadt ist Bern 🇨🇭.", **PHASE_FINAL),
    Usage(
        input_tokens=25,
        output_tokens=30,
        reasoning_tokens=0,
        cached_input_tokens=0,
        cache_write_tokens=0,
        total_tokens=55,
    ),
    Finish(reason="stop", raw_reason="completed"),
]

STREAM_ONLY: dict[str, list[StreamEvent]] = {
    "phase_commentary": PHASE,
    "failed": FAILED,
    "error_event": ERROR_EVENT,
    "unknown_events": UNKNOWN,
}
ALL_STREAMS = {**WITH_BODY, **STREAM_ONLY}


@pytest.mark.parametrize("name", sorted(ALL_STREAMS))
def test_stream_events_are_exact(name: str) -> None:
    assert decode_stream(fixture(f"{name}.sse")) == ALL_STREAMS[name]


@pytest.mark.parametrize("name", sorted(WITH_BODY))
def test_body_events_are_the_stream_events_with_whole_deltas(name: str) -> None:
    assert decode_body(fixture(f"{name}.json")) == merge_deltas(WITH_BODY[name])


@pytest.mark.parametrize("name", sorted(WITH_BODY))
def test_stream_and_body_accumulate_to_the_same_response(name: str) -> None:
    streamed = accumulate(decode_stream(fixture(f"{name}.sse")))
    whole = accumulate(decode_body(fixture(f"{name}.json")))
    assert streamed == whole
    assert streamed.error is None


def test_parts_open_at_an_error_are_incomplete() -> None:
    failed = accumulate(decode_stream(fixture("failed.sse")))
    assert failed.reasoning_parts == (
        ReasoningPart(
            kind="summary",
            text="**Thinking** → ",
            provider_metadata=_summary("rs_fail_01", 0),
            complete=False,
        ),
    )
    assert failed.error == SERVER_ERROR
    assert failed.finish is None
    errored = accumulate(decode_stream(fixture("error_event.sse")))
    assert errored.text == "Partial ánswer"
    assert errored.error is not None and errored.error.code == "PROVIDER_RATE_LIMITED"


def test_failed_body_is_an_error_after_the_start() -> None:
    assert decode_body(fixture("failed.json")) == [
        ResponseStarted(response_id="resp_fail_01", model="gpt-5.5"),
        SERVER_ERROR,
    ]


def test_summary_response_accumulates_every_part() -> None:
    response = accumulate(decode_stream(fixture("summary_reasoning.sse")))
    assert response.text == "Take the TGV: about 2 h → Lyon, café included ☕."
    assert response.reasoning_parts == (
        ReasoningPart(
            kind="summary",
            text="**Planning the café route**\n\nCompare Paris → Lyon travel times first.",
            provider_metadata=_summary("rs_summary_01", 0),
        ),
        ReasoningPart(
            kind="summary",
            text="**Checking 日本 options** 🚄\n\nThe Shinkansen is faster.",
            provider_metadata=_summary("rs_summary_01", 1),
        ),
        ReasoningPart(
            kind="encrypted",
            text="",
            provider_metadata={"item_id": "rs_summary_01", "encrypted_content": ENCRYPTED},
        ),
    )
    assert response.usage == Usage(
        input_tokens=52,
        output_tokens=731,
        reasoning_tokens=640,
        cached_input_tokens=12,
        cache_write_tokens=0,
        total_tokens=783,
    )
    assert response.finish == Finish(reason="stop", raw_reason="completed")
    assert response.response_id == "resp_summary_01"
    assert response.model == "gpt-5.5"
    assert response.warnings == ()


def test_tool_call_response_accumulates_both_calls() -> None:
    response = accumulate(decode_stream(fixture("tool_call.sse")))
    assert response.text == ""
    assert response.tool_calls == (
        ToolCall(
            tool_call_id="call_W1x",
            name="get_weather",
            arguments='{"city":"Zürich"}',
            provider_metadata={"item_id": "fc_tool_01"},
        ),
        ToolCall(
            tool_call_id="call_W2x",
            name="get_weather",
            arguments='{"city":"東京"}',
            provider_metadata={"item_id": "fc_tool_02"},
        ),
    )
    assert response.finish == Finish(reason="tool_calls", raw_reason="completed")


def test_hidden_response_reports_reasoning_tokens_without_parts() -> None:
    response = accumulate(decode_stream(fixture("hidden.sse")))
    assert response.reasoning_parts == ()
    assert response.usage.reasoning_tokens == 640


@settings(max_examples=50, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("name", sorted(ALL_STREAMS))
def test_any_split_gives_the_same_events(name: str, data: st.DataObject) -> None:
    raw = fixture(f"{name}.sse")
    cuts = data.draw(st.lists(st.integers(min_value=1, max_value=len(raw) - 1), max_size=40))
    assert decode_in_pieces(new_decoder, raw, cuts) == ALL_STREAMS[name]


@pytest.mark.parametrize("name", ["summary_reasoning", "tool_call", "raw_reasoning"])
def test_byte_by_byte_gives_the_same_events(name: str) -> None:
    assert byte_by_byte(new_decoder, fixture(f"{name}.sse")) == ALL_STREAMS[name]


def test_fixtures_split_inside_multibyte_characters() -> None:
    raw = fixture("summary_reasoning.sse")
    index = raw.index("日".encode())
    for cut in (index + 1, index + 2):
        assert decode_in_pieces(new_decoder, raw, [cut]) == SUMMARY
    emoji = raw.index("🚄".encode())
    assert decode_in_pieces(new_decoder, raw, [emoji + 1, emoji + 2, emoji + 3]) == SUMMARY


def test_commentary_preamble_is_kept_apart_from_the_final_answer() -> None:
    response = accumulate(decode_stream(fixture("phase_commentary.sse")))
    assert response.text == "Die Hauptstadt ist Bern 🇨🇭."
    assert response.commentary == "Ich schaue kurz nach — dann die Antwort."


def test_a_preamble_without_a_final_answer_is_still_the_text() -> None:
    raw = fixture("phase_commentary.sse")
    cut = raw.index(
        b'event: response.output_item.added\ndata: {"type":"response.output_item.added","sequence_number":8'
    )
    events = decode_stream(raw[:cut])
    response = accumulate(events)
    assert response.text == response.commentary == "Ich schaue kurz nach — dann die Antwort."
