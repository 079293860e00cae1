"""Ollama errors: ``{"error": "..."}`` bodies and in-stream error lines.

Ollama's errors are a bare message with the HTTP status; there is no error type, so the
stable code comes from the status, and for in-stream lines (HTTP 200) from the words of
the message: a message that clearly says the request is wrong is not retryable,
anything else (a crashed runner, a busy server) is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from thoughtline.errors import RETRYABLE_CODES, ErrorCode, ProviderError, advice_for
from thoughtline.model.events import StreamError
from thoughtline.providers._text import with_advice
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.http_errors import provider_error
from thoughtline.wire.jsonio import MalformedJSON, loads_object

PROVIDER_NAME: Final = "Ollama"

_MODEL_NOT_FOUND = re.compile(r"model ['\"]?([^'\"\s]+)['\"]? not found")
_BAD_REQUEST_WORDS: Final = (
    "invalid",
    "not found",
    "does not support",
    "bad request",
    "unknown",
    "required",
    "unmarshal",
    "cannot",
)
_OVERLOADED_WORDS: Final = ("server busy", "overloaded", "maximum pending requests")
_RATE_LIMIT_WORDS: Final = ("too many requests", "rate limit")


def parse_ollama_error(
    status: int, headers: Mapping[str, str], body: bytes, *, endpoint: Endpoint | None = None
) -> ProviderError:
    """An HTTP error response → ProviderError; a missing model says how to pull it."""
    message = _message_of(body)
    code: ErrorCode | None = None
    if message is not None:
        lowered = message.lower()
        match = _MODEL_NOT_FOUND.search(message)
        if match or (status == 404 and "not found" in lowered):
            code = "PROVIDER_NOT_FOUND"
            model = match.group(1) if match else "<model>"
            message = (
                f"{message}. Download it on the Ollama host with `ollama pull {model}` "
                "(or check the model name)"
            )
        elif "does not support thinking" in lowered:
            message = (
                f"{message}. Use a thinking model, or run with chain_of_thought = hidden "
                "for this model"
            )
        elif any(word in lowered for word in _OVERLOADED_WORDS):
            code = "PROVIDER_OVERLOADED"
    return provider_error(
        status, headers, provider=PROVIDER_NAME, message=message, code=code, endpoint=endpoint
    )


def stream_error(error: Any) -> StreamError:
    """A ``{"error": "..."}`` line inside an HTTP-200 stream → the terminal Error event."""
    text = error if isinstance(error, str) else repr(error)
    code = code_for_message(text)
    message = f"Ollama reported an error mid-stream: {text}"
    message = with_advice(message, advice_for(code))
    return StreamError(code=code, message=message, retryable=code in RETRYABLE_CODES)


def code_for_message(message: str) -> ErrorCode:
    """The stable code for an error message that arrived without an HTTP error status."""
    lowered = message.lower()
    if any(word in lowered for word in _OVERLOADED_WORDS):
        return "PROVIDER_OVERLOADED"
    if any(word in lowered for word in _RATE_LIMIT_WORDS):
        return "PROVIDER_RATE_LIMITED"
    if _MODEL_NOT_FOUND.search(message):
        return "PROVIDER_NOT_FOUND"
    if any(word in lowered for word in _BAD_REQUEST_WORDS):
        return "PROVIDER_BAD_REQUEST"
    return "PROVIDER_SERVER_ERROR"


def _message_of(body: bytes) -> str | None:
    try:
        payload = loads_object(body)
    except MalformedJSON:
        text = body.decode("utf-8", "replace").strip()
        return text[:500] or None
    error = payload.get("error")
    if isinstance(error, str) and error:
        return error
    return None
