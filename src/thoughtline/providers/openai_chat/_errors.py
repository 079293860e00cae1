"""Chat Completions error bodies → :class:`ProviderError`; in-stream errors → ``StreamError`` events.

Shapes handled:

- OpenAI: ``{"error": {"message", "type", "param", "code": "<string>|null"}}``;
- OpenRouter: ``{"error": {"code": <int>, "message", "metadata": {...}}}`` — the HTTP
  status, or, once a stream has started, a ``data:`` event under HTTP 200 (sometimes with
  ``choices[0].finish_reason == "error"`` and, in mid-stream events, a string code such
  as ``"server_error"``);
- vLLM / FastAPI style: ``{"object": "error", "message", "type", "code": <int>}`` at the
  top level, or ``{"detail": "..."}``; anything unreadable keeps the raw text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from thoughtline.errors import (
    RETRYABLE_CODES,
    ErrorCode,
    ProviderError,
    advice_for,
    code_for_status,
)
from thoughtline.model.events import StreamError
from thoughtline.providers._text import with_advice
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.http_errors import (
    OUTPUT_FORMAT_ADVICE,
    output_format_mismatch,
    provider_error,
)
from thoughtline.wire.jsonio import MalformedJSON, loads_object

_MESSAGE_LIMIT: Final = 500

# String codes/types seen in OpenAI-compatible error objects, most specific first.
_KEYWORD_CODES: Final[tuple[tuple[str, ErrorCode], ...]] = (
    ("insufficient_quota", "PROVIDER_PAYMENT_REQUIRED"),
    ("overloaded", "PROVIDER_OVERLOADED"),
    ("rate_limit", "PROVIDER_RATE_LIMITED"),
    ("timeout", "PROVIDER_TIMEOUT"),
    ("context_length", "PROVIDER_REQUEST_TOO_LARGE"),
    ("content_filter", "PROVIDER_CONTENT_FILTERED"),
    ("moderation", "PROVIDER_CONTENT_FILTERED"),
    ("invalid_api_key", "PROVIDER_AUTH_ERROR"),
    ("authentication", "PROVIDER_AUTH_ERROR"),
    ("permission", "PROVIDER_PERMISSION_DENIED"),
    ("not_found", "PROVIDER_NOT_FOUND"),
    ("invalid_request", "PROVIDER_BAD_REQUEST"),
    ("bad_request", "PROVIDER_BAD_REQUEST"),
    ("unsupported", "PROVIDER_BAD_REQUEST"),
    ("server_error", "PROVIDER_SERVER_ERROR"),
    ("internal", "PROVIDER_SERVER_ERROR"),
    ("unavailable", "PROVIDER_OVERLOADED"),
)


# What local servers say when the prompt does not fit the loaded context (llama.cpp's
# exceed_context_size_error, llama-cpp-python's "Requested tokens (N) exceed context
# window of M", vLLM's "maximum context length"). Whatever status came with it, no
# retry can fix it: the request must get shorter or the server's context larger.
_CONTEXT_OVERFLOW: Final[tuple[str, ...]] = (
    "exceed context window",
    "exceeds the available context size",
    "exceed_context_size",
    "context_length_exceeded",
    "maximum context length",
)


# What OpenAI-compatible servers say of a model they do not serve, under a status that
# does not say so: OpenRouter's 400 "x is not a valid model ID", DeepSeek's 400 "Model
# Not Exist", vLLM's "The model `x` does not exist.".
_MODEL_UNKNOWN: Final[tuple[str, ...]] = (
    "is not a valid model id",
    "model not exist",
    "does not exist",
)


def _model_unknown(message: str | None) -> bool:
    lowered = (message or "").lower()
    return "model" in lowered and any(marker in lowered for marker in _MODEL_UNKNOWN)


def context_overflow(*values: str | None) -> bool:
    """Whether an error's text says the request does not fit the model's context."""
    return any(marker in value.lower() for value in values if value for marker in _CONTEXT_OVERFLOW)


def _code_from_keywords(*values: str | None) -> ErrorCode | None:
    for value in values:
        if not value:
            continue
        lowered = value.lower()
        for keyword, code in _KEYWORD_CODES:
            if keyword in lowered:
                return code
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int_code(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit() and len(value) == 3:
        return int(value)
    return None


def _is_moderation(metadata: Any) -> bool:
    # OpenRouter's 403 for flagged input carries {"reasons": [...], "flagged_input": ...}.
    return isinstance(metadata, Mapping) and ("reasons" in metadata or "flagged_input" in metadata)


def _with_upstream(message: str | None, metadata: Any) -> str | None:
    """OpenRouter names the upstream that failed; say so, it is what a person acts on."""
    if not isinstance(metadata, Mapping):
        return message
    upstream = _text(metadata.get("provider_name"))
    if upstream is None:
        return message
    return f"{message or 'error'} (upstream provider: {upstream})"


def _clip(text: str) -> str:
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + "…"


def parse_error_body(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    provider: str,
    endpoint: Endpoint | None = None,
) -> ProviderError:
    """An HTTP error response in any of the shapes listed in the module docstring."""
    try:
        payload: dict[str, Any] | None = loads_object(body)
    except MalformedJSON:
        payload = None
    if payload is None:
        raw = body.decode("utf-8", "replace").strip()
        return provider_error(
            status, headers, provider=provider, message=_clip(raw) or None, endpoint=endpoint
        )
    error = payload.get("error")
    if isinstance(error, str):
        error = {"message": error}
    if not isinstance(error, Mapping):
        # vLLM/FastAPI style: the error fields sit at the top level.
        error = payload if "message" in payload else {"message": payload.get("detail")}
    message = _text(error.get("message"))
    if message is None and error.get("detail") is not None:
        message = str(error.get("detail"))
    error_type = _text(error.get("type"))
    raw_code = error.get("code")
    string_code = _text(raw_code)
    metadata = error.get("metadata")
    code: ErrorCode | None = None
    if status == 403 and _is_moderation(metadata):
        code = "PROVIDER_CONTENT_FILTERED"
    elif context_overflow(message, error_type, string_code):
        code = "PROVIDER_REQUEST_TOO_LARGE"
    elif string_code == "insufficient_quota" or error_type == "insufficient_quota":
        code = "PROVIDER_PAYMENT_REQUIRED"
    elif status in (400, 404) and _model_unknown(message):
        code = "PROVIDER_NOT_FOUND"
    elif status in (400, 404, 422):
        # The status says what kind of failure; the body may refine a bad request.
        code = _code_from_keywords(string_code, error_type)
        if code is not None and code in RETRYABLE_CODES:
            code = None
    result = provider_error(
        status,
        headers,
        provider=provider,
        message=_with_upstream(_clip(message) if message else None, metadata),
        provider_error_type=error_type or string_code or _stringify(raw_code),
        code=code,
        endpoint=endpoint,
    )
    if code == "PROVIDER_REQUEST_TOO_LARGE":
        result.retryable = False  # a 500 saying so is still a prompt that does not fit
    if code == "PROVIDER_PAYMENT_REQUIRED":
        # OpenAI sends an exhausted quota as HTTP 429; waiting does not help.
        result.retryable = False
    return result


def _stringify(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    return str(value)


def stream_error_event(error: Any, *, provider: str) -> StreamError:
    """An ``error`` object that arrived inside an HTTP-200 response (stream or body)."""
    if isinstance(error, str):
        error = {"message": error}
    if not isinstance(error, Mapping):
        error = {}
    message = _text(error.get("message")) or "no message"
    raw_code = error.get("code")
    error_type = _text(error.get("type"))
    metadata = error.get("metadata")
    status = _int_code(raw_code)
    code: ErrorCode
    advice = ""
    if output_format_mismatch(message):
        code, advice = "PROVIDER_MALFORMED_RESPONSE", OUTPUT_FORMAT_ADVICE
    elif context_overflow(message, error_type, _text(raw_code)):
        code = "PROVIDER_REQUEST_TOO_LARGE"
        advice = advice_for(code)
    elif status is not None:
        code = code_for_status(status)
        if status == 403 and _is_moderation(metadata):
            code = "PROVIDER_CONTENT_FILTERED"
    else:
        code = _code_from_keywords(_text(raw_code), error_type) or "PROVIDER_ERROR"
    detail = _with_upstream(_clip(message), metadata) or message
    label = f" ({_stringify(raw_code)})" if raw_code is not None else ""
    return StreamError(
        code=code,
        message=with_advice(
            f"{provider} reported an error during the response{label}: {detail}", advice
        ),
        retryable=code in RETRYABLE_CODES,
        status=status,
        # A named code (Groq's "tool_use_failed") says more than the class it belongs to.
        provider_error_type=(_text(raw_code) if status is None else None)
        or error_type
        or _stringify(raw_code),
    )
