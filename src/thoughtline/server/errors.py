"""One error shape for every response: ``{"error": {"code", "message"[, "details"]}}``.

Handlers for the daemon's own errors, thoughtline errors (bad mode, role, provider,
missing key), FastAPI's validation errors, Starlette's HTTP errors (404 route, 405) and
anything unexpected (500, logged, never with internals in the message).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from thoughtline.errors import ThoughtlineError
from thoughtline.runtime import RETRY_AFTER_S
from thoughtline.server.gateway.failure import unrouted

logger = logging.getLogger(__name__)

_HTTP_CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    406: "NOT_ACCEPTABLE",
    413: "REQUEST_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    421: "HOST_NOT_ALLOWED",
}

# Thoughtline error codes that are not the caller's fault.
_SERVER_SIDE = {
    "STORE_UNAVAILABLE": 503,
    "INTERNAL_ERROR": 500,
    "TOOL_SERVER_UNAVAILABLE": 503,  # a configured tool server did not start
}
# The caller's fault, with a status more precise than 400.
_CALLER_SIDE = {
    "REQUEST_TOO_LARGE": 413,
    "RUN_NOT_FOUND": 404,  # ``continues`` names no run
    "CONVERSATION_RUN_ACTIVE": 409,
    "CONVERSATION_HISTORY_GONE": 410,
    "TOOL_SERVER_GONE": 410,  # a server the continued run used cannot start again
}


class ApiError(Exception):
    """An error response the daemon chose to send."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers


def error_response(
    status: int,
    code: str,
    message: str,
    *,
    details: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return JSONResponse({"error": _encodable(body)}, status_code=status, headers=headers)


def _encodable(value: Any) -> Any:
    """``value`` with lone surrogates written as ``\\udXXX``: messages and field paths can
    quote what a client sent, and a response that cannot be encoded would be a 500."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_encodable(key): _encodable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_encodable(item) for item in value]
    return value


async def _api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.code, exc.message, headers=exc.headers)


async def _thoughtline_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ThoughtlineError)
    observe: Callable[[ThoughtlineError], None] | None = getattr(
        request.app.state, "observe_error", None
    )
    if observe is not None:
        observe(exc)
    status = status_for(exc)
    # A store that cannot be reached may be back soon: say when to ask again.
    headers = {"Retry-After": str(RETRY_AFTER_S)} if exc.code == "STORE_UNAVAILABLE" else None
    return error_response(status, exc.code, exc.message, headers=headers)


def status_for(exc: ThoughtlineError) -> int:
    """The HTTP status a thoughtline error is answered with."""
    return _SERVER_SIDE.get(exc.code) or _CALLER_SIDE.get(exc.code, 400)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    headers = getattr(exc, "headers", None) or None
    # A gateway path answers in its client API's shape, naming what the gateway serves.
    shaped = unrouted(request.method, request.url.path, exc.status_code, headers)
    if shaped is not None:
        return shaped
    code = _HTTP_CODES.get(exc.status_code, f"HTTP_{exc.status_code}")
    message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ").lower()
    if exc.status_code == 400:
        # FastAPI's only 400: a body its JSON parser gave up on (e.g. nested too deep).
        code = "JSON_INVALID"
        message = "The request body could not be parsed as JSON (malformed or nested too deep)."
    elif exc.status_code == 404:
        message = f"No route {request.method} {request.url.path}."
    elif exc.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}."
    return error_response(exc.status_code, code, message, headers=headers)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    if any(error.get("type") == "json_invalid" for error in errors):
        return error_response(400, "JSON_INVALID", "The request body is not valid JSON.")
    # loc/msg/type only: echoing the input back could repeat a secret the caller pasted.
    details = [
        {"loc": list(error.get("loc", ())), "msg": error.get("msg", ""), "type": error.get("type")}
        for error in errors
    ]
    summary = "; ".join(
        f"{'.'.join(str(part) for part in detail['loc'])}: {detail['msg']}"
        for detail in details[:5]
    )
    return error_response(
        422,
        "REQUEST_INVALID",
        f"The request is invalid: {summary}.",
        details=jsonable_encoder(details),
    )


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    logger.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response(
        500, "INTERNAL_ERROR", "The daemon failed unexpectedly; its log has the details."
    )


def install_error_handlers(
    app: FastAPI, observe: Callable[[ThoughtlineError], None] | None = None
) -> None:
    """Answer every error in one shape; ``observe`` sees each thoughtline error first
    (the daemon learns from it that its store is damaged)."""
    app.state.observe_error = observe
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(ThoughtlineError, _thoughtline_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _unexpected)
