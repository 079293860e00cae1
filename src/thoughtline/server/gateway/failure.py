"""A refusal the gateway answers with: status, thoughtline's code, one sentence and
headers; each client API renders it in its own error shape."""

from __future__ import annotations

from typing import cast

from thoughtline.errors import ErrorCode


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
