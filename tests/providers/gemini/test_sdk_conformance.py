"""Fixtures and simulator output validate against google-genai's own wire types.

The SDK's pydantic models forbid unknown fields and use camelCase aliases, so a
misspelled or invented field fails here. ``thoughtSignature`` is ``bytes`` in the SDK
(base64 on the wire): every signature must survive validation byte-for-byte.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

import pytest

from thoughtline.testing.renderers.gemini import GeminiRenderer
from thoughtline.testing.transcript import SimReasoning, SimToolCall, Transcript

from .helpers import FIXTURES, fixture_json, request, sim_request, sse_payloads

if TYPE_CHECKING:
    from google.genai import types

BODIES = sorted(path.name for path in FIXTURES.glob("*_body.json"))
STREAMS = sorted(path.name for path in FIXTURES.glob("*.sse"))
ERRORS = sorted(path.name for path in FIXTURES.glob("error_*.json"))


def validate(payload: dict[str, Any]) -> types.GenerateContentResponse:
    from google.genai import types

    response = types.GenerateContentResponse.model_validate(payload)
    assert type(response) is types.GenerateContentResponse
    assert_parts_survive(payload, response)
    return response


def assert_parts_survive(payload: dict[str, Any], response: types.GenerateContentResponse) -> None:
    """Thought flags and signatures come through validation unchanged."""
    from google.genai import types

    for wire_candidate, candidate in zip(
        payload.get("candidates", []), response.candidates or [], strict=True
    ):
        wire_parts = (wire_candidate.get("content") or {}).get("parts") or []
        parts = (candidate.content.parts if candidate.content else None) or []
        assert len(parts) == len(wire_parts)
        for wire_part, part in zip(wire_parts, parts, strict=True):
            assert type(part) is types.Part
            assert part.thought == wire_part.get("thought")
            assert part.text == wire_part.get("text")
            signature = wire_part.get("thoughtSignature")
            if signature is None:
                assert part.thought_signature is None
            else:
                assert part.thought_signature is not None
                assert base64.b64encode(part.thought_signature).decode() == signature
            if "functionCall" in wire_part:
                assert type(part.function_call) is types.FunctionCall
                assert part.function_call.args == wire_part["functionCall"]["args"]
        if "finishReason" in wire_candidate:
            assert candidate.finish_reason == types.FinishReason(wire_candidate["finishReason"])


@pytest.mark.parametrize("name", BODIES)
def test_bodies(name: str) -> None:
    validate(fixture_json(name))


@pytest.mark.parametrize("name", STREAMS)
def test_stream_chunks(name: str) -> None:
    from google.genai import errors

    payloads = sse_payloads(name)
    assert payloads
    for payload in payloads:
        if "error" in payload:
            error = errors.APIError(payload["error"]["code"], payload)
            assert error.status == payload["error"]["status"]
            assert error.message == payload["error"]["message"]
        else:
            validate(payload)


def test_thought_usage_is_read_by_the_sdk() -> None:
    response = validate(fixture_json("summary_body.json"))
    assert response.usage_metadata is not None
    assert response.usage_metadata.thoughts_token_count == 310
    assert response.usage_metadata.candidates_token_count == 20
    assert response.usage_metadata.cached_content_token_count == 4
    assert response.candidates is not None
    parts = response.candidates[0].content.parts  # type: ignore[union-attr]
    assert parts is not None
    assert parts[0].thought is True


def test_blocked_prompt_feedback() -> None:
    from google.genai import types

    response = validate(fixture_json("blocked_body.json"))
    assert response.prompt_feedback is not None
    assert response.prompt_feedback.block_reason == types.BlockedReason.SAFETY


@pytest.mark.parametrize("name", ERRORS)
def test_error_bodies(name: str) -> None:
    from google.genai import errors

    payload = fixture_json(name)
    error = errors.APIError(payload["error"]["code"], payload)
    assert error.code == payload["error"]["code"]
    assert error.status == payload["error"]["status"]
    assert error.message == payload["error"]["message"]


TRANSCRIPTS = [
    Transcript(
        answer="Take the TGV — 2 hours 🚄.",
        reasoning=(SimReasoning(kind="summary", text="Paris → Lyon, café stops 日本."),),
    ),
    Transcript(
        answer="",
        reasoning=(SimReasoning(kind="summary", text="Need the weather."),),
        tool_calls=(SimToolCall(call_id="c1", name="get_weather", arguments='{"city":"Zürich"}'),),
        finish="tool_calls",
    ),
    Transcript(answer="Blocked?", finish="content_filter", reasoning_tokens=12),
]


@pytest.mark.parametrize("placement", ["first_text", "late_empty"])
@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("transcript", TRANSCRIPTS)
def test_renderer_output(transcript: Transcript, enabled: bool, placement: Any) -> None:
    from google.genai import errors

    renderer = GeminiRenderer(signature_placement=placement)
    sim = sim_request(request("gemini-3-pro-preview", enabled=enabled))
    for frame in renderer.stream_frames(transcript, sim):
        text = frame.data.decode()
        assert text.startswith("data: ")
        assert text.endswith("\r\n\r\n")
        validate(json.loads(text[len("data: ") :]))
    validate(json.loads(renderer.body(transcript, sim)))
    for kind in ("overloaded", "server_error", "rate_limited"):
        frame_text = renderer.stream_error_frame(kind, "boom").decode()
        payload = json.loads(frame_text[len("data: ") :])
        assert errors.APIError(payload["error"]["code"], payload).message == "boom"
