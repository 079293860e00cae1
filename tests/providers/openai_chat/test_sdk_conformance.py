"""Fixtures and simulator output validate against the official OpenAI SDK types."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from thoughtline.testing.renderers.openai_chat import OpenAIChatRenderer
from thoughtline.testing.transcript import SimReasoning, SimRequest, SimToolCall, Transcript
from thoughtline.wire.frames import SSEDecoder

from .helpers import FIXTURES

if TYPE_CHECKING:
    pass

# Mistral's content-chunk lists are Mistral's own shape, not an OpenAI SDK type
# (``content`` is a string there); those fixtures follow Mistral's published format.
NOT_OPENAI_SHAPED = ("mistral_",)
SSE_FIXTURES = sorted(
    path.name for path in FIXTURES.glob("*.sse") if not path.name.startswith(NOT_OPENAI_SHAPED)
)
BODY_FIXTURES = sorted(
    path.name
    for path in FIXTURES.glob("*.json")
    if "error" not in path.name and not path.name.startswith(NOT_OPENAI_SHAPED)
)


def sse_payloads(data: bytes) -> list[dict[str, Any]]:
    decoder = SSEDecoder()
    frames = [*decoder.feed(data), *decoder.flush()]
    return [json.loads(frame.data) for frame in frames if frame.data != "[DONE]"]


def test_fixture_lists_are_not_empty() -> None:
    assert len(SSE_FIXTURES) == 19
    assert len(BODY_FIXTURES) == 12


@pytest.mark.parametrize("name", SSE_FIXTURES)
def test_stream_chunks_are_sdk_chunks(name: str) -> None:
    from openai.types.chat import ChatCompletionChunk
    from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall

    payloads = sse_payloads((FIXTURES / name).read_bytes())
    assert payloads
    for payload in payloads:
        if "error" in payload:
            # In-stream errors are not chunks; OpenRouter's adds finish_reason "error",
            # which the OpenAI SDK's Literal does not list.
            assert set(payload["error"]) >= {"message"}
            continue
        chunk = ChatCompletionChunk.model_validate(payload)
        assert type(chunk) is ChatCompletionChunk
        assert chunk.object == "chat.completion.chunk"
        for choice in chunk.choices:
            for call in choice.delta.tool_calls or ():
                assert type(call) is ChoiceDeltaToolCall


@pytest.mark.parametrize("name", BODY_FIXTURES)
def test_bodies_are_sdk_completions(name: str) -> None:
    from openai.types.chat import ChatCompletion

    completion = ChatCompletion.model_validate(json.loads((FIXTURES / name).read_bytes()))
    assert type(completion) is ChatCompletion
    assert completion.object == "chat.completion"
    assert completion.choices[0].message.role == "assistant"


def test_openrouter_reasoning_extras_survive_validation() -> None:
    from openai.types.chat import ChatCompletion

    completion = ChatCompletion.model_validate(
        json.loads((FIXTURES / "openrouter_anthropic_summary.json").read_bytes())
    )
    extra = completion.choices[0].message.model_extra or {}
    assert extra["reasoning_details"][0]["signature"] == "EqQBCkgIBxABGAIiQL+sig/=="


TRANSCRIPTS = [
    Transcript(
        answer="Voilà — 42 🎉",
        reasoning=(
            SimReasoning(kind="summary", text="Thinking about 日本…", signature="sig-1"),
            SimReasoning(kind="encrypted", signature="gAAAA=="),
            SimReasoning(kind="raw", text="raw → text"),
            SimReasoning(kind="redacted", signature="redacted=="),
        ),
        chunk_chars=5,
    ),
    Transcript(
        reasoning=(SimReasoning(kind="raw", text="Need a tool."),),
        tool_calls=(SimToolCall(call_id="call_1", name="lookup", arguments='{"q": "café"}'),),
        finish="tool_calls",
    ),
    Transcript(answer="I can't help with that.", finish="refusal"),
]
RENDERERS = [
    ("openai", OpenAIChatRenderer(dialect="openai"), {"reasoning_effort": "high"}),
    (
        "openrouter",
        OpenAIChatRenderer(dialect="openrouter", upstream_provider="Anthropic"),
        {"reasoning": {"enabled": True}},
    ),
    (
        "deepseek",
        OpenAIChatRenderer(dialect="raw-reasoning", reasoning_field="reasoning_content"),
        {"thinking": {"type": "enabled"}},
    ),
    (
        "vllm",
        OpenAIChatRenderer(
            dialect="raw-reasoning", reasoning_field="reasoning", reasons_by_default=True
        ),
        {},
    ),
    (
        "llamacpp",
        OpenAIChatRenderer(dialect="raw-reasoning", reasoning_field="think_tags"),
        {"chat_template_kwargs": {"enable_thinking": True}},
    ),
]


def sim_request(profile: str, extra: dict[str, Any], *, stream: bool) -> SimRequest:
    body = {
        "model": "m-1",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": stream,
        **extra,
    }
    return SimRequest(
        method="POST",
        path="/chat/completions",
        query={},
        headers={},
        body=body,
        profile=profile,
        model="m-1",
        stream=stream,
    )


@pytest.mark.parametrize(("profile", "renderer", "extra"), RENDERERS, ids=[r[0] for r in RENDERERS])
@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=["reasoning", "tools", "refusal"])
def test_renderer_output_is_sdk_shaped(
    profile: str, renderer: OpenAIChatRenderer, extra: dict[str, Any], transcript: Transcript
) -> None:
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    stream_request = sim_request(profile, extra, stream=True)
    frames = renderer.stream_frames(transcript, stream_request)
    assert frames[-1].data == b"data: [DONE]\n\n"
    payloads = sse_payloads(b"".join(frame.data for frame in frames))
    for payload in payloads:
        assert type(ChatCompletionChunk.model_validate(payload)) is ChatCompletionChunk
    assert payloads[-1]["choices"] == []
    assert payloads[-1]["usage"]["prompt_tokens"] == 40
    body = renderer.body(transcript, sim_request(profile, extra, stream=False))
    completion = ChatCompletion.model_validate(json.loads(body))
    assert type(completion) is ChatCompletion


def test_renderer_error_shapes() -> None:
    openai = OpenAIChatRenderer(dialect="openai")
    assert json.loads(openai.error_body(429, "slow down")) == {
        "error": {
            "message": "slow down",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    openrouter = OpenAIChatRenderer(dialect="openrouter")
    assert json.loads(openrouter.error_body(402, "no credits")) == {
        "error": {"code": 402, "message": "no credits"}
    }
