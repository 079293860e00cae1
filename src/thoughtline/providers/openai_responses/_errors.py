"""OpenAI error shapes → stable codes.

Two places carry errors:

- HTTP error responses: ``{"error": {"message", "type", "param", "code"}}`` →
  :class:`~thoughtline.errors.ProviderError` via the shared ``provider_error``;
- inside an HTTP-200 stream: an ``error`` event (``{"type": "error", "code", "message"}``,
  sometimes nested as ``{"type": "error", "error": {...}}``) or ``response.failed``
  (``response.error.code``) → an :class:`~thoughtline.model.events.StreamError` event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from thoughtline.errors import RETRYABLE_CODES, ErrorCode, ProviderError, advice_for
from thoughtline.model.events import StreamError
from thoughtline.providers._text import with_advice
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.http_errors import provider_error
from thoughtline.wire.jsonio import MalformedJSON, loads_object

PROVIDER_NAME = "OpenAI Responses API"

# OpenAI `error.code` / `error.type` values whose meaning is more precise than the HTTP
# status (a 429 can be a rate limit or an exhausted quota, which no retry will fix).
_CODE_MAP: Final[dict[str, ErrorCode]] = {
    "rate_limit_exceeded": "PROVIDER_RATE_LIMITED",
    "insufficient_quota": "PROVIDER_PAYMENT_REQUIRED",
    "server_error": "PROVIDER_SERVER_ERROR",
    "server_is_overloaded": "PROVIDER_OVERLOADED",
    "slow_down": "PROVIDER_OVERLOADED",
    "overloaded": "PROVIDER_OVERLOADED",
    "service_unavailable_error": "PROVIDER_OVERLOADED",
    "invalid_api_key": "PROVIDER_AUTH_ERROR",
    "authentication_error": "PROVIDER_AUTH_ERROR",
    "permission_denied": "PROVIDER_PERMISSION_DENIED",
    "model_not_found": "PROVIDER_NOT_FOUND",
    "context_length_exceeded": "PROVIDER_REQUEST_TOO_LARGE",
    "vector_store_timeout": "PROVIDER_TIMEOUT",
    "invalid_request_error": "PROVIDER_BAD_REQUEST",
    "invalid_prompt": "PROVIDER_BAD_REQUEST",
    "unsupported_value": "PROVIDER_BAD_REQUEST",
    "unsupported_parameter": "PROVIDER_BAD_REQUEST",
    "invalid_value": "PROVIDER_BAD_REQUEST",
    "bio_policy": "PROVIDER_CONTENT_FILTERED",
    "misalignment_policy_violation": "PROVIDER_CONTENT_FILTERED",
    "image_content_policy_violation": "PROVIDER_CONTENT_FILTERED",
    "content_filter": "PROVIDER_CONTENT_FILTERED",
}
# Codes that must never be retried even though their HTTP status (429) says otherwise.
_NEVER_RETRY: Final[frozenset[str]] = frozenset({"PROVIDER_PAYMENT_REQUIRED"})


def code_for(code: str | None, error_type: str | None) -> ErrorCode | None:
    """The stable code for an OpenAI error ``code`` (preferred) or ``type``, if known."""
    if code:
        mapped = _CODE_MAP.get(code)
        if mapped is not None:
            return mapped
        if code.startswith(("invalid_", "image_", "unsupported_")):
            return "PROVIDER_BAD_REQUEST"
    if error_type:
        return _CODE_MAP.get(error_type)
    return None


def parse_http_error(
    status: int, headers: Mapping[str, str], body: bytes, *, endpoint: Endpoint | None = None
) -> ProviderError:
    """An HTTP error response (any shape, including an HTML page from a proxy)."""
    message: str | None = None
    error_type: str | None = None
    error_code: str | None = None
    try:
        document = loads_object(body)
    except MalformedJSON:
        text = body.decode("utf-8", "replace").strip()
        message = text[:300] if text else None
    else:
        error = document.get("error")
        if isinstance(error, Mapping):
            message = _string(error.get("message"))
            error_type = _string(error.get("type"))
            error_code = _string(error.get("code"))
            param = _string(error.get("param"))
            details = [
                f"{name}={value}"
                for name, value in (("param", param), ("code", error_code))
                if value
            ]
            if message and details:
                message = f"{message} ({', '.join(details)})"
        elif isinstance(error, str):
            message = error
    mapped = code_for(error_code, error_type)
    exc = provider_error(
        status,
        headers,
        provider=PROVIDER_NAME,
        message=message,
        provider_error_type=error_type or error_code,
        code=mapped,
        endpoint=endpoint,
    )
    if mapped in _NEVER_RETRY:
        exc.retryable = False
    return exc


def stream_error(
    code: str | None, message: str | None, error_type: str | None = None
) -> StreamError:
    """An error reported inside an HTTP-200 stream (or a failed non-streaming body)."""
    stable: ErrorCode = code_for(code, error_type) or "PROVIDER_ERROR"
    detail = message.strip() if message else "no message"
    label = code or error_type
    text = f"{PROVIDER_NAME} reported an error during the response: {detail}"
    if label:
        text = f"{text} ({label})"
    text = with_advice(text, advice_for(stable))
    return StreamError(
        code=stable,
        message=text,
        retryable=stable in RETRYABLE_CODES,
        provider_error_type=label,
    )


def error_event(payload: Mapping[str, Any]) -> StreamError:
    """An ``error`` stream event, flat (``{"code", "message"}``, the documented shape) or
    nested (``{"error": {"type", "code", "message"}}``, seen on overload)."""
    nested = payload.get("error")
    source: Mapping[str, Any] = nested if isinstance(nested, Mapping) else payload
    error_type = _string(source.get("type"))
    if error_type == "error":
        error_type = None  # the event's own type, not an error class
    return stream_error(_string(source.get("code")), _string(source.get("message")), error_type)


def failed_response(response: Mapping[str, Any]) -> StreamError:
    """The error of a ``response.failed`` event or a body with ``status: "failed"``."""
    error = response.get("error")
    if isinstance(error, Mapping):
        return stream_error(
            _string(error.get("code")), _string(error.get("message")), _string(error.get("type"))
        )
    return stream_error(None, "the response failed without an error description")


def _string(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
