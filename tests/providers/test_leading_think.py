"""A ``<think>`` block leading the answer text, on every built-in endpoint whose server
may leave it there (``reasoning_field = "auto"``, the default).

The decision is made per response: a reasoning field that arrives first is the
reasoning, else a ``<think>`` opening the content (after whitespace) is. Each test feeds
the adapter's own decoder the bytes a server sends, delta by delta, and checks what
came out after each delta, so text held back too long shows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import call_context
from thoughtline.model.events import ReasoningDelta, StreamEvent, TextDelta
from thoughtline.model.requests import ModelRequest, ReasoningRequest
from thoughtline.providers.base import CallContext, StreamDecoder
from thoughtline.providers.endpoints import EndpointSettings
from thoughtline.providers.ollama import WIRE as OLLAMA
from thoughtline.providers.openai_chat import WIRE as CHAT

# endpoint -> (model, the reasoning field its server sends, or None for Ollama's)
CHAT_ENDPOINTS = {
    "deepseek": ("deepseek-chat", "reasoning_content"),
    "vllm": ("Qwen/Qwen3-8B", "reasoning"),
    "llamacpp": ("qwen3-8b-q4_k_m.gguf", "reasoning_content"),
    "openrouter": ("deepseek/deepseek-r1", "reasoning"),
}
ENDPOINTS = [*CHAT_ENDPOINTS, "ollama"]


def _model(endpoint: str) -> str:
    return "qwen3:8b" if endpoint == "ollama" else CHAT_ENDPOINTS[endpoint][0]


def _context(endpoint: str, settings: dict[str, EndpointSettings] | None = None) -> CallContext:
    return call_context(endpoint, _model(endpoint), settings=settings)


def _request(endpoint: str, *, stream: bool = True) -> ModelRequest:
    return ModelRequest.simple(
        _model(endpoint), "hi", reasoning=ReasoningRequest(enabled=False), stream=stream
    )


def _decoder(endpoint: str, context: CallContext | None = None) -> StreamDecoder:
    context = context or _context(endpoint)
    adapter = OLLAMA if endpoint == "ollama" else CHAT
    return adapter.new_decoder(_request(endpoint), context)


def _frame(endpoint: str, content: str | None = None, reasoning: str | None = None) -> bytes:
    """One delta as the endpoint's server streams it."""
    if endpoint == "ollama":
        message: dict[str, Any] = {"role": "assistant", "content": content or ""}
        if reasoning is not None:
            message["thinking"] = reasoning
        line = {"model": "qwen3:8b", "message": message, "done": False}
        return (json.dumps(line) + "\n").encode()
    delta: dict[str, Any] = {}
    if reasoning is not None:
        delta[CHAT_ENDPOINTS[endpoint][1]] = reasoning
    if content is not None:
        delta["content"] = content
    chunk = {"id": "c-1", "model": "m", "choices": [{"index": 0, "delta": delta}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


def _end(endpoint: str) -> bytes:
    if endpoint == "ollama":
        line = {"model": "qwen3:8b", "message": {"role": "assistant", "content": ""}}
        return (json.dumps({**line, "done": True, "done_reason": "stop"}) + "\n").encode()
    chunk = {"id": "c-1", "model": "m", "choices": [{"index": 0, "delta": {}}]}
    chunk["choices"][0]["finish_reason"] = "stop"  # type: ignore[index]
    return f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()


def _texts(events: list[StreamEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, TextDelta))


def _reasoning(events: list[StreamEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, ReasoningDelta))


def _run(
    endpoint: str, frames: list[bytes], decoder: StreamDecoder | None = None
) -> list[StreamEvent]:
    decoder = decoder or _decoder(endpoint)
    events: list[StreamEvent] = []
    for data in [*frames, _end(endpoint)]:
        events += decoder.feed(data)
    return events + decoder.close()


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_leading_block_split_across_deltas_is_reasoning(endpoint: str) -> None:
    pieces = ["<th", "ink>SEC", "RET pl", "an</th", "ink>\n\nfinal ", "answer"]
    decoder = _decoder(endpoint)
    events: list[StreamEvent] = []
    for piece in pieces:
        events += decoder.feed(_frame(endpoint, piece))
        assert "SECRET"[:3] not in _texts(events), piece
    events += decoder.feed(_end(endpoint)) + decoder.close()
    assert _reasoning(events) == "SECRET plan"
    assert _texts(events) == "final answer"


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_whitespace_before_the_block_is_dropped_with_it(endpoint: str) -> None:
    events = _run(endpoint, [_frame(endpoint, "\n  "), _frame(endpoint, " <think>x</think>y")])
    assert _reasoning(events) == "x"
    assert _texts(events) == "y"


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_an_answer_without_a_block_streams_each_delta_as_it_comes(endpoint: str) -> None:
    assert _texts(_decoder(endpoint).feed(_frame(endpoint, "Hello"))) == "Hello"
    decoder = _decoder(endpoint)
    # " <" could open "<think>": it waits only until the next character says no.
    first = decoder.feed(_frame(endpoint, " <"))
    assert _texts(first) == ""
    assert _texts(decoder.feed(_frame(endpoint, "b>bold"))) == " <b>bold"
    pieces = [f"w{index} " for index in range(10_000)]
    for piece in pieces:
        assert _texts(decoder.feed(_frame(endpoint, piece))) == piece
    rest = decoder.feed(_end(endpoint)) + decoder.close()
    assert _reasoning(first + rest) == ""


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_block_after_answer_text_is_answer_text(endpoint: str) -> None:
    answer = "Models write <think>notes</think> first; that is all."
    events = _run(endpoint, [_frame(endpoint, "Models write <th"), _frame(endpoint, answer[16:])])
    assert _texts(events) == answer
    assert _reasoning(events) == ""


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_reasoning_field_first_makes_the_content_answer_text(endpoint: str) -> None:
    frames = [
        _frame(endpoint, reasoning="field thought"),
        _frame(endpoint, "<think>quoted</think> is how the tag looks."),
    ]
    events = _run(endpoint, frames)
    assert _reasoning(events) == "field thought"
    assert _texts(events) == "<think>quoted</think> is how the tag looks."


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_an_unclosed_block_stays_reasoning(endpoint: str) -> None:
    events = _run(endpoint, [_frame(endpoint, "<think>SECRET cut off at the </th")])
    assert _reasoning(events) == "SECRET cut off at the </th"
    assert _texts(events) == ""


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_whole_body_is_split_alike(endpoint: str) -> None:
    content = "<think>SECRET</think>\n\nfinal answer"
    if endpoint == "ollama":
        message = {"role": "assistant", "content": content}
        whole: dict[str, Any] = {"model": "qwen3:8b", "message": message, "done": True}
        whole["done_reason"] = "stop"
        events = OLLAMA.decode_body(
            json.dumps(whole).encode(), _request(endpoint, stream=False), _context(endpoint)
        )
    else:
        choice = {"index": 0, "message": {"role": "assistant", "content": content}}
        choice["finish_reason"] = "stop"
        body = {"id": "c-1", "object": "chat.completion", "model": "m", "choices": [choice]}
        events = CHAT.decode_body(
            json.dumps(body).encode(), _request(endpoint, stream=False), _context(endpoint)
        )
    assert _reasoning(events) == "SECRET"
    assert _texts(events) == "final answer"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning", "none"])
def test_a_configured_field_takes_the_content_as_it_comes(field: str) -> None:
    settings = {"vllm": EndpointSettings(reasoning_field=field)}  # type: ignore[arg-type]
    decoder = _decoder("vllm", _context("vllm", settings))
    events = _run("vllm", [_frame("vllm", "<think>x</think>y")], decoder)
    assert _texts(events) == "<think>x</think>y"
    assert _reasoning(events) == ""
