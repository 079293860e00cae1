"""A refusal the gateway answers with: status, thoughtline's code, one sentence and
headers; each client API renders it in its own error shape."""

from __future__ import annotations

from typing import cast

from starlette.responses import JSONResponse, Response

from thoughtline.errors import ErrorCode
from thoughtline.gateway.call import Dialect
from thoughtline.gateway.dialects import client_api


class GatewayFailure(Exception):
    def __init__(
        self,
        status: int,
        code: ErrorCode,
        message: str,
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


def from_api_error(
    status: int, code: str, message: str, headers: dict[str, str] | None
) -> GatewayFailure:
    """The daemon's own refusal (``ApiError``: its codes are the closed set's), for the
    client in its API's shape."""
    return GatewayFailure(status, cast("ErrorCode", code), message, headers=headers)


_GATEWAY_PREFIXES: tuple[tuple[str, Dialect], ...] = (
    ("/openai", "chat_completions"),
    ("/anthropic", "messages"),
)
"""Each gateway path prefix and the dialect whose error shape its refusals take (the
Responses API shares Chat Completions' error shape)."""

_SERVED: dict[str, str] = {
    "/openai": "under /openai/v1 it serves POST /chat/completions, POST /responses, "
    "GET /models and GET /models/{model}",
    "/anthropic": "under /anthropic it serves POST /v1/messages and POST /v1/messages/count_tokens",
}
"""What each gateway prefix serves, for a request to a path it does not."""


def gateway_refusal(
    path: str, status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> Response | None:
    """A refusal the daemon's guards (``Host``, cross-site, body cap) make before any
    route runs, in the client API's error shape when ``path`` is a gateway path (its SDK
    then reads the code and message); ``None`` for the daemon's own paths."""
    for prefix, dialect in _GATEWAY_PREFIXES:
        if path == prefix or path.startswith(prefix + "/"):
            shaped_status, body = client_api(dialect).failure(
                cast("ErrorCode", code), message, status=status
            )
            return JSONResponse(body, status_code=shaped_status, headers=headers)
    return None


def unrouted(
    method: str, path: str, status: int, headers: dict[str, str] | None
) -> Response | None:
    """A request to a gateway path no route serves (404) or with a method its route does
    not take (405), in the client API's error shape with a sentence naming what the
    gateway serves there (an SDK raises its own not-found error with it); ``None`` for
    the daemon's own paths."""
    prefix = next(
        (
            prefix
            for prefix, _ in _GATEWAY_PREFIXES
            if path == prefix or path.startswith(prefix + "/")
        ),
        None,
    )
    if prefix is None or status not in (404, 405):
        return None
    shown = path[:200]
    if status == 405:
        allowed = (headers or {}).get("Allow", "")
        message = (
            f"The gateway does not take {method} on {shown}; send {allowed or 'another method'} "
            f"there ({_SERVED[prefix]})."
        )
        return gateway_refusal(path, 405, "METHOD_NOT_ALLOWED", message, headers)
    message = f"The gateway does not serve {method} {shown}; {_SERVED[prefix]}."
    return gateway_refusal(path, 404, "NOT_FOUND", message)
