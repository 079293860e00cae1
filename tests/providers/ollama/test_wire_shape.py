"""Fixtures and simulator output have the shape of Ollama's /api/chat objects.

No official Ollama SDK is installed, so each object is checked structurally against a
strict local model of the documented response (field names and types as in Ollama's
API reference for ``/api/chat`` and the ``ollama`` package's ``ChatResponse``); unknown
fields fail.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from thoughtline.testing.renderers.ollama import OllamaRenderer
from thoughtline.testing.transcript import SimReasoning, SimToolCall, Transcript

from .helpers import FIXTURES, fixture_json, ndjson_lines, request, sim_request


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Function(_Strict):
    name: str
    arguments: dict[str, Any]
    index: int | None = None


class _ToolCall(_Strict):
    function: _Function
    id: str | None = None


class _Message(_Strict):
    role: Literal["assistant"]
    content: str
    thinking: str | None = None
    tool_calls: list[_ToolCall] | None = None


class ChatLine(_Strict):
    model: str
    created_at: str
    message: _Message
    done: bool
    done_reason: str | None = None
    total_duration: int | None = None
    load_duration: int | None = None
    prompt_eval_count: int | None = None
    prompt_eval_duration: int | None = None
    eval_count: int | None = None
    eval_duration: int | None = None


class ErrorLine(_Strict):
    error: str


def check_line(payload: dict[str, Any]) -> ChatLine:
    line = ChatLine.model_validate(payload)
    if line.done:
        assert line.done_reason is not None
        assert line.prompt_eval_count is not None
        assert line.eval_count is not None
    else:
        assert line.done_reason is None
    return line


def check_stream(lines: list[dict[str, Any]]) -> None:
    *body, last = lines
    if "error" in last:
        ErrorLine.model_validate(last)
    else:
        assert check_line(last).done is True
    for payload in body:
        assert check_line(payload).done is False


@pytest.mark.parametrize("name", sorted(path.name for path in FIXTURES.glob("*.ndjson")))
def test_stream_fixtures(name: str) -> None:
    check_stream(ndjson_lines(name))


@pytest.mark.parametrize("name", sorted(path.name for path in FIXTURES.glob("*_body.json")))
def test_body_fixtures(name: str) -> None:
    assert check_line(fixture_json(name)).done is True


@pytest.mark.parametrize("name", sorted(path.name for path in FIXTURES.glob("error_*.json")))
def test_error_fixtures(name: str) -> None:
    ErrorLine.model_validate(fixture_json(name))


TRANSCRIPTS = [
    Transcript(
        answer="Bonjour — ça va 🚄", reasoning=(SimReasoning(kind="raw", text="Hmm, 日本?"),)
    ),
    Transcript(
        reasoning=(SimReasoning(kind="raw", text="Call the tool."),),
        tool_calls=(SimToolCall(call_id="c1", name="get_weather", arguments='{"city":"Zürich"}'),),
        finish="tool_calls",
    ),
    Transcript(answer="cut", finish="length"),
]


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("transcript", TRANSCRIPTS)
def test_renderer_output(transcript: Transcript, enabled: bool) -> None:
    renderer = OllamaRenderer()
    sim = sim_request(request(enabled=enabled))
    frames = renderer.stream_frames(transcript, sim)
    for frame in frames:
        assert frame.data.endswith(b"\n")
        assert frame.data.count(b"\n") == 1
    check_stream([json.loads(frame.data) for frame in frames])
    assert check_line(json.loads(renderer.body(transcript, sim))).done is True
    for kind in ("overloaded", "server_error", "rate_limited"):
        ErrorLine.model_validate(json.loads(renderer.stream_error_frame(kind, "boom")))
    ErrorLine.model_validate(json.loads(renderer.error_body(500, "boom")))
