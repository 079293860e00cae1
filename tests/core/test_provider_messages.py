"""Error messages built from provider text end with exactly one full stop."""

from __future__ import annotations

import pytest

from thoughtline.providers._text import sentence, with_advice
from thoughtline.providers.anthropic import WIRE as ANTHROPIC
from thoughtline.providers.gemini import WIRE as GEMINI
from thoughtline.providers.openai_chat import WIRE as CHAT
from thoughtline.providers.openai_responses import WIRE as RESPONSES


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Overloaded", "Overloaded."),
        ("Bad request.", "Bad request."),
        ("context exceeded..  ", "context exceeded."),
        ("Sorry about that!", "Sorry about that!"),
        ("Is the model loaded?", "Is the model loaded?"),
    ],
)
def test_sentence(text: str, expected: str) -> None:
    assert sentence(text) == expected


def test_with_advice_adds_one_stop_between() -> None:
    assert with_advice("It failed.", "Try again.") == "It failed. Try again."
    assert with_advice("It failed", "") == "It failed."


ADAPTERS = [
    ANTHROPIC,
    RESPONSES,
    CHAT,
    GEMINI,
]


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda adapter: adapter.wire_api)
@pytest.mark.parametrize("status", [400, 429, 500, 503])
@pytest.mark.parametrize("provider_text", ["Too many requests.", "Server exploded..", "no dot"])
def test_http_error_messages_end_with_one_period(
    adapter: object, status: int, provider_text: str
) -> None:
    body = b'{"type":"error","error":{"type":"api_error","message":"%s"},"error_message":"%s"}' % (
        provider_text.encode(),
        provider_text.encode(),
    )
    error = adapter.parse_error(status, {}, body)  # type: ignore[attr-defined]
    assert error.message.endswith(".")
    assert not error.message.endswith("..")
    assert ". ." not in error.message
    assert ".. " not in error.message
