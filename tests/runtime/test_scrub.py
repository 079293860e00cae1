"""Reasoning scrubbing of raw response bodies for the ``provider_raw`` trace layer.

Real wire bytes come from the simulator renderers, given the request body each adapter
builds when reasoning is requested. Every reasoning value carries a canary; the scrubbed
bytes must hold no trace of it, and decoding them with the real adapter must give the same
answer, usage and finish as the original bytes, with reasoning reduced to the marker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thoughtline.errors import ConfigError
from thoughtline.model.accumulator import ModelResponse, accumulate
from thoughtline.model.requests import ModelRequest, ReasoningRequest
from thoughtline.providers.base import CallContext, decode_whole
from thoughtline.providers.capabilities import builtin_capabilities
from thoughtline.providers.endpoints import EndpointRegistry, EndpointSettings, ReasoningField
from thoughtline.providers.registry import wire_for
from thoughtline.runtime.policy.scrub import REASONING_MARKER, UNPARSEABLE_MARKER, scrub_reasoning
from thoughtline.testing.renderers.anthropic import AnthropicRenderer
from thoughtline.testing.renderers.gemini import GeminiRenderer
from thoughtline.testing.renderers.ollama import OllamaRenderer
from thoughtline.testing.renderers.openai_chat import OpenAIChatRenderer
from thoughtline.testing.renderers.openai_responses import OpenAIResponsesRenderer
from thoughtline.testing.transcript import (
    Frame,
    SimReasoning,
    SimRequest,
    SimToolCall,
    Transcript,
    WireRenderer,
    chunks,
)
from thoughtline.wire.frames import SSEDecoder

CANARY = "CANARY-REASONING-7f3a"
SUMMARY_TEXT = f"{CANARY} QUOKKA VORTEX ZEPHYR {CANARY}"
RAW_TEXT = f"RAW {CANARY} MOLTEN GLYPH QUARTZ"
SIGNATURE = f"SIG{CANARY}SIGNATURE"
REDACTED = f"REDACTED{CANARY}DATA"
ANSWER = "the answer is forty-two, as computed."
CHUNK = 5

TRANSCRIPT = Transcript(
    answer=ANSWER,
    reasoning=(
        SimReasoning(kind="summary", text=SUMMARY_TEXT, signature=SIGNATURE),
        SimReasoning(kind="raw", text=RAW_TEXT),
        SimReasoning(kind="redacted", signature=REDACTED),
    ),
    tool_calls=(SimToolCall(call_id="call_1", name="lookup", arguments='{"q": "forty"}'),),
    input_tokens=31,
    reasoning_tokens=640,
    output_tokens=700,
    finish="tool_calls",
    chunk_chars=CHUNK,
)
# Every reasoning delta the renderers send is one of these fragments.
FRAGMENTS = {piece.encode() for text in (SUMMARY_TEXT, RAW_TEXT) for piece in chunks(text, CHUNK)}

ENVIRON = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "GEMINI_API_KEY": "k"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One wire/dialect: an endpoint (built-in or defined by ``settings``) and a renderer."""

    endpoint: str
    model: str
    renderer: WireRenderer
    settings: dict[str, EndpointSettings] = field(default_factory=dict)
    returns_reasoning: bool = True

    def context(self) -> CallContext:
        endpoint = EndpointRegistry(self.settings, environ=ENVIRON).resolve(self.endpoint)
        capability = builtin_capabilities().lookup(self.endpoint, self.model)
        return CallContext(endpoint=endpoint, capability=capability)

    def request(self, stream: bool) -> ModelRequest:
        return ModelRequest.simple(
            self.model, "Why?", reasoning=ReasoningRequest(enabled=True), stream=stream
        )

    def sim_request(self, stream: bool) -> SimRequest:
        """What the provider receives: the body the adapter builds for a reasoning request."""
        context = self.context()
        wire = wire_for(context.endpoint.wire_api).build_request(self.request(stream), context)
        return SimRequest(
            method="POST",
            path=urlsplit(wire.url).path,
            query={},
            headers={},
            body=dict(wire.body),
            profile=self.endpoint,
            model=self.model,
            stream=stream,
        )

    def frames(self, transcript: Transcript = TRANSCRIPT) -> list[Frame]:
        return self.renderer.stream_frames(transcript, self.sim_request(True))

    def body(self, transcript: Transcript = TRANSCRIPT) -> bytes:
        return self.renderer.body(transcript, self.sim_request(False))

    def scrub(self, data: bytes, *, stream: bool, status: int | None = None) -> bytes:
        context = self.context()
        return scrub_reasoning(
            data,
            wire_api=context.endpoint.wire_api,
            streamed=stream,
            endpoint=context.endpoint,
            status=status,
        )

    def decode(self, data: bytes, *, stream: bool) -> ModelResponse:
        context = self.context()
        adapter = wire_for(context.endpoint.wire_api)
        request = self.request(stream)
        if stream:
            return accumulate(decode_whole(adapter.new_decoder(request, context), data))
        return accumulate(adapter.decode_body(data, request, context))


def _tags(name: str, field_value: ReasoningField) -> dict[str, EndpointSettings]:
    return {
        name: EndpointSettings(base_url="http://127.0.0.1:8080/v1", reasoning_field=field_value)
    }


CASES: dict[str, Case] = {
    "anthropic": Case(
        endpoint="anthropic", model="claude-sonnet-4-6", renderer=AnthropicRenderer()
    ),
    "openai-responses": Case(
        endpoint="openai", model="gpt-5.5", renderer=OpenAIResponsesRenderer()
    ),
    "chat-openai": Case(
        endpoint="openai",
        model="gpt-5.5",
        renderer=OpenAIChatRenderer(dialect="openai", reasons_by_default=True),
        settings={"openai": EndpointSettings(wire_api="openai-chat")},
        returns_reasoning=False,
    ),
    "chat-openrouter": Case(
        endpoint="openrouter",
        model="anthropic/claude-sonnet-4.6",
        renderer=OpenAIChatRenderer(dialect="openrouter"),
    ),
    "chat-reasoning_content": Case(
        endpoint="deepseek",
        model="deepseek-reasoner",
        renderer=OpenAIChatRenderer(
            dialect="raw-reasoning", reasoning_field="reasoning_content", reasons_by_default=True
        ),
    ),
    "chat-reasoning": Case(
        endpoint="vllm",
        model="qwen3-32b",
        renderer=OpenAIChatRenderer(dialect="raw-reasoning", reasoning_field="reasoning"),
    ),
    "chat-think_tags": Case(
        endpoint="tags",
        model="qwen3-8b",
        renderer=OpenAIChatRenderer(dialect="raw-reasoning", reasoning_field="think_tags"),
        settings=_tags("tags", "think_tags"),
    ),
    "chat-think_tags-auto": Case(
        endpoint="auto",
        model="qwen3-8b",
        renderer=OpenAIChatRenderer(dialect="raw-reasoning", reasoning_field="think_tags"),
        settings=_tags("auto", "auto"),
    ),
    "gemini": Case(endpoint="gemini", model="gemini-3-pro", renderer=GeminiRenderer()),
    "gemini-late-signature": Case(
        endpoint="gemini",
        model="gemini-3-pro",
        renderer=GeminiRenderer(signature_placement="late_empty"),
    ),
    "ollama": Case(endpoint="ollama", model="qwen3:8b", renderer=OllamaRenderer()),
}


def split_frames(data: bytes, *, ndjson: bool) -> list[bytes]:
    """Frames (SSE, without their blank line) or lines (NDJSON), in order."""
    if ndjson:
        return data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n")
    normalized = data.replace(b"\r\n", b"\n")
    pieces = normalized.split(b"\n\n")
    return pieces[:-1] if normalized.endswith(b"\n\n") else pieces


def event_names(data: bytes) -> list[str]:
    decoder = SSEDecoder()
    return [frame.event for frame in [*decoder.feed(data), *decoder.flush()]]


def assert_no_reasoning(scrubbed: bytes) -> None:
    assert CANARY.encode() not in scrubbed
    leaked = sorted(fragment for fragment in FRAGMENTS if fragment in scrubbed)
    assert not leaked, f"reasoning fragments left: {leaked}"


def assert_scrubbed_response(original: ModelResponse, scrubbed: ModelResponse) -> None:
    assert scrubbed.error is None and original.error is None
    assert scrubbed.text == original.text == ANSWER
    assert scrubbed.usage == original.usage
    assert scrubbed.usage.reasoning_tokens == original.usage.reasoning_tokens
    assert scrubbed.finish == original.finish
    # A call's carrier (Gemini's thoughtSignature on a functionCall part) is reasoning
    # and scrubbed with it; the call itself stays.
    assert [(c.tool_call_id, c.name, c.arguments) for c in scrubbed.tool_calls] == [
        (c.tool_call_id, c.name, c.arguments) for c in original.tool_calls
    ]
    for call in scrubbed.tool_calls:
        assert CANARY not in repr(call.provider_metadata)
    assert scrubbed.response_id == original.response_id
    for part in scrubbed.reasoning_parts:
        assert part.text.replace(REASONING_MARKER, "") == ""
        assert CANARY not in repr(part.provider_metadata)


# ---------------------------------------------------------------------- every wire


@pytest.mark.parametrize("name", list(CASES))
def test_stream_scrubbed(name: str) -> None:
    case = CASES[name]
    frames = case.frames()
    original = b"".join(frame.data for frame in frames)
    scrubbed = case.scrub(original, stream=True)

    # The test can fail: the original carries the canary and decodes to reasoning.
    decoded = case.decode(original, stream=True)
    assert (b"CANAR" in original) == case.returns_reasoning
    assert bool(decoded.reasoning_text) == case.returns_reasoning

    assert_no_reasoning(scrubbed)
    assert_scrubbed_response(decoded, case.decode(scrubbed, stream=True))
    ndjson = case.endpoint == "ollama"
    scrubbed_frames = split_frames(scrubbed, ndjson=ndjson)
    original_frames = split_frames(original, ndjson=ndjson)
    assert len(scrubbed_frames) == len(original_frames) == len(frames)
    if not ndjson:
        assert event_names(scrubbed) == event_names(original)
    # Frames that carry no reasoning come through byte for byte.
    for frame, before, after in zip(frames, original_frames, scrubbed_frames, strict=True):
        if frame.role != "reasoning" and CANARY.encode() not in before:
            assert after == before


@pytest.mark.parametrize("name", list(CASES))
def test_body_scrubbed(name: str) -> None:
    case = CASES[name]
    original = case.body()
    scrubbed = case.scrub(original, stream=False)
    decoded = case.decode(original, stream=False)
    assert (b"CANAR" in original) == case.returns_reasoning
    assert bool(decoded.reasoning_text) == case.returns_reasoning
    assert_no_reasoning(scrubbed)
    assert_scrubbed_response(decoded, case.decode(scrubbed, stream=False))
    orjson.loads(scrubbed)  # still one JSON document


def test_markers_replace_each_value() -> None:
    """Strings become the marker, arrays and objects become empty; the shape stays."""
    case = CASES["openai-responses"]
    body = orjson.loads(case.scrub(case.body(), stream=False))
    reasoning = body["output"][0]
    assert reasoning == {
        "id": "rs_sim_1",
        "type": "reasoning",
        "summary": [],
        "content": [],
        "encrypted_content": REASONING_MARKER,
    }
    assert body["usage"]["output_tokens_details"] == {"reasoning_tokens": 640}

    case = CASES["chat-openrouter"]
    message = orjson.loads(case.scrub(case.body(), stream=False))["choices"][0]["message"]
    assert message["reasoning"] == REASONING_MARKER
    assert message["reasoning_details"] == []
    assert message["content"] == ANSWER

    case = CASES["anthropic"]
    content = orjson.loads(case.scrub(case.body(), stream=False))["content"]
    assert content[:3] == [
        {"type": "thinking", "thinking": REASONING_MARKER, "signature": REASONING_MARKER},
        {"type": "thinking", "thinking": REASONING_MARKER, "signature": REASONING_MARKER},
        {"type": "redacted_thinking", "data": REASONING_MARKER},
    ]

    case = CASES["gemini"]
    parts = orjson.loads(case.scrub(case.body(), stream=False))["candidates"][0]["content"]["parts"]
    assert parts[0] == {"text": REASONING_MARKER, "thought": True}
    assert parts[2] == {"text": ANSWER}
    # A step with a tool call carries its signature on the first functionCall part.
    assert parts[3]["thoughtSignature"] == REASONING_MARKER
    assert "functionCall" in parts[3]


def test_think_tag_stream_content_is_the_answer_only() -> None:
    case = CASES["chat-think_tags"]
    scrubbed = case.scrub(b"".join(frame.data for frame in case.frames()), stream=True)
    contents = [
        payload["choices"][0]["delta"].get("content")
        for payload in (
            orjson.loads(frame.data)
            for frame in SSEDecoder().feed(scrubbed)
            if frame.data.startswith("{")
        )
        if payload["choices"]
    ]
    assert "".join(content or "" for content in contents) == ANSWER
    assert "<think>" not in scrubbed.decode() and "</think>" not in scrubbed.decode()


# ---------------------------------------------------------------------- unparseable input


@pytest.mark.parametrize("name", list(CASES))
def test_malformed_frame_is_replaced(name: str) -> None:
    case = CASES[name]
    frames = [frame.data for frame in case.frames()]
    malformed = case.renderer.malformed_frame()
    position = len(frames) // 2
    original = b"".join([*frames[:position], malformed, *frames[position:]])
    scrubbed = case.scrub(original, stream=True)
    ndjson = case.endpoint == "ollama"
    scrubbed_frames = split_frames(scrubbed, ndjson=ndjson)
    assert len(scrubbed_frames) == len(frames) + 1
    assert UNPARSEABLE_MARKER.encode() in scrubbed_frames[position]
    assert malformed.strip() not in scrubbed
    assert scrubbed.count(UNPARSEABLE_MARKER.encode()) == 1
    assert_no_reasoning(scrubbed)
    # The adapter fails on the marker just as it fails on the malformed frame.
    before, after = case.decode(original, stream=True), case.decode(scrubbed, stream=True)
    assert before.error is not None and after.error is not None
    assert after.error.code == before.error.code == "PROVIDER_MALFORMED_RESPONSE"


@pytest.mark.parametrize("name", ["anthropic", "openai-responses", "chat-think_tags", "ollama"])
def test_truncated_tail_is_replaced(name: str) -> None:
    case = CASES[name]
    original = b"".join(frame.data for frame in case.frames())
    cut = original.index(b"CANAR") + 5  # inside the frame, after the first fragment
    scrubbed = case.scrub(original[:cut], stream=True)
    assert_no_reasoning(scrubbed)
    assert scrubbed.endswith(UNPARSEABLE_MARKER.encode())
    assert case.decode(scrubbed, stream=True).error is not None


def test_non_utf8_frame_and_unknown_lines_are_replaced() -> None:
    case = CASES["anthropic"]
    bad_bytes = b'event: content_block_delta\ndata: {"thinking":"\xff\xfe' + CANARY.encode()
    bad_bytes += b'"}\n\n'
    stray = b"event: content_block_delta\nthinking " + CANARY.encode() + b"\n\n"
    scrubbed = case.scrub(bad_bytes + stray, stream=True)
    assert scrubbed == (
        b"event: content_block_delta\ndata: [unparseable frame removed]\n\n"
        b"event: content_block_delta\ndata: [unparseable frame removed]\n\n"
    )

    ollama = CASES["ollama"]
    line = b'{"message":{"thinking":"\xff' + CANARY.encode() + b'"}}\n'
    assert ollama.scrub(line + b"\n", stream=True) == b"[unparseable frame removed]\n\n"


def test_unparseable_whole_body_is_replaced() -> None:
    case = CASES["ollama"]
    body = case.body()
    assert case.scrub(body[: body.index(b"CANAR") + 5], stream=False) == (
        UNPARSEABLE_MARKER.encode()
    )


# ---------------------------------------------------------------------- what stays


@pytest.mark.parametrize("name", list(CASES))
def test_error_bodies_pass_through_unchanged(name: str) -> None:
    case = CASES[name]
    body = case.renderer.error_body(429, "Slow down, please.")
    assert case.scrub(body, stream=False, status=429) == body
    assert case.scrub(body, stream=True, status=429) == body
    assert case.scrub(body, stream=False) == body  # shaped as an error: nothing to scrub
    page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
    assert case.scrub(page, stream=True, status=502) == page


@pytest.mark.parametrize("name", list(CASES))
def test_stream_error_frame_survives(name: str) -> None:
    case = CASES[name]
    frames = [frame.data for frame in case.frames() if frame.role != "end"]
    error = case.renderer.stream_error_frame("overloaded", "Busy, try again.")
    scrubbed = case.scrub(b"".join([*frames, error]), stream=True)
    assert scrubbed.endswith(error)
    assert_no_reasoning(scrubbed)


def test_comments_done_and_empty_bodies_are_kept() -> None:
    case = CASES["chat-openrouter"]
    data = b": OPENROUTER PROCESSING\n\ndata: [DONE]\n\n"
    assert case.scrub(data, stream=True) == data
    assert case.scrub(b"", stream=True) == b""
    assert case.scrub(b"", stream=False) == b""


def test_unknown_wire_api_is_an_error() -> None:
    endpoint = CASES["anthropic"].context().endpoint
    with pytest.raises(ConfigError, match="unknown wire_api"):
        scrub_reasoning(b"{}", wire_api="smoke-signals", streamed=False, endpoint=endpoint)


# ---------------------------------------------------------------------- <think> tags


def chat_stream(deltas: list[str], *, finish: bool) -> bytes:
    """A raw-reasoning chat stream carrying ``deltas`` as ``content``."""

    def chunk(delta: dict[str, object], finish_reason: str | None = None) -> bytes:
        payload = {
            "id": "c1",
            "object": "chat.completion.chunk",
            "model": "qwen3-8b",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
        return b"data: " + orjson.dumps(payload) + b"\n\n"

    frames = [chunk({"role": "assistant", "content": ""})]
    frames += [chunk({"content": delta}) for delta in deltas]
    if finish:
        frames.append(chunk({}, "stop"))
    frames.append(b"data: [DONE]\n\n")
    return b"".join(frames)


def scrubbed_contents(case: Case, data: bytes) -> str:
    out = []
    for frame in SSEDecoder().feed(case.scrub(data, stream=True)):
        if frame.data.startswith("{"):
            out.append(orjson.loads(frame.data)["choices"][0]["delta"].get("content") or "")
    return "".join(out)


@pytest.mark.parametrize("finish", [True, False], ids=["finish_reason", "done_only"])
def test_held_back_partial_tag_is_released_as_answer(finish: bool) -> None:
    """A possible ``<think>`` prefix held back until the end is answer text after all."""
    case = CASES["chat-think_tags"]
    data = chat_stream(["<think>SECRET</think>\n\nok <th", "i"], finish=finish)
    assert scrubbed_contents(case, data) == "ok <thi"
    original = case.decode(data, stream=True)
    assert original.text == "ok <thi" and original.reasoning_text == "SECRET"
    assert case.decode(case.scrub(data, stream=True), stream=True).text == "ok <thi"


REASONING_ALPHABET = "QWXZ0123456789 \n"
ANSWER_ALPHABET = "abcdef <>/\n"


@settings(max_examples=300, deadline=None)
@given(
    blocks=st.lists(
        st.tuples(
            st.text(REASONING_ALPHABET, max_size=20),
            st.sampled_from(["", "\n", "\n\n", " "]),
            st.text(ANSWER_ALPHABET, max_size=15),
        ),
        min_size=1,
        max_size=3,
    ),
    lead=st.sampled_from(["", "\n", "  "]),
    mode=st.sampled_from(["chat-think_tags", "chat-think_tags-auto"]),
    cuts=st.lists(st.integers(min_value=1, max_value=200), max_size=25),
    finish=st.booleans(),
)
def test_any_chunking_of_think_tags_leaves_no_reasoning(
    blocks: list[tuple[str, str, str]], lead: str, mode: str, cuts: list[int], finish: bool
) -> None:
    case = CASES[mode]
    if mode == "chat-think_tags-auto":
        blocks = blocks[:1]  # auto mode honours one leading block only
    content = lead + "".join(
        f"<think>{reasoning}</think>{gap}{answer}" for reasoning, gap, answer in blocks
    )
    points = sorted({cut for cut in cuts if cut < len(content)})
    deltas = [
        content[start:end] for start, end in zip([0, *points], [*points, len(content)], strict=True)
    ]
    data = chat_stream([delta for delta in deltas if delta], finish=finish)

    left = scrubbed_contents(case, data)
    assert not set(left) & set("QWXZ0123456789")
    original = case.decode(data, stream=True)
    assert left == original.text
    assert case.decode(case.scrub(data, stream=True), stream=True).text == original.text


# A model that leaves its <think> block in the answer text, on every built-in endpoint
# whose server may do so: the raw layer keeps exactly the answer the adapter decodes.
LEADING_THINK = {
    "deepseek": Case(
        endpoint="deepseek",
        model="deepseek-chat",
        renderer=OpenAIChatRenderer(dialect="raw-reasoning", reasoning_field="reasoning_content"),
    ),
    "vllm": Case(
        endpoint="vllm",
        model="Qwen/Qwen3-8B",
        renderer=OpenAIChatRenderer(dialect="raw-reasoning", reasoning_field="reasoning"),
    ),
    "llamacpp": Case(
        endpoint="llamacpp",
        model="qwen3-8b",
        renderer=OpenAIChatRenderer(dialect="raw-reasoning", reasoning_field="reasoning_content"),
    ),
    "openrouter": Case(
        endpoint="openrouter",
        model="deepseek/deepseek-r1",
        renderer=OpenAIChatRenderer(dialect="openrouter"),
    ),
    "ollama": Case(endpoint="ollama", model="qwen3:8b", renderer=OllamaRenderer()),
}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
@pytest.mark.parametrize("name", list(LEADING_THINK))
def test_a_leading_think_block_is_scrubbed_where_the_adapter_reads_it(
    name: str, stream: bool
) -> None:
    case = LEADING_THINK[name]
    transcript = Transcript(answer=f"\n<think>{RAW_TEXT}</think>\n\n{ANSWER}", chunk_chars=CHUNK)
    if stream:
        data = b"".join(frame.data for frame in case.frames(transcript))
    else:
        data = case.body(transcript)
    original = case.decode(data, stream=stream)
    assert original.text == ANSWER
    assert original.reasoning_text == RAW_TEXT
    scrubbed = case.scrub(data, stream=stream)
    assert_no_reasoning(scrubbed)
    assert b"<think>" not in scrubbed
    assert case.decode(scrubbed, stream=stream).text == ANSWER


@pytest.mark.parametrize("name", list(LEADING_THINK))
def test_after_a_reasoning_field_a_think_block_in_the_answer_is_kept(name: str) -> None:
    case = LEADING_THINK[name]
    answer = f"<think>quoted</think> is the tag; {ANSWER}"
    transcript = Transcript(
        answer=answer, reasoning=(SimReasoning(kind="raw", text=RAW_TEXT),), chunk_chars=CHUNK
    )
    data = b"".join(frame.data for frame in case.frames(transcript))
    assert case.decode(data, stream=True).text == answer
    scrubbed = case.scrub(data, stream=True)
    assert_no_reasoning(scrubbed)
    assert case.decode(scrubbed, stream=True).text == answer
