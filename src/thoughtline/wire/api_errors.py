"""The error ``type`` (and OpenAI's ``code``) each provider API gives an HTTP status, as
its clients read them: the simulator writes provider errors with these, and the gateway
answers its own clients with them (thoughtline's code in place of OpenAI's)."""

from __future__ import annotations

from typing import Final

ANTHROPIC_ERROR_TYPES: Final[dict[int, str]] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
"""Anthropic's ``error.type`` by status (its errors page)."""


def anthropic_error_type(status: int) -> str:
    """Anthropic's ``error.type`` for ``status``; an unlisted one is ``api_error`` (5xx)
    or ``invalid_request_error``."""
    return ANTHROPIC_ERROR_TYPES.get(
        status, "api_error" if status >= 500 else "invalid_request_error"
    )


OPENAI_ERRORS: Final[dict[int, tuple[str, str | None]]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", "server_error"),
    503: ("service_unavailable_error", "server_is_overloaded"),
}
"""OpenAI's ``error.type`` and ``error.code`` by status, as its API sends them."""


def openai_error(status: int) -> tuple[str, str | None]:
    """OpenAI's ``error.type`` and ``error.code`` for ``status``; an unlisted one is
    ``server_error`` (5xx) or ``invalid_request_error``, with no code."""
    return OPENAI_ERRORS.get(
        status, ("server_error", None) if status >= 500 else ("invalid_request_error", None)
    )
