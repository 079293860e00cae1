"""HTTP error responses → :class:`ProviderError`, shared by every adapter.

Adapters read the provider's own error body (message, type) and call
:func:`provider_error`; status mapping, ``retryable``, ``retry-after`` request ids and
the advice for a rejected key (:func:`credential_advice`, naming the endpoint and the
variable the key came from) are handled here once.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from thoughtline.errors import (
    ErrorCode,
    ProviderError,
    advice_for,
    code_for_status,
    status_is_retryable,
)
from thoughtline.providers._text import with_advice

if TYPE_CHECKING:
    from thoughtline.providers.endpoints import Endpoint

_GENERIC_CODES = frozenset({"PROVIDER_SERVER_ERROR", "PROVIDER_ERROR"})
_CREDENTIAL_CODES = frozenset({"PROVIDER_AUTH_ERROR", "PROVIDER_PERMISSION_DENIED"})


def credential_advice(code: str, endpoint: Endpoint) -> str:
    """What to check when ``endpoint`` rejected the request's credentials: the endpoint
    and the environment variable the key came from, never the key. ``""`` for codes
    that are not about credentials."""
    if code not in _CREDENTIAL_CODES:
        return ""
    name = endpoint.name
    variable = endpoint.api_key_env
    if endpoint.api_key is None:
        if variable is None:
            return (
                f"Endpoint {name!r} sent no API key: set api_key_env under "
                f"[providers.{name}] in thoughtline.toml to the environment variable "
                "that holds the key, and set that variable."
            )
        return (
            f"Endpoint {name!r} sent no API key because {variable} is not set: set "
            f"{variable} to a valid key for {name}."
        )
    if code == "PROVIDER_AUTH_ERROR":
        return (
            f"Endpoint {name!r} rejected the API key from {variable}: check that "
            f"{variable} holds a valid, current key for {name}."
        )
    return (
        f"The API key from {variable} is not allowed to do this on endpoint {name!r}: "
        f"check its permissions, or that {variable} holds the key you meant."
    )


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` (preferred), then ``retry-after`` (seconds
    or an HTTP date). ``None`` when absent or unreadable; never negative."""
    lowered = {key.lower(): value for key, value in headers.items()}
    milliseconds = lowered.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(float(milliseconds) / 1000.0, 0.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(parsed.timestamp() - (time.time() if now is None else now), 0.0)


_OUTPUT_FORMAT_MISMATCH = "the model produced output that does not match the expected"
"""llama.cpp's server, when what the model generated does not parse in its chat
template's format (``peg-native`` and the like): HTTP 500, e.g. after a prefilled half
tool call. Not the server failing: the same request fails the same way again."""

OUTPUT_FORMAT_ADVICE = (
    "llama.cpp's server could not read what the model wrote in its chat template's "
    "format (a tool call or reasoning its syntax does not accept); retrying the same "
    "request does not help: run without tools, or serve a model whose chat template "
    "supports tool calls."
)


def output_format_mismatch(message: str | None) -> bool:
    """Whether an error's text is llama.cpp's server saying the model's output did not
    parse in the expected format."""
    return message is not None and _OUTPUT_FORMAT_MISMATCH in message.lower()


def request_id_of(headers: Mapping[str, str]) -> str | None:
    lowered = {key.lower(): value for key, value in headers.items()}
    return lowered.get("request-id") or lowered.get("x-request-id")


def provider_error(
    status: int,
    headers: Mapping[str, str],
    *,
    provider: str,
    message: str | None,
    provider_error_type: str | None = None,
    code: ErrorCode | None = None,
    endpoint: Endpoint | None = None,
) -> ProviderError:
    """Build the error for an HTTP error response.

    ``code`` overrides the status mapping when the body says more (e.g. Anthropic's
    ``overloaded_error`` type). ``x-should-retry`` from the provider wins over the
    status convention. With ``endpoint``, a rejected key's advice names the endpoint and
    the variable the key came from.
    """
    by_status = code_for_status(status)
    final_code: ErrorCode = code or by_status
    if final_code in _GENERIC_CODES and by_status not in _GENERIC_CODES:
        # A body that only says "server error" must not hide what the status says
        # precisely (529/503 overloaded, 504 timeout).
        final_code = by_status
    elif final_code == "PROVIDER_BAD_REQUEST" and by_status in _CREDENTIAL_CODES:
        # A 401/403 whose body only says "invalid request" is still about the key.
        final_code = by_status
    lowered = {key.lower(): value for key, value in headers.items()}
    should_retry = lowered.get("x-should-retry")
    if should_retry == "true":
        retryable = True
    elif should_retry == "false":
        retryable = False
    else:
        retryable = status_is_retryable(status)
    detail = message.strip() if message else f"HTTP {status}"
    advice = (credential_advice(final_code, endpoint) if endpoint else "") or advice_for(final_code)
    if output_format_mismatch(message):
        final_code, retryable, advice = "PROVIDER_MALFORMED_RESPONSE", False, OUTPUT_FORMAT_ADVICE
    text = with_advice(f"{provider} returned HTTP {status}: {detail}", advice)
    return ProviderError(
        final_code,
        text,
        retryable=retryable,
        status=status,
        provider_error_type=provider_error_type,
        request_id=request_id_of(headers),
        retry_after_s=parse_retry_after(headers),
    )
