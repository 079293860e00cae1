"""Anthropic error bodies → :class:`ProviderError`; in-stream error payloads → ``StreamError``.

Both share one shape: ``{"type": "error", "error": {"type": ..., "message": ...},
"request_id": ...}``. The error ``type`` is more specific than the HTTP status (a 529
is ``overloaded_error``; an error inside an HTTP-200 stream has no status at all), so a
known type decides the stable code.
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

PROVIDER_NAME: Final = "Anthropic"

CODE_FOR_ERROR_TYPE: Final[dict[str, ErrorCode]] = {
    "invalid_request_error": "PROVIDER_BAD_REQUEST",
    "authentication_error": "PROVIDER_AUTH_ERROR",
    "billing_error": "PROVIDER_PAYMENT_REQUIRED",
    "permission_error": "PROVIDER_PERMISSION_DENIED",
    "not_found_error": "PROVIDER_NOT_FOUND",
    "request_too_large": "PROVIDER_REQUEST_TOO_LARGE",
    "rate_limit_error": "PROVIDER_RATE_LIMITED",
    "timeout_error": "PROVIDER_TIMEOUT",
    "api_error": "PROVIDER_SERVER_ERROR",
    "overloaded_error": "PROVIDER_OVERLOADED",
}
"""Anthropic ``error.type`` → stable code (types not listed fall back to the status)."""

_MAX_TEXT_PREVIEW: Final = 300


def parse_error(
    status: int, headers: Mapping[str, str], body: bytes, *, endpoint: Endpoint | None = None
) -> ProviderError:
    """The error for an HTTP error response from ``/v1/messages``.

    Bodies that are not Anthropic's JSON shape (an HTML page from a proxy, an empty
    body) still give a usable error: the status decides and the text is quoted.
    """
    error_type: str | None = None
    message: str | None = None
    request_id: str | None = None
    try:
        payload = loads_object(body)
    except MalformedJSON:
        text = body.decode("utf-8", "replace").strip()
        message = text[:_MAX_TEXT_PREVIEW] or None
    else:
        error_type, message = _type_and_message(payload)
        body_request_id = payload.get("request_id")
        request_id = body_request_id if isinstance(body_request_id, str) else None
    code = CODE_FOR_ERROR_TYPE.get(error_type) if error_type else None
    if error_type == "api_error" and status >= 500:
        code = None  # the generic type says less than a 503/504 status does
    error = provider_error(
        status,
        headers,
        provider=PROVIDER_NAME,
        message=message,
        provider_error_type=error_type,
        code=code,
        endpoint=endpoint,
    )
    if error.request_id is None:
        error.request_id = request_id
    return error


def stream_error(payload: Mapping[str, Any]) -> StreamError:
    """An ``event: error`` payload that arrived inside an HTTP-200 stream."""
    error_type, message = _type_and_message(payload)
    code: ErrorCode = CODE_FOR_ERROR_TYPE.get(error_type or "", "PROVIDER_ERROR")
    detail = message or "no message"
    label = error_type or "unknown error type"
    text = f"{PROVIDER_NAME} stream error ({label}): {detail}"
    text = with_advice(text, advice_for(code))
    return StreamError(
        code=code,
        message=text,
        retryable=code in RETRYABLE_CODES,
        provider_error_type=error_type,
    )


def _type_and_message(payload: Mapping[str, Any]) -> tuple[str | None, str | None]:
    error = payload.get("error")
    if not isinstance(error, dict):
        return None, None
    error_type = error.get("type")
    message = error.get("message")
    return (
        error_type if isinstance(error_type, str) else None,
        message if isinstance(message, str) else None,
    )
