"""Gemini errors: google.rpc status bodies → ProviderError, in-stream errors → Error events.

Gemini reports failures as ``{"error": {"code": 429, "message": "...", "status":
"RESOURCE_EXHAUSTED", "details": [...]}}``, both as HTTP error bodies and, after the
stream has started, as an SSE ``data:`` payload under HTTP 200. ``details`` may carry a
``google.rpc.RetryInfo`` with ``retryDelay`` (``"12s"``), used when no ``retry-after``
header is present, and a ``google.rpc.ErrorInfo`` whose ``reason`` tells an invalid API
key (reported as HTTP 400) apart from a bad request.
"""

from __future__ import annotations

import re
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
from thoughtline.providers.http_errors import provider_error
from thoughtline.wire.jsonio import MalformedJSON, loads_object

PROVIDER_NAME: Final = "Gemini"

RPC_STATUS_CODES: Final[dict[str, ErrorCode]] = {
    "RESOURCE_EXHAUSTED": "PROVIDER_RATE_LIMITED",
    "UNAVAILABLE": "PROVIDER_OVERLOADED",
    "INTERNAL": "PROVIDER_SERVER_ERROR",
    "UNKNOWN": "PROVIDER_SERVER_ERROR",
    "DATA_LOSS": "PROVIDER_SERVER_ERROR",
    "ABORTED": "PROVIDER_SERVER_ERROR",
    "DEADLINE_EXCEEDED": "PROVIDER_TIMEOUT",
    "INVALID_ARGUMENT": "PROVIDER_BAD_REQUEST",
    "FAILED_PRECONDITION": "PROVIDER_BAD_REQUEST",
    "OUT_OF_RANGE": "PROVIDER_BAD_REQUEST",
    "UNIMPLEMENTED": "PROVIDER_BAD_REQUEST",
    "ALREADY_EXISTS": "PROVIDER_BAD_REQUEST",
    "UNAUTHENTICATED": "PROVIDER_AUTH_ERROR",
    "PERMISSION_DENIED": "PROVIDER_PERMISSION_DENIED",
    "NOT_FOUND": "PROVIDER_NOT_FOUND",
    "CANCELLED": "PROVIDER_ERROR",
}
"""google.rpc status names → stable codes."""

_AUTH_REASONS: Final = frozenset({"API_KEY_INVALID", "API_KEY_EXPIRED", "API_KEY_NOT_FOUND"})
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def parse_gemini_error(
    status: int, headers: Mapping[str, str], body: bytes, *, endpoint: Endpoint | None = None
) -> ProviderError:
    """An HTTP error response → ProviderError with the rpc status as the error type."""
    try:
        payload: dict[str, Any] | None = loads_object(body)
    except MalformedJSON:
        payload = None
    error = payload.get("error") if payload is not None else None
    if not isinstance(error, dict):
        text = body.decode("utf-8", "replace").strip()[:500] or None
        return provider_error(
            status, headers, provider=PROVIDER_NAME, message=text, endpoint=endpoint
        )

    rpc_status = _str(error.get("status"))
    message = _str(error.get("message"))
    details = error.get("details")
    code = _code_for(rpc_status, details)
    result = provider_error(
        status,
        headers,
        provider=PROVIDER_NAME,
        message=message,
        provider_error_type=rpc_status,
        code=code,
        endpoint=endpoint,
    )
    if result.retry_after_s is None:
        result.retry_after_s = retry_delay(details)
    return result


def stream_error(error: Any) -> StreamError:
    """The ``error`` object of an in-stream payload → the terminal Error event."""
    if not isinstance(error, dict):
        return StreamError(
            code="PROVIDER_ERROR",
            message=f"Gemini reported an error mid-stream: {error!r}",
            retryable=False,
        )
    rpc_status = _str(error.get("status"))
    number = error.get("code")
    http_status = number if isinstance(number, int) and not isinstance(number, bool) else None
    code: str | None = _code_for(rpc_status, error.get("details"))
    if code is None:
        code = code_for_status(http_status) if http_status is not None else "PROVIDER_ERROR"
    detail = _str(error.get("message")) or "no message"
    label = f"{rpc_status}: " if rpc_status else ""
    message = f"Gemini reported an error mid-stream: {label}{detail}"
    message = with_advice(message, advice_for(code))
    return StreamError(
        code=code,
        message=message,
        retryable=code in RETRYABLE_CODES,
        status=http_status,
        provider_error_type=rpc_status,
    )


def retry_delay(details: Any) -> float | None:
    """Seconds from a ``google.rpc.RetryInfo`` detail (``"12s"`` or ``{"seconds": 12}``)."""
    if not isinstance(details, list):
        return None
    for detail in details:
        if not isinstance(detail, dict) or not str(detail.get("@type", "")).endswith(
            "google.rpc.RetryInfo"
        ):
            continue
        delay = detail.get("retryDelay")
        if isinstance(delay, str):
            match = _DELAY.match(delay)
            if match:
                return float(match.group(1))
        elif isinstance(delay, dict):
            seconds = delay.get("seconds", 0)
            nanos = delay.get("nanos", 0)
            if isinstance(seconds, int | str) and isinstance(nanos, int):
                try:
                    return float(seconds) + nanos / 1e9
                except ValueError:
                    return None
    return None


def _code_for(rpc_status: str | None, details: Any) -> ErrorCode | None:
    if isinstance(details, list):
        for detail in details:
            if isinstance(detail, dict) and detail.get("reason") in _AUTH_REASONS:
                return "PROVIDER_AUTH_ERROR"
    if rpc_status is None:
        return None
    return RPC_STATUS_CODES.get(rpc_status)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
