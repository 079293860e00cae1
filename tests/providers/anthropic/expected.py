"""The exact events each recorded fixture decodes to (streamed and non-streaming)."""

from __future__ import annotations

from thoughtline.model.events import (
    Finish,
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

SUMMARY_SIGNATURE = (
    "EqQBCkgIBxABGAIqQNwx9mE1x3n8ZxGm0s4hV+Q0l6tM3iQ2oD2c9pTnzq7bXy1V0bHk5vS1oq4mN0wJ5RZb6Kf"
    "YQpWm8w0sEgz3c2lpZ25hdHVyZRoMc3VtbWFyeS0wMDEiMKk="
)
OMITTED_SIGNATURE = (
    "ErcCCkgIChABGAIiQOmit3dZ8n0qfXq2Hc4vV1kPz0bW3yJ7sQeT5mN9aR2uL8oK4pD6fG1hJ3xC0vB7nM5zA9s"
    "E2wQ4tY6uI8oP0aSDG9taXR0ZWQtMDAxEgxnMv9T0lK3pQ=="
)
REDACTED_THINKING_SIGNATURE = (
    "EuYBCkQYAiJAredacted0sig0one9xK2mQ7vN4pL1zR8tY5uW3eS6dF0gH2jK4lZ7xC9vB1nM3qA5sD8fG0hJ2k"
    "L4zX6cV8bN0mQ=="
)
REDACTED_DATA = (
    "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7"
    "vB2URLZAd0kzqT7m/XQxL1RiE2fbAw=="
)
TOOL_SIGNATURE_1 = (
    "EpMCCkYIBxgCKkBtool0first0sig7hQ2mN5vL8pR1zT4yW6uE3sD0fG2jK9lX7cV5bN1mA3qS8dF0gH4jK6lZ2"
    "xC8vB0nM=="
)
TOOL_SIGNATURE_2 = (
    "EpQCCkYIBxgCKkBtool0second0sig3kP9mQ2vN5rL8tW1yZ4uE7sD0fG3jK6lX9cV2bN5mA8qS1dF4gH7jK0lZ"
    "3xC6vB9nM=="
)

SUMMARY_STREAM: list[StreamEvent] = [
    ResponseStarted(response_id="msg_01SummaryQ7kR2vLx", model="claude-sonnet-4-6"),
    Usage(input_tokens=1240, cached_input_tokens=1200, cache_write_tokens=0),
    ReasoningStart(part_id="reasoning-0", kind="summary"),
    ReasoningDelta(part_id="reasoning-0", text="Let me check the café → 日本 route"),
    ReasoningDelta(part_id="reasoning-0", text=" first 🙂. Distance ≈ 9 700 km."),
    ReasoningEnd(
        part_id="reasoning-0", kind="summary", provider_metadata={"signature": SUMMARY_SIGNATURE}
    ),
    TextStart(part_id="text-1"),
    TextDelta(part_id="text-1", text="The answer is 42"),
    TextDelta(part_id="text-1", text=" — voilà, 日本語 ✅."),
    TextEnd(part_id="text-1"),
    Usage(
        input_tokens=1240,
        output_tokens=900,
        reasoning_tokens=780,
        cached_input_tokens=1200,
        cache_write_tokens=0,
    ),
    Finish(reason="stop", raw_reason="end_turn"),
]

SUMMARY_BODY: list[StreamEvent] = [
    ResponseStarted(response_id="msg_01SummaryQ7kR2vLx", model="claude-sonnet-4-6"),
    Usage(input_tokens=1240, cached_input_tokens=1200, cache_write_tokens=0),
    ReasoningStart(part_id="reasoning-0", kind="summary"),
    ReasoningDelta(
        part_id="reasoning-0",
        text="Let me check the café → 日本 route first 🙂. Distance ≈ 9 700 km.",
    ),
    ReasoningEnd(
        part_id="reasoning-0", kind="summary", provider_metadata={"signature": SUMMARY_SIGNATURE}
    ),
    TextStart(part_id="text-1"),
    TextDelta(part_id="text-1", text="The answer is 42 — voilà, 日本語 ✅."),
    TextEnd(part_id="text-1"),
    Usage(
        input_tokens=1240,
        output_tokens=900,
        reasoning_tokens=780,
        cached_input_tokens=1200,
        cache_write_tokens=0,
    ),
    Finish(reason="stop", raw_reason="end_turn"),
]

OMITTED_STREAM: list[StreamEvent] = [
    ResponseStarted(response_id="msg_01OmittedZp3Hq", model="claude-sonnet-5"),
    Usage(input_tokens=52, cached_input_tokens=0, cache_write_tokens=0),
    ReasoningStart(part_id="reasoning-0", kind="summary"),
    ReasoningEnd(
        part_id="reasoning-0", kind="encrypted", provider_metadata={"signature": OMITTED_SIGNATURE}
    ),
    TextStart(part_id="text-1"),
    TextDelta(part_id="text-1", text="Paris → Lyon: 2 h by TGV. Bon voyage 🚄"),
    TextEnd(part_id="text-1"),
    Usage(output_tokens=410, reasoning_tokens=320),
    Finish(reason="stop", raw_reason="end_turn"),
]

OMITTED_BODY: list[StreamEvent] = [
    *OMITTED_STREAM[:7],
    # The body's usage repeats input and cache counts; the stream's message_delta did not.
    Usage(
        input_tokens=52,
        output_tokens=410,
        reasoning_tokens=320,
        cached_input_tokens=0,
        cache_write_tokens=0,
    ),
    Finish(reason="stop", raw_reason="end_turn"),
]

REDACTED_STREAM: list[StreamEvent] = [
    ResponseStarted(response_id="msg_01RedactedMv8Tn", model="claude-sonnet-4-5-20250929"),
    Usage(input_tokens=75, cached_input_tokens=0, cache_write_tokens=0),
    ReasoningStart(part_id="reasoning-0", kind="summary"),
    ReasoningDelta(part_id="reasoning-0", text="Der Nutzer fragt nach Größen: "),
    ReasoningDelta(part_id="reasoning-0", text="ich rechne π × r²."),  # noqa: RUF001
    ReasoningEnd(
        part_id="reasoning-0",
        kind="summary",
        provider_metadata={"signature": REDACTED_THINKING_SIGNATURE},
    ),
    ReasoningStart(
        part_id="reasoning-1", kind="redacted", provider_metadata={"data": REDACTED_DATA}
    ),
    ReasoningEnd(part_id="reasoning-1", kind="redacted"),
    TextStart(part_id="text-2"),
    TextDelta(part_id="text-2", text="Die Fläche beträgt ≈ 78,5 cm²."),
    TextEnd(part_id="text-2"),
    Usage(output_tokens=512),
    Finish(reason="stop", raw_reason="end_turn"),
]

REDACTED_BODY: list[StreamEvent] = [
    *REDACTED_STREAM[:3],
    ReasoningDelta(part_id="reasoning-0", text="Der Nutzer fragt nach Größen: ich rechne π × r²."),  # noqa: RUF001
    *REDACTED_STREAM[5:11],
    Usage(input_tokens=75, output_tokens=512, cached_input_tokens=0, cache_write_tokens=0),
    Finish(reason="stop", raw_reason="end_turn"),
]

TOOL_USE_STREAM: list[StreamEvent] = [
    ResponseStarted(response_id="msg_01ToolsB4nWc", model="claude-opus-4-6"),
    Usage(input_tokens=612, cached_input_tokens=0, cache_write_tokens=0),
    ReasoningStart(part_id="reasoning-0", kind="summary"),
    ReasoningDelta(part_id="reasoning-0", text="Need the weather in Zürich first."),
    ReasoningEnd(
        part_id="reasoning-0", kind="summary", provider_metadata={"signature": TOOL_SIGNATURE_1}
    ),
    ToolCallStart(part_id="tool-1", tool_call_id="toolu_01WeatherZrh", name="get_weather"),
    ToolCallDelta(part_id="tool-1", arguments_delta='{"city":"Zür'),
    ToolCallDelta(part_id="tool-1", arguments_delta='ich","unit":"°C"}'),
    ToolCallEnd(part_id="tool-1"),
    ReasoningStart(part_id="reasoning-2", kind="summary"),
    ReasoningDelta(part_id="reasoning-2", text="Also need the local time → clock tool."),
    ReasoningEnd(
        part_id="reasoning-2", kind="summary", provider_metadata={"signature": TOOL_SIGNATURE_2}
    ),
    ToolCallStart(part_id="tool-3", tool_call_id="toolu_01ClockNow", name="get_time"),
    ToolCallDelta(part_id="tool-3", arguments_delta="{}"),
    ToolCallEnd(part_id="tool-3"),
    Usage(
        input_tokens=612,
        output_tokens=188,
        reasoning_tokens=96,
        cached_input_tokens=0,
        cache_write_tokens=0,
    ),
    Finish(reason="tool_calls", raw_reason="tool_use"),
]

TOOL_USE_BODY: list[StreamEvent] = [
    *TOOL_USE_STREAM[:6],
    ToolCallDelta(part_id="tool-1", arguments_delta='{"city":"Zürich","unit":"°C"}'),
    *TOOL_USE_STREAM[8:],
]

REFUSAL_WARNING = StreamWarning(
    code="PROVIDER_REFUSAL",
    message="The model refused (category: reasoning_extraction): The request asks for the "
    "model's internal reasoning. Asking the model to write out its reasoning is refused; "
    "request reasoning through chain_of_thought instead.",
)

REFUSAL_STREAM: list[StreamEvent] = [
    ResponseStarted(response_id="msg_01RefusalX5cD", model="claude-opus-4-8"),
    Usage(input_tokens=58, cached_input_tokens=0, cache_write_tokens=0),
    TextStart(part_id="text-0"),
    TextDelta(part_id="text-0", text="I can’t write out my internal reasoning verbatim."),  # noqa: RUF001
    TextEnd(part_id="text-0"),
    Usage(output_tokens=14),
    REFUSAL_WARNING,
    Finish(reason="refusal", raw_reason="refusal"),
]

REFUSAL_BODY: list[StreamEvent] = [
    *REFUSAL_STREAM[:5],
    Usage(input_tokens=58, output_tokens=14, cached_input_tokens=0, cache_write_tokens=0),
    REFUSAL_WARNING,
    Finish(reason="refusal", raw_reason="refusal"),
]

SERVER_TOOL_WARNING = StreamWarning(
    code="UNKNOWN_PART",
    message="Skipped an Anthropic content block of type 'server_tool_use' (index 0).",
)
SEARCH_RESULT_WARNING = StreamWarning(
    code="UNKNOWN_PART",
    message="Skipped an Anthropic content block of type 'web_search_tool_result' (index 1).",
)
CITATIONS_WARNING = StreamWarning(
    code="UNKNOWN_EVENT",
    message="Skipped Anthropic 'citations_delta' deltas on a text block (index 2).",
)

EXTRAS_STREAM: list[StreamEvent] = [
    ResponseStarted(response_id="msg_01ExtrasW7eB", model="claude-haiku-4-5-20251001"),
    Usage(input_tokens=2048, cached_input_tokens=0, cache_write_tokens=0),
    SERVER_TOOL_WARNING,
    SEARCH_RESULT_WARNING,
    TextStart(part_id="text-2"),
    CITATIONS_WARNING,
    TextDelta(part_id="text-2", text="Tokyo has about 14 million"),
    TextDelta(part_id="text-2", text=" people (東京"),
    TextEnd(part_id="text-2"),
    Usage(output_tokens=64),
    Finish(reason="length", raw_reason="max_tokens"),
]

EXTRAS_BODY: list[StreamEvent] = [
    *EXTRAS_STREAM[:5],
    TextDelta(part_id="text-2", text="Tokyo has about 14 million people (東京"),
    CITATIONS_WARNING,
    TextEnd(part_id="text-2"),
    Usage(input_tokens=2048, output_tokens=64, cached_input_tokens=0, cache_write_tokens=0),
    Finish(reason="length", raw_reason="max_tokens"),
]

ERROR_STREAM: list[StreamEvent] = [
    ResponseStarted(response_id="msg_01OverloadK2x", model="claude-opus-4-7"),
    Usage(input_tokens=33, cached_input_tokens=0, cache_write_tokens=0),
    ReasoningStart(part_id="reasoning-0", kind="summary"),
    ReasoningDelta(part_id="reasoning-0", text="Première étape : lire l'énoncé…"),
    StreamError(
        code="PROVIDER_OVERLOADED",
        message="Anthropic stream error (overloaded_error): Overloaded. The provider is "
        "overloaded; try again shortly.",
        retryable=True,
        provider_error_type="overloaded_error",
    ),
]

PROXY_START_USAGE = Usage(input_tokens=310, cached_input_tokens=0, cache_write_tokens=0)
PROTOCOL_BREAK_STREAM: list[StreamEvent] = [
    # A proxy started a second message while the first one's tool_use block was still
    # open: the cut call stays incomplete (no ToolCallEnd), and both facts are warned.
    ResponseStarted(response_id="msg_01ProxyFirstA1", model="claude-sonnet-4-6"),
    PROXY_START_USAGE,
    ReasoningStart(part_id="reasoning-0", kind="summary"),
    ReasoningDelta(part_id="reasoning-0", text="Wetter für Zürich holen."),
    ReasoningEnd(
        part_id="reasoning-0",
        kind="summary",
        provider_metadata={"signature": "EpYBCkgIBxABproxy=="},
    ),
    ToolCallStart(part_id="tool-1", tool_call_id="toolu_01ProxyCut", name="get_weather"),
    ToolCallDelta(part_id="tool-1", arguments_delta='{"city":"Zür'),
    StreamWarning(
        code="PROVIDER_PROTOCOL",
        message="Anthropic started a new message before the previous one ended; what the "
        "previous message left unfinished is kept as incomplete.",
    ),
    StreamWarning(
        code="INCOMPLETE_PART",
        message="Anthropic never closed the tool_use block at index 1; its arguments may be "
        "truncated, so the tool call is kept as incomplete.",
    ),
    ResponseStarted(response_id="msg_01ProxySecondB2", model="claude-sonnet-4-6"),
    PROXY_START_USAGE,
    TextStart(part_id="text-0"),
    TextDelta(part_id="text-0", text="Entschuldigung — bitte erneut fragen."),
    TextEnd(part_id="text-0"),
    Usage(output_tokens=12),
    Finish(reason="stop", raw_reason="end_turn"),
]

STREAMS: dict[str, list[StreamEvent]] = {
    "protocol_break": PROTOCOL_BREAK_STREAM,
    "summary": SUMMARY_STREAM,
    "omitted": OMITTED_STREAM,
    "redacted": REDACTED_STREAM,
    "tool_use": TOOL_USE_STREAM,
    "refusal": REFUSAL_STREAM,
    "extras": EXTRAS_STREAM,
    "error": ERROR_STREAM,
}

BODIES: dict[str, list[StreamEvent]] = {
    "summary": SUMMARY_BODY,
    "omitted": OMITTED_BODY,
    "redacted": REDACTED_BODY,
    "tool_use": TOOL_USE_BODY,
    "refusal": REFUSAL_BODY,
    "extras": EXTRAS_BODY,
}
