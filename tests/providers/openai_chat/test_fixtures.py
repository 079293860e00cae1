"""Exact event sequences for every recorded fixture, streamed and whole-body."""

from __future__ import annotations

import pytest

from thoughtline.model.accumulator import ReasoningPart, ToolCall, accumulate
from thoughtline.model.events import (
    Finish,
    MetadataValue,
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

from .helpers import FIXTURES, decode_body, decode_stream


def text(part_id: str, *deltas: str) -> list[StreamEvent]:
    return [
        TextStart(part_id=part_id),
        *(TextDelta(part_id=part_id, text=delta) for delta in deltas),
        TextEnd(part_id=part_id),
    ]


@pytest.mark.parametrize("whole", [False, True])
def test_openai_reasoning_tokens(whole: bool) -> None:
    answer = ["Café → 日本 🙂 is 4."] if whole else ["Café → ", "日本 🙂 is 4."]
    decode = decode_body if whole else decode_stream
    assert decode("openai_reasoning_tokens") == [
        ResponseStarted(response_id="chatcmpl-CxA1b2C3", model="gpt-5-mini-2025-08-07"),
        *text("text-0", *answer),
        Finish(reason="stop", raw_reason="stop"),
        Usage(
            input_tokens=50,
            output_tokens=700,
            reasoning_tokens=640,
            cached_input_tokens=12,
            total_tokens=750,
        ),
    ]


OPENAI_TOOLS_USAGE = Usage(
    input_tokens=120,
    output_tokens=210,
    reasoning_tokens=192,
    cached_input_tokens=0,
    total_tokens=330,
)


@pytest.mark.parametrize("whole", [False, True])
def test_openai_parallel_tool_calls(whole: bool) -> None:
    weather = ['{"city": "Zürich"}'] if whole else ['{"city": "Zü', 'rich"}']
    decode = decode_body if whole else decode_stream
    assert decode("openai_tool_calls") == [
        ResponseStarted(response_id="chatcmpl-CxT00l", model="gpt-5.5"),
        ToolCallStart(part_id="tool-0", tool_call_id="call_weather_1", name="get_weather"),
        *(ToolCallDelta(part_id="tool-0", arguments_delta=piece) for piece in weather),
        ToolCallStart(part_id="tool-1", tool_call_id="call_time_2", name="get_time"),
        ToolCallDelta(part_id="tool-1", arguments_delta='{"tz": "Asia/東京"}'),
        ToolCallEnd(part_id="tool-0"),
        ToolCallEnd(part_id="tool-1"),
        Finish(reason="tool_calls", raw_reason="tool_calls"),
        OPENAI_TOOLS_USAGE,
    ]


def test_openai_error_mid_stream_is_last_and_parts_stay_open() -> None:
    assert decode_stream("openai_error_midstream") == [
        ResponseStarted(response_id="chatcmpl-CxE44r", model="gpt-5.5"),
        TextStart(part_id="text-0"),
        TextDelta(part_id="text-0", text="Partial ans"),
        StreamError(
            code="PROVIDER_SERVER_ERROR",
            message="OpenAI reported an error during the response: The server had an error "
            "while processing your request. Sorry about that!",
            retryable=True,
            status=None,
            provider_error_type="server_error",
        ),
    ]


SONNET_META: dict[str, MetadataValue] = {
    "type": "reasoning.text",
    "format": "anthropic-claude-v1",
    "index": 0,
}
SONNET_SIGNED: dict[str, MetadataValue] = {**SONNET_META, "signature": "EqQBCkgIBxABGAIiQL+sig/=="}
SONNET_USAGE = Usage(
    input_tokens=42, output_tokens=96, reasoning_tokens=80, cached_input_tokens=0, total_tokens=138
)


@pytest.mark.parametrize("whole", [False, True])
def test_openrouter_anthropic_summary(whole: bool) -> None:
    # The plain "reasoning" string repeats the details' text: it must not be counted twice.
    summary = ["The user asks → 2+2, café."] if whole else ["The user asks → ", "2+2, café."]
    decode = decode_body if whole else decode_stream
    assert decode("openrouter_anthropic_summary") == [
        ResponseStarted(response_id="gen-1767225600-AbCdEf", model="anthropic/claude-sonnet-4.6"),
        ReasoningStart(part_id="reasoning-0", kind="summary", provider_metadata=SONNET_META),
        *(ReasoningDelta(part_id="reasoning-0", text=piece) for piece in summary),
        ReasoningEnd(part_id="reasoning-0", kind="summary", provider_metadata=SONNET_SIGNED),
        *text("text-0", "It is 4 🙂"),
        Finish(reason="stop", raw_reason="stop"),
        SONNET_USAGE,
    ]


RAW_META: dict[str, MetadataValue] = {"type": "reasoning.text", "format": "unknown", "index": 0}
RAW_USAGE = Usage(input_tokens=9, output_tokens=31, reasoning_tokens=27, total_tokens=40)


@pytest.mark.parametrize("whole", [False, True])
def test_openrouter_raw(whole: bool) -> None:
    pieces = ["Okay, 日本 means Japan."] if whole else ["Okay, 日本 ", "means Japan."]
    decode = decode_body if whole else decode_stream
    assert decode("openrouter_raw") == [
        ResponseStarted(response_id="gen-1767225601-RaWrAw", model="deepseek/deepseek-r1"),
        ReasoningStart(part_id="reasoning-0", kind="raw", provider_metadata=RAW_META),
        *(ReasoningDelta(part_id="reasoning-0", text=piece) for piece in pieces),
        ReasoningEnd(part_id="reasoning-0", kind="raw", provider_metadata=RAW_META),
        *text("text-0", "Japan."),
        Finish(reason="stop", raw_reason="stop"),
        RAW_USAGE,
    ]


SUMMARY_META: dict[str, MetadataValue] = {
    "type": "reasoning.summary",
    "format": "openai-responses-v1",
    "index": 0,
}
ENCRYPTED_META: dict[str, MetadataValue] = {
    "type": "reasoning.encrypted",
    "format": "openai-responses-v1",
    "id": "rs_0a1b2c",
    "index": 1,
}
GPT_USAGE = Usage(
    input_tokens=50,
    output_tokens=700,
    reasoning_tokens=640,
    cached_input_tokens=0,
    total_tokens=750,
)


@pytest.mark.parametrize("whole", [False, True])
def test_openrouter_summary_and_encrypted(whole: bool) -> None:
    summary = ["**Planning** the answer…"] if whole else ["**Planning** the ", "answer…"]
    decode = decode_body if whole else decode_stream
    assert decode("openrouter_openai_encrypted") == [
        ResponseStarted(response_id="gen-1767225602-OpEnAi", model="openai/gpt-5.5"),
        ReasoningStart(part_id="reasoning-0", kind="summary", provider_metadata=SUMMARY_META),
        *(ReasoningDelta(part_id="reasoning-0", text=piece) for piece in summary),
        ReasoningEnd(part_id="reasoning-0", kind="summary", provider_metadata=SUMMARY_META),
        ReasoningStart(part_id="reasoning-1", kind="encrypted", provider_metadata=ENCRYPTED_META),
        ReasoningEnd(
            part_id="reasoning-1",
            kind="encrypted",
            provider_metadata={**ENCRYPTED_META, "data": "gAAAAABpXyz+/=="},
        ),
        *text("text-0", "Done — ok."),
        Finish(reason="stop", raw_reason="stop"),
        GPT_USAGE,
    ]


OMITTED_META: dict[str, MetadataValue] = {
    "type": "reasoning.text",
    "format": "anthropic-claude-v1",
    "index": 0,
}
REDACTED_META: dict[str, MetadataValue] = {
    "type": "reasoning.encrypted",
    "format": "anthropic-claude-v1",
    "index": 1,
}


@pytest.mark.parametrize("whole", [False, True])
def test_openrouter_signature_only_and_redacted(whole: bool) -> None:
    decode = decode_body if whole else decode_stream
    assert decode("openrouter_omitted") == [
        ResponseStarted(response_id="gen-1767225603-OmItTd", model="anthropic/claude-opus-4.7"),
        ReasoningStart(part_id="reasoning-0", kind="encrypted", provider_metadata=OMITTED_META),
        ReasoningEnd(
            part_id="reasoning-0",
            kind="encrypted",
            provider_metadata={**OMITTED_META, "signature": "ErUBCkYIAxgCIkD+omitted=="},
        ),
        ReasoningStart(part_id="reasoning-1", kind="encrypted", provider_metadata=REDACTED_META),
        ReasoningEnd(
            part_id="reasoning-1",
            kind="encrypted",
            provider_metadata={**REDACTED_META, "data": "EmwKAhgBEgy3redacted=="},
        ),
        *text("text-0", "Résumé ready."),
        Finish(reason="length", raw_reason="length"),
        Usage(input_tokens=30, output_tokens=500, reasoning_tokens=480, total_tokens=530),
    ]


@pytest.mark.parametrize("whole", [False, True])
def test_openrouter_plain_reasoning_without_details(whole: bool) -> None:
    pieces = ["Hmm, naïve approach first."] if whole else ["Hmm, naïve ", "approach first."]
    decode = decode_body if whole else decode_stream
    assert decode("openrouter_plain_reasoning") == [
        ResponseStarted(response_id="gen-1767225604-PlAiN", model="qwen/qwen3-235b-a22b"),
        ReasoningStart(part_id="reasoning-0", kind="raw"),
        *(ReasoningDelta(part_id="reasoning-0", text=piece) for piece in pieces),
        ReasoningEnd(part_id="reasoning-0", kind="raw"),
        *text("text-0", "Use a set."),
        Finish(reason="stop", raw_reason="stop"),
        Usage(input_tokens=15, output_tokens=20, total_tokens=35),
    ]


GEMINI_TEXT_META: dict[str, MetadataValue] = {
    "type": "reasoning.text",
    "format": "google-gemini-v1",
    "index": 0,
}
GEMINI_SIG_META: dict[str, MetadataValue] = {
    "type": "reasoning.encrypted",
    "format": "google-gemini-v1",
    "index": 0,
}
GEMINI_REASONING = [
    ReasoningStart(part_id="reasoning-0", kind="summary", provider_metadata=GEMINI_TEXT_META),
    ReasoningDelta(part_id="reasoning-0", text="**Checking weather** in Zürich"),
    ReasoningEnd(part_id="reasoning-0", kind="summary", provider_metadata=GEMINI_TEXT_META),
]
GEMINI_SIGNATURE = [
    ReasoningStart(part_id="reasoning-1", kind="encrypted", provider_metadata=GEMINI_SIG_META),
    ReasoningEnd(
        part_id="reasoning-1",
        kind="encrypted",
        provider_metadata={**GEMINI_SIG_META, "data": "CiQB0e2Kb+thought+sig=="},
    ),
]
GEMINI_TOOL = [
    ToolCallStart(part_id="tool-0", tool_call_id="tool_get_weather_q1w2", name="get_weather"),
    ToolCallDelta(part_id="tool-0", arguments_delta='{"city":"Zürich"}'),
]
GEMINI_TAIL = [
    ToolCallEnd(part_id="tool-0"),
    Finish(reason="tool_calls", raw_reason="tool_calls"),
    Usage(
        input_tokens=64,
        output_tokens=90,
        reasoning_tokens=70,
        cached_input_tokens=32,
        total_tokens=154,
    ),
]


def test_openrouter_gemini_tool_call_stream() -> None:
    # The thought signature arrives after the tool call, as its own encrypted part.
    assert decode_stream("openrouter_gemini_tool_calls") == [
        ResponseStarted(response_id="gen-1767225605-GeMiNi", model="google/gemini-3-pro"),
        *GEMINI_REASONING,
        *GEMINI_TOOL,
        *GEMINI_SIGNATURE,
        *GEMINI_TAIL,
    ]


def test_openrouter_gemini_tool_call_body() -> None:
    # A whole message lists reasoning_details before tool_calls.
    assert decode_body("openrouter_gemini_tool_calls") == [
        ResponseStarted(response_id="gen-1767225605-GeMiNi", model="google/gemini-3-pro"),
        *GEMINI_REASONING,
        *GEMINI_SIGNATURE,
        *GEMINI_TOOL,
        *GEMINI_TAIL,
    ]


def test_openrouter_error_mid_stream_numeric_code() -> None:
    assert decode_stream("openrouter_error_midstream") == [
        ResponseStarted(response_id="gen-1767225606-ErRoR", model="anthropic/claude-sonnet-4.6"),
        ReasoningStart(part_id="reasoning-0", kind="summary", provider_metadata=SONNET_META),
        ReasoningDelta(part_id="reasoning-0", text="Thinking "),
        StreamError(
            code="PROVIDER_SERVER_ERROR",
            message="OpenRouter reported an error during the response (502): Provider "
            "returned error (upstream provider: Anthropic).",
            retryable=True,
            status=502,
            provider_error_type="502",
        ),
    ]


def test_openrouter_error_mid_stream_string_code() -> None:
    assert decode_stream("openrouter_error_midstream_string") == [
        ResponseStarted(response_id="gen-1767225607-StRiNg", model="openai/gpt-5.5"),
        TextStart(part_id="text-0"),
        TextDelta(part_id="text-0", text="Hal"),
        StreamError(
            code="PROVIDER_SERVER_ERROR",
            message="OpenRouter reported an error during the response (server_error): "
            "Provider disconnected unexpectedly.",
            retryable=True,
            status=None,
            provider_error_type="server_error",
        ),
    ]


def test_openrouter_error_in_http_200_body() -> None:
    assert decode_body(
        "openrouter_plain_reasoning", (FIXTURES / "openrouter_error_200.json").read_bytes()
    ) == [
        StreamError(
            code="PROVIDER_RATE_LIMITED",
            message="OpenRouter reported an error during the response (429): Rate limit "
            "exceeded: free-models-per-min.",
            retryable=True,
            status=429,
            provider_error_type="429",
        )
    ]


def test_openrouter_unknown_detail_type_warns_once() -> None:
    assert decode_stream("openrouter_unknown_detail") == [
        ResponseStarted(response_id="gen-1767225608-UnKnOwN", model="x-ai/grok-5"),
        StreamWarning(
            code="UNKNOWN_PART",
            message="OpenRouter sent a reasoning detail of unknown type 'reasoning.hologram'; "
            "it was skipped.",
        ),
        *text("text-0", "Fine."),
        Finish(reason="stop", raw_reason="stop"),
    ]


DEEPSEEK_USAGE = Usage(
    input_tokens=18,
    output_tokens=120,
    reasoning_tokens=104,
    cached_input_tokens=0,
    total_tokens=138,
)


@pytest.mark.parametrize("whole", [False, True])
def test_deepseek_reasoning_content(whole: bool) -> None:
    pieces = (
        ["First, 9.11 vs 9.8 → compare decimals 🤔."]
        if whole
        else ["First, 9.11 vs 9.8 → ", "compare decimals 🤔."]
    )
    decode = decode_body if whole else decode_stream
    assert decode("deepseek_reasoning_content") == [
        ResponseStarted(
            response_id="0f3c2a71-5b9e-4c1d-9a8e-1d2c3b4a5f60", model="deepseek-reasoner"
        ),
        ReasoningStart(part_id="reasoning-0", kind="raw"),
        *(ReasoningDelta(part_id="reasoning-0", text=piece) for piece in pieces),
        ReasoningEnd(part_id="reasoning-0", kind="raw"),
        *text("text-0", "9.8 is larger."),
        Finish(reason="stop", raw_reason="stop"),
        DEEPSEEK_USAGE,
    ]


@pytest.mark.parametrize("whole", [False, True])
def test_deepseek_reasoning_then_tool_call(whole: bool) -> None:
    arguments = ['{"city":"São Paulo"}'] if whole else ['{"city":', '"São Paulo"}']
    decode = decode_body if whole else decode_stream
    assert decode("deepseek_tool_calls") == [
        ResponseStarted(response_id="7a7b-tools", model="deepseek-chat"),
        ReasoningStart(part_id="reasoning-0", kind="raw"),
        ReasoningDelta(part_id="reasoning-0", text="Need the weather tool."),
        ReasoningEnd(part_id="reasoning-0", kind="raw"),
        *text("text-0", "Let me check."),
        ToolCallStart(part_id="tool-0", tool_call_id="call_00_abc", name="get_weather"),
        *(ToolCallDelta(part_id="tool-0", arguments_delta=piece) for piece in arguments),
        ToolCallEnd(part_id="tool-0"),
        Finish(reason="tool_calls", raw_reason="tool_calls"),
        # DeepSeek's own prompt_cache_hit_tokens stands in for prompt_tokens_details.
        Usage(
            input_tokens=80,
            output_tokens=40,
            reasoning_tokens=6,
            cached_input_tokens=64,
            total_tokens=120,
        ),
    ]


@pytest.mark.parametrize("whole", [False, True])
def test_vllm_reasoning_field_read_once(whole: bool) -> None:
    # One chunk carries the same text in both "reasoning" and "reasoning_content".
    pieces = (
        ['Okay, the user wrote "héllo" — greet back.']
        if whole
        else ['Okay, the user wrote "héllo"', " — greet back."]
    )
    decode = decode_body if whole else decode_stream
    assert decode("vllm_reasoning") == [
        ResponseStarted(response_id="chatcmpl-b1e2a9d4c3f2", model="Qwen/Qwen3-8B"),
        ReasoningStart(part_id="reasoning-0", kind="raw"),
        *(ReasoningDelta(part_id="reasoning-0", text=piece) for piece in pieces),
        ReasoningEnd(part_id="reasoning-0", kind="raw"),
        *text("text-0", "Hello! 👋"),
        Finish(reason="stop", raw_reason="stop"),
        Usage(input_tokens=11, output_tokens=30, total_tokens=41),
    ]


@pytest.mark.parametrize("whole", [False, True])
def test_llamacpp_think_tags_split_across_chunks(whole: bool) -> None:
    reasoning = ["Is <b> a tag? Yes → bold."] if whole else ["Is <b> a tag? ", "Yes → bold."]
    answer = ["Use <b>…</b> for bold 日本."] if whole else ["Use <b>…</b> ", "for bold 日本."]
    decode = decode_body if whole else decode_stream
    assert decode("llamacpp_think_tags") == [
        ResponseStarted(response_id="chatcmpl-LlAmA", model="qwen3-8b-q4_k_m.gguf"),
        ReasoningStart(part_id="reasoning-0", kind="raw"),
        *(ReasoningDelta(part_id="reasoning-0", text=piece) for piece in reasoning),
        ReasoningEnd(part_id="reasoning-0", kind="raw"),
        *text("text-0", *answer),
        Finish(reason="stop", raw_reason="stop"),
        Usage(input_tokens=14, output_tokens=25, total_tokens=39),
    ]


PAIRED = sorted(
    path.stem for path in FIXTURES.glob("*.sse") if (FIXTURES / f"{path.stem}.json").exists()
)


def test_every_paired_fixture_is_covered() -> None:
    assert PAIRED == [
        "deepseek_reasoning_content",
        "deepseek_tool_calls",
        "llamacpp_think_tags",
        "mistral_magistral_chunks",
        "openai_reasoning_tokens",
        "openai_tool_calls",
        "openrouter_anthropic_summary",
        "openrouter_gemini_tool_calls",
        "openrouter_omitted",
        "openrouter_openai_encrypted",
        "openrouter_plain_reasoning",
        "openrouter_raw",
        "vllm_reasoning",
    ]


@pytest.mark.parametrize("stem", PAIRED)
def test_stream_and_body_accumulate_to_the_same_response(stem: str) -> None:
    streamed = accumulate(decode_stream(stem))
    whole = accumulate(decode_body(stem))
    assert streamed == whole
    assert streamed.error is None
    assert streamed.finish is not None


def test_accumulated_openrouter_summary_response() -> None:
    response = accumulate(decode_stream("openrouter_anthropic_summary"))
    assert response.text == "It is 4 🙂"
    assert response.reasoning_parts == (
        ReasoningPart(
            kind="summary", text="The user asks → 2+2, café.", provider_metadata=SONNET_SIGNED
        ),
    )
    assert response.response_id == "gen-1767225600-AbCdEf"


def test_accumulated_tool_calls() -> None:
    response = accumulate(decode_stream("openai_tool_calls"))
    assert response.tool_calls == (
        ToolCall(tool_call_id="call_weather_1", name="get_weather", arguments='{"city": "Zürich"}'),
        ToolCall(tool_call_id="call_time_2", name="get_time", arguments='{"tz": "Asia/東京"}'),
    )
    assert response.text == ""
