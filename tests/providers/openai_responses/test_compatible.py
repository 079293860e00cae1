"""Responses API streams served by others (OpenRouter, GitHub Copilot, Azure, LM Studio):
a trailing ``[DONE]``, item ids that change between events or differ in
``response.completed.output``. Parts are correlated by output index and emitted once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import decode_in_pieces
from thoughtline.model.accumulator import accumulate
from thoughtline.model.events import (
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ResponseStarted,
    StreamError,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)

from ._helpers import FIXTURES, decode_stream, new_decoder

COMPATIBLE = FIXTURES / "compatible"

SUMMARY_META = {"item_id": "rs_tmp_a1", "summary_index": 0}
OPENROUTER_CHANGING_IDS: list[StreamEvent] = [
    ResponseStarted(response_id="gen-1767230000-RsPqXw", model="openai/gpt-5.5"),
    ReasoningStart(part_id="rs_tmp_a1/summary/0", kind="summary", provider_metadata=SUMMARY_META),
    ReasoningDelta(part_id="rs_tmp_a1/summary/0", text="Prüfe die Zahl "),
    ReasoningDelta(part_id="rs_tmp_a1/summary/0", text="π ≈ 3.14."),
    ReasoningEnd(part_id="rs_tmp_a1/summary/0", kind="summary", provider_metadata=SUMMARY_META),
    TextStart(part_id="msg_tmp_b1/text/0", provider_metadata={"item_id": "msg_tmp_b1"}),
    TextDelta(part_id="msg_tmp_b1/text/0", text="π ist ungefähr "),
    TextDelta(part_id="msg_tmp_b1/text/0", text="3,14 🥧"),
    TextEnd(part_id="msg_tmp_b1/text/0", provider_metadata={"item_id": "msg_tmp_b1"}),
    Usage(
        input_tokens=30,
        output_tokens=90,
        reasoning_tokens=64,
        cached_input_tokens=0,
        total_tokens=120,
    ),
    Finish(reason="stop", raw_reason="completed"),
]

CARRIER = "gAAAAABpY29waWxvdF9jYXJyaWVy-Zz09=="
COPILOT_SUMMARY = {"item_id": "rs_stream_1", "summary_index": 0}
COPILOT_ENCRYPTED = {"item_id": "rs_stream_1", "encrypted_content": CARRIER}
COPILOT_FINAL_IDS_DIFFER: list[StreamEvent] = [
    ResponseStarted(response_id="resp_cp_7781", model="gpt-5.5"),
    ReasoningStart(
        part_id="rs_stream_1/summary/0", kind="summary", provider_metadata=COPILOT_SUMMARY
    ),
    ReasoningDelta(part_id="rs_stream_1/summary/0", text="Wetter in Zürich nachsehen."),
    ReasoningEnd(
        part_id="rs_stream_1/summary/0", kind="summary", provider_metadata=COPILOT_SUMMARY
    ),
    ReasoningStart(
        part_id="rs_stream_1/encrypted", kind="encrypted", provider_metadata=COPILOT_ENCRYPTED
    ),
    ReasoningEnd(
        part_id="rs_stream_1/encrypted", kind="encrypted", provider_metadata=COPILOT_ENCRYPTED
    ),
    ToolCallStart(
        part_id="fc_stream_2/call",
        tool_call_id="call_wx_1",
        name="get_weather",
        provider_metadata={"item_id": "fc_stream_2"},
    ),
    ToolCallDelta(part_id="fc_stream_2/call", arguments_delta='{"city":'),
    ToolCallDelta(part_id="fc_stream_2/call", arguments_delta='"Zürich"}'),
    ToolCallEnd(part_id="fc_stream_2/call", provider_metadata={"item_id": "fc_stream_2"}),
    Usage(
        input_tokens=80,
        output_tokens=40,
        reasoning_tokens=24,
        cached_input_tokens=64,
        total_tokens=120,
    ),
    Finish(reason="tool_calls", raw_reason="completed"),
]

EXPECTED = {
    "openrouter_changing_ids": OPENROUTER_CHANGING_IDS,
    "copilot_final_ids_differ": COPILOT_FINAL_IDS_DIFFER,
}


def _raw(name: str) -> bytes:
    return (COMPATIBLE / f"{name}.sse").read_bytes()


def test_every_compatible_fixture_is_listed() -> None:
    assert sorted(path.stem for path in COMPATIBLE.glob("*.sse")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_compatible_stream_events_are_exact(name: str) -> None:
    assert decode_stream(_raw(name)) == EXPECTED[name]


def test_answer_and_summary_are_emitted_once() -> None:
    response = accumulate(decode_stream(_raw("openrouter_changing_ids")))
    assert response.text == "π ist ungefähr 3,14 🥧"
    assert [part.text for part in response.reasoning_parts] == ["Prüfe die Zahl π ≈ 3.14."]
    assert response.error is None


def test_done_before_the_terminal_event_is_an_interrupted_stream() -> None:
    raw = _raw("openrouter_changing_ids")
    cut = raw.index(b'data: {"type":"response.completed"')
    events = decode_stream(raw[:cut] + b"data: [DONE]\n\n")
    last = events[-1]
    assert isinstance(last, StreamError)
    assert last.code == "PROVIDER_STREAM_INTERRUPTED"


@pytest.mark.parametrize("name", sorted(EXPECTED))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_split_gives_the_same_events(name: str, data: st.DataObject) -> None:
    raw = _raw(name)
    cuts = data.draw(st.lists(st.integers(min_value=1, max_value=len(raw) - 1), max_size=12))
    assert decode_in_pieces(new_decoder, raw, cuts) == EXPECTED[name]
